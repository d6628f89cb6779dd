"""Errors raised by table filters and aggregations."""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError


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
