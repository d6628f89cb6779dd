"""Deleting rows by filter, and purging them: ``Table.delete`` and ``Table.purge`` (``sleeper delete``, ``sleeper
purge``).

:func:`delete` commits one DELETE_ROWS transaction (beyond Sleeper) holding the canonical text of a filter in the
language of ``sleeper.core.filter`` (keys and ranges are filters too: ``key = 5``, ``key between 1 and 9``). The rows
matching it among those committed before it are hidden from every read at once and removed physically by compaction;
rows committed after it are never touched (``sleeper.core.statestore.deletes``). A table with an Iceberg view has it
withdrawn first, as the view cannot hide rows; it cannot be published again while a delete is pending.

:func:`purge` compacts, in the calling process, every file still holding rows a delete hides
(:func:`sleeper.compaction.purge.purge_table`) and reports the deletes left.

:func:`overwrite` replaces every row of a table by new rows in one commit (OVERWRITE_FILES, beyond Sleeper): the new
rows are written as an ingest writes them, then one transaction drops every reference of the old files and adds the
new ones, so a reader sees all the old rows or all the new ones. See docs/usage/deletes.md.
"""

from __future__ import annotations

from typing import Any

from sleeper.compaction import DeleteLeft, PurgeResult, deletes_left, purge_table
from sleeper.core import Filter, FilterError, filter_of
from sleeper.core.properties import ICEBERG_NAME

__all__ = ["DeleteLeft", "PurgeResult", "delete", "overwrite", "pending_deletes", "purge"]

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
        from sleeper.iceberg import withdraw_views

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


def overwrite(table: Any, data: Any) -> int:
    """Replaces every row of the table by the given rows in one atomic commit; returns its transaction number.

    The rows (any form ``Table.ingest`` takes) are sorted and written under the table's data prefix in this process,
    on either runtime, then one OVERWRITE_FILES transaction drops every reference of the files the table had and adds
    the new files: a reader sees every old row or every new one, never a mix and never none. Rows committed while the
    files were written are replaced too. The old files are deleted by the garbage collector after its delay, so time
    travel to before the overwrite reads them until then. An Iceberg view is withdrawn first and published again after.

    Raises:
        IngestError: If the data is of no accepted form or does not suit the schema; nothing is committed.
        StateStoreError: If the commit is refused; the files written are deleted.
    """
    from sleeper.api.ingest_job import normalise_ingest_data
    from sleeper.core.statestore.transactions import AddFilesTransaction, OverwriteFilesTransaction
    from sleeper.ingest import as_batches, ingest_batches

    options = getattr(table.instance, "filesystem_options", None)
    committed: list[int] = []

    def write_and_commit() -> None:
        written: list[AddFilesTransaction] = []
        with table.instance.job_workspace() as workspace:
            result = ingest_batches(
                table.schema,
                table.properties,
                table.state_store,
                table.data_prefix,
                as_batches(normalise_ingest_data(data), table.schema, options=options),
                local_dir=workspace.directory,
                options=options,
                send_commit=written.append,
            )
        add = written[0] if written else AddFilesTransaction(files=())
        try:
            committed.append(table.state_store.add_transaction(OverwriteFilesTransaction(add=add)))
        except Exception:
            _delete_written(table, [f.location for f in result.files])
            raise

    if (table.properties.get(ICEBERG_NAME) or "").strip():
        from sleeper.iceberg import reinitialise_with_view

        reinitialise_with_view(table.instance, table, write_and_commit)
    else:
        write_and_commit()
    return committed[0]


def _delete_written(table: Any, locations: list[str]) -> None:
    from sleeper.io import delete_in_table, filesystem_path, sketches_path

    for location in locations:
        for path in (location, sketches_path(location)):
            try:
                delete_in_table(table.instance.filesystem, filesystem_path(path), table.data_prefix)
            except Exception:  # noqa: BLE001 - left to the orphan sweeper
                pass
