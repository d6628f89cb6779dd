"""The DataFusion read of a query's leaf: its files read and merged by Apache DataFusion (``sleeper.table.data.engine``
DATAFUSION), as Sleeper's default engine reads a leaf for a query.

:func:`datafusion_leaf_read` gives the rows of a sub-query's files within its regions, merged by row keys then sort
keys, with only the columns the query reads. Each file is scanned as its own partition with its sort order declared,
the regions are a filter pushed into the scans (row groups outside them are pruned by their statistics), and the scans
are unioned and merged by a streaming ``SortPreservingMergeExec`` (a plan holding a ``SortExec`` is refused), with the
file's position in the sub-query as the last sort column, so rows with equal keys come out in the order of the
sub-query's files, as the pyarrow merge gives them. Local files and S3 (``s3://``, ``s3a://``) are read; S3 buckets
are registered as object stores as the DataFusion compaction engine registers them, by the same code
(:mod:`sleeper.io.datafusion`).

The merged batches carry the file each row came from, so the rows pending deletes hide are left out after the merge
by the same :class:`~sleeper.iterators.pipeline.DeletedRows` the pyarrow read applies to each file; and where the
query's filter may be applied before the table's rules (they only drop rows) it is applied to the merged batches.
Everything after that (the table's iterators and aggregations, the query's filter, the projection, a limit) is the
executor's, the same for both engines (:mod:`sleeper.query.executor`), so both return the same rows in the same order.

Memory: DataFusion through its Python bindings keeps memory in proportion to the rows it reads, after the read is
done (measured here: 30-50 bytes per row, for every read of a long-running process). So DataFusion never runs in
this process: a read is a task for a worker process (``python -c ... sleeper.query.datafusion_read._worker``), which
streams the merged batches back as Arrow IPC. Workers are kept for later reads (at most :data:`IDLE_WORKERS` idle,
so a point lookup does not start a process) and retired once the tasks they ran have merged about
:data:`RECYCLE_ROWS` rows, which returns that memory (a retired worker is replaced at once if none is idle). A read
planned to decode more than :data:`CHUNK_ROWS` rows is split into key ranges of about that many input rows on the
first row key (:func:`~sleeper.io.datafusion.key_range_chunks`, as the compaction engine splits, keeping only
the ranges the sub-query's regions reach), one task each. So a worker's memory depends on those settings, not on the
leaf's size, and this process holds only the batches in flight.

The ``datafusion`` package is imported only in the workers.
"""

from __future__ import annotations

import atexit
import contextlib
import pickle
import re
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from sleeper.core import And, Between, Compare, Filter, PrimitiveType, Schema
from sleeper.io import (
    DATAFUSION_MISSING,
    INPUT_COLUMN,
    PACKAGE_ROOT,
    EngineUnavailableError,
    FileSystemOptions,
    KeyBounds,
    MissingFileError,
    RowPredicate,
    SortedFileReader,
    arrow_schema,
    datafusion_available,
    datafusion_can_read,
    datafusion_location,
    exists,
    key_range_chunks,
    merge_session,
    normalise_regions,
    range_bound,
    region_condition,
    register_s3,
    resolve,
)
from sleeper.iterators import DeletedRows
from sleeper.query.exceptions import QueryExecutionError

__all__ = [
    "CHUNK_ROWS",
    "IDLE_WORKERS",
    "RECYCLE_ROWS",
    "TASK_ROWS",
    "DataFusionLeafRead",
    "datafusion_leaf_read",
    "datafusion_plan_of_leaf",
    "stop_workers",
]

CHUNK_ROWS = 4_000_000
"""A leaf read planned to decode more rows than this is split into key ranges of about this many input rows."""

RECYCLE_ROWS = 4_000_000
"""A worker process is retired once the tasks it ran have merged this many rows, each task counted :data:`TASK_ROWS`
more (DataFusion keeps memory in proportion to the rows it reads), so a worker holds at most about this plus one
task's rows."""

TASK_ROWS = 16_384
"""What a task counts beyond the rows it merged: the rows it decodes around them (a page, at most a batch). Measured:
400 point lookups on one worker grew it by about 0.2 MB each, the memory of a few thousand rows read."""

IDLE_WORKERS = 2
"""The most worker processes kept idle for later reads (one per query running at once is reused)."""

_BATCH_ROWS = 16_384
"""DataFusion's batch size, at most (its merge is faster with smaller batches, as the compaction engine measured)."""


def datafusion_plan_of_leaf(
    files: Sequence[str],
    schema: Schema,
    regions: Sequence[Sequence[KeyBounds]],
    names: Sequence[str],
    *,
    batch_rows: int,
    options: FileSystemOptions | None = None,
    pushed: Filter | None = None,
) -> Any:
    """The DataFrame merging the files within the regions (any of them), with the columns ``names`` (in the order
    given; they must hold every key field) and the file's position in ``files`` as the last column.

    With ``pushed`` (a filter the rows may be cut by before the merge), the parts of it DataFusion can test exactly
    (:func:`_pushable`) filter the scans too, so row groups their statistics rule out are not read.

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, a file is neither local nor on S3, or DataFusion
            would sort rather than merge.
    """
    try:
        from datafusion import col, lit
    except ImportError as e:
        raise EngineUnavailableError(DATAFUSION_MISSING) from e

    paths = [datafusion_location(location) for location in files]
    context = merge_session(len(paths), batch_rows)
    register_s3(context, files, (options or FileSystemOptions()).s3)
    target = arrow_schema(schema)
    order = [col(name).sort(ascending=True, nulls_first=True) for name in schema.key_names]
    frame = None
    for number, path in enumerate(paths):
        scan = context.read_parquet(path, schema=target, file_sort_order=[order], skip_metadata=True)
        scan = scan.select(*[col(name) for name in names], lit(number).alias(INPUT_COLUMN))
        frame = scan if frame is None else frame.union(scan)
    assert frame is not None
    condition = None
    for region in regions:
        part = region_condition(region, schema, col, lit)
        if part is None:  # a region holding every key: no filter
            condition = None
            break
        condition = part if condition is None else condition | part
    pushable = None if pushed is None else _pushable(pushed, schema, col, lit)
    if pushable is not None:
        condition = pushable if condition is None else condition & pushable
    if condition is not None:
        frame = frame.filter(condition)
    frame = frame.sort(*order, col(INPUT_COLUMN).sort(ascending=True))
    plan = frame.execution_plan().display_indent()
    if "SortExec:" in plan:
        _check_found(files, options)  # a file DataFusion did not find is an empty scan, with no order to merge
        raise EngineUnavailableError(f"DataFusion planned a full sort rather than a merge:\n{plan}")
    return frame


_PUSHED_TYPES = (PrimitiveType.INT, PrimitiveType.LONG, PrimitiveType.STRING)
"""The column types whose comparisons DataFusion is given: exact, with no float, date or time conversions."""

_PUSHED_OPS = ("=", "<", "<=", ">", ">=")


def _pushable(node: Filter, schema: Schema, col: Any, lit: Any) -> Any:
    """The part of a filter DataFusion tests as the filter does (None if none): the conjuncts that compare a column
    of :data:`_PUSHED_TYPES` with a literal of its type, or lie between two. Every row it drops the filter drops too
    (a comparison with a null is not true in either), so the filter, applied afterwards, gives the same rows."""
    if isinstance(node, And):
        parts = [p for part in node.parts if (p := _pushable(part, schema, col, lit)) is not None]
        out = None
        for part in parts:
            out = part if out is None else out & part
        return out
    if not isinstance(node, Compare | Between) or node.column not in schema.field_names:
        return None
    kind = schema.field(node.column).type
    if kind not in _PUSHED_TYPES:
        return None
    wanted: type = str if kind is PrimitiveType.STRING else int
    values = (node.value,) if isinstance(node, Compare) else (node.low, node.high)
    if not all(type(v) is wanted for v in values):
        return None
    field = col(node.column)
    if isinstance(node, Between):
        return None if node.negated else (field >= lit(node.low)) & (field <= lit(node.high))
    if node.op not in _PUSHED_OPS:
        return None
    value = lit(node.value)
    return {"=": field == value, "<": field < value, "<=": field <= value, ">": field > value, ">=": field >= value}[
        node.op
    ]


def _check_found(files: Sequence[str], options: FileSystemOptions | None) -> None:
    """Raises MissingFileError naming the first file that does not exist."""
    for location in files:
        filesystem, path = resolve(location, options)
        if not exists(filesystem, path):
            raise MissingFileError(f"data file {location} does not exist (deleted since the query was planned?)")


@dataclass(frozen=True, slots=True)
class _LeafTask:
    """What a worker process reads: the files within the regions (each already cut to one key range)."""

    files: tuple[str, ...]
    schema: Schema
    regions: tuple[tuple[KeyBounds, ...], ...]
    names: tuple[str, ...]
    batch_rows: int
    options: FileSystemOptions | None
    pushed: Filter | None = None


def _stream(task: _LeafTask) -> Iterator[pa.RecordBatch]:
    """The task's merged batches, read in this process."""
    frame = datafusion_plan_of_leaf(
        task.files,
        task.schema,
        task.regions,
        task.names,
        batch_rows=task.batch_rows,
        options=task.options,
        pushed=task.pushed,
    )
    target = _target(task.schema, task.names)
    for batch in frame.execute_stream():
        data = batch.to_pyarrow()
        if data.num_rows:
            yield data if data.schema.equals(target) else pa.RecordBatch.from_arrays(data.columns, schema=target)


def _target(schema: Schema, names: Sequence[str]) -> pa.Schema:
    full = arrow_schema(schema)
    return pa.schema([*(full.field(name) for name in names), pa.field(INPUT_COLUMN, pa.int64(), nullable=False)])


_WORKER_START = (
    "import sys; sys.path.insert(0, sys.argv[1]); from sleeper.query.datafusion_read import _worker; _worker()"
)
"""The worker process's program: this package first on its path, then :func:`_worker` serving tasks from stdin."""

_DONE = b"\x01"
"""Written by a worker after a task's IPC stream: the task finished (a stream ended by the worker's death has not)."""


class _Worker:
    """A worker process serving tasks one after another: :meth:`run` sends one and yields its batches. Each task adds
    its rows merged, plus :data:`TASK_ROWS`, to :attr:`cost`, by which the pool retires it."""

    def __init__(self) -> None:
        self.cost = 0
        self._errors = tempfile.TemporaryFile()  # never a pipe: a worker writing much there must not block
        self._process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_START, PACKAGE_ROOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
        )

    def run(self, task: _LeafTask) -> Iterator[pa.RecordBatch]:
        """Runs one task; the worker can take another once every batch is taken (else close it)."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        target = _target(task.schema, task.names)
        merged = 0
        try:
            data = pickle.dumps(task)
            process.stdin.write(struct.pack("<Q", len(data)) + data)
            process.stdin.flush()
            for batch in pa.ipc.open_stream(process.stdout):
                merged += batch.num_rows
                if batch.num_rows:
                    yield (
                        batch
                        if batch.schema.equals(target)
                        else pa.RecordBatch.from_arrays(batch.columns, schema=target)
                    )
            finished = process.stdout.read(1) == _DONE
            problem = None
        except (pa.ArrowInvalid, OSError) as e:
            finished, problem = False, e
        if not finished:  # the worker died, or its stream was cut or malformed: its exit status and message say why
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self._errors.seek(0)
            message = self._errors.read().decode(errors="replace").strip()
            self.close()
            last = _raised(message) or f"{problem or 'no end of stream'}"
            if "EngineUnavailableError" in last:
                raise EngineUnavailableError(last.split(":", 1)[-1].strip())
            if "MissingFileError" in last:
                raise MissingFileError(last.split(":", 1)[-1].strip())
            raise QueryExecutionError(f"the DataFusion query worker failed: {last}")
        self.cost += merged + TASK_ROWS

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        """Stops the worker (ending its input first, so an idle one exits by itself)."""
        process = self._process
        if process.stdin is not None:
            with contextlib.suppress(OSError):  # a worker that died has closed its end already
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        self._errors.close()

    def kill(self) -> None:
        """Stops the worker at once (it may be in the middle of a task)."""
        if self._process.poll() is None:
            self._process.kill()
        self.close()


def _raised(traceback: str) -> str:
    """The exception line of a traceback (``module.Error: message``, the message's first line), else its last line."""
    lines = traceback.splitlines()
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line
    return lines[-1] if lines else ""


class _Pool:
    """Idle workers, kept for the next read; a worker whose tasks' cost reached :data:`RECYCLE_ROWS` is retired (so
    the memory DataFusion keeps in it is returned), and so is one over :data:`IDLE_WORKERS` idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self.started = 0

    def take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.close()
            self.started += 1
        return _Worker()

    def give(self, worker: _Worker) -> None:
        """Keeps a worker whose task finished for the next read, or retires it; a retired worker is replaced at once
        when none is idle (the new one imports its packages while this process goes on)."""
        with self._lock:
            if worker.alive() and worker.cost < RECYCLE_ROWS and len(self._idle) < IDLE_WORKERS:
                self._idle.append(worker)
                return
            if not self._idle:
                self._idle.append(_Worker())
                self.started += 1
        worker.close()

    def close(self) -> None:
        """Stops every idle worker."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


_POOL = _Pool()
atexit.register(_POOL.close)


def stop_workers() -> None:
    """Stops the idle worker processes (each exits as its input ends; they are started again when needed)."""
    _POOL.close()


def _worker() -> None:
    """The worker process: reads length-prefixed pickled :class:`_LeafTask` from stdin until it ends, and writes each
    one's batches to stdout as an Arrow IPC stream followed by :data:`_DONE`."""
    tasks, out = sys.stdin.buffer, sys.stdout.buffer
    while len(header := tasks.read(8)) == 8:
        task: _LeafTask = pickle.loads(tasks.read(struct.unpack("<Q", header)[0]))  # noqa: S301 - from the parent
        with pa.ipc.new_stream(pa.PythonFile(out, mode="w"), _target(task.schema, task.names)) as writer:
            for batch in _stream(task):
                writer.write_batch(batch)
        out.write(_DONE)
        out.flush()


class DataFusionLeafRead:
    """A sub-query's files merged by DataFusion: iterating yields the merged batches (the columns read, in the order
    given, hidden rows and rows the early filter drops left out); :meth:`close` stops a worker still reading.

    Built by :func:`datafusion_leaf_read`."""

    def __init__(self, tasks: list[_LeafTask], early: RowPredicate | None, hides: Sequence[tuple[int, DeletedRows]]):
        self._tasks = tasks
        self._early = early
        self._hides = hides
        self._worker: _Worker | None = None
        self._done = False

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self._batches()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        try:
            for task in self._tasks:
                if self._done:
                    return
                worker = self._worker = _POOL.take()
                for batch in worker.run(task):
                    batch = self._kept(batch)
                    if batch.num_rows:
                        yield batch
                self._worker = None
                _POOL.give(worker)
        finally:
            self.close()

    def _kept(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch without the rows deletes hide in their files and those the early filter drops, and without the
        input column."""
        if self._hides:
            inputs = batch.column(INPUT_COLUMN).to_numpy()
            keep = np.ones(batch.num_rows, dtype=bool)
            positions = pa.array(np.arange(batch.num_rows, dtype=np.int64))
            numbered = batch.append_column("__sleeper_position", positions)
            for number, hide in self._hides:
                mine = inputs == number
                if not mine.any():
                    continue
                keep[mine] = False
                kept = hide.keep(numbered.filter(pa.array(mine)))
                keep[kept.column("__sleeper_position").to_numpy()] = True
            if not keep.all():
                batch = batch.filter(pa.array(keep))
        batch = batch.drop_columns([INPUT_COLUMN])
        if self._early is not None and batch.num_rows:
            batch = self._early.filter(batch)
        return batch

    def close(self) -> None:
        """Stops a worker still reading; the read yields nothing more."""
        self._done = True
        worker, self._worker = self._worker, None
        if worker is not None:  # in the middle of a task: not reusable
            worker.kill()


def datafusion_leaf_read(
    files: Sequence[str],
    schema: Schema,
    regions: Sequence[Sequence[KeyBounds]],
    names: Sequence[str],
    *,
    batch_rows: int,
    options: FileSystemOptions | None = None,
    early: RowPredicate | None = None,
    pushed: Filter | None = None,
    hides: Mapping[str, DeletedRows] | None = None,
    chunk_rows: int | None = None,
) -> DataFusionLeafRead:
    """A sub-query's files read within its regions and merged by DataFusion (see the module docstring).

    Args:
        files: The sub-query's files, each sorted by row keys then sort keys; rows with equal keys come out in this
            order.
        schema: The table schema.
        regions: The regions to read (canonical bounds, such as ``sleeper.query.executor.region_bounds``).
        names: The columns to read, in schema order; they must hold every key field and the columns ``hides`` test.
        batch_rows: The most rows in a batch.
        options: How to reach S3.
        early: A filter applied to the merged rows (before the table's rules, which must only drop rows).
        pushed: The filter ``early`` applies, whose parts DataFusion can test are pushed into its scans (see
            :func:`datafusion_plan_of_leaf`); only with ``early``.
        hides: The rows pending deletes hide, by file.
        chunk_rows: A read planned to decode more rows than this is split into key ranges of about this many input
            rows, each a task of its own; :data:`CHUNK_ROWS` if None.

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, or a file is neither local nor on S3.
        MissingFileError: If a data file does not exist (when the batches are read, if it is deleted after this).
        SchemaMismatchError: If a file's key columns do not suit the schema.
    """
    if not datafusion_available():
        raise EngineUnavailableError(DATAFUSION_MISSING)
    if not datafusion_can_read(files):
        raise EngineUnavailableError(f"the DataFusion engine reads local and S3 files only, not {list(files)}")
    plain = None if options is None else FileSystemOptions(s3=options.s3)
    planned = 0
    for location in files:  # the pyarrow read's plan, from the cached footers: the rows the regions reach
        with SortedFileReader(location, schema, options=options) as reader:
            planned += reader.plan([list(r) for r in regions]).rows
    numbered = [(number, hides[name]) for number, name in enumerate(files) if hides and name in hides]
    wanted = tuple(tuple(r) for r in regions)
    rows = max(1, min(batch_rows, _BATCH_ROWS))

    cut_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows

    def task(cut: tuple[tuple[KeyBounds, ...], ...]) -> _LeafTask:
        return _LeafTask(tuple(files), schema, cut, tuple(names), rows, plain, pushed if early is not None else None)

    if planned <= cut_rows:
        return DataFusionLeafRead([task(wanted)] if planned else [], early, numbered)
    tasks = []
    for low, high in key_range_chunks(files, schema, cut_rows, options=plain):
        if low is None and high is None:
            tasks.append(task(wanted))
            continue
        cut = tuple((*r, range_bound(schema, low, high)) for r in wanted)
        if normalise_regions(cut, schema):  # a key range no region reaches is not read
            tasks.append(task(cut))
    return DataFusionLeafRead(tasks, early, numbered)
