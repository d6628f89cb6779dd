"""Running one leaf partition export: the leaf's files read limited to its region, merged, passed through the
table's iterators and written as one sorted Parquet file (Sleeper's ``ECSBulkExportTaskRunner``, which runs the
compaction path on the leaf's files with the table's iterators and no sketches).

Every file is read only within the leaf's region (row groups outside it are skipped by their statistics), the
sorted streams are merged by row keys then sort keys in the bounded-memory merge of :mod:`sleeper.io.merge`, the
table's filters and aggregations are applied to the merged stream, and the rows are written with the table's Parquet
settings (row group size, compression, dictionary and statistics settings) through
:class:`sleeper.io.parquet.SortedFileWriter`, without a sketches file. No row is handled in Python.

A file outside the table's data prefix is refused before anything is read (``FileOutsideTableError``): a leaf export
message can only make the task read the table's own files. The output is overwritten if it exists; if anything fails,
what was written of it is deleted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from sleeper.bulk_export.model import LeafPartitionExport
from sleeper.core.schema import Schema
from sleeper.core.statestore.locations import check_file_in_table
from sleeper.io.filesystem import FileSystemOptions
from sleeper.io.key_ranges import KeyBounds
from sleeper.io.merge import DEFAULT_BATCH_ROWS, RowCounter, merge_sorted
from sleeper.io.parquet import ParquetSettings, SortedFileWriter, read_sorted
from sleeper.iterators.pipeline import RowIterators
from sleeper.statestore.tables import SleeperTable

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
) -> Iterator[pa.RecordBatch]:
    """The rows of a leaf export's files within its regions and partition, merged into one sorted stream (before
    the table's iterators)."""
    bounds = _bounds(export)
    if not bounds or not export.files:
        return iter(())
    streams: list[Iterable[pa.RecordBatch]] = [
        read_sorted(name, schema, regions=bounds, options=options, batch_size=batch_rows, use_threads=False)
        for name in export.files
    ]
    return merge_sorted(streams, schema.key_names, batch_rows=batch_rows, prefetch_threads=min(1, len(streams) - 1))


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
    """Exports one leaf partition to one sorted Parquet file.

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
    merged = export_batches(export, schema, options=options, batch_rows=batch_rows)
    with SortedFileWriter(
        output,
        schema,
        settings=ParquetSettings.from_table_properties(table.properties),
        options=options,
        sketches=False,
        writer_thread=writer_thread,
    ) as writer:
        for batch in processor.apply(counter.count(merged)):
            writer.write(batch)
    return ExportResult(
        sub_export_id=export.sub_export_id, output=output, rows_read=counter.rows, rows_written=writer.result.rows
    )
