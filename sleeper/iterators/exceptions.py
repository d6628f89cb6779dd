"""Errors raised by table filters and aggregations."""

from __future__ import annotations

from sleeper.core import SleeperError


class IteratorConfigError(SleeperError):
    """A filter or aggregation configuration is invalid; the message names the bad part.

    Attributes:
        part: The part of the configuration string (or the field) at fault, if there is one.
    """

    def __init__(self, message: str, *, part: str | None = None) -> None:
        super().__init__(message)
        self.part = part


class IteratorDataError(SleeperError):
    """Rows cannot be filtered or aggregated: a column is missing, has the wrong type or holds a null."""


class IteratorLoadError(IteratorConfigError):
    """An iterator class cannot be used: its module cannot be imported, it has no such class, the class is not an
    iterator, or its ``init`` rejected the configuration. Running the work again cannot help, so work failing with
    it is not retried."""


class IteratorRunError(SleeperError):
    """An iterator failed while transforming rows: its ``apply`` raised, or what it returned breaks the contract
    (not record batches, other columns than it was given where rows are written, or rows out of key order)."""
