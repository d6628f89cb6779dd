"""Errors of publishing a table's Iceberg view."""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError

__all__ = ["IcebergPublishError", "NotPublishableError", "PublishAbandonedError", "ViewOwnershipError"]


class IcebergPublishError(SleeperError):
    """A table's Iceberg view could not be published; nothing became current."""


class NotPublishableError(IcebergPublishError):
    """The table cannot be published as an Iceberg view: it names no Iceberg table, or its rows are not the rows of
    its files (an iterator, aggregations or filters change them when read)."""


class ViewOwnershipError(IcebergPublishError):
    """The Iceberg table the table names exists but is not this table's view (another table's, or made outside
    Sleeper): it is never overwritten."""


class PublishAbandonedError(IcebergPublishError):
    """A publish took too long to be safe (its hold might come after the garbage collector could delete a file it
    lists), or lost a race with another publish of the same table; the next publish starts again."""
