"""Benchmark of bulk import with Spark local[*] beside standard ingest of the same rows, in the same run.

Data: N unsorted rows (default 2,000,000; ``--large`` adds a 20,000,000-row run) with columns ``key`` (12-20 random
letters), ``value`` (int64) and ``payload`` (30 random letters), written as 8 Parquet files (zstd). Every table has
16 leaf partitions (15 split points at quantiles of a sample of the keys), so no pre-split happens, except in the
``bulk_import_presplit`` run, whose table starts with only a root and is extended to 16 leaves from a sample first.

Figures (all in this process, one after the other):

- ``spark_start_s``: the time to start the Spark session (``sleeper.bulk_import.spark_session``, local[*]).
- ``bulk_import``: ``run_bulk_import`` of a job naming the input directory, on the first job of the session (cold
  JVM) and again on a fresh table (warm), with the job's phases (``write`` = tag, shuffle, sort, write files).
- ``bulk_import_presplit``: the same into a table with only a root partition (warm).
- ``ingest``: ``sleeper.ingest.standard.ingest_batches`` of the same Parquet files, read in 64k-row batches, into a
  table with the same 16 leaves (default strategy: one file, one reference per leaf).

Every run is checked: the rows committed equal the rows in the input. Rates are rows per second of wall time from
job start to commit (validation, file listing and reading included). The machine's other load skews Spark more than
single-threaded ingest; compare figures of one run. The last line printed is one JSON object with every figure.

Measured on 2 shared cores (other work running, so ingest varied 0.48-1.0M rows/s between runs): Spark start-up
5-14 s; 2M rows: first job of the session 12-18 s, later jobs 4.8-5.4 s (370-415k rows/s), with pre-split 5.7-5.9 s;
20M rows: bulk import 41.7 s (479k rows/s) beside ingest 20.3 s (986k rows/s). Spark local[*] on one small machine
pays JVM start-up, JIT warm-up and two Arrow conversions per row; it is there for the same code path as EMR, not to
beat standard ingest locally.

Usage: ``.venv/bin/python benchmarks/bulk_import.py [--rows 2000000] [--large]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.api.table import Table  # noqa: E402
from sleeper.bulk_import import run_bulk_import, spark_session  # noqa: E402
from sleeper.core.jobs.bulk_import import BulkImportJob  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.trackers.runs import JobOutcome  # noqa: E402
from sleeper.ingest.standard import ingest_batches  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
)
LEAVES = 16
FILES = 8
BATCH_ROWS = 65536
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.Array:
    lengths = rng.integers(min_len, max_len + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = _LETTERS[rng.integers(0, 26, int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def write_input(directory: Path, rows: int, seed: int = 42) -> list[str]:
    """Writes the rows as FILES Parquet files; returns 15 split points at quantiles of a sample of the keys."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sample: list[pa.Array] = []
    per_file = -(-rows // FILES)
    for i in range(FILES):
        n = min(per_file, rows - i * per_file)
        if n <= 0:
            break
        keys = _random_strings(rng, n, 12, 20)
        table = pa.table(
            {
                "key": keys,
                "value": pa.array(rng.integers(0, 10**12, n), pa.int64()),
                "payload": _random_strings(rng, n, 30, 30),
            }
        )
        pq.write_table(table, directory / f"part-{i:02d}.parquet", compression="zstd")
        sample.append(keys.take(pa.array(rng.integers(0, n, min(n, 20_000)))))
    keys = pa.concat_arrays(sample)
    keys = keys.take(pc.sort_indices(keys))
    return [keys[len(keys) * i // LEAVES].as_py() for i in range(1, LEAVES)]


def _committed_rows(table: Table[LocalInstance]) -> int:
    return sum(r.number_of_rows for r in table.file_references())


def _bulk_import(
    instance: LocalInstance, spark: Any, name: str, files: Path, split_points: list[str] | None
) -> dict[str, Any]:
    table = instance.create_table(
        name,
        SCHEMA,
        split_points=split_points,
        properties={
            "sleeper.table.bulk.import.min.leaf.partitions": str(LEAVES),
            # committed by the job itself, so the rows are on the table when it returns (as in the timed figure)
            "sleeper.table.bulk.import.job.files.commit.async": "false",
        },
    )
    job = BulkImportJob(id=name, table_name=name, files=(str(files),))
    started = time.perf_counter()
    outcome = run_bulk_import(instance, job, spark=spark)
    seconds = time.perf_counter() - started
    if outcome.outcome is not JobOutcome.FINISHED or outcome.result is None:
        raise SystemExit(f"bulk import {name} did not finish: {outcome.reasons}")
    rows = outcome.result.rows_written
    if _committed_rows(table) != rows or rows != outcome.result.rows_read:
        raise SystemExit(f"bulk import {name} committed {_committed_rows(table)} rows of {outcome.result.rows_read}")
    return {
        "seconds": round(seconds, 3),
        "rows": rows,
        "rows_per_s": round(rows / seconds),
        "files": len(outcome.result.references),
        "partitions_added": outcome.result.partitions_added,
        "phases_s": {k: round(v, 3) for k, v in outcome.result.seconds.items()},
    }


def _read_batches(directory: Path) -> Iterator[pa.RecordBatch]:
    for path in sorted(directory.glob("*.parquet")):
        yield from pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=BATCH_ROWS)


def _ingest(instance: LocalInstance, name: str, files: Path, split_points: list[str], rows: int) -> dict[str, Any]:
    table = instance.create_table(name, SCHEMA, split_points=split_points)
    started = time.perf_counter()
    result = ingest_batches(
        table.schema, table.properties, table.state_store, table.data_prefix, _read_batches(files), job_id=name
    )
    seconds = time.perf_counter() - started
    if result.rows_written != rows or _committed_rows(table) != rows:
        raise SystemExit(f"ingest {name} committed {_committed_rows(table)} rows of {rows}")
    return {"seconds": round(seconds, 3), "rows": rows, "rows_per_s": round(rows / seconds), "files": len(result.files)}


def _print(label: str, figures: dict[str, Any]) -> None:
    phases = figures.get("phases_s")
    extra = f"  phases {phases}" if phases else ""
    print(
        f"{label:<28} {figures['rows']:>11,} rows {figures['seconds']:>8.2f} s {figures['rows_per_s']:>11,} rows/s"
        f"  {figures['files']} files{extra}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the base run")
    parser.add_argument("--large", action="store_true", help="also run 20,000,000 rows")
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args()
    sizes = [args.rows] + ([20_000_000] if args.large else [])
    summary: dict[str, Any] = {"cores": os.cpu_count(), "leaves": LEAVES, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="sleeper-bench-bulk-") as tmp:
        work = Path(tmp)
        instance = LocalInstance.create(work / "instance")
        started = time.perf_counter()
        spark = spark_session(driver_memory=args.driver_memory)
        summary["spark_start_s"] = round(time.perf_counter() - started, 3)
        print(f"spark session start-up       {summary['spark_start_s']:.2f} s", flush=True)
        try:
            for rows in sizes:
                files = work / f"input-{rows}"
                split_points = write_input(files, rows)
                run: dict[str, Any] = {}
                label = f"{rows:,}"
                run["bulk_import_cold" if not summary["runs"] else "bulk_import"] = _bulk_import(
                    instance, spark, f"bulk-{rows}-a", files, split_points
                )
                if len(summary["runs"]) == 0:
                    run["bulk_import"] = _bulk_import(instance, spark, f"bulk-{rows}-b", files, split_points)
                    run["bulk_import_presplit"] = _bulk_import(instance, spark, f"bulk-{rows}-root", files, None)
                run["ingest"] = _ingest(instance, f"ingest-{rows}", files, split_points, rows)
                run["bulk_import_vs_ingest"] = round(run["bulk_import"]["rows_per_s"] / run["ingest"]["rows_per_s"], 3)
                for method, figures in run.items():
                    if isinstance(figures, dict):
                        _print(f"{method} {label}", figures)
                print(f"bulk import / ingest rows/s at {label}: {run['bulk_import_vs_ingest']}", flush=True)
                summary["runs"][str(rows)] = run
        finally:
            spark.stop()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
