"""Upserting rows: ``Table.upsert`` on a table with ``sleeper.table.upsert`` set (beyond Sleeper).

Such a table keeps one row per row key, the last written. Every read applies that rule after merging a leaf's files
(``sleeper.iterators.apply.last_per_row_key``): of rows sorted by row keys then sort keys, the last of each run of
equal row keys is kept.

* **With a sort key**, the last written is the row with the greatest sort key, so an upsert is an ingest: the rule
  hides the rest at every read, and compaction removes them.
* **Without a sort key**, the last written is the last committed. :func:`upsert` keeps the last occurrence of each row
  key within the data, writes the files as an ingest does, then commits them in one UPSERT_FILES transaction that also
  records a pending delete (``sleeper.core.statestore.deletes``) hiding, in every file referenced at that moment, the
  rows whose row key the new files hold: the filter ``key in (...)`` (``(a = .. and b = ..) or ...`` for several row
  key fields). Readers see the new rows with the old ones hidden, or neither. Data of more than
  :data:`KEYS_PER_COMMIT` distinct keys is committed in several such transactions in key order, each atomic, as the
  filter travels in each leaf query message of the files it hides rows of; each leaves out of its delete the files
  of the same upsert's earlier commits, which hold none of its keys.

``Table.ingest`` on an upsert table without a sort key calls :func:`upsert`; the other ingest paths (ingest jobs,
the batcher) refuse such a table with :class:`UpsertRequiredError` rather than keep duplicates. See
docs/usage/upserts.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import And, Compare, Filter, InList, Or, Schema, SleeperError
from sleeper.core.properties import ICEBERG_NAME
from sleeper.ingest import IngestResult, UpsertRequiredError
from sleeper.iterators import table_upserts

__all__ = [
    "KEYS_PER_COMMIT",
    "UpsertNotEnabledError",
    "UpsertRequiredError",
    "keys_filter",
    "last_per_key",
    "upsert",
    "upsert_rows",
]

KEYS_PER_COMMIT = 2000
"""The most distinct row keys one UPSERT_FILES transaction hides: its filter lists them, and is carried in the leaf
query and export messages of the files it hides rows of, so it is kept to tens of kilobytes."""


class UpsertNotEnabledError(SleeperError):
    """``Table.upsert`` on a table that does not keep one row per row key (``sleeper.table.upsert`` unset)."""


def last_per_key(rows: pa.Table, row_key_names: list[str]) -> pa.Table:
    """The last occurrence of each row key in some rows, in their order (vectorised: a group-by on the row keys
    keeping each key's greatest row index)."""
    if rows.num_rows <= 1:
        return rows
    index = "__sleeper_row__"
    keyed = rows.select(row_key_names).append_column(index, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    last = keyed.group_by(row_key_names, use_threads=False).aggregate([(index, "max")]).column(f"{index}_max")
    if len(last) == rows.num_rows:
        return rows
    last_array = last.combine_chunks()
    return rows.take(last_array.take(pc.sort_indices(last_array)))


def keys_filter(rows: pa.Table, schema: Schema) -> Filter:
    """The filter matching the row keys of some rows: ``key in (...)`` for one row key field, else an ``or`` of the
    ``and`` of each key's fields."""
    names = list(schema.row_key_names)
    if len(names) == 1:
        return InList(names[0], tuple(rows.column(names[0]).to_pylist()))
    columns = [rows.column(n).to_pylist() for n in names]
    return Or(
        tuple(
            And(tuple(Compare(n, "=", v) for n, v in zip(names, values, strict=True)))
            for values in zip(*columns, strict=True)
        )
    )


def upsert(table: Any, data: Any) -> list[int]:
    """Writes rows to an upsert table, each replacing the row of its row key; returns the transaction numbers of the
    commits. See :func:`upsert_rows`."""
    return upsert_rows(table, data)[0]


def upsert_rows(table: Any, data: Any) -> tuple[list[int], IngestResult]:
    """Writes rows to an upsert table, each replacing the row of its row key; returns the transaction numbers of the
    commits (one per :data:`KEYS_PER_COMMIT` keys without a sort key; the ingest's, one, with one) and what was
    written (rows read: those given; rows written: those left after keeping the last of each key).

    The rows (any form ``Table.ingest`` takes) are read into memory, the last occurrence of each row key kept (on a
    table without a sort key; with one, every row is written and the greatest sort key wins), and written under the
    table's data prefix in this process, on either runtime. A table with an Iceberg view has it withdrawn first, as
    the view cannot apply the upsert.

    Raises:
        UpsertNotEnabledError: If the table does not set ``sleeper.table.upsert``; nothing is written.
        WithdrawalError: If the table's Iceberg view could not be withdrawn; nothing is committed.
        IngestError: If the data is of no accepted form or does not suit the schema; nothing is committed.
        StateStoreError: If a commit is refused; its files are deleted.
    """
    if not table_upserts(table.properties):
        raise UpsertNotEnabledError(
            f"table {table.name} does not keep one row per row key: set sleeper.table.upsert=true on it (sleeper "
            "table properties --set) to upsert, or use ingest to add rows"
        )
    from sleeper.api.deletes import _delete_written
    from sleeper.api.ingest_job import normalise_ingest_data
    from sleeper.core.statestore.transactions import AddFilesTransaction, UpsertFilesTransaction
    from sleeper.ingest import as_batches, ingest_batches

    schema: Schema = table.schema
    options = getattr(table.instance, "filesystem_options", None)
    batches = list(as_batches(normalise_ingest_data(data), schema, options=options))
    if not batches:
        return [], IngestResult()
    given = pa.Table.from_batches(batches)
    # With a sort key the greatest sort key wins whatever the order in the data: the rule keeps it at every read
    rows = given if schema.sort_key_names else last_per_key(given, list(schema.row_key_names))
    if (table.properties.get(ICEBERG_NAME) or "").strip():
        from sleeper.iceberg import withdraw_views

        withdraw_views(table.instance, table, "rows are being upserted, which an Iceberg view cannot apply")
    committed: list[int] = []
    earlier: list[str] = []  # files of this upsert's earlier commits: they hold none of a later commit's keys
    total = IngestResult(rows_read=given.num_rows)
    sort = [(name, "ascending") for name in schema.row_key_names]
    rows = rows if schema.sort_key_names else rows.sort_by(sort)
    step = KEYS_PER_COMMIT if not schema.sort_key_names else max(rows.num_rows, 1)
    for start in range(0, rows.num_rows, step):
        chunk = rows.slice(start, step)
        written: list[AddFilesTransaction] = []
        with table.instance.job_workspace() as workspace:
            result = ingest_batches(
                schema,
                table.properties,
                table.state_store,
                table.data_prefix,
                chunk.to_batches(),
                local_dir=workspace.directory,
                options=options,
                send_commit=written.append,
                upsert=True,
            )
        total = dataclasses.replace(
            total,
            rows_written=total.rows_written + result.rows_written,
            files=total.files + result.files,
            references=total.references + result.references,
        )
        if not written:
            continue
        transaction: Any = written[0]
        if not schema.sort_key_names:
            transaction = UpsertFilesTransaction(
                add=written[0], filter=str(keys_filter(chunk, schema)), unaffected=tuple(earlier)
            )
            earlier.extend(f.filename for f in written[0].files)
        try:
            committed.append(table.state_store.add_transaction(transaction))
        except Exception:
            _delete_written(table, [f.location for f in result.files])
            raise
    return committed, total
