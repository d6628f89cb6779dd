"""Running one leaf partition export: the leaf's files read limited to its region, merged, passed through the
table's iterators and written as one sorted Parquet file (Sleeper's ``ECSBulkExportTaskRunner``, which runs the
compaction path on the leaf's files with the table's iterators and no sketches).

Every file is read only within the leaf's region (row groups outside it are skipped by their statistics), the
sorted streams are merged by row keys then sort keys in the bounded-memory merge of :mod:`sleeper.io.merge`, the
table's filters and aggregations are applied to the merged stream, and the rows are written with the table's Parquet
settings (row group size, compression, dictionary and statistics settings) through
:class:`sleeper.io.parquet.SortedFileWriter`, without a sketches file. No row is handled in Python.

An export's filter (:mod:`sleeper.core.filter`) applies after the table's rules, batch by batch, as a query's does
(``sleeper.query.executor.run_leaf_query``): row groups no matching row can be in are skipped by their statistics
first, on the row keys always and on every column when the table's rules only drop rows (no aggregation, no
iterator), so skipping never changes what is written.

The rows of a file that the table's pending row deletes hide (``LeafPartitionExport.pending_deletes``) are left out
as it is read, before the merge, as a query leaves them out (docs/usage/deletes.md).

A file outside the table's data prefix is refused before anything is read (``FileOutsideTableError``): a leaf export
message can only make the task read the table's own files. The output is overwritten if it exists; if anything fails,
what was written of it is deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from sleeper.bulk_export.model import LeafPartitionExport
from sleeper.core import Filter, Schema
from sleeper.core.statestore import check_file_in_table
from sleeper.io import (
    DEFAULT_BATCH_ROWS,
    FileSystemOptions,
    KeyBounds,
    ParquetSettings,
    RowCounter,
    SortedFileReader,
    SortedFileWriter,
    column_positions,
    filter_batch,
    merge_sorted,
    row_group_may_match,
    to_expression,
)
from sleeper.iterators import DeletedRows, RowIterators
from sleeper.statestore import SleeperTable

__all__ = ["ExportResult", "export_batches", "run_leaf_export"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportResult:
    """What one leaf export did.

    Attributes:
        sub_export_id: The leaf export.
        output: The file written.
        rows_read: Rows of the leaf's files within its region, before the table's iterators.
        rows_written: Rows written.
    """

    sub_export_id: str
    output: str
    rows_read: int
    rows_written: int


def _bounds(export: LeafPartitionExport) -> list[list[KeyBounds]]:
    out: list[list[KeyBounds]] = []
    for region in export.regions:
        inside = region.intersection(export.partition_region)
        if inside is not None:
            out.append([KeyBounds(name, r.canonical_min, r.canonical_max) for name, r in inside.ranges.items()])
    return out


def export_batches(
    export: LeafPartitionExport,
    schema: Schema,
    *,
    options: FileSystemOptions | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    statistics_columns: Collection[str] = (),
) -> Iterator[pa.RecordBatch]:
    """The rows of a leaf export's files within its regions and partition, merged into one sorted stream (before
    the table's iterators and the export's filter).

    Args:
        export: The leaf export.
        schema: The table's schema.
        options: How to reach S3.
        batch_rows: The most rows in a batch read and merged.
        statistics_columns: With an export filter, the columns whose row group statistics may skip a row group the
            filter rules out (none: every row group in the regions is read).
    """
    bounds = _bounds(export)
    if not bounds or not export.files:
        return iter(())
    skip = export.filter if export.filter is not None and statistics_columns else None
    hides = DeletedRows.by_file(dict(export.pending_deletes), schema) if export.pending_deletes else {}
    streams: list[Iterable[pa.RecordBatch]] = [
        _read(name, schema, bounds, batch_rows, options, skip, frozenset(statistics_columns), hides.get(name))
        for name in export.files
    ]
    return merge_sorted(streams, schema.key_names, batch_rows=batch_rows, prefetch_threads=min(1, len(streams) - 1))


def _read(
    location: str,
    schema: Schema,
    bounds: Sequence[Sequence[KeyBounds]],
    batch_rows: int,
    options: FileSystemOptions | None,
    row_filter: Filter | None,
    columns: frozenset[str],
    hide: DeletedRows | None = None,
) -> Iterator[pa.RecordBatch]:
    """One file's rows in the regions, skipping the row groups the filter's test of their statistics rules out and
    leaving out the rows pending deletes hide; the file is opened at the first batch asked for and closed when the
    read ends."""
    with SortedFileReader(location, schema, options=options) as reader:
        keep = None if row_filter is None else _keep(reader, row_filter, columns)
        plan = reader.plan(bounds, keep_row_group=keep)
        batches = reader.read_plan(plan, batch_size=batch_rows, use_threads=False)
        yield from batches if hide is None else hide.apply(batches)


def _keep(reader: SortedFileReader, row_filter: Filter, columns: frozenset[str]) -> Callable[[int], bool]:
    metadata = reader.parquet_metadata
    positions = column_positions(metadata)

    def keep(group: int) -> bool:
        return row_group_may_match(metadata, group, row_filter, columns, positions)

    return keep


def run_leaf_export(
    export: LeafPartitionExport,
    table: SleeperTable,
    output: str,
    *,
    now_ms: int | None = None,
    options: FileSystemOptions | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    writer_thread: bool = True,
) -> ExportResult:
    """Exports one leaf partition to one sorted Parquet file: its rows through the table's rules, then the export's
    filter if it has one.

    Args:
        export: The leaf export.
        table: Its table.
        output: Where to write (overwritten if it exists).
        now_ms: The time age-off filters measure from; now if None.
        options: How to reach S3.
        batch_rows: The most rows in a batch read and merged.
        writer_thread: Encode row groups on a background thread.

    Raises:
        FileOutsideTableError: If a file of the export is not under the table's data prefix.
        IteratorConfigError: If the table's filters or aggregations do not suit its schema, or its iterator cannot be
            loaded (``IteratorLoadError``).
        IteratorRunError: If the table's iterator fails or breaks its contract.
        MissingFileError: If a file does not exist.
    """
    for name in export.files:
        check_file_in_table(name, table.data_prefix, table_id=table.table_id)
    schema = table.schema
    processor = RowIterators.for_table(
        table.properties, schema, now_ms=now_ms if now_ms is not None else int(time.time() * 1000), writes=True
    )
    counter = RowCounter()
    statistics: Collection[str] = ()
    if export.filter is not None:
        statistics = schema.field_names if processor.only_drops_rows else schema.key_names
    merged = export_batches(export, schema, options=options, batch_rows=batch_rows, statistics_columns=statistics)
    rows: Iterable[pa.RecordBatch] = processor.apply(counter.count(merged))
    if export.filter is not None:
        rows = _filtered(rows, to_expression(export.filter, schema))
    with SortedFileWriter(
        output,
        schema,
        settings=ParquetSettings.from_table_properties(table.properties),
        options=options,
        sketches=False,
        writer_thread=writer_thread,
    ) as writer:
        for batch in rows:
            writer.write(batch)
    return ExportResult(
        sub_export_id=export.sub_export_id, output=output, rows_read=counter.rows, rows_written=writer.result.rows
    )


def _filtered(batches: Iterable[pa.RecordBatch], expression: pc.Expression) -> Iterator[pa.RecordBatch]:
    """The rows of each batch the filter's expression holds for."""
    for batch in batches:
        batch = filter_batch(batch, expression)
        if batch.num_rows:
            yield batch
