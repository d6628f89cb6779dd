"""Benchmark of filters on any column (``Table.scan(filter=...)``) beside a pyarrow dataset scan of the same files.

The table has an int64 row key ``key`` (random in [0, 1e10)), an int64 ``ts`` that rises with the key (an event time
in a table keyed by a time-ordered id: ``key / 10`` plus noise of up to 1e6), an int64 ``value`` (random in
[0, 1e6)) and a 30-letter ``payload``; 4 leaves at the key space's quartiles, 90% of the rows in one file per leaf and
10% in one file on the root, so every leaf's sub-query merges two files; Sleeper's default Parquet settings
(100,000-row row groups).

Figures, for each size in ``--rows`` (10M by default):

- ``correlated``: ``ts >= X`` selecting about 1% of the rows. The row groups the filtered scan decodes (from the
  reader's plans) against those an unfiltered scan decodes, and its time against a pyarrow dataset scan of the same
  files with the same filter (which prunes row groups by the same statistics, but neither merges nor applies a table's
  rules); the ratio is the median of the repetitions' ratios of seconds (above 1: the scan is faster). The median CPU
  time of each (the process's, every thread) is reported beside it: on a shared machine it varies less than the
  elapsed time.
- ``uncorrelated``: ``value < 10000`` selecting about 1% of the rows, which no statistics can prune: every row group
  is decoded; the same ratio.
- ``row_key``: ``key < K`` for the first 1% of the key space: the sub-queries planned (leaves read) against the
  leaves of the table, and the same ratio.

Row counts and ``sum(value)`` are checked to agree with the dataset scan's. The last line printed is one JSON object
with every figure.

Usage: ``.venv/bin/python benchmarks/filter_scan.py [--rows 10000000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import query as query_benchmark  # noqa: E402
from sleeper.api.table import Table  # noqa: E402
from sleeper.core.filter import parse_filter  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.io.parquet_reader import SortedFileReader  # noqa: E402
from sleeper.query.executor import plan_table_query, table_query_of  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(
        Field("ts", PrimitiveType.LONG),
        Field("value", PrimitiveType.LONG),
        Field("payload", PrimitiveType.STRING),
    ),
)
KEY_SPACE = 10_000_000_000
SMALL_SCAN_SECONDS = 0.2
"""A comparison whose first filtered scan takes less than this is repeated :data:`SMALL_SCAN_REPEATS` times as often."""
SMALL_SCAN_REPEATS = 5


def _data(rng: np.random.Generator, rows: int) -> pa.Table:
    keys = np.sort(rng.integers(0, KEY_SPACE, rows))
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    payload = letters[rng.integers(0, 26, rows * 30)].tobytes()
    offsets = pa.array(np.arange(0, rows * 30 + 1, 30, dtype=np.int32))
    strings = pa.StringArray.from_buffers(rows, offsets.buffers()[1], pa.py_buffer(payload))
    return pa.table(
        {
            "key": keys,
            "ts": keys // 10 + rng.integers(0, 1_000_000, rows),
            "value": rng.integers(0, 1_000_000, rows),
            "payload": strings,
        }
    )


def build(directory: Path, rows: int, seed: int) -> tuple[Table[LocalInstance], pa.Table]:
    """Creates the table and writes its files as benchmarks/query.py lays them out; returns it with all its rows."""
    return query_benchmark.build(directory, rows, seed, schema=SCHEMA, make_data=_data)


class _RowGroupCounter:
    """Counts the row groups every read plan of the reader decodes while installed."""

    def __init__(self) -> None:
        self.count = 0
        self._original = SortedFileReader.read_plan

    def __enter__(self) -> _RowGroupCounter:
        original = self._original
        counter = self

        def counting(reader: SortedFileReader, plan: Any, **kwargs: Any) -> Any:
            counter.count += len(plan.row_groups)
            return original(reader, plan, **kwargs)

        setattr(SortedFileReader, "read_plan", counting)  # noqa: B010 - replaced while counting
        return self

    def __exit__(self, *_: object) -> None:
        setattr(SortedFileReader, "read_plan", self._original)  # noqa: B010 - put back


def _compare(
    table: Table[LocalInstance], dataset: ds.Dataset, text: str, expression: pc.Expression, repeats: int
) -> dict[str, Any]:
    """Times the filtered scan and the dataset scan alternately, checking they agree: ``repeats`` times, or
    :data:`SMALL_SCAN_REPEATS` times as many where the first scan took less than :data:`SMALL_SCAN_SECONDS` (a
    scan of tens of milliseconds on a shared machine needs more samples for a stable median)."""
    start = time.perf_counter()
    with _RowGroupCounter() as counter:
        first = table.scan(filter=text).to_arrow()
    if time.perf_counter() - start < SMALL_SCAN_SECONDS:
        repeats *= SMALL_SCAN_REPEATS
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        result = table.scan(filter=text).to_arrow()
        ours.append(time.perf_counter() - start)
        ours_cpu.append(time.process_time() - cpu)
        start, cpu = time.perf_counter(), time.process_time()
        scanned = dataset.to_table(filter=expression)
        theirs.append(time.perf_counter() - start)
        theirs_cpu.append(time.process_time() - cpu)
        if result.num_rows != scanned.num_rows or result.num_rows != first.num_rows:
            raise AssertionError(f"{text}: rows {result.num_rows} against the dataset's {scanned.num_rows}")
        if pc.sum(result["value"]).as_py() != pc.sum(scanned["value"]).as_py():
            raise AssertionError(f"{text}: sum(value) differs from the dataset's")
    return {
        "filter": text,
        "rows": first.num_rows,
        "row_groups_decoded": counter.count,
        "scan_seconds": statistics.median(ours),
        "pyarrow_dataset_seconds": statistics.median(theirs),
        "scan_over_dataset": statistics.median(b / a for a, b in zip(ours, theirs, strict=True)),
        "repeats": repeats,
        "scan_cpu_seconds": statistics.median(ours_cpu),
        "pyarrow_dataset_cpu_seconds": statistics.median(theirs_cpu),
    }


def run(table: Table[LocalInstance], data: pa.Table, repeats: int) -> dict[str, Any]:
    """Every figure for one table."""
    paths = sorted({ref.filename.removeprefix("file://") for ref in table.file_references()})
    dataset = ds.dataset(paths, format="parquet")
    table.scan().count()  # warm: footers read once, as a long-running reader has them
    with _RowGroupCounter() as every:
        table.scan().count()
    ts_cut = int(np.quantile(data["ts"].to_numpy(), 0.99))
    key_cut = KEY_SPACE // 100
    correlated = _compare(table, dataset, f"ts >= {ts_cut}", ds.field("ts") >= ts_cut, repeats)
    uncorrelated = _compare(table, dataset, "value < 10000", ds.field("value") < 10_000, repeats)
    row_key = _compare(table, dataset, f"key < {key_cut}", ds.field("key") < key_cut, repeats)
    query = table_query_of(table, row_filter=parse_filter(f"key < {key_cut}", SCHEMA))
    planned = plan_table_query(query, table.state_store, table_id=table.table_id, schema=SCHEMA)
    row_key["leaves_planned"] = len(planned)
    row_key["leaves"] = len(table.state_store.partition_tree().leaves)
    correlated["row_groups_unfiltered"] = every.count
    correlated["row_groups_fraction"] = correlated["row_groups_decoded"] / every.count
    return {
        "unfiltered_row_groups": every.count,
        "correlated": correlated,
        "uncorrelated": uncorrelated,
        "row_key": row_key,
    }


def main() -> None:
    """Builds each table, runs the comparisons and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="sleeper-filter-bench-") as directory:
            start = time.perf_counter()
            table, data = build(Path(directory), rows, args.seed)
            print(f"built {rows:,} rows in {time.perf_counter() - start:.1f}s", flush=True)
            figures = run(table, data, args.repeats)
            for name in ("correlated", "uncorrelated", "row_key"):
                f = figures[name]
                print(
                    f"{rows:,} rows, {name} ({f['filter']}): {f['rows']:,} rows, {f['row_groups_decoded']} of "
                    f"{figures['unfiltered_row_groups']} row groups decoded, scan {f['scan_seconds'] * 1000:.0f} ms, "
                    f"pyarrow dataset {f['pyarrow_dataset_seconds'] * 1000:.0f} ms, ratio {f['scan_over_dataset']:.2f} "
                    f"(CPU {f['scan_cpu_seconds'] * 1000:.0f} ms against "
                    f"{f['pyarrow_dataset_cpu_seconds'] * 1000:.0f} ms, {f['repeats']} repeats)",
                    flush=True,
                )
            results[str(rows)] = figures
    print(json.dumps({"rows": args.rows, "load_average": os.getloadavg(), "results": results}))


if __name__ == "__main__":
    main()
