"""Errors raised when a queue message or job file cannot be read (docs/reliability.md, row E, bad input).

Every error names the JSON path of the bad value (``$`` is the whole document, ``$.files[2]`` the third file), so a
handler can report it to a job tracker as "rejected" with the path, and never retry the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sleeper.core.exceptions import SerDeError


class MessageError(SerDeError):
    """A message could not be read or is not valid.

    Args:
        reason: What is wrong with the value at ``path``.
        path: The JSON path of the bad value.

    Attributes:
        path: The JSON path of the bad value.
        reason: What is wrong with it.
        job_id: The job the message was for, where known (for ingest and bulk import, an id is supplied for messages
            that do not carry one, so the rejection can still be tracked).
        json_message: The raw message, where known, for the tracker's rejection record.
    """

    def __init__(self, reason: str, *, path: str = "$") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.job_id: str | None = None
        self.json_message: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep every attribute when pickled (e.g. sent back from a worker process); the default would call the
        # constructor with the formatted message only.
        return (_restore, (type(self), self.args, self.__dict__))


class MalformedJsonError(MessageError):
    """The message is not JSON (or not UTF-8 text, or nested too deeply to read)."""


class MissingFieldError(MessageError):
    """A required field is absent or null."""


class InvalidFieldError(MessageError):
    """A field has the wrong JSON type or a value outside its allowed set (valid JSON of the wrong shape)."""


class UnknownFieldError(MessageError):
    """An object holds a field this message type does not define."""


class UnknownTableError(MessageError):
    """The message names a table that does not exist."""


class UnsafePathError(MessageError):
    """A file path or object key could escape its location: path traversal, an absolute local path where only S3 is
    allowed, a backslash, a control character, an unexpected scheme or bucket, or a key outside its table's prefix.
    Raised before any I/O is done with the path."""


class UnsafeIdError(UnsafePathError):
    """An id that becomes part of a file name, object key or tracker key breaks the safe id rule
    (``sleeper.core.paths.SAFE_ID_RULE``), so it could escape its place or collide with another id's keys."""


class InvalidJobIdError(MessageError):
    """A job id breaks the rules for its job type (bulk import: lowercase alphanumerics and dashes, at most 63)."""


class QueryValidationError(MessageError):
    """A query cannot be run: bad shape, unknown type, unknown table or field, wrong key type, min > max, or too many
    regions. The query tracker records it as failed.

    Args:
        reason: What is wrong.
        path: The JSON path of the bad value.
        query_id: The query's id, if it could be read.
        status_report_destinations: Where the query asked for status reports, if they could be read, so the failure
            can be reported there too.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str = "$",
        query_id: str | None = None,
        status_report_destinations: Sequence[Mapping[str, str]] = (),
    ) -> None:
        super().__init__(reason, path=path)
        self.query_id = query_id
        self.status_report_destinations: tuple[Mapping[str, str], ...] = tuple(status_report_destinations)
        prefix = "Query validation failed" + (f' for query "{query_id}"' if query_id is not None else "")
        self.args = (f"{prefix}: {path}: {reason}",)


def _restore(cls: type[MessageError], args: tuple[Any, ...], state: dict[str, Any]) -> MessageError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error
