"""Deleting rows by filter, and purging them: ``Table.delete`` and ``Table.purge`` (``sleeper delete``, ``sleeper
purge``).

:func:`delete` commits one DELETE_ROWS transaction (beyond Sleeper) holding the canonical text of a filter in the
language of ``sleeper.core.filter`` (keys and ranges are filters too: ``key = 5``, ``key between 1 and 9``). The rows
matching it among those committed before it are hidden from every read at once and removed physically by compaction;
rows committed after it are never touched (``sleeper.core.statestore.deletes``). A table with an Iceberg view has it
withdrawn first, as the view cannot hide rows; it cannot be published again while a delete is pending.

:func:`purge` compacts, in the calling process, every file still holding rows a delete hides
(:func:`sleeper.compaction.purge.purge_table`) and reports the deletes left. See docs/usage/deletes.md.
"""

from __future__ import annotations

from typing import Any

from sleeper.compaction.purge import DeleteLeft, PurgeResult, deletes_left, purge_table
from sleeper.core.filter import Filter, FilterError, filter_of
from sleeper.core.properties.table import ICEBERG_NAME

__all__ = ["DeleteLeft", "PurgeResult", "delete", "pending_deletes", "purge"]

NO_FILTER = (
    'a delete needs a filter saying which rows to delete (for example --where "key < 100"); to remove every row '
    "use 'sleeper table truncate' (table.truncate())"
)


def delete(table: Any, where: str | Filter | None) -> int:
    """Deletes the rows of a table matching a filter, in one atomic commit; returns its transaction number.

    Args:
        table: A :class:`sleeper.api.table.Table` of either runtime.
        where: The filter (text or a :mod:`sleeper.core.filter` model) the deleted rows match.

    Raises:
        FilterError: If the filter is missing or empty (use ``truncate`` to remove every row), or does not suit the
            schema; nothing is committed.
        WithdrawalError: If the table's Iceberg view could not be withdrawn; nothing is committed.
    """
    if where is None or (isinstance(where, str) and not where.strip()):
        raise FilterError(NO_FILTER)
    text = str(filter_of(where, table.schema))
    if (table.properties.get(ICEBERG_NAME) or "").strip():
        from sleeper.iceberg.withdrawal import withdraw_views

        withdraw_views(table.instance, table, "rows are being deleted, which an Iceberg view cannot hide")
    number: int = table.state_store.delete_rows(text)
    return number


def pending_deletes(table: Any) -> tuple[DeleteLeft, ...]:
    """The table's pending deletes with the files each still lists (none once purged and garbage collected)."""
    return deletes_left(table.state_store)


def purge(table: Any, *, max_rounds: int = 10) -> PurgeResult:
    """Compacts every file of the table holding rows a pending delete hides, in this process; returns what it ran
    and the deletes left (:attr:`PurgeResult.done` once no referenced file holds a deleted row)."""
    options = getattr(table.instance, "filesystem_options", None)
    return purge_table(table, table.instance.compaction_job_tracker, options=options, max_rounds=max_rounds)
