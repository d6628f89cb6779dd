"""Logging of a process working on an instance: the levels its ``sleeper.logging.*`` properties set, and the ids of
the work (:mod:`sleeper.core.logcontext`) on every line.

A Lambda function's lines also carry the fields Powertools' ``Logger`` gives them with the Lambda context
(:func:`function_log_fields`), its service named by :func:`service_name`.

Every process applies the levels once it has the instance properties: the Lambda handlers
(``sleeper.lambdas._common``, with JSON lines), the containers' entry points (:mod:`sleeper.runtime.aws.containers`)
and ``sleeper run`` on a local instance (text lines). Which loggers each property sets is :data:`LOGGERS`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, TextIO

from sleeper.core import FIELDS, LogContextFilter, StandardStreamHandler
from sleeper.core.properties import (
    APACHE_LOGGING_LEVEL,
    AWS_LOGGING_LEVEL,
    LOGGING_LEVEL,
    PARQUET_LOGGING_LEVEL,
    ROOT_LOGGING_LEVEL,
    RUST_BACKTRACE,
    InstanceProperties,
    PropertyDefinition,
)

__all__ = [
    "LOGGERS",
    "SERVICE_NAME_ENV",
    "TEXT_FORMAT",
    "apply_logging_levels",
    "configure_text_logging",
    "function_log_fields",
    "logging_levels",
    "python_level",
    "running_in_lambda",
    "service_name",
]

LOGGERS: Mapping[PropertyDefinition, tuple[str, ...]] = {
    ROOT_LOGGING_LEVEL: ("",),
    LOGGING_LEVEL: ("sleeper",),
    APACHE_LOGGING_LEVEL: ("pyspark", "py4j"),
    PARQUET_LOGGING_LEVEL: ("pyarrow",),
    AWS_LOGGING_LEVEL: ("boto3", "botocore", "s3transfer", "urllib3"),
}
"""The Python loggers each level property sets (``""`` is the root logger)."""

_DEFAULTS: Mapping[PropertyDefinition, int] = {ROOT_LOGGING_LEVEL: logging.INFO, LOGGING_LEVEL: logging.INFO}
"""The level of the loggers whose property is unset; those not listed follow their parent."""

_LEVELS = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
    "ALL": logging.DEBUG,
}

_LOG = logging.getLogger(__name__)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(context)s %(message)s"
"""The text line of tasks and local processes: time, level, logger, the ids of the work in brackets, message."""


def python_level(value: str) -> int | None:
    """The Python level of a level name (Log4j's or Python's, any case), or None if it names none."""
    return _LEVELS.get(value.strip().upper())


def logging_levels(properties: InstanceProperties) -> dict[str, int]:
    """The level of each logger the properties set, by logger name (``""`` the root), defaults included.

    A value that names no level (one saved before values were checked) is reported as a warning and left out, so its
    loggers keep their default.
    """
    levels: dict[str, int] = {}
    for definition, loggers in LOGGERS.items():
        value = properties.get(definition)
        level = _DEFAULTS.get(definition) if value is None else python_level(value)
        if value is not None and level is None:
            _LOG.warning("%s: %r names no logging level; its loggers keep their default", definition.name, value)
            level = _DEFAULTS.get(definition)
        if level is not None:
            levels.update(dict.fromkeys(loggers, level))
    return levels


def apply_logging_levels(properties: InstanceProperties, environ: dict[str, str] | None = None) -> dict[str, int]:
    """Sets the levels of the loggers the properties name, and ``RUST_BACKTRACE`` from
    ``sleeper.logging.backtrace`` when that is set.

    Args:
        properties: The instance properties.
        environ: Where to set ``RUST_BACKTRACE`` (the process environment by default).

    Returns:
        The levels set, by logger name.
    """
    levels = logging_levels(properties)
    for name, level in levels.items():
        logging.getLogger(name or None).setLevel(level)
    backtrace = properties.get(RUST_BACKTRACE)
    if backtrace:
        (os.environ if environ is None else environ)["RUST_BACKTRACE"] = backtrace
    return levels


class _ContextText(logging.Filter):
    """Adds ``record.context``: `` [table_id=... job_id=...]`` from the log context, or nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = [f"{name}={getattr(record, name)}" for name in FIELDS if getattr(record, name, None)]
        record.context = f" [{' '.join(ids)}]" if ids else ""
        return True


_text_handler: logging.Handler | None = None


def configure_text_logging(properties: InstanceProperties | None = None, *, stream: TextIO | None = None) -> None:
    """Logs text lines (:data:`TEXT_FORMAT`) to standard error, or ``stream``, with the ids of the work on each, and
    applies the properties' levels when given (INFO otherwise).

    As ``logging.basicConfig`` does, the handler is added only to a root logger that has none (a process of its own:
    a container task, ``sleeper run``), or when a stream is given; otherwise only the levels are set. Calling it again
    (with the properties once they are read) adds no second handler.
    """
    global _text_handler
    root = logging.getLogger()
    if stream is not None or (_text_handler is None and not root.handlers):
        handler = logging.StreamHandler(stream) if stream is not None else StandardStreamHandler()
        handler.addFilter(LogContextFilter())
        handler.addFilter(_ContextText())
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
        if _text_handler is not None:
            root.removeHandler(_text_handler)
        root.addHandler(handler)
        _text_handler = handler
    if properties is None:
        root.setLevel(logging.INFO)
    else:
        apply_logging_levels(properties)


def running_in_lambda(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process is an AWS Lambda execution environment (``AWS_LAMBDA_RUNTIME_API`` is set), whose log
    handler the handlers replace with their own; elsewhere (an emulator) they add theirs beside the process's."""
    return bool((os.environ if environ is None else environ).get("AWS_LAMBDA_RUNTIME_API"))


SERVICE_NAME_ENV = "POWERTOOLS_SERVICE_NAME"
"""The environment variable naming the service on a function's log lines, as for Powertools' ``Logger``."""


def service_name(default: str, environ: Mapping[str, str] | None = None) -> str:
    """The service a function's log lines name: ``POWERTOOLS_SERVICE_NAME`` when set (not empty), else ``default``
    (the name of the registry entry the function serves)."""
    return (os.environ if environ is None else environ).get(SERVICE_NAME_ENV) or default


_CONTEXT_FIELDS = (
    ("function_name", "function_name"),
    ("function_memory_size", "memory_limit_in_mb"),
    ("function_arn", "invoked_function_arn"),
    ("function_request_id", "aws_request_id"),
)
"""The log fields of a Lambda context, with the context attribute each is read from, as Powertools names them."""


def function_log_fields(context: object, *, service: str, cold_start: bool | None) -> dict[str, Any]:
    """The fields a function's log lines carry during an invocation, named and valued as Powertools' ``Logger``
    gives them with ``inject_lambda_context``: ``service``, ``cold_start``, and from the Lambda context
    ``function_name``, ``function_memory_size``, ``function_arn`` and ``function_request_id``. A field whose value
    is unknown (no context, or a context without that attribute, as an emulator's may be) is left out.

    Example::

        function_log_fields(context, service="garbage_collector", cold_start=True)
        # {"service": "garbage_collector", "cold_start": True, "function_name": "sleeper-x-garbage-collector", ...}
    """
    fields: dict[str, Any] = {"service": service, "cold_start": cold_start}
    if context is not None:
        fields.update({name: getattr(context, attribute, None) for name, attribute in _CONTEXT_FIELDS})
    return {name: value for name, value in fields.items() if value is not None}
