"""Errors of publishing a table's Iceberg view."""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.core import SleeperError

__all__ = [
    "IcebergPublishError",
    "NotPublishableError",
    "PublishAbandonedError",
    "RulesRefusedError",
    "ViewOwnershipError",
    "Withdrawal",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Withdrawal:
    """What withdrawing a table's view did.

    Attributes:
        table_name: The Sleeper table.
        reason: Why the view was withdrawn.
        dropped: The Iceberg tables dropped from the catalog, ``namespace.table``.
        deleted_files: Metadata files and trimmed copies deleted under the table's Iceberg directory.
        released_holds: Holds released (the garbage collector may now delete the files they held).
    """

    table_name: str
    reason: str
    dropped: tuple[str, ...] = ()
    deleted_files: int = 0
    released_holds: int = 0

    @property
    def withdrew_anything(self) -> bool:
        """Whether there was a view (or anything of one) to withdraw."""
        return bool(self.dropped or self.deleted_files or self.released_holds)

    def merged(self, other: Withdrawal) -> Withdrawal:
        """This withdrawal followed by another of the same table."""
        return Withdrawal(
            table_name=self.table_name,
            reason=self.reason,
            dropped=tuple(dict.fromkeys(self.dropped + other.dropped)),
            deleted_files=self.deleted_files + other.deleted_files,
            released_holds=self.released_holds + other.released_holds,
        )

    def describe(self) -> str:
        """One line saying what was withdrawn and why (empty if there was nothing to withdraw)."""
        if not self.withdrew_anything:
            return ""
        views = ", ".join(self.dropped) if self.dropped else "none in the catalog"
        return (
            f"table {self.table_name}: Iceberg view withdrawn ({views} dropped, {self.deleted_files} metadata and "
            f"trimmed files deleted, {self.released_holds} holds released) because {self.reason}"
        )


class WithdrawalError(IcebergPublishError):
    """A table's Iceberg view could not be withdrawn (the catalog or the files could not be reached, or the
    ``iceberg`` extra is missing): what needed it withdrawn did not happen (an edit of the properties is not saved, a
    reinitialisation does not start)."""
