"""Standard ingest (spec 3.1): rows in, sorted files per leaf partition out, committed in one ADD_FILES.

:func:`ingest_batches` takes Arrow record batches in any order. Each batch is given the table's Arrow schema
(:func:`sleeper.io.arrow_schema.conform_batch`) and buffered in memory. When the buffer holds ``buffer_bytes`` the
rows are sorted by row keys then sort keys and spilled to a local temporary directory as an Arrow IPC file (a sorted
run). When the input ends the runs (and the rows still buffered) are merged (:func:`sleeper.io.merge.merge_sorted`),
the table's filters, aggregations and iterator applied (:class:`sleeper.iterators.pipeline.RowIterators`), and the
sorted stream is cut at the boundaries of the leaf partitions and written as Parquet data files (with sketches) under
the table's data prefix, as the table's ``sleeper.table.ingest.file.writing.strategy`` says:

* ``one_reference_per_leaf`` (the default): one file in the root partition's folder, with one exact reference per
  leaf partition that holds any of its rows (``onlyContainsDataForThisPartition`` only if there is one such leaf);
* ``one_file_per_leaf``: one file per leaf partition holding rows, in that leaf's folder.

The files are then committed with one ADD_FILES transaction carrying the job id, if any, and the hash of the job's
input files, if known: a job id already added from the same input is a no-op, from other input it is refused
(``JobIdReusedError``). Nothing loops over rows in Python: cutting at leaf boundaries compares whole key columns with
pyarrow.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs

from sleeper.core.faults import crash_point
from sleeper.core.jobs.paths import join_under
from sleeper.core.partition import Partition, PartitionTree
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.ingest.exceptions import IngestConfigError, IngestError
from sleeper.io.arrow_schema import arrow_schema, conform_batch
from sleeper.io.filesystem import FileSystemOptions, delete_unreferenced, resolve
from sleeper.io.merge import merge_sorted
from sleeper.io.parquet import ParquetSettings, SortedFileWriter, WrittenFile
from sleeper.io.sort import sort_table
from sleeper.iterators.pipeline import RowIterators
from sleeper.sketches import sketches_path

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties
    from sleeper.statestore.store import StateStore

__all__ = [
    "DEFAULT_BUFFER_BYTES",
    "FILE_WRITING_STRATEGIES",
    "FILE_WRITING_STRATEGY_PROPERTY",
    "ONE_FILE_PER_LEAF",
    "ONE_REFERENCE_PER_LEAF",
    "IngestResult",
    "LeafSplitter",
    "file_writing_strategy",
    "ingest_batches",
]

DEFAULT_BUFFER_BYTES = 256 * 1024 * 1024
"""How many bytes of Arrow data are buffered in memory before they are sorted and spilled to local disk."""

FILE_WRITING_STRATEGY_PROPERTY = "sleeper.table.ingest.file.writing.strategy"
ONE_REFERENCE_PER_LEAF = "one_reference_per_leaf"
ONE_FILE_PER_LEAF = "one_file_per_leaf"
FILE_WRITING_STRATEGIES = (ONE_REFERENCE_PER_LEAF, ONE_FILE_PER_LEAF)

_RUN_BATCH_ROWS = 65536
"""Rows per batch of a spilled run, and of the in-memory run at the end."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    """What an ingest wrote and committed.

    Attributes:
        rows_read: Rows given to the ingest.
        rows_written: Rows written to data files (fewer than read if filters or aggregations dropped or combined
            rows).
        files: The data files written, in key order.
        references: The file references committed, in key order of their leaf partitions.
        runs_spilled: How many sorted runs were spilled to local disk because the buffer filled.
        already_added: True if the job's files had been added before, so nothing was read, written or committed.
    """

    rows_read: int
    rows_written: int
    files: tuple[WrittenFile, ...] = field(default=())
    references: tuple[FileReference, ...] = field(default=())
    runs_spilled: int = 0
    already_added: bool = False


def file_writing_strategy(properties: TableProperties) -> str:
    """The table's ``sleeper.table.ingest.file.writing.strategy``, lower case.

    Raises:
        IngestConfigError: If it is neither ``one_reference_per_leaf`` nor ``one_file_per_leaf``.
    """
    value = (properties.get(FILE_WRITING_STRATEGY_PROPERTY) or ONE_REFERENCE_PER_LEAF).strip().lower()
    if value not in FILE_WRITING_STRATEGIES:
        raise IngestConfigError(
            f"{FILE_WRITING_STRATEGY_PROPERTY} must be one of {', '.join(FILE_WRITING_STRATEGIES)}, got {value!r}"
        )
    return value


def ingest_batches(
    table_schema: Schema,
    table_properties: TableProperties,
    state_store: StateStore,
    data_prefix: str,
    batches: Iterable[pa.RecordBatch],
    *,
    job_id: str | None = None,
    inputs_hash: str | None = None,
    now_ms: int | None = None,
    local_dir: str | Path | None = None,
    buffer_bytes: int = DEFAULT_BUFFER_BYTES,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    writer_thread: bool = True,
) -> IngestResult:
    """Sorts rows, writes them to data files per leaf partition and commits the files to the state store.

    Args:
        table_schema: The table schema.
        table_properties: The table properties (file writing strategy, Parquet settings, filters, aggregations).
        state_store: The table's state store: its partition tree is read once the input ends, and the files are
            committed to it.
        data_prefix: The URI under which the table's files live; files go to
            ``<data_prefix>/data/partition_<id>/<uuid>.parquet``.
        batches: The rows, in any order. Each batch must hold the table's columns (extra columns are dropped).
        job_id: The ingest job, if any. If its files were added before, nothing is done. The ADD_FILES transaction
            carries it, so the state store skips the commit if another run of the job committed in the meantime;
            the files this run wrote are then deleted and the result says ``already_added``.
        inputs_hash: The ``input_files_hash`` of the job's input files, if it read files: recorded with the job id,
            so the id cannot be reused for other files.
        now_ms: The time age-off filters measure from, in epoch milliseconds; now if omitted.
        local_dir: Where to make the temporary directory for sorted runs spilled to disk (created if missing); the
            system's temporary directory if omitted. The temporary directory is removed when the ingest ends.
        buffer_bytes: How many bytes of rows to hold in memory before sorting and spilling them.
        filesystem: A filesystem to write data files to instead of the one ``data_prefix`` names.
        options: How to reach S3.
        writer_thread: Encode Parquet on a background thread while the merge runs.

    Returns:
        The rows read and written, the files and the references committed.

    Raises:
        SchemaMismatchError: If a batch lacks a column of the table or holds it with another type (the error names
            the batch and the column); nothing is written.
        IngestConfigError: If the buffer size or the file writing strategy is invalid.
        IteratorConfigError: If the table's filters or aggregations are invalid, or its iterator cannot be loaded
            (``IteratorLoadError``, before anything is read).
        IteratorRunError: If the table's iterator fails or breaks its contract; nothing is committed.
        JobIdReusedError: If the job id's files were added before from other input files (checked before anything
            is written, and again by the commit); nothing is added.
        StateStoreError: If the table has no partitions or the commit does not fit the state store.
    """
    if buffer_bytes < 1:
        raise IngestConfigError(f"buffer_bytes must be positive, got {buffer_bytes}")
    strategy = file_writing_strategy(table_properties)
    if job_id is not None and state_store.job_already_added(job_id, inputs_hash):
        return IngestResult(rows_read=0, rows_written=0, already_added=True)
    processor = RowIterators.for_table(
        table_properties,
        table_schema,
        now_ms=now_ms if now_ms is not None else int(time.time() * 1000),
        writes=True,
    )
    settings = ParquetSettings.from_table_properties(table_properties)
    target = arrow_schema(table_schema)
    key_names = table_schema.key_names
    if local_dir is not None:
        Path(local_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sleeper-ingest-", dir=local_dir) as spill_dir:
        runs = _SortedRuns(target, key_names, buffer_bytes, Path(spill_dir))
        for batch in batches:
            runs.add(batch)
        crash_point("ingest.after_input_sorted")
        if runs.rows == 0:
            return IngestResult(rows_read=0, rows_written=0, runs_spilled=runs.spill_count)
        leaves = LeafSplitter(table_schema, state_store.partition_tree())
        streams = runs.finish()
        merged = merge_sorted(streams, key_names) if len(streams) > 1 else iter(streams[0])
        output = _FileOutput(
            table_schema,
            leaves,
            data_prefix.rstrip("/"),
            strategy,
            settings=settings,
            filesystem=filesystem,
            options=options,
            writer_thread=writer_thread,
        )
        output.write_all(processor.apply(merged))
    if output.references:
        crash_point("ingest.after_files_written")
        try:
            state_store.add_files(
                output.references, job_id=job_id, written_time=datetime.now(tz=UTC), inputs_hash=inputs_hash
            )
        except BaseException:
            output.delete_files()
            raise
        if job_id is not None and not _was_added(state_store, output.references[0]):
            # another run of the job committed first, so the state store skipped this commit: drop the files
            output.delete_files()
            return IngestResult(rows_read=runs.rows, rows_written=0, runs_spilled=runs.spill_count, already_added=True)
    return IngestResult(
        rows_read=runs.rows,
        rows_written=output.rows_written,
        files=tuple(output.files),
        references=tuple(output.references),
        runs_spilled=runs.spill_count,
    )


def _was_added(state_store: StateStore, reference: FileReference) -> bool:
    return any(r.filename == reference.filename for r in state_store.references_on_partition(reference.partition_id))


class _SortedRuns:
    """Buffers conformed batches and spills them as sorted Arrow IPC runs when the buffer fills."""

    def __init__(self, target: pa.Schema, key_names: Sequence[str], buffer_bytes: int, spill_dir: Path) -> None:
        self._target = target
        self._key_names = tuple(key_names)
        self._buffer_bytes = buffer_bytes
        self._spill_dir = spill_dir
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._spills: list[Path] = []
        self._batches_seen = 0
        self.rows = 0

    @property
    def spill_count(self) -> int:
        """The number of runs spilled to disk so far."""
        return len(self._spills)

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        parts = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
        self._batches_seen += 1
        for part in parts:
            conformed = conform_batch(part, self._target, where=f"ingest batch {self._batches_seen}")
            if conformed.num_rows == 0:
                continue
            self.rows += conformed.num_rows
            self._pending.append(conformed)
            self._pending_bytes += conformed.nbytes
            if self._pending_bytes >= self._buffer_bytes:
                self._spill()

    def _take_sorted(self) -> pa.Table:
        table = pa.Table.from_batches(self._pending, schema=self._target)
        self._pending = []
        self._pending_bytes = 0
        return sort_table(table, self._key_names)

    def _spill(self) -> None:
        table = self._take_sorted()
        path = self._spill_dir / f"run-{len(self._spills):06d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, self._target) as writer:
            for batch in table.to_batches(max_chunksize=_RUN_BATCH_ROWS):
                writer.write_batch(batch)
        self._spills.append(path)

    def finish(self) -> list[Iterable[pa.RecordBatch]]:
        """The sorted runs: the spilled ones (read back lazily), then the rows still in memory."""
        streams: list[Iterable[pa.RecordBatch]] = [_read_run(path) for path in self._spills]
        if self._pending:
            streams.append(self._take_sorted().to_batches(max_chunksize=_RUN_BATCH_ROWS))
        return streams


def _read_run(path: Path) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(str(path), "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


class LeafSplitter:
    """Splits sorted batches into the rows of each leaf partition, vectorised.

    When every split of the tree is on the first row key, a sorted batch is cut into contiguous slices at the
    leaves' lower bounds on that key (a comparison of the key column with each bound the batch spans). Otherwise
    each row's leaf is found with one mask per leaf region, and the rows of each leaf are filtered out in order.

    Args:
        schema: The table schema.
        tree: The table's partition tree.

    Attributes:
        root_id: The id of the root partition.
        partitions: The leaf partitions, in key order of the first row key.
    """

    def __init__(self, schema: Schema, tree: PartitionTree) -> None:
        self.root_id = tree.root.id
        self.partitions: list[Partition] = tree.leaves
        self.first_key = schema.row_key_names[0]
        self.boundaries: list[KeyValue] | None = None
        one_dimension = all(p.is_leaf or p.dimension == 0 for p in tree)
        if one_dimension:
            mins = [_range_bounds(p, self.first_key)[0] for p in self.partitions]
            if all(a < b for a, b in zip(mins, mins[1:], strict=False)):  # type: ignore[operator]
                self.boundaries = mins[1:]
        self._regions: list[list[tuple[str, KeyValue, KeyValue | None]]] = [
            [(f.name, *_range_bounds(p, f.name)) for f in schema.row_key_fields if p.region.range(f.name) is not None]
            for p in self.partitions
        ]

    @property
    def cuts_on_first_key(self) -> bool:
        """Whether sorted batches are cut at leaf bounds of the first row key (every split is on that key)."""
        return self.boundaries is not None

    def slices(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        """The rows of a batch per leaf partition.

        Args:
            batch: Rows sorted by row keys (the multi-dimensional case also takes unsorted rows).

        Returns:
            (index in ``partitions``, rows) for each leaf holding rows, in leaf order; the rows keep their order.

        Raises:
            IngestError: If a row lies in no leaf (the tree does not cover the key space).
        """
        n = batch.num_rows
        if n == 0:
            return []
        if len(self.partitions) == 1:
            return [(0, batch)]
        if self.boundaries is not None:
            return self._cut(batch)
        ids = self._leaf_ids(batch)
        return [(int(k), batch.filter(pa.array(ids == k))) for k in np.unique(ids)]

    def _cut(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        assert self.boundaries is not None
        column = batch.column(self.first_key)
        n = batch.num_rows
        low = bisect_right(self.boundaries, column[0].as_py())
        high = bisect_right(self.boundaries, column[n - 1].as_py())
        if low == high:
            return [(low, batch)]
        starts = [0]
        for k in range(low, high):
            bound = pa.scalar(self.boundaries[k], type=column.type)
            starts.append(int(pc.sum(pc.less(column, bound)).as_py() or 0))
        starts.append(n)
        return [
            (low + i, batch.slice(starts[i], starts[i + 1] - starts[i]))
            for i in range(len(starts) - 1)
            if starts[i + 1] > starts[i]
        ]

    def _leaf_ids(self, batch: pa.RecordBatch) -> np.ndarray:
        ids = np.full(batch.num_rows, -1, dtype=np.int64)
        for k, region in enumerate(self._regions):
            mask: pa.Array | None = None
            for name, low, high in region:
                column = batch.column(name)
                inside = pc.greater_equal(column, pa.scalar(low, type=column.type))
                if high is not None:
                    inside = pc.and_(inside, pc.less(column, pa.scalar(high, type=column.type)))
                mask = inside if mask is None else pc.and_(mask, inside)
            if mask is None:
                ids[:] = k
            else:
                ids[mask.to_numpy(zero_copy_only=False)] = k
        if (ids < 0).any():
            raise IngestError("a row lies in no leaf partition: the partition tree does not cover the key space")
        return ids


def _range_bounds(partition: Partition, field_name: str) -> tuple[KeyValue, KeyValue | None]:
    r = partition.region.range(field_name)
    if r is None:
        raise IngestError(f"partition {partition.id!r} has no range on row key {field_name!r}")
    return r.canonical_min, r.canonical_max


class _FileOutput:
    """Writes the processed sorted stream to data files as the strategy says, and makes the references."""

    def __init__(
        self,
        schema: Schema,
        leaves: LeafSplitter,
        data_prefix: str,
        strategy: str,
        *,
        settings: ParquetSettings,
        filesystem: pafs.FileSystem | None,
        options: FileSystemOptions | None,
        writer_thread: bool,
    ) -> None:
        self._schema = schema
        self._leaves = leaves
        self._prefix = data_prefix
        self._strategy = strategy
        self._settings = settings
        self._filesystem = filesystem
        self._options = options
        self._writer_thread = writer_thread
        self._open: dict[int, SortedFileWriter] = {}
        self._counts = np.zeros(len(leaves.partitions), dtype=np.int64)
        self._file_leaf: list[int] = []
        self.files: list[WrittenFile] = []
        self.references: list[FileReference] = []
        self.rows_written = 0

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        try:
            for batch in batches:
                self._write(batch)
            self._close_before(len(self._leaves.partitions))
        except BaseException:
            for writer in self._open.values():
                writer.abort()
            self._open.clear()
            self.delete_files()
            raise
        self.references = self._make_references()

    def _write(self, batch: pa.RecordBatch) -> None:
        pieces = self._leaves.slices(batch)
        if not pieces:
            return
        self.rows_written += batch.num_rows
        if self._strategy == ONE_REFERENCE_PER_LEAF:
            for leaf, rows in pieces:
                self._counts[leaf] += rows.num_rows
            self._writer(0).write(batch)
            return
        if self._leaves.boundaries is not None:
            self._close_before(pieces[0][0])
        for leaf, rows in pieces:
            self._counts[leaf] += rows.num_rows
            self._writer(leaf).write(rows)

    def _writer(self, key: int) -> SortedFileWriter:
        writer = self._open.get(key)
        if writer is None:
            if self._strategy == ONE_REFERENCE_PER_LEAF:
                partition_id = self._leaves.root_id
            else:
                partition_id = self._leaves.partitions[key].id
            location = join_under(self._prefix, "data", f"partition_{partition_id}", f"{uuid.uuid4()}.parquet")
            writer = SortedFileWriter(
                location,
                self._schema,
                settings=self._settings,
                filesystem=self._filesystem,
                options=self._options,
                writer_thread=self._writer_thread,
            )
            self._open[key] = writer
        return writer

    def _close_before(self, leaf: int) -> None:
        for key in sorted(k for k in self._open if k < leaf):
            written = self._open.pop(key).close()
            self.files.append(written)
            self._file_leaf.append(key)

    def _make_references(self) -> list[FileReference]:
        if not self.files:
            return []
        if self._strategy == ONE_REFERENCE_PER_LEAF:
            hit = [k for k in range(len(self._counts)) if self._counts[k] > 0]
            filename = self.files[0].location
            return [
                FileReference(
                    filename=filename,
                    partition_id=self._leaves.partitions[k].id,
                    number_of_rows=int(self._counts[k]),
                    only_contains_data_for_this_partition=len(hit) == 1,
                )
                for k in hit
            ]
        return [
            FileReference(
                filename=written.location,
                partition_id=self._leaves.partitions[leaf].id,
                number_of_rows=written.rows,
            )
            for written, leaf in zip(self.files, self._file_leaf, strict=True)
        ]

    def delete_files(self) -> None:
        """Deletes the data and sketches files closed so far (after a failure)."""
        for written in self.files:
            fs, path = resolve(written.location, self._options, filesystem=self._filesystem)
            delete_unreferenced(fs, path, self._prefix)
            delete_unreferenced(fs, sketches_path(path), self._prefix)
