"""The DataFusion compaction engine: Sleeper's own plan through DataFusion's Python bindings (optional).

Each input file is scanned as its own partition with its sort order declared (``file_sort_order``), the region is a
filter pushed into the scans (row groups outside it are pruned by their statistics), and the scans are unioned and
sorted by row keys then sort keys, then by the input's position in the job (a constant column of each scan, dropped
after the merge), so that rows with equal keys come out in input order as the pyarrow merge puts them. Because every
input declares its order, DataFusion plans a streaming ``SortPreservingMergeExec`` over the scans rather than a full
sort, as Sleeper's Rust compaction does; a plan holding a ``SortExec`` is refused. The merged batches stream back to
Python, where the table's filters, aggregations, iterator, sketches and the Parquet writer are applied as for the
pyarrow engine, so both engines write the same file.

Files may be local (a path or ``file://``) or on S3 (``s3://`` or ``s3a://``): each bucket is registered as a
DataFusion object store with the job's :class:`sleeper.io.filesystem.S3Options` (region, endpoint, credentials; the
standard AWS chain where they are not set).

Memory: DataFusion's scans through the Python bindings keep memory in proportion to the rows they read, and keep it
after the stream and the session are dropped (measured with datafusion 55: about 33 bytes per row merged, so about
0.8 GB for 10 files of 1M rows and 1.2 GB for 10 files of 2M, growing to a plateau of about 1.4 GB over repeated
sessions in one process); a memory pool (``RuntimeEnvBuilder.with_fair_spill_pool``) does not bound it, since that
memory is not reserved through the pool. So :func:`datafusion_merge` splits a job into key ranges of about
``chunk_rows`` input rows each (cut at row group boundaries found in the files' footers, on the first key column) and
merges each range in a worker process of its own (``python -m sleeper.compaction.datafusion_engine``), which streams
the merged batches back as Arrow IPC and exits, returning its memory. The ranges are disjoint and in key order, so
their outputs joined are the job's merged rows; a worker's memory depends on ``chunk_rows``, not on the job's size.

The ``datafusion`` package is imported only when this engine runs (in the worker).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.core import Schema
from sleeper.io import (
    DATAFUSION_MISSING,
    INPUT_COLUMN,
    PACKAGE_ROOT,
    EngineUnavailableError,
    FileSystemOptions,
    KeyBounds,
    arrow_schema,
    datafusion_available,
    datafusion_location,
    key_range_chunks,
    merge_session,
    range_bound,
    region_condition,
    register_s3,
    resolve,
)

__all__ = ["datafusion_merge", "datafusion_plan"]


def datafusion_plan(
    input_files: Sequence[str],
    schema: Schema,
    region: Sequence[KeyBounds] | None,
    *,
    batch_rows: int,
    options: FileSystemOptions | None = None,
    check_columns: bool = True,
) -> Any:
    """The DataFrame that merges the files within the region (see the module docstring), in this process.

    Unless ``check_columns`` is false (the caller checked), a file holding a column the schema lacks is refused.

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, a file is neither local nor on S3, or the plan
            would sort.
    """
    try:
        from datafusion import col, lit
    except ImportError as e:
        raise EngineUnavailableError(DATAFUSION_MISSING) from e

    paths = [datafusion_location(location) for location in input_files]
    if check_columns:
        _check_columns(input_files, schema, options)
    target = arrow_schema(schema)
    context = merge_session(len(paths), batch_rows)
    register_s3(context, input_files, (options or FileSystemOptions()).s3)
    order = [col(name).sort(ascending=True, nulls_first=True) for name in schema.key_names]
    frame = None
    for number, path in enumerate(paths):
        scan = context.read_parquet(path, schema=target, file_sort_order=[order], skip_metadata=True)
        # The input's position in the job, constant within a scan: rows with equal keys come out in input order.
        scan = scan.select(*[col(name) for name in target.names], lit(number).alias(INPUT_COLUMN))
        frame = scan if frame is None else frame.union(scan)
    assert frame is not None
    condition = region_condition(region, schema, col, lit)
    if condition is not None:
        frame = frame.filter(condition)
    frame = frame.sort(*order, col(INPUT_COLUMN).sort(ascending=True)).select(*[col(name) for name in target.names])
    plan = frame.execution_plan().display_indent()
    if "SortExec:" in plan:
        raise EngineUnavailableError(f"DataFusion planned a full sort rather than a merge:\n{plan}")
    return frame


def _check_columns(input_files: Sequence[str], schema: Schema, options: FileSystemOptions | None) -> None:
    """Refuses a file holding a column the schema does not have (as the pyarrow engine's reader does)."""
    from sleeper.io import check_no_unknown_columns

    for location in input_files:
        fs, path = resolve(location, options)
        check_no_unknown_columns(location, pq.read_schema(path, filesystem=fs).names, schema)


@dataclass(frozen=True, slots=True)
class _Task:
    """What a worker process merges: the files within the region, and within one key range."""

    input_files: tuple[str, ...]
    schema: Schema
    region: tuple[KeyBounds, ...] | None
    batch_rows: int
    options: FileSystemOptions | None


def datafusion_merge(
    input_files: Sequence[str],
    schema: Schema,
    region: Sequence[KeyBounds] | None,
    *,
    batch_rows: int,
    options: FileSystemOptions | None = None,
    chunk_rows: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Merges sorted local or S3 files within a region with DataFusion, streaming the merged batches.

    Args:
        input_files: The files, each sorted by row keys then sort keys.
        schema: The table schema.
        region: The region to read; None reads whole files.
        batch_rows: DataFusion's batch size.
        options: How to reach S3 (its ``s3_copy_if_absent`` is not used).
        chunk_rows: If given, the job is split into key ranges of about this many input rows, each merged in a
            worker process of its own (see the module docstring), which bounds the memory DataFusion keeps. If
            None, everything is merged in this process.

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, a file is neither local nor on S3, or the plan
            would sort (raised when the stream is read).
    """
    if not datafusion_available():
        raise EngineUnavailableError(DATAFUSION_MISSING)
    for location in input_files:
        datafusion_location(location)
    plain = None if options is None else FileSystemOptions(s3=options.s3)
    if chunk_rows is None:
        frame = datafusion_plan(input_files, schema, region, batch_rows=batch_rows, options=plain)
        return _stream(frame, arrow_schema(schema))
    _check_columns(input_files, schema, plain)
    return _chunked(input_files, schema, region, batch_rows, plain, chunk_rows)


def _chunked(
    input_files: Sequence[str],
    schema: Schema,
    region: Sequence[KeyBounds] | None,
    batch_rows: int,
    options: FileSystemOptions | None,
    chunk_rows: int,
) -> Iterator[pa.RecordBatch]:
    for low, high in key_range_chunks(input_files, schema, chunk_rows, options=options):
        if low is None and high is None:
            bounds = None if region is None else tuple(region)
        else:
            bounds = (*(region or ()), range_bound(schema, low, high))
        yield from _run_worker(_Task(tuple(input_files), schema, bounds, batch_rows, options))


_WORKER_START = (
    "import sys; sys.path.insert(0, sys.argv[1]); from sleeper.compaction.datafusion_engine import _worker; _worker()"
)
"""The worker process's program: this package first on its path, then :func:`_worker` reading a task on stdin."""


def _run_worker(task: _Task) -> Iterator[pa.RecordBatch]:
    """Runs one task in a worker process and yields the batches it streams back."""
    # The worker imports the same ``sleeper`` package as this process, wherever it was imported from: the directory
    # holding the package goes first on the worker's path (the environment is inherited unchanged).
    process = subprocess.Popen(
        [sys.executable, "-c", _WORKER_START, PACKAGE_ROOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    finished = False
    try:
        process.stdin.write(pickle.dumps(task))
        process.stdin.close()
        target = arrow_schema(task.schema)
        try:
            reader = pa.ipc.open_stream(process.stdout)
            for batch in reader:
                if batch.num_rows:
                    yield (
                        batch
                        if batch.schema.equals(target)
                        else pa.RecordBatch.from_arrays(batch.columns, schema=target)
                    )
        except pa.ArrowInvalid as e:
            stream_error: pa.ArrowInvalid | None = e  # a failed worker's exit status and message say why, below
        else:
            stream_error = None
        returncode = process.wait()
        if returncode:
            message = process.stderr.read().decode(errors="replace").strip()
            last = message.splitlines()[-1] if message else f"exit status {returncode}"
            if "EngineUnavailableError" in last:
                raise EngineUnavailableError(last.split(":", 1)[-1].strip())
            raise RuntimeError(f"the DataFusion compaction worker failed: {last}")
        if stream_error is not None:  # the worker exited cleanly but its stream was cut or malformed: never fewer rows
            raise RuntimeError(f"the DataFusion compaction worker's output could not be read: {stream_error}")
        finished = True
    finally:
        if not finished and process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()


def _stream(frame: Any, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    for batch in frame.execute_stream():
        data = batch.to_pyarrow()
        if data.num_rows:
            if not data.schema.equals(target):
                data = pa.RecordBatch.from_arrays(data.columns, schema=target)
            yield data


def _worker() -> None:
    """The worker process: reads a pickled :class:`_Task` from stdin and writes the merged rows to stdout as IPC."""
    task: _Task = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - written by the parent process
    frame = datafusion_plan(
        task.input_files,
        task.schema,
        task.region,
        batch_rows=task.batch_rows,
        options=task.options,
        check_columns=False,
    )
    target = arrow_schema(task.schema)
    sink = pa.PythonFile(sys.stdout.buffer, mode="w")
    with pa.ipc.new_stream(sink, target) as writer:
        for batch in _stream(frame, target):
            writer.write_batch(batch)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _worker()
