"""Benchmark of the sorted-stream merge (sleeper.io.merge) against sorting engines, on in-memory Arrow batches.

The data is that of ``benchmarks/compaction.py``, without Parquet so that only the merge is measured: N sorted inputs
of M rows (default 10 x 1,000,000) with columns ``key`` (12-20 random letters, or an int64 in [0, 1e10) for the int
variant), ``value`` (int64) and ``payload`` (30 random letters), held as Arrow record batches of 64k rows.

Methods, each run in a fresh process that first loads the inputs from an uncompressed Arrow IPC file:

- ``merge_sorted``: sleeper.io.merge.merge_sorted, output batches consumed and dropped (streaming).
- ``merge_sorted_untuned``: the same with glibc malloc and Arrow's memory pool left as they are (see
  :mod:`sleeper.io.memory`).
- ``merge_sorted_pipeline``: with ``pipeline=True`` (the output ``take`` on a second thread).
- ``appendix_merge``: a plain streaming merge: cut every input at the smallest
  last key, then pyarrow ``sort_indices`` and ``take`` on the slices.
- ``pa_sort``: concatenate everything, ``sort_indices`` and ``take`` with pyarrow (all in memory).
- ``duckdb_sort``: DuckDB ``SELECT * ... ORDER BY key`` over the Arrow tables, result streamed and dropped.
- ``datafusion_sort``: DataFusion ``ORDER BY key`` over a memory table of one partition per input, streamed and
  dropped (a memory table cannot declare its sort order, so the plan sorts and then merges).

Every method's rows are checked: the row count and ``sum(value)`` match the input, and the merge's output is checked
to be sorted. Figures are medians over the repetitions: seconds, rows/s, CPU seconds, extra peak RSS over the loaded
inputs (``ru_maxrss``), and for pyarrow methods the peak of Arrow's memory pool during the run. The last line printed
is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/merge.py [--rows 1000000] [--inputs 10] [--repeats 3] [--keys string,int]
[--cpus 0,1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.io.memory import tune_memory  # noqa: E402
from sleeper.io.merge import merge_sorted  # noqa: E402
from sleeper.io.sort import is_sorted, key_at  # noqa: E402

BATCH_ROWS = 65536
GLIBC_DEFAULT_TOP_PAD = 128 * 1024
METHODS = (
    "merge_sorted",
    "merge_sorted_untuned",
    "merge_sorted_pipeline",
    "appendix_merge",
    "pa_sort",
    "duckdb_sort",
    "datafusion_sort",
)
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _random_strings(rng: np.random.Generator, n: int, shortest: int, longest: int) -> pa.Array:
    lengths = rng.integers(shortest, longest + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = LETTERS[rng.integers(0, len(LETTERS), int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes()))


def _generate(path: Path, key_type: str, inputs: int, rows: int) -> None:
    rng = np.random.default_rng(20260701)
    with pa.OSFile(str(path), "wb") as sink:
        writer: pa.ipc.RecordBatchFileWriter | None = None
        for index in range(inputs):
            if key_type == "string":
                key = _random_strings(rng, rows, 12, 20)
            else:
                key = pa.array(rng.integers(0, 10**10, rows))
            table = pa.table(
                {
                    "key": key,
                    "value": pa.array(rng.integers(0, 2**40, rows)),
                    "payload": _random_strings(rng, rows, 30, 30),
                    "input": pa.array(np.full(rows, index, dtype=np.int32)),
                }
            )
            table = table.sort_by("key")
            if writer is None:
                writer = pa.ipc.new_file(sink, table.schema)
            for batch in table.to_batches(max_chunksize=BATCH_ROWS):
                writer.write_batch(batch)
        assert writer is not None
        writer.close()


def _load(path: Path) -> list[list[pa.RecordBatch]]:
    with pa.OSFile(str(path), "rb") as source:
        table = pa.ipc.open_file(source).read_all()
    columns = [name for name in table.column_names if name != "input"]
    inputs: dict[int, list[pa.RecordBatch]] = {}
    for batch in table.to_batches():
        index = batch.column("input")[0].as_py()
        inputs.setdefault(index, []).append(batch.select(columns))
    return [inputs[i] for i in sorted(inputs)]


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run_merge(inputs: list[list[pa.RecordBatch]], *, pipeline: bool = False) -> tuple[int, int]:
    rows = total = 0
    for batch in merge_sorted([iter(batches) for batches in inputs], ["key"], pipeline=pipeline):
        rows += batch.num_rows
        total += pc.sum(batch.column("value")).as_py()
    return rows, total


def _check_merge(inputs: list[list[pa.RecordBatch]]) -> None:
    previous: tuple[object, ...] | None = None
    for batch in merge_sorted([iter(batches) for batches in inputs], ["key"]):
        if not is_sorted(batch, ["key"]) or (previous is not None and previous > key_at(batch, ["key"], 0)):
            raise AssertionError("merge output is not sorted")
        previous = key_at(batch, ["key"], -1)


def _run_appendix_merge(inputs: list[list[pa.RecordBatch]]) -> tuple[int, int]:
    """A plain streaming merge: cut at the smallest last key, then
    ``sort_indices`` and ``take`` on the chunked slices."""
    streams = [iter(batches) for batches in inputs]
    current: list[pa.RecordBatch | None] = [next(stream, None) for stream in streams]
    rows = total = 0

    def consume(data: pa.Table | pa.RecordBatch) -> None:
        nonlocal rows, total
        rows += data.num_rows
        total += pc.sum(data.column("value")).as_py()

    while True:
        active = [i for i, batch in enumerate(current) if batch is not None]
        if len(active) <= 1:
            for i in active:
                batch = current[i]
                while batch is not None:
                    consume(batch)
                    batch = next(streams[i], None)
            return rows, total
        lasts = [current[i].column("key")[-1].as_py() for i in active]  # type: ignore[union-attr]
        cutoff = min(lasts)
        pieces = []
        for i, last in zip(active, lasts, strict=True):
            batch = current[i]
            assert batch is not None
            column = batch.column("key")
            cut = batch.num_rows
            if last > cutoff:
                cut = pc.search_sorted(column, pa.scalar(cutoff, column.type), side="right").as_py()
            if cut:
                pieces.append(batch.slice(0, cut))
            current[i] = next(streams[i], None) if cut == batch.num_rows else batch.slice(cut)
        table = pa.Table.from_batches(pieces)
        if len(pieces) > 1:
            table = table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))
        consume(table)


def _run_pa_sort(inputs: list[list[pa.RecordBatch]]) -> tuple[int, int]:
    table = pa.Table.from_batches([batch for batches in inputs for batch in batches])
    table = table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))
    return table.num_rows, pc.sum(table.column("value")).as_py()


def _consume(batches: Iterator[pa.RecordBatch]) -> tuple[int, int]:
    rows = total = 0
    for batch in batches:
        rows += batch.num_rows
        total += pc.sum(batch.column("value")).as_py() or 0
    return rows, total


def _run_duckdb(inputs: list[list[pa.RecordBatch]]) -> tuple[int, int]:
    import duckdb

    connection = duckdb.connect()
    names = []
    for index, batches in enumerate(inputs):
        name = f"input_{index}"
        connection.register(name, pa.Table.from_batches(batches))
        names.append(name)
    union = " UNION ALL ".join(f"SELECT * FROM {name}" for name in names)
    query = connection.execute(f"SELECT * FROM ({union}) ORDER BY key")
    assert query is not None
    reader = query.to_arrow_reader(BATCH_ROWS)
    assert reader is not None
    result = _consume(iter(reader))
    connection.close()
    return result


def _run_datafusion(inputs: list[list[pa.RecordBatch]]) -> tuple[int, int]:
    from datafusion import SessionContext

    context = SessionContext()
    context.register_record_batches("inputs", [list(batches) for batches in inputs])
    stream = context.sql("SELECT * FROM inputs ORDER BY key").execute_stream()
    return _consume(batch.to_pyarrow() for batch in stream)


RUNNERS: dict[str, Callable[[list[list[pa.RecordBatch]]], tuple[int, int]]] = {
    "merge_sorted": _run_merge,
    "merge_sorted_untuned": _run_merge,
    "merge_sorted_pipeline": lambda inputs: _run_merge(inputs, pipeline=True),
    "appendix_merge": _run_appendix_merge,
    "pa_sort": _run_pa_sort,
    "duckdb_sort": _run_duckdb,
    "datafusion_sort": _run_datafusion,
}


def _worker(method: str, path: Path, cpus: str | None) -> dict[str, Any]:
    if cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split(",")})
    inputs = _load(path)
    expected_rows = sum(batch.num_rows for batches in inputs for batch in batches)
    expected_sum = sum(pc.sum(batch.column("value")).as_py() for batches in inputs for batch in batches)
    # Before the proxy below, which the merge's own tuning would otherwise replace with the system pool. Untuned:
    # glibc's own setting and pyarrow's own pool, to measure what tuning is worth.
    if method == "merge_sorted_untuned":
        tune_memory(top_pad_bytes=GLIBC_DEFAULT_TOP_PAD, system_allocator=False)
    else:
        tune_memory()
    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    pa.set_memory_pool(pool)
    rss_before = _max_rss_mb()
    cpu_before = _cpu_seconds()
    start = time.perf_counter()
    rows, total = RUNNERS[method](inputs)
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_before
    extra_rss = max(0.0, _max_rss_mb() - rss_before)
    arrow_peak = pool.max_memory() / 1e6
    if (rows, total) != (expected_rows, expected_sum):
        raise AssertionError(f"{method}: got {rows} rows summing to {total}, expected {expected_rows}, {expected_sum}")
    if method.startswith("merge_sorted"):
        _check_merge(inputs)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rows": rows,
        "extra_peak_rss_mb": extra_rss,
        "arrow_pool_peak_mb": arrow_peak if method.startswith(("merge_sorted", "pa_", "appendix")) else None,
    }


def _spawn(method: str, path: Path, cpus: str | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", method, "--data", str(path)]
    if cpus:
        command += ["--cpus", cpus]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _available(method: str) -> bool:
    module = {"duckdb_sort": "duckdb", "datafusion_sort": "datafusion"}.get(method)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per input")
    parser.add_argument("--inputs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keys", default="string,int", help="key types to run: string, int")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--cpus", default=None, help="CPUs to pin the workers to, e.g. 0 (default: all)")
    parser.add_argument("--data-dir", default=None, help="where to cache the generated inputs")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, Path(args.data), args.cpus)))
        return
    data_dir = Path(args.data_dir or Path(tempfile.gettempdir()) / "sleeper-merge-benchmark")
    data_dir.mkdir(parents=True, exist_ok=True)
    methods = [m for m in args.methods.split(",") if m]
    skipped = [m for m in methods if not _available(m)]
    methods = [m for m in methods if m not in skipped]
    figures: dict[str, Any] = {
        "inputs": args.inputs,
        "rows_per_input": args.rows,
        "batch_rows": BATCH_ROWS,
        "repeats": args.repeats,
        "cpus": args.cpus or f"all ({os.cpu_count()})",
        "skipped": skipped,
        "results": {},
    }
    for key_type in args.keys.split(","):
        path = data_dir / f"{key_type}-{args.inputs}x{args.rows}.arrow"
        if not path.exists():
            print(f"generating {path} ...", flush=True)
            _generate(path, key_type, args.inputs, args.rows)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        for _ in range(args.repeats):
            order = list(methods)
            random.shuffle(order)
            for method in order:
                runs[method].append(_spawn(method, path, args.cpus))
        total_rows = args.inputs * args.rows
        print(f"\n{key_type} keys: {args.inputs} inputs x {args.rows:,} rows, medians of {args.repeats}")
        print(f"{'method':22} {'seconds':>8} {'rows/s':>12} {'CPU s':>7} {'x merge':>8} {'+RSS MB':>8} {'pool MB':>8}")
        merge_seconds = _median([r["seconds"] for r in runs["merge_sorted"]]) if "merge_sorted" in runs else None
        results: dict[str, Any] = {}
        for method in methods:
            seconds = _median([r["seconds"] for r in runs[method]])
            pools = [r["arrow_pool_peak_mb"] for r in runs[method] if r["arrow_pool_peak_mb"] is not None]
            result = {
                "seconds": round(seconds, 3),
                "rows_per_second": round(total_rows / seconds),
                "cpu_seconds": round(_median([r["cpu_seconds"] for r in runs[method]]), 3),
                "extra_peak_rss_mb": round(_median([r["extra_peak_rss_mb"] for r in runs[method]]), 1),
                "arrow_pool_peak_mb": round(_median(pools), 1) if pools else None,
                "seconds_all": [round(r["seconds"], 3) for r in runs[method]],
            }
            if merge_seconds:
                result["x_merge_sorted"] = round(seconds / merge_seconds, 2)
            results[method] = result
            pool = "-" if result["arrow_pool_peak_mb"] is None else f"{result['arrow_pool_peak_mb']:.0f}"
            ratio = f"{result.get('x_merge_sorted', 0):.2f}"
            print(
                f"{method:22} {seconds:8.3f} {result['rows_per_second']:12,} {result['cpu_seconds']:7.2f} "
                f"{ratio:>8} {result['extra_peak_rss_mb']:8.0f} {pool:>8}"
            )
        figures["results"][key_type] = results
    if skipped:
        print(f"\nskipped (not installed): {', '.join(skipped)}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
