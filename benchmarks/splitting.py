"""Benchmark of finding a split point from sketches, and of garbage collection, each beside a plain baseline.

- ``split_point``: :func:`sleeper.splitting.read_sketches` of ``--files`` sidecars (each of a sorted file of
  ``--rows`` random int64 keys, sketched as ingest does) and :func:`sleeper.splitting.find_split_point`. Baseline
  ``exact_median``: read the key column of every Parquet file with pyarrow and take the exact median with numpy.
  Also reported: the normalised rank of the sketch median among all keys (0.5 is perfect).
- ``gc``: :func:`sleeper.gc.collect_garbage` of ``--gc-files`` unreferenced files (data + sidecar) on a local table,
  one DELETE_FILES commit. Baseline ``os_remove``: ``os.remove`` of as many files and sidecars in a loop.

Figures are medians over ``--repeats``. The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/splitting.py [--files 20] [--rows 200000] [--gc-files 2000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import AllReferencesToAFile  # noqa: E402
from sleeper.core.statestore.transactions.files import AddFilesTransaction  # noqa: E402
from sleeper.gc import collect_garbage  # noqa: E402
from sleeper.io.filesystem import local_filesystem  # noqa: E402
from sleeper.io.sketches import Sketches, sketches_path  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402
from sleeper.splitting import find_split_point, read_sketches  # noqa: E402

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),))


def _write_files(directory: Path, files: int, rows: int, rng: np.random.Generator) -> list[str]:
    paths = []
    for i in range(files):
        keys = np.sort(rng.integers(0, 10**12, rows))
        data = pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})
        path = str(directory / f"f{i}.parquet")
        pq.write_table(data, path)
        Sketches.from_sorted_batches(SCHEMA, [data]).write(local_filesystem(), sketches_path(path))
        paths.append(path)
    return paths


def _time(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def bench_split(directory: Path, paths: list[str]) -> dict[str, float]:
    seconds, found = _time(lambda: find_split_point(SCHEMA, read_sketches(SCHEMA, paths)))
    base_seconds, exact = _time(
        lambda: np.median(np.concatenate([pq.read_table(p, columns=["key"]).column("key").to_numpy() for p in paths]))
    )
    keys = np.concatenate([pq.read_table(p, columns=["key"]).column("key").to_numpy() for p in paths])
    point = found[1] if found else None
    rank = float(np.mean(keys < point)) if point is not None else float("nan")
    return {
        "split_point_s": seconds,
        "exact_median_s": base_seconds,
        "split_rank": rank,
        "exact_median": float(exact),
    }


def bench_gc(directory: Path, files: int) -> dict[str, float]:
    instance = LocalInstance.create(directory / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.gc.commit.async": "false"})
    data_dir = Path(table.data_prefix.removeprefix("file://")) / "data" / "partition_root"
    data_dir.mkdir(parents=True)
    names = []
    for i in range(files):
        for suffix in (".parquet", ".sketches"):
            (data_dir / f"g{i}{suffix}").write_bytes(b"x")
        names.append(f"{table.data_prefix}/data/partition_root/g{i}.parquet")
    table.state_store.commit(
        AddFilesTransaction(files=tuple(AllReferencesToAFile(filename=n, references={}) for n in names))
    )
    seconds, result = _time(lambda: collect_garbage(table, now=datetime.now(tz=UTC) + timedelta(days=1)))
    assert len(result.deleted) == files, result.problems[:3]
    base_dir = directory / "baseline"
    base_dir.mkdir()
    base_paths = []
    for i in range(files):
        for suffix in (".parquet", ".sketches"):
            p = base_dir / f"g{i}{suffix}"
            p.write_bytes(b"x")
            base_paths.append(str(p))

    def remove_all() -> None:
        for path in base_paths:
            os.remove(path)

    base_seconds, _ = _time(remove_all)
    return {"gc_s": seconds, "os_remove_s": base_seconds, "gc_files_per_s": files / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--gc-files", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="sleeper-bench-splitting-") as tmp:
        base = Path(tmp)
        (base / "files").mkdir()
        paths = _write_files(base / "files", args.files, args.rows, rng)
        for repeat in range(args.repeats):
            run_dir = base / f"run{repeat}"
            run_dir.mkdir()
            figures = {**bench_split(run_dir, paths), **bench_gc(run_dir, args.gc_files)}
            runs.append(figures)
    summary = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    summary["split_vs_exact"] = summary["split_point_s"] / summary["exact_median_s"]
    summary["gc_vs_os_remove"] = summary["gc_s"] / summary["os_remove_s"]
    print(
        f"split point from {args.files} sketches: {summary['split_point_s'] * 1000:.1f} ms "
        f"(exact median from Parquet: {summary['exact_median_s'] * 1000:.1f} ms), rank {summary['split_rank']:.4f}"
    )
    print(
        f"gc of {args.gc_files} files + sidecars: {summary['gc_s'] * 1000:.1f} ms "
        f"({summary['gc_files_per_s']:.0f} files/s; os.remove loop: {summary['os_remove_s'] * 1000:.1f} ms)"
    )
    print(
        json.dumps(
            {"benchmark": "splitting", "files": args.files, "rows": args.rows, "gc_files": args.gc_files, **summary}
        )
    )


if __name__ == "__main__":
    main()
