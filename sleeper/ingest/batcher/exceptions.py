"""Errors of the ingest batcher."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = [
    "BatcherError",
    "BatcherFileNotFoundError",
    "BatcherStoreError",
    "BatcherTableNotFoundError",
    "InvalidSubmitRequestError",
    "SubmitRequestError",
]


class BatcherError(SleeperError):
    """The ingest batcher could not do what was asked."""


class SubmitRequestError(BatcherError):
    """A submit request that can never be stored, however often it is retried.

    The submit handler sends such a request to the submit queue's dead-letter queue instead of retrying it, as
    Sleeper's submitter Lambda does.

    Attributes:
        json_message: The request as received, if known.
    """

    def __init__(self, message: str, *, json_message: str | None = None) -> None:
        super().__init__(message)
        self.json_message = json_message


class InvalidSubmitRequestError(SubmitRequestError):
    """The request is not ``{"tableName": ..., "files": [...]}`` JSON, or a path in it is unsafe."""


class BatcherTableNotFoundError(SubmitRequestError):
    """The request names a table that does not exist."""


class BatcherFileNotFoundError(SubmitRequestError):
    """A path in the request names no file: nothing exists there, or it is a directory holding no files."""


class BatcherStoreError(BatcherError):
    """The batcher store could not be read or written (e.g. its database is unavailable)."""
