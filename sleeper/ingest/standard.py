"""Standard ingest: rows in, sorted files per leaf partition out, committed in one ADD_FILES.

:func:`ingest_batches` takes Arrow record batches in any order. Each batch is given the table's Arrow schema
(:func:`sleeper.io.arrow_types.conform_batch`) and held in memory, within the limits Sleeper's ingest settings give
(:class:`sleeper.ingest.local_store.IngestLimits`: ``sleeper.ingest.arrow.*``, or ``sleeper.ingest.memory.max.batch
.size`` and ``sleeper.ingest.max.local.rows`` for the ``arraylist`` row batch type). When memory is full the rows are
sorted by row keys then sort keys and written to a local temporary directory as an Arrow IPC file (a sorted run).
When the local runs are full, and when the input ends, the runs and the rows in memory are merged
(:func:`sleeper.io.merge.merge_sorted`), the table's filters, aggregations and iterator applied
(:class:`sleeper.iterators.pipeline.RowIterators`), and the sorted stream is cut at the boundaries of the leaf
partitions and written as Parquet data files (with sketches) under the table's data prefix, as the table's
``sleeper.table.ingest.file.writing.strategy`` says; the local runs are then deleted. So a job of any size needs
memory and local disk within the settings: only the data files grow with it.

* ``one_reference_per_leaf`` (the default): one file in the root partition's folder per write, with one exact
  reference per leaf partition that holds any of its rows (``onlyContainsDataForThisPartition`` only if there is
  one such leaf);
* ``one_file_per_leaf``: one file per leaf partition holding rows, in that leaf's folder, per write.

The partition tree is read before the first write and again before a later write once
``sleeper.ingest.partition.refresh.period`` has passed. Every file a job wrote is committed with one ADD_FILES
transaction at its end, carrying the job id, if any, and the hash of the job's input files, if known: a job id
already added from the same input is a no-op, from other input it is refused (``JobIdReusedError``). Sleeper commits
each write separately, so a job that fails after a write leaves those rows in the table and a retry adds them again;
one commit per job keeps a job all or nothing and a redelivered job's rows once. With ``send_commit`` (asynchronous
commits) the transaction goes to the state store committer instead. Nothing loops over rows in Python: cutting at
leaf boundaries compares whole key columns with pyarrow.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs

from sleeper.core import KeyValue, Partition, PartitionTree, Schema, crash_point, join_under
from sleeper.core.statestore import FileReference
from sleeper.core.statestore.transactions import AddFilesTransaction
from sleeper.ingest.exceptions import IngestConfigError, IngestError, UpsertRequiredError
from sleeper.ingest.local_store import IngestLimits, LocalStore
from sleeper.io import (
    FileSystemOptions,
    ParquetSettings,
    SortedFileWriter,
    WrittenFile,
    arrow_schema,
    delete_unreferenced,
    merge_sorted,
    resolve,
    sketches_path,
)
from sleeper.iterators import RowIterators, table_upserts
from sleeper.statestore import commit_new_files

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties
    from sleeper.statestore import StateStore

__all__ = [
    "FILE_WRITING_STRATEGIES",
    "FILE_WRITING_STRATEGY_PROPERTY",
    "ONE_FILE_PER_LEAF",
    "ONE_REFERENCE_PER_LEAF",
    "IngestLimits",
    "IngestResult",
    "LeafSplitter",
    "file_writing_strategy",
    "ingest_batches",
]

FILE_WRITING_STRATEGY_PROPERTY = "sleeper.table.ingest.file.writing.strategy"
ONE_REFERENCE_PER_LEAF = "one_reference_per_leaf"
ONE_FILE_PER_LEAF = "one_file_per_leaf"
FILE_WRITING_STRATEGIES = (ONE_REFERENCE_PER_LEAF, ONE_FILE_PER_LEAF)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    """What an ingest wrote and committed.

    Attributes:
        rows_read: Rows given to the ingest.
        rows_written: Rows written to data files (fewer than read if filters or aggregations dropped or combined
            rows).
        files: The data files written, in key order.
        references: The file references committed (or sent to the committer), in key order of their leaf
            partitions within each write to the table.
        runs_spilled: How many sorted runs were written to local disk because memory filled.
        table_writes: How many times the rows held locally were merged and written to the table as data files.
        peak_local_bytes: The most bytes the sorted runs held on local disk at once.
        already_added: True if the job's files had been added before, so nothing was read, written or committed.
        commit_sent: True if the ADD_FILES transaction was sent to the state store committer rather than committed.
    """

    rows_read: int = 0
    rows_written: int = 0
    files: tuple[WrittenFile, ...] = field(default=())
    references: tuple[FileReference, ...] = field(default=())
    runs_spilled: int = 0
    table_writes: int = 0
    peak_local_bytes: int = 0
    already_added: bool = False
    commit_sent: bool = False


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
    limits: IngestLimits | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    writer_thread: bool = True,
    send_commit: Callable[[AddFilesTransaction], None] | None = None,
    task_id: str | None = None,
    job_run_id: str | None = None,
    upsert: bool = False,
) -> IngestResult:
    """Sorts rows, writes them to data files per leaf partition and commits the files to the state store.

    Args:
        table_schema: The table schema.
        table_properties: The table properties (file writing strategy, Parquet settings, filters, aggregations), with
            its instance's properties (the ingest limits).
        state_store: The table's state store: its partition tree is read before the first write to the table (and
            again before a later write once ``sleeper.ingest.partition.refresh.period`` has passed), and the files
            are committed to it.
        data_prefix: The URI under which the table's files live; files go to
            ``<data_prefix>/data/partition_<id>/<uuid>.parquet``.
        batches: The rows, in any order. Each batch must hold the table's columns (extra columns are dropped).
        job_id: The ingest job, if any. If its files were added before, nothing is done. The ADD_FILES transaction
            carries it, so the state store skips the commit if another run of the job committed in the meantime;
            the files this run wrote are then deleted and the result says ``already_added``.
        inputs_hash: The ``input_files_hash`` of the job's input files, if it read files: recorded with the job id,
            so the id cannot be reused for other files.
        now_ms: The time age-off filters measure from, in epoch milliseconds; now if omitted.
        local_dir: Where to make the temporary directory for sorted runs written to local disk (created if missing);
            the system's temporary directory if omitted. The temporary directory is removed when the ingest ends.
        limits: The memory and local disk limits; by default those the properties set
            (:meth:`IngestLimits.from_properties`).
        filesystem: A filesystem to write data files to instead of the one ``data_prefix`` names.
        options: How to reach S3.
        writer_thread: Encode Parquet on a background thread while the merge runs.
        send_commit: Sends the ADD_FILES transaction to the state store committer instead of committing it here
            (``sleeper.table.ingest.job.files.commit.async``). If sending raises, the files written stay: the
            message may have been sent; the orphan sweeper deletes them after its minimum age if never committed.
            A synchronous commit deletes them only if it is known not to be in the log (``COMMIT_NOT_IN_LOG``).
        upsert: Whether the caller commits the files as an upsert (``sleeper.api.upserts``): required on a table
            that keeps the last committed row of each row key (``sleeper.table.upsert`` with no sort key).
        task_id: The task running the job, carried by the transaction.
        job_run_id: The run of the job, carried by the transaction (the committer's tracker update names it).

    Returns:
        The rows read and written, the files and the references committed (or sent to the committer).

    Raises:
        UpsertRequiredError: If the table keeps the last committed row of each row key and ``upsert`` is False.
        SchemaMismatchError: If a batch lacks a column of the table or holds it with another type (the error names
            the batch and the column); nothing is committed.
        IngestConfigError: If a limit or the file writing strategy is invalid.
        IteratorConfigError: If the table's filters or aggregations are invalid, or its iterator cannot be loaded
            (``IteratorLoadError``, before anything is read).
        IteratorRunError: If the table's iterator fails or breaks its contract; nothing is committed.
        JobIdReusedError: If the job id's files were added before from other input files (checked before anything
            is written, and again by the commit); nothing is added.
        StateStoreError: If the table has no partitions or the commit does not fit the state store.
    """
    if not upsert and not table_schema.sort_key_names and table_upserts(table_properties):
        raise UpsertRequiredError(
            f"table {table_properties.get('sleeper.table.name')} keeps the last committed row of each row key "
            "(sleeper.table.upsert, no sort key), which this ingest path cannot commit: write to it with "
            "Table.upsert or sleeper upsert (or Table.ingest, which upserts on such a table); nothing was written"
        )
    strategy = file_writing_strategy(table_properties)
    chosen = limits if limits is not None else IngestLimits.from_properties(table_properties)
    if job_id is not None and state_store.job_already_added(job_id, inputs_hash):
        return IngestResult(rows_read=0, rows_written=0, already_added=True)
    processor = RowIterators.for_table(
        table_properties,
        table_schema,
        now_ms=now_ms if now_ms is not None else int(time.time() * 1000),
        writes=True,
    )
    key_names = table_schema.key_names
    output = _Output(
        prefix=data_prefix.rstrip("/"),
        strategy=strategy,
        settings=ParquetSettings.from_table_properties(table_properties),
        filesystem=filesystem,
        options=options,
        writer_thread=writer_thread,
    )
    writer = _TableWriter(
        table_schema,
        state_store,
        output,
        key_names=key_names,
        processor=processor,
        refresh_seconds=chosen.partition_refresh_seconds,
    )
    if local_dir is not None:
        Path(local_dir).mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="sleeper-ingest-", dir=local_dir) as spill_dir:
            store = LocalStore(arrow_schema(table_schema), key_names, chosen, Path(spill_dir), writer.write)
            for batch in batches:
                store.add(batch)
            crash_point("ingest.after_input_sorted")
            store.finish()
    except BaseException:
        writer.delete_files()
        raise
    counts = IngestResult(
        rows_read=store.rows,
        runs_spilled=store.runs_written,
        table_writes=store.table_writes,
        peak_local_bytes=store.peak_local_bytes,
    )
    references = writer.references
    if not references:
        return replace(counts, rows_written=writer.rows_written, files=tuple(writer.files))
    crash_point("ingest.after_files_written")
    transaction = AddFilesTransaction.of_references(
        references,
        job_id=job_id,
        task_id=task_id,
        job_run_id=job_run_id,
        written_time=datetime.now(tz=UTC),
        inputs_hash=inputs_hash,
    )
    if not commit_new_files(state_store, transaction, send_commit=send_commit, delete_files=writer.delete_files):
        return replace(counts, already_added=True)
    return replace(
        counts,
        rows_written=writer.rows_written,
        files=tuple(writer.files),
        references=tuple(references),
        commit_sent=send_commit is not None,
    )


@dataclass(frozen=True, slots=True)
class _Output:
    """Where and how a table's data files are written."""

    prefix: str
    strategy: str
    settings: ParquetSettings
    filesystem: pafs.FileSystem | None
    options: FileSystemOptions | None
    writer_thread: bool


class _TableWriter:
    """Merges the local store's sorted streams and writes them to data files, each time the store is full.

    The partition tree is read before the first write and again before a later one once the refresh period has
    passed since it was last read (``sleeper.ingest.partition.refresh.period``, as Sleeper's ingest coordinator).
    """

    def __init__(
        self,
        schema: Schema,
        state_store: StateStore,
        output: _Output,
        *,
        key_names: Sequence[str],
        processor: RowIterators,
        refresh_seconds: float,
    ) -> None:
        self._schema = schema
        self._state_store = state_store
        self._output = output
        self._key_names = tuple(key_names)
        self._processor = processor
        self._refresh_seconds = refresh_seconds
        self._leaves: LeafSplitter | None = None
        self._read_at = 0.0
        self._outputs: list[_FileOutput] = []
        self.partition_reads = 0

    def write(self, streams: list[Iterable[pa.RecordBatch]]) -> None:
        merged = merge_sorted(streams, self._key_names) if len(streams) > 1 else iter(streams[0])
        output = _FileOutput(self._schema, self._current_leaves(), self._output)
        self._outputs.append(output)
        output.write_all(self._processor.apply(merged))

    def _current_leaves(self) -> LeafSplitter:
        now = time.monotonic()
        if self._leaves is None or now - self._read_at > self._refresh_seconds:
            self._leaves = LeafSplitter(self._schema, self._state_store.partition_tree())
            self._read_at = now
            self.partition_reads += 1
        return self._leaves

    @property
    def files(self) -> list[WrittenFile]:
        return [f for output in self._outputs for f in output.files]

    @property
    def references(self) -> list[FileReference]:
        return [r for output in self._outputs for r in output.references]

    @property
    def rows_written(self) -> int:
        return sum(output.rows_written for output in self._outputs)

    def delete_files(self) -> None:
        for output in self._outputs:
            output.delete_files()


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
        output: _Output,
    ) -> None:
        self._schema = schema
        self._leaves = leaves
        self._out = output
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
        if self._out.strategy == ONE_REFERENCE_PER_LEAF:
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
            if self._out.strategy == ONE_REFERENCE_PER_LEAF:
                partition_id = self._leaves.root_id
            else:
                partition_id = self._leaves.partitions[key].id
            location = join_under(self._out.prefix, "data", f"partition_{partition_id}", f"{uuid.uuid4()}.parquet")
            out = self._out
            writer = SortedFileWriter(
                location,
                self._schema,
                settings=out.settings,
                filesystem=out.filesystem,
                options=out.options,
                writer_thread=out.writer_thread,
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
        if self._out.strategy == ONE_REFERENCE_PER_LEAF:
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
            fs, path = resolve(written.location, self._out.options, filesystem=self._out.filesystem)
            delete_unreferenced(fs, path, self._out.prefix)
            delete_unreferenced(fs, sketches_path(path), self._out.prefix)
