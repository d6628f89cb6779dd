"""Errors raised while running queries."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = ["QueryExecutionError"]


class QueryExecutionError(SleeperError):
    """A query cannot be run as asked, such as when it requests a field the table does not have."""
