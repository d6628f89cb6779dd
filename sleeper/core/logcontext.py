"""The ids a log line is about: the table, the job, the task, the run, the query.

Code that knows them sets them for the work it does (``with log_context(job_id=..., table_id=...)``); every log record
made meanwhile, by any logger, carries them as attributes once the handler writing it has a :class:`LogContextFilter`
(the Lambda handlers' JSON logs and the tasks' and local runtime's text logs both do). The ids live in a
``contextvars.ContextVar``, so threads and asyncio tasks keep their own.

:class:`StandardStreamHandler` is the handler the text logs, the functions' JSON logs and the ``sleeper`` command's
one-line messages write through.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "FIELDS",
    "LogContextFilter",
    "StandardStreamHandler",
    "current_log_context",
    "fields_of_message",
    "log_context",
]

FIELDS = ("table_id", "job_id", "task_id", "run_id", "query_id", "message_id")
"""The ids a log context may hold, as the attribute (and JSON key) names of a log record."""

_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar("sleeper_log_context", default=MappingProxyType({}))


@contextmanager
def log_context(**fields: str | None) -> Iterator[None]:
    """Adds ids to the log context while the block runs; a None value leaves that id as it was.

    Raises:
        ValueError: If a name is not one of :data:`FIELDS`.
    """
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields: {', '.join(sorted(unknown))}")
    token = _CONTEXT.set({**_CONTEXT.get(), **{k: v for k, v in fields.items() if v}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def current_log_context() -> Mapping[str, str]:
    """The ids set now."""
    return _CONTEXT.get()


class LogContextFilter(logging.Filter):
    """Copies the ids set now onto each record as attributes (``record.table_id``...), passing every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Adds the ids to the record; never drops it."""
        for name, value in _CONTEXT.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


_MESSAGE_KEYS = (
    ("table_id", ("tableId",)),
    ("job_id", ("jobId", "id")),
    ("task_id", ("taskId",)),
    ("run_id", ("jobRunId",)),
    ("query_id", ("queryId",)),
)


def fields_of_message(body: str, *, body_is_table_id: bool = False) -> dict[str, str]:
    """The ids a queue message names, as far as they can be read without knowing its kind: a JSON object's
    ``tableId``, ``jobId`` (else ``id``), ``taskId``, ``jobRunId`` and ``queryId``, at its top or under ``request`` (a
    commit request); with ``body_is_table_id`` (the queues a scheduled trigger
    sends one message per table to), the body itself. Never raises."""
    text = body.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            return {}
        if not isinstance(parsed, dict):
            return {}
        found: dict[str, str] = {}
        nested = parsed.get("request")  # a commit request holds its job's ids under "request"
        for source in (parsed, nested if isinstance(nested, dict) else {}):
            for field, keys in _MESSAGE_KEYS:
                value = next((source[k] for k in keys if isinstance(source.get(k), str) and source[k]), None)
                if value is not None and field not in found:
                    found[field] = value
        return found
    if body_is_table_id and text and len(text) <= 128 and not any(c.isspace() for c in text):
        return {"table_id": text}
    return {}


class StandardStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` (or ``sys.stdout``) is when a record is written, as Python's own last-resort
    handler does, so a test's captured stream, or one replaced after logging was set up, receives the lines.

    Args:
        stream_name: ``stderr`` (the text logs, the ``sleeper`` command) or ``stdout`` (the functions' JSON logs).
    """

    def __init__(self, stream_name: Literal["stderr", "stdout"] = "stderr") -> None:
        self._stream_name = stream_name
        super().__init__(getattr(sys, stream_name))

    @property
    def stream(self) -> Any:
        return getattr(sys, self._stream_name)

    @stream.setter
    def stream(self, value: Any) -> None:
        pass
