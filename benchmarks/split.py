"""Benchmark: find and split a partition whose files carry 100 sketches, and the demo's wall time.

- ``split``: a local table whose root partition holds ``--files`` files (each written by standard ingest, so each has
  its sketches sidecar) of ``--rows`` random int64 keys. Timed end to end: the finder (threshold below the rows),
  then the splitter reading and merging every file's sketches, finding the median and committing SPLIT_PARTITION.
  Baseline in the same run: read the key column of every file with pyarrow and take the exact median with numpy.
  Target: <= 2 s.
- ``demo``: wall time of ``sleeper demo`` (its default: 5M rows) in a subprocess. Target: < 120 s on 2 cores.

Figures are medians over ``--repeats``; the last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/split.py [--files 100] [--rows 20000] [--repeats 3] [--no-demo]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.io.filesystem import filesystem_path  # noqa: E402
from sleeper.runtime.local.api import LocalApi  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402
from sleeper.splitting import find_partitions_to_split, split_partition_job  # noqa: E402

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def bench_split(directory: Path, files: int, rows: int, rng: np.random.Generator) -> dict[str, float]:
    instance = LocalInstance.create(directory / "instance")
    LocalApi(instance).update_instance_properties({"sleeper.partition.splitting.files.maximum": str(files)})
    table = LocalInstance(instance.directory).create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.partition.splitting.threshold": str(files * rows // 2),
            "sleeper.table.partition.splitting.commit.async": "false",
        },
    )
    for _ in range(files):
        keys = pa.array(rng.integers(0, 10**12, rows), pa.int64())
        table.ingest(pa.table({"key": keys, "value": keys}))
    sketch_files = [r.filename for r in table.file_references()]
    assert len(sketch_files) == files
    start = time.perf_counter()
    (job,) = find_partitions_to_split(table)
    result = split_partition_job(job, table, async_commit=False)
    seconds = time.perf_counter() - start
    assert len(job.filenames) == files, len(job.filenames)
    assert result.split_point is not None, result
    start = time.perf_counter()
    keys = np.concatenate(
        [pq.read_table(filesystem_path(f), columns=["key"]).column("key").to_numpy() for f in sketch_files]
    )
    exact = float(np.median(keys))
    base_seconds = time.perf_counter() - start
    rank = float(np.mean(keys < result.split_point))
    assert len(instance.table("t").leaf_partitions()) == 2
    return {"split_s": seconds, "exact_median_s": base_seconds, "split_rank": rank, "exact_median": exact}


def bench_demo(directory: Path) -> float:
    sleeper = Path(sys.executable).parent / "sleeper"
    command = [str(sleeper)] if sleeper.exists() else [sys.executable, "-m", "sleeper.cli.main"]
    start = time.perf_counter()
    subprocess.run([*command, "demo", str(directory / "demo")], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-demo", action="store_true", help="Skip timing the demo.")
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="sleeper-bench-split-") as tmp:
        for repeat in range(args.repeats):
            run_dir = Path(tmp) / f"run{repeat}"
            run_dir.mkdir()
            runs.append(bench_split(run_dir, args.files, args.rows, rng))
        summary = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        summary["split_vs_exact"] = summary["split_s"] / summary["exact_median_s"]
        print(
            f"find + split a partition of {args.files} files ({args.files * args.rows:,} rows): "
            f"{summary['split_s'] * 1000:.0f} ms (target <= 2000 ms); exact median from Parquet: "
            f"{summary['exact_median_s'] * 1000:.0f} ms; split at rank {summary['split_rank']:.4f}"
        )
        if not args.no_demo:
            summary["demo_s"] = bench_demo(Path(tmp))
            print(f"sleeper demo (5M rows): {summary['demo_s']:.1f} s (target < 120 s)")
    summary["load_average_1m"] = os.getloadavg()[0]
    print(json.dumps({"benchmark": "split", "files": args.files, "rows": args.rows, **summary}))


if __name__ == "__main__":
    main()
