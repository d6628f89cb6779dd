"""Standard ingest's bounded buffers: rows held in memory, sorted runs on local disk, as Sleeper's.

Sleeper's ingest (its ``IngestCoordinator`` with an ``ArrowRowBatch``) fills an in-memory batch, sorts it and writes
it to a local file when memory is full, and once the local files pass ``max.local.store.bytes`` merges them and
writes the result to the table; then it starts again, so a job of any size needs bounded memory and disk.
:class:`IngestLimits` holds those settings as the instance and table properties give them; :class:`LocalStore` keeps
to them.

Two kinds of limit, chosen by the table's ``sleeper.table.ingest.row.batch.type`` as in Sleeper (this port always
holds rows as Arrow; the type chooses the limits):

* ``arrow`` (the default): the rows held in memory are sorted and written to local disk before their Arrow bytes pass
  ``sleeper.ingest.arrow.batch.buffer.bytes``, or before sorting them would need more than
  ``sleeper.ingest.arrow.working.buffer.bytes`` (the sort takes :data:`SORT_BYTES_PER_ROW` bytes per row: its order
  and key codes, plus one written slice). Each local file is written ``sleeper.ingest.arrow.max.single.write.to.file
  .rows`` rows at a time. A sorted run is written locally only if the local files stay within
  ``sleeper.ingest.arrow.max.local.store.bytes`` with it (its size is bounded before it is written); otherwise the
  local runs and the rows in memory are merged and written to the table (stricter than Sleeper, whose local files
  may pass the limit by one run).
* ``arraylist``: at most ``sleeper.ingest.memory.max.batch.size`` rows are held in memory, and when the rows on local
  disk and in memory would reach ``sleeper.ingest.max.local.rows`` they are written to the table.

The local runs are Arrow IPC files in the ingest's temporary directory (Sleeper's Arrow batch writes Arrow files too;
its arraylist batch writes Parquet). Nothing here loops over rows in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sleeper.ingest.exceptions import IngestConfigError
from sleeper.io import conform_batch, sort_indices

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties

__all__ = [
    "ARRAYLIST",
    "ARROW",
    "ROW_BATCH_TYPES",
    "SORT_BYTES_PER_ROW",
    "IngestLimits",
    "LocalStore",
]

ARROW = "arrow"
ARRAYLIST = "arraylist"
ROW_BATCH_TYPES = (ARROW, ARRAYLIST)

SORT_BYTES_PER_ROW = 80
"""Working memory the sort of a batch takes per row (:func:`sleeper.io.sort.sort_indices`: the row order, the key
codes and the sort's scratch; 76 bytes a row measured for string keys)."""

MERGE_BATCH_ROWS = 65536
"""Rows per batch fed to the merge from each local run (consecutive small written batches are joined) and from the
rows still in memory."""

_IPC_BATCH_OVERHEAD = 1024
"""An upper bound on what an IPC file adds per record batch beyond its buffers' bytes (message metadata), plus
:data:`_IPC_BUFFER_OVERHEAD` per column."""
_IPC_BUFFER_OVERHEAD = 64
"""An upper bound on what one column of a record batch adds in an IPC file: padding of its buffers to 8 bytes, and the
extra offset and validity bytes a slice may gain when taken."""
_IPC_FILE_OVERHEAD = 64 * 1024
"""An upper bound on an IPC file's schema, footer and magic bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestLimits:
    """How much standard ingest holds in memory and on local disk, and how often it reads the partitions again.

    Read from the properties with :meth:`from_properties`; the defaults are Sleeper's.

    Attributes:
        row_batch_type: ``arrow`` (limits in bytes) or ``arraylist`` (limits in rows):
            ``sleeper.table.ingest.row.batch.type``.
        batch_buffer_bytes: ``sleeper.ingest.arrow.batch.buffer.bytes``: Arrow bytes held in memory before sorting.
        working_buffer_bytes: ``sleeper.ingest.arrow.working.buffer.bytes``: memory for sorting a batch and writing
            it out.
        max_local_store_bytes: ``sleeper.ingest.arrow.max.local.store.bytes``: bytes of sorted runs on local disk.
        max_rows_per_local_write: ``sleeper.ingest.arrow.max.single.write.to.file.rows``: rows per record batch
            written to a local run.
        max_rows_in_memory: ``sleeper.ingest.memory.max.batch.size`` (``arraylist``): rows held in memory.
        max_local_rows: ``sleeper.ingest.max.local.rows`` (``arraylist``): rows on local disk and in memory before
            they are written to the table.
        partition_refresh_seconds: ``sleeper.ingest.partition.refresh.period``: the partition tree is read again
            before a write to the table once this long has passed since it was last read.

    Raises:
        IngestConfigError: If the row batch type is unknown or a limit is not positive.
    """

    row_batch_type: str = ARROW
    batch_buffer_bytes: int = 1024 * 1024 * 1024
    working_buffer_bytes: int = 256 * 1024 * 1024
    max_local_store_bytes: int = 2 * 1024 * 1024 * 1024
    max_rows_per_local_write: int = 1024
    max_rows_in_memory: int = 1_000_000
    max_local_rows: int = 100_000_000
    partition_refresh_seconds: float = 120.0

    def __post_init__(self) -> None:
        if self.row_batch_type not in ROW_BATCH_TYPES:
            raise IngestConfigError(
                f"sleeper.table.ingest.row.batch.type must be one of {', '.join(ROW_BATCH_TYPES)}, "
                f"got {self.row_batch_type!r}"
            )
        for name in (
            "batch_buffer_bytes",
            "working_buffer_bytes",
            "max_local_store_bytes",
            "max_rows_per_local_write",
            "max_rows_in_memory",
            "max_local_rows",
        ):
            if getattr(self, name) < 1:
                raise IngestConfigError(f"ingest limit {name} must be positive, got {getattr(self, name)}")
        if self.partition_refresh_seconds <= 0:
            raise IngestConfigError(
                f"sleeper.ingest.partition.refresh.period must be positive, got {self.partition_refresh_seconds}"
            )

    @classmethod
    def from_properties(cls, properties: TableProperties) -> IngestLimits:
        """The limits the table's properties and its instance's properties set.

        Raises:
            PropertyError: If a property holds no number.
            IngestConfigError: If a value is out of range.
        """
        from sleeper.core.properties import instance_ingest as ip
        from sleeper.core.properties import table as tp

        instance = properties.instance_properties
        return cls(
            row_batch_type=(properties.get(tp.INGEST_ROW_BATCH_TYPE) or ARROW).strip().lower(),
            batch_buffer_bytes=instance.get_int(ip.ARROW_INGEST_BATCH_BUFFER_BYTES),
            working_buffer_bytes=instance.get_int(ip.ARROW_INGEST_WORKING_BUFFER_BYTES),
            max_local_store_bytes=instance.get_int(ip.ARROW_INGEST_MAX_LOCAL_STORE_BYTES),
            max_rows_per_local_write=instance.get_int(ip.ARROW_INGEST_MAX_SINGLE_WRITE_TO_FILE_ROWS),
            max_rows_in_memory=instance.get_int(ip.MAX_IN_MEMORY_BATCH_SIZE),
            max_local_rows=instance.get_int(ip.MAX_ROWS_TO_WRITE_LOCALLY),
            partition_refresh_seconds=float(instance.get_int(ip.INGEST_PARTITION_REFRESH_PERIOD_IN_SECONDS)),
        )

    @property
    def counts_bytes(self) -> bool:
        """Whether the limits are in bytes (``arrow``) rather than rows (``arraylist``)."""
        return self.row_batch_type == ARROW


SortedStreams = list[Iterable[pa.RecordBatch]]
"""Sorted streams of record batches: the local runs, then the rows held in memory."""


class LocalStore:
    """Holds rows in memory and sorted runs on local disk within :class:`IngestLimits`.

    Rows are given with :meth:`add`. When the store is full, ``write_to_table`` is called with the sorted streams
    (every local run, then the rows in memory, sorted) to merge and write to the table; the store is then emptied.
    :meth:`finish` gives what is left to ``write_to_table`` the same way.

    Args:
        target: The table's Arrow schema; every batch is conformed to it.
        key_names: The sort order: row keys then sort keys.
        limits: The limits.
        directory: Where the sorted runs are written (an empty directory the caller removes).
        write_to_table: Merges sorted streams and writes them to the table.
    """

    def __init__(
        self,
        target: pa.Schema,
        key_names: Sequence[str],
        limits: IngestLimits,
        directory: Path,
        write_to_table: Callable[[SortedStreams], None],
    ) -> None:
        self._target = target
        self._key_names = tuple(key_names)
        self._limits = limits
        self._directory = directory
        self._write_to_table = write_to_table
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._pending_rows = 0
        self._runs: list[Path] = []
        self._local_bytes = 0
        self._local_rows = 0
        self._batches_seen = 0
        self.rows = 0
        """Rows given so far."""
        self.runs_written = 0
        """Sorted runs written to local disk so far."""
        self.table_writes = 0
        """Times the store was written to the table so far."""
        self.peak_local_bytes = 0
        """The most bytes the local runs held at once."""

    @property
    def local_bytes(self) -> int:
        """Bytes of the sorted runs on local disk now."""
        return self._local_bytes

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Adds rows (conformed to the table's schema), sorting and writing them out as the limits say.

        Raises:
            SchemaMismatchError: If the batch does not hold the table's columns with types that read as the table's.
            IngestConfigError: If a single row is larger than the memory the limits allow.
        """
        parts = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
        self._batches_seen += 1
        for part in parts:
            conformed = conform_batch(part, self._target, where=f"ingest batch {self._batches_seen}")
            if conformed.num_rows == 0:
                continue
            self.rows += conformed.num_rows
            for piece in self._pieces(conformed):
                if self._pending and not self._fits(piece.nbytes, piece.num_rows):
                    self._release_memory()
                self._pending.append(piece)
                self._pending_bytes += piece.nbytes
                self._pending_rows += piece.num_rows

    def finish(self) -> None:
        """Writes whatever the store holds to the table (nothing if it holds nothing)."""
        if self._pending or self._runs:
            self._write_all_to_table()

    def clear(self) -> None:
        """Deletes the local runs and drops the rows in memory."""
        for path in self._runs:
            path.unlink(missing_ok=True)
        self._runs = []
        self._local_bytes = 0
        self._local_rows = 0
        self._pending = []
        self._pending_bytes = 0
        self._pending_rows = 0

    # --- memory ------------------------------------------------------------------------------------------------
    def _max_pending_rows(self) -> int:
        limits = self._limits
        if not limits.counts_bytes:
            return limits.max_rows_in_memory
        return (limits.working_buffer_bytes - self._write_slice_bytes()) // SORT_BYTES_PER_ROW

    def _write_slice_bytes(self) -> int:
        if self._pending_rows == 0:
            return 0
        return -(-self._pending_bytes * self._limits.max_rows_per_local_write // self._pending_rows)

    def _fits(self, nbytes: int, rows: int) -> bool:
        if self._pending_rows + rows > self._max_pending_rows():
            return False
        return not self._limits.counts_bytes or self._pending_bytes + nbytes <= self._limits.batch_buffer_bytes

    def _pieces(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Slices of the batch each small enough for empty memory."""
        limits = self._limits
        rows = batch.num_rows
        row_bytes = max(1, -(-batch.nbytes // rows))
        most = limits.max_rows_in_memory
        if limits.counts_bytes:
            slice_bytes = row_bytes * limits.max_rows_per_local_write
            most = min(
                limits.batch_buffer_bytes // row_bytes,
                (limits.working_buffer_bytes - slice_bytes) // SORT_BYTES_PER_ROW,
            )
            if most < 1:
                raise IngestConfigError(
                    f"rows of about {row_bytes:,} bytes do not fit sleeper.ingest.arrow.batch.buffer.bytes "
                    f"({limits.batch_buffer_bytes:,}) and sleeper.ingest.arrow.working.buffer.bytes "
                    f"({limits.working_buffer_bytes:,}) with sleeper.ingest.arrow.max.single.write.to.file.rows "
                    f"({limits.max_rows_per_local_write:,}): raise the buffers or lower the rows per write"
                )
        if rows <= most:
            yield batch
            return
        for start in range(0, rows, most):
            yield batch.slice(start, most)

    def _release_memory(self) -> None:
        """Memory is full: writes it as a local run, or, if the local store cannot take it, everything to the table."""
        if self._local_store_would_overflow():
            self._write_all_to_table()
        else:
            self._spill()

    def _local_store_would_overflow(self) -> bool:
        limits = self._limits
        if not limits.counts_bytes:
            return self._local_rows + self._pending_rows >= limits.max_local_rows
        return self._local_bytes + self._run_size_bound() > limits.max_local_store_bytes

    def _run_size_bound(self) -> int:
        limits = self._limits
        batches = -(-self._pending_rows // limits.max_rows_per_local_write)
        per_batch = _IPC_BATCH_OVERHEAD + _IPC_BUFFER_OVERHEAD * len(self._target)
        return self._pending_bytes + batches * per_batch + _IPC_FILE_OVERHEAD

    def _take_memory(self) -> tuple[pa.Table, np.ndarray, int]:
        """The rows in memory as one contiguous table (a take from many chunks is an order of magnitude slower) and
        their sort order, and how many there were; memory is then empty, so the pieces' buffers are freed before the
        sort's working memory is taken."""
        table = pa.Table.from_batches(self._pending, schema=self._target).combine_chunks()
        rows = self._pending_rows
        self._pending = []
        self._pending_bytes = 0
        self._pending_rows = 0
        return table, np.asarray(sort_indices(table, self._key_names), dtype=np.int64), rows

    # --- local runs ---------------------------------------------------------------------------------------------
    def _spill(self) -> None:
        table, order, rows = self._take_memory()
        path = self._directory / f"run-{self.runs_written:06d}.arrow"
        step = self._limits.max_rows_per_local_write
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, self._target) as writer:
            for start in range(0, len(order), step):
                writer.write_table(table.take(order[start : start + step]))
        self._runs.append(path)
        self.runs_written += 1
        self._local_bytes += path.stat().st_size
        self._local_rows += rows
        self.peak_local_bytes = max(self.peak_local_bytes, self._local_bytes)

    def _write_all_to_table(self) -> None:
        streams: SortedStreams = [_read_run(path) for path in self._runs]
        if self._pending:
            table, order, _ = self._take_memory()
            streams.append(_take_in_order(table, order))
        self._write_to_table(streams)
        self.table_writes += 1
        self.clear()


def _take_in_order(table: pa.Table, order: np.ndarray) -> Iterator[pa.RecordBatch]:
    for start in range(0, len(order), MERGE_BATCH_ROWS):
        yield from table.take(order[start : start + MERGE_BATCH_ROWS]).to_batches()


def _read_run(path: Path) -> Iterator[pa.RecordBatch]:
    """A run's batches, consecutive small ones joined into batches of about :data:`MERGE_BATCH_ROWS` rows.

    The file is read, not memory-mapped: mapped pages a merge has passed would stay resident until the run is closed,
    so the process would hold the whole local store in memory by the end of the merge."""
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_file(source)
        waiting: list[pa.RecordBatch] = []
        rows = 0
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            waiting.append(batch)
            rows += batch.num_rows
            if rows >= MERGE_BATCH_ROWS:
                yield _joined(waiting)
                waiting = []
                rows = 0
        if waiting:
            yield _joined(waiting)


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.concat_batches(batches)
