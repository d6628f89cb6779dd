"""Errors of publishing a table's Iceberg view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core.exceptions import SleeperError

if TYPE_CHECKING:
    from sleeper.iceberg.withdrawal import Withdrawal

__all__ = [
    "IcebergPublishError",
    "NotPublishableError",
    "PublishAbandonedError",
    "RulesRefusedError",
    "ViewOwnershipError",
    "WithdrawalError",
]


class IcebergPublishError(SleeperError):
    """A table's Iceberg view could not be published; nothing became current."""


class NotPublishableError(IcebergPublishError):
    """The table cannot be published as an Iceberg view: it names no Iceberg table, or its rows are not the rows of
    its files (an iterator, aggregations or filters change them when read)."""


class RulesRefusedError(NotPublishableError):
    """The table sets an iterator, aggregations or filters, so it has no view: it is not published, and whatever it
    had published was withdrawn (``withdrawal`` says what; :mod:`sleeper.iceberg.withdrawal`)."""

    def __init__(self, message: str, withdrawal: Withdrawal) -> None:
        super().__init__(message)
        self.withdrawal = withdrawal


class ViewOwnershipError(IcebergPublishError):
    """The Iceberg table the table names exists but is not this table's view (another table's, or made outside
    Sleeper): it is never overwritten."""


class PublishAbandonedError(IcebergPublishError):
    """A publish took too long to be safe (its hold might come after the garbage collector could delete a file it
    lists), or lost a race with another publish of the same table; the next publish starts again."""


class WithdrawalError(IcebergPublishError):
    """A table's Iceberg view could not be withdrawn (the catalog or the files could not be reached, or the
    ``iceberg`` extra is missing): what needed it withdrawn did not happen (an edit of the properties is not saved, a
    reinitialisation does not start)."""
