"""Plumbing shared by the handlers: the instance from the environment, their logging and metrics, and batches of
messages with per-message failures, by Lambda Powertools (``aws_lambda_powertools``).

- **Logs** are JSON lines (Powertools' ``LambdaPowertoolsFormatter``) carrying the fields Powertools' ``Logger``
  gives a function's lines with the Lambda context (``service``, ``cold_start``, ``function_name``,
  ``function_memory_size``, ``function_arn``, ``function_request_id``, and ``xray_trace_id`` when traced: see
  :func:`lambda_handler`) and the ids of the work where known (``table_id``, ``job_id``, ``task_id``, ``run_id``,
  ``query_id``, ``message_id``: :mod:`sleeper.core.logcontext`), at the levels of the instance's
  ``sleeper.logging.*`` properties (:mod:`sleeper.runtime.logging_config`), applied when a handler first works on an
  instance and again whenever it reads the properties again (outside AWS Lambda, an emulator, also as soon as the
  levels saved in the config bucket change: :func:`prepare`).
- **Metrics** (:mod:`sleeper.core.metrics`) are CloudWatch EMF lines (:mod:`sleeper.runtime.aws.metrics`), among them
  the size of each batch of state store commits.
- **SQS batches** go through Powertools' ``BatchProcessor`` (``SqsFifoPartialProcessor`` on a FIFO queue: it stops at
  the first failure and reports the rest failed, so a message group keeps its order), with the router's one failure
  mapping deciding what a failure is (:func:`sleeper.runtime.router.settle`).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sleeper.core import (
    LogContextFilter,
    Metric,
    MetricsSink,
    StandardStreamHandler,
    fields_of_message,
    log_context,
    metrics_published_to,
    operation_wiring,
    operations,
    publish_metrics,
)
from sleeper.core.properties import FORCE_RELOAD_PROPERTIES, InstanceProperties
from sleeper.iterators import install_user_code
from sleeper.runtime import (
    Disposition,
    apply_logging_levels,
    feature_entry,
    function_log_fields,
    logging_levels,
    running_in_lambda,
    service_name,
    settle,
)
from sleeper.runtime.aws import AwsInstance, AwsRuntimeConfig, emf_sink
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV, idle_wait_seconds

__all__ = [
    "FUNCTION_FIELDS",
    "IDLE_WAIT_ENV",
    "LOGGER",
    "SqsRecord",
    "aws_instance",
    "batch_response",
    "for_each_message",
    "for_each_record",
    "idle_wait_seconds",
    "lambda_handler",
    "prepare",
    "route_messages",
    "route_records",
    "sqs_records",
    "use_instance",
]

LOGGER = logging.getLogger(__name__)
_given: AwsInstance | None = None
_from_environment: AwsInstance | None = None
_prepared: AwsInstance | None = None
_sink: MetricsSink | None = None
_json_handler: logging.Handler | None = None


def aws_instance() -> AwsInstance:
    """The instance given to :func:`use_instance`, else the one the environment names (``CONFIG_BUCKET``, or
    ``SLEEPER_INSTANCE_ID`` with ``SLEEPER_ACCOUNT``, the region and any ``AWS_ENDPOINT_URL``).

    The instance from the environment is built once per process and reused by warm invocations for as long as the
    environment names the same instance (a process running the handlers of several instances, as an emulator's
    tests do, gets each invocation's own).

    The first time an instance is built, the iterator code its ``sleeper.userjars`` lists is installed
    (:func:`sleeper.iterators.shipping.install_user_code`), before any handler can load an iterator.

    Raises:
        AwsRuntimeConfigError: If no instance was given and the environment does not say where the instance is.
        UserCodeError: If a listed wheel cannot be installed.
    """
    global _from_environment
    if _given is not None:
        return _given
    config = AwsRuntimeConfig.from_environment()
    if _from_environment is None or _from_environment.config != config:
        instance = AwsInstance(config)
        install_user_code(instance.properties, options=instance.filesystem_options)
        _from_environment = instance
    return _from_environment


def use_instance(instance: AwsInstance | None) -> None:
    """Makes the handlers use an instance (None: the environment's again, read anew), e.g. in a container or a
    test."""
    global _given, _from_environment
    if instance is not None:
        install_user_code(instance.properties, options=instance.filesystem_options)
    _given = instance
    _from_environment = None


def prepare() -> AwsInstance:
    """The instance (:func:`aws_instance`), ready for an invocation: the first time the process works on it, and on
    every invocation when its ``sleeper.properties.force.reload`` is true (its properties and tables then read
    again), the logging levels and metrics of its properties are applied. A failure to read the properties is
    logged, not raised: the handler meets it again when it needs them.

    Outside AWS Lambda (an emulator, whose functions stay warm for as long as it runs and are never deployed again),
    a warm invocation also reads the saved properties' logging levels and applies them when they changed, as the
    next cold start of a function deployed again with the properties would: a level saved with ``sleeper instance
    properties --set`` shows from the next invocation on."""
    global _prepared
    instance = aws_instance()
    _json_logs()
    try:
        if instance is _prepared and instance.properties.get_bool(FORCE_RELOAD_PROPERTIES):
            instance.reload()
        elif instance is _prepared:
            if not running_in_lambda():
                _follow_saved_levels(instance)
            return instance
        _apply(instance.properties)
        _prepared = instance
    except Exception as e:
        LOGGER.warning("could not read the instance properties to set logging and metrics: %s", e)
    return instance


_levels: dict[str, int] = {}
"""The logging levels last applied from the instance properties, by logger name."""


def _apply(properties: InstanceProperties) -> None:
    global _sink, _levels
    _levels = apply_logging_levels(properties)
    _sink = emf_sink(properties)


def _follow_saved_levels(instance: AwsInstance) -> None:
    """Applies the logging levels of the properties saved in the config bucket if they differ from those applied."""
    global _levels
    saved = InstanceProperties(instance.properties_store.load_instance())
    if logging_levels(saved) != _levels:
        _levels = apply_logging_levels(saved)


_in_invocation: ContextVar[bool] = ContextVar("sleeper_lambda_invocation", default=False)


class _InvocationOnly(logging.Filter):
    """Passes only records made by the thread of an invocation (outside AWS Lambda, where the process has other
    logging and may run other work in other threads)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _in_invocation.get()


_invocation_filter = _InvocationOnly()

FUNCTION_FIELDS = (
    "service",
    "cold_start",
    "function_name",
    "function_memory_size",
    "function_arn",
    "function_request_id",
)
"""The fields of the function and its invocation on each line of an invocation, as Powertools' ``Logger`` names
them (with ``Logger.inject_lambda_context``), in the order they follow the level, message and timestamp."""

_function_fields: ContextVar[Mapping[str, Any] | None] = ContextVar("sleeper_lambda_function_fields", default=None)
_INITIALIZATION_TYPE_ENV = "AWS_LAMBDA_INITIALIZATION_TYPE"
_started_functions: set[str] = set()
"""The functions (by name) this process has run an invocation of: the next invocation of one is not a cold start."""


def _cold_start(function_name: str) -> bool:
    """Whether an invocation of the function is its first in this process, and not of provisioned concurrency, as
    Powertools decides (by function, as an emulator runs many functions in one process; a Lambda process runs one).
    """
    first = function_name not in _started_functions
    _started_functions.add(function_name)
    return first and os.environ.get(_INITIALIZATION_TYPE_ENV) != "provisioned-concurrency"


class _FunctionFields(logging.Filter):
    """Adds the fields of the running invocation's function (:data:`FUNCTION_FIELDS`) to each record; never drops
    one."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_function_fields.get() or {}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


def _json_logs() -> None:
    """Writes log records as Powertools JSON lines on standard output, once per process. In AWS Lambda they replace
    the runtime's handler; elsewhere (an emulator) they are added beside the process's own, for the records of
    invocations only."""
    global _json_handler
    root = logging.getLogger()
    if _json_handler is not None and _json_handler in root.handlers:
        return
    handler = StandardStreamHandler("stdout")
    handler.setFormatter(
        LambdaPowertoolsFormatter(utc=True, log_record_order=["level", "message", "timestamp", *FUNCTION_FIELDS])
    )
    handler.addFilter(LogContextFilter())
    handler.addFilter(_FunctionFields())
    if running_in_lambda():
        for old in list(root.handlers):
            root.removeHandler(old)
    else:
        handler.addFilter(_invocation_filter)
    root.addHandler(handler)
    _json_handler = handler


@contextmanager
def _invocation(context: object = None, service: str | None = None) -> Iterator[None]:
    """An invocation: prepared, logging JSON lines and publishing metrics as EMF lines while it runs, its lines
    carrying the fields of the function when ``service`` is given (:func:`lambda_handler`). Within an invocation
    already running (a handler calling :func:`for_each_record`), nothing more is done."""
    if _in_invocation.get():
        yield
        return
    prepare()
    token = _in_invocation.set(True)
    fields = None
    if service is not None:
        name = getattr(context, "function_name", None)
        cold = _cold_start(name) if context is not None and isinstance(name, str) else None
        fields = _function_fields.set(function_log_fields(context, service=service_name(service), cold_start=cold))
    try:
        with metrics_published_to(_sink):
            yield
    finally:
        if fields is not None:
            _function_fields.reset(fields)
        _in_invocation.reset(token)


_R = TypeVar("_R")


@overload
def lambda_handler(function: Callable[..., _R], *, service: str | None = None) -> Callable[..., _R]: ...


@overload
def lambda_handler(
    function: None = None, *, service: str | None = None
) -> Callable[[Callable[..., _R]], Callable[..., _R]]: ...


def lambda_handler(
    function: Callable[..., _R] | None = None, *, service: str | None = None
) -> Callable[..., _R] | Callable[[Callable[..., _R]], Callable[..., _R]]:
    """Wraps a Lambda handler ``(event, context, ...)``: each invocation is prepared (:func:`prepare`), logs JSON
    lines and publishes metrics, as Powertools' ``Logger.inject_lambda_context`` would have it: every line of the
    invocation carries ``service``, and with a context also ``cold_start`` (true on the first invocation of the
    function in the process), ``function_name``, ``function_memory_size``, ``function_arn`` and
    ``function_request_id`` (the context's ``aws_request_id``).

    The service is ``POWERTOOLS_SERVICE_NAME`` when set, else ``service``, else the name of the registry entry whose
    handler the wrapped function is (its ``__module__``:``__name__`` when first invoked, so a generic handler may
    rename it after wrapping), else that ``module:function``.

    Example::

        @lambda_handler
        def handler(event, context=None): ...

        @lambda_handler(service="garbage_collector")
        def handler(event, context=None): ...
    """

    def wrap(function: Callable[..., _R]) -> Callable[..., _R]:
        resolved: list[str] = [] if service is None else [service]

        @functools.wraps(function)
        def invoke(*args: Any, **kwargs: Any) -> _R:
            if not resolved:
                resolved.append(_registry_service(invoke.__module__, invoke.__name__))
            context = args[1] if len(args) > 1 else kwargs.get("context")
            with _invocation(context, resolved[0]):
                return function(*args, **kwargs)

        return invoke

    return wrap if function is None else wrap(function)


def _registry_service(module: str, function: str) -> str:
    """The name of the registry entry whose handler is ``module:function``, else ``module:function``."""
    try:
        return operation_wiring.served_by(module, function).name
    except KeyError:
        return f"{module}:{function}"


@dataclass(frozen=True, slots=True)
class SqsRecord:
    """One message of an SQS event."""

    message_id: str
    body: str
    group_id: str | None
    source_arn: str | None = None


def sqs_records(event: Mapping[str, Any]) -> list[SqsRecord]:
    """The messages of an SQS event, in order."""
    return [_record(SQSRecord(r)) for r in event.get("Records", [])]


def _record(record: SQSRecord) -> SqsRecord:
    raw = record.raw_event
    return SqsRecord(
        raw["messageId"],
        raw["body"],
        raw.get("attributes", {}).get("MessageGroupId"),
        raw.get("eventSourceARN") or None,
    )


def batch_response(failed_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """The partial batch response: the failed messages return to the queue, the others are deleted."""
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed_ids]}


def for_each_message(
    event: Mapping[str, Any],
    handle: Callable[[str], object],
    *,
    stop_at_failure: bool = False,
    body_is_table_id: bool = False,
) -> dict[str, list[dict[str, str]]]:
    """Runs ``handle`` on each message body (see :func:`for_each_record`)."""
    return for_each_record(
        event, lambda record: handle(record.body), stop_at_failure=stop_at_failure, body_is_table_id=body_is_table_id
    )


def for_each_record(
    event: Mapping[str, Any],
    handle: Callable[[SqsRecord], object],
    *,
    stop_at_failure: bool = False,
    body_is_table_id: bool = False,
) -> dict[str, list[dict[str, str]]]:
    """Runs ``handle`` on each message through Powertools' batch processor, mapping how each ended with the router's
    one failure mapping (:func:`sleeper.runtime.router.settle`): a message whose handling raises is reported failed;
    one naming a table that does not exist (any more) is logged and dropped, as a retry cannot help. Each message is
    handled with its id and the ids its body names in the log context.

    Args:
        event: The SQS event.
        handle: Handles one message (a returned string is logged).
        stop_at_failure: After a failure, report every later message failed without handling it (FIFO queues, so
            messages of a group keep their order).
        body_is_table_id: The queue holds one message per table whose body is the table id (scheduled work).
    """
    if not event.get("Records"):
        return batch_response([])  # Powertools refuses an empty batch; there is nothing to do
    processor: BatchProcessor
    if stop_at_failure:
        processor = SqsFifoPartialProcessor()
    else:
        processor = BatchProcessor(event_type=EventType.SQS)
    processor.raise_on_entire_batch_failure = False  # every message failed: report them all, as for one

    def record_handler(record: SQSRecord) -> None:  # Powertools passes the record by this name
        message = _record(record)
        fields = fields_of_message(message.body, body_is_table_id=body_is_table_id)
        with log_context(message_id=message.message_id, **fields):
            LOGGER.debug("Handling message %s (%d characters)", message.message_id, len(message.body))
            settled = settle(lambda: handle(message))
            if settled.disposition is Disposition.DROPPED:
                LOGGER.warning("Dropping message %s: %s", message.message_id, settled.error)
            elif settled.disposition is Disposition.RETRY:
                LOGGER.error("Message %s failed", message.message_id, exc_info=settled.error)
                raise settled.error if settled.error is not None else RuntimeError("message failed")
            elif settled.line:
                LOGGER.info("%s", settled.line)

    with _invocation():
        response = process_partial_response(event=dict(event), record_handler=record_handler, processor=processor)
    return batch_response([str(f["itemIdentifier"]) for f in response["batchItemFailures"]])


_TIMED_QUEUES = {operations.QUERY_Q: "QuerySeconds", operations.LEAF_PARTITION_QUERY_Q: "SubQuerySeconds"}
"""The queues whose every message's handling time is published, by metric name."""


def route_messages(event: Mapping[str, Any], queue_name: str) -> dict[str, list[dict[str, str]]]:
    """Runs each message of a batch from a queue through the feature entry the registry names for the queue
    (:mod:`sleeper.runtime.router`), on the instance from the environment; on a FIFO queue a failure fails the rest
    of the batch too, so a group keeps its order. A batch from the state store committer's queue publishes its size
    (``CommitBatchSize``) and how long it took (``CommitBatchSeconds``); each message of the query and leaf partition
    query queues how long its handling took (``QuerySeconds``, ``SubQuerySeconds``), failed or not.
    """
    entry = feature_entry(queue_name)
    fifo = operations.queue(queue_name).fifo
    per_table = any(h.sends_to == queue_name for h in operations.HANDLERS)
    timed = _TIMED_QUEUES.get(queue_name)

    def handle(body: str) -> object:
        if timed is None:
            return entry(aws_instance(), body)
        began = time.monotonic()
        try:
            return entry(aws_instance(), body)
        finally:
            publish_metrics({"queue": queue_name}, Metric(timed, time.monotonic() - began, "Seconds"))

    with _invocation():
        started = time.monotonic()
        response = for_each_message(event, handle, stop_at_failure=fifo, body_is_table_id=per_table)
        if queue_name == operations.STATE_STORE_COMMITTER_Q and event.get("Records"):
            publish_metrics(
                {"queue": queue_name},
                Metric("CommitBatchSize", len(event["Records"])),
                Metric("CommitBatchFailures", len(response["batchItemFailures"])),
                Metric("CommitBatchSeconds", time.monotonic() - started, "Seconds"),
            )
    return response


def route_records(event: Mapping[str, Any], queue_of: Callable[[SqsRecord], str]) -> dict[str, list[dict[str, str]]]:
    """Runs each message of a batch through the feature entry the registry names for the queue it came from (a
    handler fed by several queues whose work differs by queue); a message from a queue that ``queue_of`` refuses
    (raising) is reported failed. For standard queues only: a failure does not fail the rest of the batch."""
    return for_each_record(event, lambda record: feature_entry(queue_of(record))(aws_instance(), record.body))
