"""Benchmark of queries (sleeper.query) on a local table: point lookups and a range scan beside a pyarrow scan.

The table has an int64 row key ``key`` (random in [0, 1e10)), an int64 ``value`` and a 30-letter ``payload``, split
into 4 leaves at the key space's quartiles. 90% of the rows are written as one file per leaf, and 10% as one file
referenced on the root (as if not yet compacted down), so every leaf's sub-query merges two files. Files use Sleeper's
default Parquet settings (100,000-row row groups).

Figures:

- point lookups: ``table_query(keys=[[k]])`` of existing keys, one at a time, including planning against the state
  store; median and 95th percentile latency, and the row groups touched per file read (from the reader's plan for
  the sub-query's region: within them only the pages that can hold the key are decoded). Every lookup's rows are
  checked against the data.
- range scan: one range over 10% of the key space, across a split point, by ``table_query`` and by a pyarrow dataset
  scan of the same files with the same filter (which neither merges nor sorts), alternately; the ratio is the
  median of the repetitions' ratios of rows/s (above 1: the query is faster), with the median CPU time of each (the
  process's, every thread). Row counts and ``sum(value)`` are checked to agree.

Both are run on a table of each size in ``--rows`` (1M and 10M rows by default), read by the data engine named by
``--engine`` (``sleeper.table.data.engine``: ARROW, the default, or DATAFUSION).

- leaf query memory (``--memory-rows``, 16M by default; 0 skips it): tables of that many rows and of twice as many,
  and on each one leaf's whole sub-query (a quarter of the rows, merged from its file and the root's) read by each
  engine in a fresh process started with the environment of Sleeper's images (``sleeper.core.IMAGE_ENVIRONMENT``:
  Arrow allocates from the C library, as in the query Lambda), consuming the stream: the rows, seconds, CPU
  seconds (with any worker processes), the process's peak RSS (``VmHWM``) and the largest worker's peak RSS
  (DataFusion's workers; 0 for ARROW); the ARROW read is the baseline, and the growth is the peak at 2x rows over
  the peak at 1x (each peak with its largest worker's, as one worker runs at a time).

The last line printed is one JSON object with every figure.

With ``--plot out.png`` the figures are drawn against the table's rows (matplotlib, installed into the virtualenv
for the benchmark only: ``.venv/bin/pip install matplotlib``).

Usage: ``.venv/bin/python benchmarks/query.py [--rows 1000000 10000000] [--lookups 200] [--repeats 7]
[--engine ARROW|DATAFUSION] [--memory-rows 16000000] [--plot out.png]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from benchmarks.measure import peak_rss_bytes  # noqa: E402
from benchmarks.plot import Panel, Series, plot_panels, require_matplotlib  # noqa: E402
from sleeper.api.table import Table  # noqa: E402
from sleeper.core import IMAGE_ENVIRONMENT  # noqa: E402
from sleeper.core.query import Query  # noqa: E402
from sleeper.core.range import Range, Region  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import FileReference  # noqa: E402
from sleeper.io.parquet import SortedFileWriter  # noqa: E402
from sleeper.io.parquet_reader import SortedFileReader  # noqa: E402
from sleeper.query.executor import region_bounds, table_query  # noqa: E402
from sleeper.query.planner import plan_query  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(
    row_key_fields=(KEY,),
    value_fields=(Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)),
)
KEY_SPACE = 10_000_000_000
SPLITS = [KEY_SPACE // 4, KEY_SPACE // 2, 3 * KEY_SPACE // 4]
CHUNK = 1_000_000


def _data(rng: np.random.Generator, rows: int) -> pa.Table:
    keys = np.sort(rng.integers(0, KEY_SPACE, rows))
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    payload = letters[rng.integers(0, 26, rows * 30)].tobytes()
    offsets = pa.array(np.arange(0, rows * 30 + 1, 30, dtype=np.int32))
    strings = pa.StringArray.from_buffers(rows, offsets.buffers()[1], pa.py_buffer(payload))
    return pa.table({"key": keys, "value": rng.integers(0, 1_000_000, rows), "payload": strings})


def _write(table: Table[LocalInstance], partition_id: str, name: str, data: pa.Table) -> str:
    location = f"{table.data_prefix}/data/partition_{partition_id}/{name}.parquet"
    with SortedFileWriter(location, table.schema, sketches=False) as writer:
        for start in range(0, data.num_rows, CHUNK):
            writer.write(data.slice(start, CHUNK))
    return location


def build(
    directory: Path,
    rows: int,
    seed: int,
    *,
    schema: Schema = SCHEMA,
    make_data: Callable[[np.random.Generator, int], pa.Table] = _data,
) -> tuple[Table[LocalInstance], pa.Table]:
    """Creates the table (of ``schema``, rows from ``make_data``, sorted by an int64 ``key`` in [0, 1e10)) and writes
    its files: 10% of the rows in one file on the root, the rest in one file per leaf. Returns it with all its rows
    (also used by benchmarks/filter_scan.py)."""
    table = sleeper.connect(directory, create=True).create_table("bench", schema, split_points=SPLITS)
    tree = table.state_store.partition_tree()
    rng = np.random.default_rng(seed)
    data = make_data(rng, rows)
    on_root = rng.random(rows) < 0.1
    references = []
    root_rows = data.filter(pa.array(on_root))
    location = _write(table, tree.root.id, "root", root_rows)
    references.append(
        FileReference(
            filename=location,
            partition_id=tree.root.id,
            number_of_rows=root_rows.num_rows,
            only_contains_data_for_this_partition=False,
        )
    )
    rest = data.filter(pa.array(~on_root))
    bounds = [0, *SPLITS, None]
    for i, leaf in enumerate(tree.leaves):
        low, high = bounds[i], bounds[i + 1]
        mask = pc.greater_equal(rest["key"], low)
        if high is not None:
            mask = pc.and_(mask, pc.less(rest["key"], high))
        part = rest.filter(mask)
        references.append(
            FileReference(
                filename=_write(table, leaf.id, f"leaf{i}", part), partition_id=leaf.id, number_of_rows=part.num_rows
            )
        )
    table.state_store.add_files(references)
    return table, data


def point_lookups(table: Table[LocalInstance], data: pa.Table, lookups: int, seed: int) -> dict[str, Any]:
    """Times exact-key lookups of existing keys and counts the row groups each file read decodes."""
    rng = np.random.default_rng(seed + 1)
    keys = [int(k) for k in rng.choice(data["key"].to_numpy(), lookups)]
    latencies = []
    for key in keys:
        start = time.perf_counter()
        result = table_query(table, keys=[[key]])
        latencies.append(time.perf_counter() - start)
        expected = pc.sum(pc.equal(data["key"], key)).as_py()
        if result.num_rows != expected:
            raise AssertionError(f"key {key}: {result.num_rows} rows, expected {expected}")
    tree = table.state_store.partition_tree()
    references = table.file_references()
    readers: dict[str, SortedFileReader] = {}
    decoded: list[int] = []
    totals: list[int] = []
    for key in keys[: min(len(keys), 50)]:
        query_region = Region.exact(SCHEMA, [key])
        plans = plan_query(
            Query(query_id="b", table_name="bench", regions=(query_region,)), tree, references, table_id="t"
        )
        for plan in plans:
            for location in plan.files:
                reader = readers.get(location) or readers.setdefault(location, SortedFileReader(location, SCHEMA))
                read_plan = reader.plan([region_bounds(r) for r in plan.regions])
                decoded.append(len(read_plan.row_groups))
                totals.append(read_plan.total_row_groups)
    for reader in readers.values():
        reader.close()
    latencies.sort()
    return {
        "lookups": lookups,
        "median_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
        "row_groups_touched_per_file": statistics.mean(decoded),
        "row_groups_per_file": statistics.mean(totals),
    }


def range_scan(table: Table[LocalInstance], data: pa.Table, repeats: int) -> dict[str, Any]:
    """Times one range by the query executor and by a pyarrow dataset scan of the same files."""
    low, high = int(KEY_SPACE * 0.2), int(KEY_SPACE * 0.3)
    region = Region.of([Range(field=KEY, min=low, max=high)])
    expected_rows = pc.sum(pc.and_(pc.greater_equal(data["key"], low), pc.less(data["key"], high))).as_py()
    paths = [ref.filename.removeprefix("file://") for ref in table.file_references()]
    dataset = ds.dataset(sorted(set(paths)), format="parquet")
    flt = (ds.field("key") >= low) & (ds.field("key") < high)
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    sums = set()
    table_query(table, regions=[region])  # warm: footers and page index read once, as a long-running reader has them
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        result = table_query(table, regions=[region])
        ours.append(time.perf_counter() - start)
        ours_cpu.append(time.process_time() - cpu)
        start, cpu = time.perf_counter(), time.process_time()
        scanned = dataset.to_table(filter=flt)
        theirs.append(time.perf_counter() - start)
        theirs_cpu.append(time.process_time() - cpu)
        if result.num_rows != expected_rows or scanned.num_rows != expected_rows:
            raise AssertionError(f"rows: query {result.num_rows}, scan {scanned.num_rows}, expected {expected_rows}")
        sums.add((pc.sum(result["value"]).as_py(), pc.sum(scanned["value"]).as_py()))
    if any(a != b for a, b in sums):
        raise AssertionError(f"sum(value) differs: {sums}")
    return {
        "rows": expected_rows,
        "query_over_dataset": statistics.median(b / a for a, b in zip(ours, theirs, strict=True)),
        "query_seconds": statistics.median(ours),
        "query_rows_per_s": expected_rows / statistics.median(ours),
        "pyarrow_dataset_seconds": statistics.median(theirs),
        "pyarrow_dataset_rows_per_s": expected_rows / statistics.median(theirs),
        "query_cpu_seconds": statistics.median(ours_cpu),
        "pyarrow_dataset_cpu_seconds": statistics.median(theirs_cpu),
    }


ENGINES = ("ARROW", "DATAFUSION")
MEMORY_LEAF = 1
"""The leaf whose sub-query the memory figures read (the second quarter of the key space)."""


def _cpu_seconds() -> float:
    """The CPU time of this process and of the child processes it has waited for (DataFusion workers)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def leaf_read(directory: Path, engine: str) -> dict[str, Any]:
    """Runs one leaf's whole sub-query of the table in ``directory`` with an engine, in this process (a fresh one:
    see :func:`leaf_memory`), and measures it."""
    from sleeper.query.datafusion_read import stop_workers
    from sleeper.query.executor import execute, plan_table_query

    table = sleeper.connect(directory).table("bench").set_properties({"sleeper.table.data.engine": engine})
    leaf = table.state_store.partition_tree().leaves[MEMORY_LEAF]
    query = Query(query_id="memory", table_name="bench", regions=(leaf.region,))
    planned = plan_table_query(query, table.state_store, table_id=table.table_id)
    start, cpu = time.perf_counter(), _cpu_seconds()
    rows = 0
    total = 0
    for batch in execute(query, table):
        rows += batch.num_rows
        total += pc.sum(batch.column("value")).as_py() or 0
    stop_workers()  # waited for, so their CPU time and peak RSS are counted
    return {
        "engine": engine,
        "rows": rows,
        "sum_value": total,
        "files": len(planned[0].files) if planned else 0,
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu_seconds() - cpu,
        "peak_rss_bytes": peak_rss_bytes(),
        "worker_peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    }


def _held(read: dict[str, Any]) -> int:
    """The most a read can have held at once: its process's peak RSS and its largest worker's (one runs at a time)."""
    return int(read["peak_rss_bytes"] + read["worker_peak_rss_bytes"])


def leaf_memory(rows: int, seed: int) -> dict[str, Any]:
    """Each engine's leaf read, each in a fresh process, on tables of ``rows`` and twice as many rows."""
    figures: dict[str, Any] = {}
    for size in (rows, 2 * rows):
        with tempfile.TemporaryDirectory(prefix="sleeper-query-memory-") as directory:
            build(Path(directory), size, seed)
            reads = {}
            for engine in ENGINES:
                done = subprocess.run(
                    [sys.executable, __file__, "--leaf-read", directory, engine],
                    check=True,
                    capture_output=True,
                    text=True,
                    env={**os.environ, **IMAGE_ENVIRONMENT},
                )
                reads[engine] = json.loads(done.stdout.strip().splitlines()[-1])
                read = reads[engine]
                print(
                    f"{size:,} rows, leaf query ({read['rows']:,} rows from {read['files']} files) by {engine}: "
                    f"{read['seconds']:.2f}s, CPU {read['cpu_seconds']:.2f}s, "
                    f"peak RSS {read['peak_rss_bytes'] / 1e6:.0f} MB, "
                    f"worker peak RSS {read['worker_peak_rss_bytes'] / 1e6:.0f} MB",
                    flush=True,
                )
            if len({(r["rows"], r["sum_value"]) for r in reads.values()}) != 1:
                raise AssertionError(f"the engines' leaf reads differ: {reads}")
        figures[str(size)] = reads
    for engine in ENGINES:
        one, two = figures[str(rows)][engine], figures[str(2 * rows)][engine]
        figures[f"{engine}_peak_growth_at_2x"] = _held(two) / _held(one)
        print(
            f"{engine}: peak RSS (with its largest worker's) {_held(one) / 1e6:.0f} MB at {rows:,} rows, "
            f"{_held(two) / 1e6:.0f} MB at 2x: {figures[f'{engine}_peak_growth_at_2x']:.2f}x",
            flush=True,
        )
    return figures


def _plot(path: str, results: dict[str, Any], memory: dict[str, Any] | None, memory_rows: int) -> None:
    """The range scan's and the lookups' times against the table's rows, and each engine's leaf read (time and peak
    RSS with its largest worker's) at the memory figures' two sizes."""
    sizes = sorted(results, key=int)
    millions = [int(size) / 1e6 for size in sizes]
    scans = [results[size]["range_scan"] for size in sizes]
    lookups = [results[size]["point_lookups"] for size in sizes]
    panels = [
        Panel(
            "Range scan of 10% of the key space",
            "table rows (millions)",
            "ms",
            [
                Series("query", millions, [scan["query_seconds"] * 1000 for scan in scans]),
                Series("pyarrow dataset scan", millions, [scan["pyarrow_dataset_seconds"] * 1000 for scan in scans]),
            ],
        ),
        Panel(
            "Point lookups",
            "table rows (millions)",
            "ms",
            [
                Series("median", millions, [lookup["median_ms"] for lookup in lookups]),
                Series("95th percentile", millions, [lookup["p95_ms"] for lookup in lookups]),
            ],
        ),
    ]
    if memory is not None:
        table_rows = [memory_rows / 1e6, 2 * memory_rows / 1e6]
        reads = [memory[str(memory_rows)], memory[str(2 * memory_rows)]]
        panels.append(
            Panel(
                "A leaf's whole sub-query (a quarter of the rows)",
                "table rows (millions)",
                "peak RSS (MB, with its largest worker's)",
                [Series(engine, table_rows, [_held(read[engine]) / 1e6 for read in reads]) for engine in ENGINES],
            )
        )
        panels.append(
            Panel(
                "A leaf's whole sub-query: time",
                "table rows (millions)",
                "seconds",
                [Series(engine, table_rows, [read[engine]["seconds"] for read in reads]) for engine in ENGINES],
            )
        )
    plot_panels(path, panels)


def main() -> None:
    """Builds each table, runs the benchmarks on it and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--engine", choices=ENGINES, default="ARROW", help="the data engine of the queries' table")
    parser.add_argument("--memory-rows", type=int, default=16_000_000, help="rows of the leaf memory figures (0: none)")
    parser.add_argument("--plot", help="write a PNG of the figures against the table's rows here")
    parser.add_argument("--leaf-read", nargs=2, metavar=("DIRECTORY", "ENGINE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.leaf_read is not None:  # one leaf read, in a process of its own (see leaf_memory)
        print(json.dumps(leaf_read(Path(args.leaf_read[0]), args.leaf_read[1])))
        return
    if args.plot:
        require_matplotlib()
    results: dict[str, Any] = {}
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="sleeper-query-bench-") as directory:
            start = time.perf_counter()
            table, data = build(Path(directory), rows, args.seed)
            build_seconds = time.perf_counter() - start
            print(f"built {rows:,} rows in {build_seconds:.1f}s", flush=True)
            if args.engine != "ARROW":
                table = table.set_properties({"sleeper.table.data.engine": args.engine})
            points = point_lookups(table, data, args.lookups, args.seed)
            print(
                f"{rows:,} rows, point lookups: median {points['median_ms']:.2f} ms, p95 {points['p95_ms']:.2f} ms, "
                f"{points['row_groups_touched_per_file']:.2f} of {points['row_groups_per_file']:.1f} row groups "
                "touched per file",
                flush=True,
            )
            scan = range_scan(table, data, args.repeats)
            print(
                f"{rows:,} rows, range scan of {scan['rows']:,} rows: query {scan['query_rows_per_s']:,.0f} rows/s, "
                f"pyarrow dataset {scan['pyarrow_dataset_rows_per_s']:,.0f} rows/s, "
                f"ratio {scan['query_over_dataset']:.2f} (CPU {scan['query_cpu_seconds'] * 1000:.0f} ms against "
                f"{scan['pyarrow_dataset_cpu_seconds'] * 1000:.0f} ms)",
                flush=True,
            )
        results[str(rows)] = {"build_seconds": build_seconds, "point_lookups": points, "range_scan": scan}
    memory = leaf_memory(args.memory_rows, args.seed) if args.memory_rows else None
    load = os.getloadavg()
    if args.plot:
        _plot(args.plot, results, memory, args.memory_rows)
        print(f"plot written to {args.plot}")
    print(
        json.dumps(
            {
                "rows": args.rows,
                "engine": args.engine,
                "load_average": load,
                "results": results,
                "leaf_query_memory": memory,
            }
        )
    )


if __name__ == "__main__":
    main()
