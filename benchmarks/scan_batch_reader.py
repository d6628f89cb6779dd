"""Benchmark of the memory a full scan takes: ``Table.scan().to_arrow_batch_reader()`` beside ``to_arrow()``.

A local table of ``--rows`` rows (an int64 row key, an int64 value and a 40-byte string payload; 4 leaves, from one
ingest) is scanned whole twice, each time in a fresh child process: once consuming ``to_arrow_batch_reader()`` batch
by batch (counting rows and summing ``value``), once materialising ``to_arrow()``. The same is then done for a table of
twice the rows, so the figures show whether the reader's memory grows with the rows. Each child first scans one row
(so the modules a scan imports are loaded), then reports its resident set size just before the scan and its peak
after it; the figure is the growth, peak minus before. The peak is ``VmHWM``: ``ru_maxrss`` is carried across fork
and exec, so a child started by this (large) parent would report the parent's peak (which is what the first version
of this benchmark measured: 746 MB for both scans). The scans' row counts and sums are checked against what was
ingested.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/scan_batch_reader.py [--rows 5000000]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)),
)
KEY_SPACE = 10**10
BUILD_BATCH_ROWS = 500_000


def _rss_bytes() -> int:
    """This process's resident set size now (Linux: /proc/self/statm)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize()


def _peak_rss_bytes() -> int:
    """This process's peak resident set size: ``VmHWM``, which exec resets (``ru_maxrss`` is not)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("this benchmark needs Linux's /proc/self/status (VmHWM)")


def build(directory: Path, rows: int, seed: int) -> tuple[int, int]:
    """Creates the instance and table and ingests the rows; returns (rows, sum of value)."""
    instance = sleeper.create_instance(directory / "instance")
    splits = [KEY_SPACE // 4, KEY_SPACE // 2, 3 * KEY_SPACE // 4]
    table = instance.create_table("bench", SCHEMA, split_points=splits)
    rng = np.random.default_rng(seed)
    total = 0

    def batches() -> Any:
        nonlocal total
        for start in range(0, rows, BUILD_BATCH_ROWS):
            n = min(BUILD_BATCH_ROWS, rows - start)
            values = rng.integers(0, 1000, n, dtype=np.int64)
            total += int(values.sum())
            payload = pa.array([f"payload-{i:032d}" for i in range(start, start + n)], pa.string())
            yield pa.RecordBatch.from_arrays(
                [pa.array(rng.integers(0, KEY_SPACE, n, dtype=np.int64)), pa.array(values), payload],
                names=["key", "value", "payload"],
            )

    table.ingest(batches())
    return rows, total


def child(instance_dir: str, mode: str) -> None:
    """Runs one scan in this (fresh) process and prints its figures as JSON."""
    table = sleeper.connect(instance_dir).table("bench")
    table.scan(limit=1).to_arrow()  # warm up: import what a scan imports, so only the scan itself is measured
    scan = table.scan()
    before = _rss_bytes()
    start = time.perf_counter()
    if mode == "batch_reader":
        rows = 0
        total = 0
        batches = 0
        for batch in scan.to_arrow_batch_reader():
            rows += batch.num_rows
            total += int(pa.compute.sum(batch["value"]).as_py() or 0)
            batches += 1
    else:
        result = scan.to_arrow()
        rows = result.num_rows
        total = int(pa.compute.sum(result["value"]).as_py() or 0)
        batches = result["value"].num_chunks
    seconds = time.perf_counter() - start
    peak = _peak_rss_bytes()
    print(
        json.dumps(
            {
                "mode": mode,
                "rows": rows,
                "sum_value": total,
                "batches": batches,
                "seconds": seconds,
                "rows_per_s": rows / seconds,
                "rss_before_mb": before / 2**20,
                "peak_rss_mb": peak / 2**20,
                "rss_growth_mb": max(0, peak - before) / 2**20,
            }
        )
    )


def _run_child(instance_dir: Path, mode: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--instance", str(instance_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Builds the table, runs both scans in child processes and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--child", choices=["batch_reader", "to_arrow"], help=argparse.SUPPRESS)
    parser.add_argument("--instance", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.instance, args.child)
        return
    runs: dict[str, Any] = {}
    for size in (args.rows, 2 * args.rows):
        with tempfile.TemporaryDirectory(prefix="sleeper-scan-bench-") as directory:
            start = time.perf_counter()
            rows, total = build(Path(directory), size, args.seed)
            build_seconds = time.perf_counter() - start
            print(f"built {rows:,} rows in {build_seconds:.1f}s", flush=True)
            results = {mode: _run_child(Path(directory) / "instance", mode) for mode in ("batch_reader", "to_arrow")}
        for mode, figures in results.items():
            if figures["rows"] != rows or figures["sum_value"] != total:
                raise SystemExit(
                    f"{mode} read {figures['rows']} rows summing {figures['sum_value']}, not {rows}/{total}"
                )
            print(
                f"{mode}: {figures['rows']:,} rows in {figures['seconds']:.1f}s "
                f"({figures['rows_per_s']:,.0f} rows/s), RSS growth {figures['rss_growth_mb']:.0f} MB "
                f"(peak {figures['peak_rss_mb']:.0f} MB)",
                flush=True,
            )
        runs[str(rows)] = {"build_seconds": build_seconds, "scans": results}
    small, large = (runs[str(n)]["scans"] for n in (args.rows, 2 * args.rows))
    ratios = {
        "to_arrow_over_reader": large["to_arrow"]["rss_growth_mb"] / max(large["batch_reader"]["rss_growth_mb"], 1e-9),
        "reader_growth_2x_over_1x": large["batch_reader"]["rss_growth_mb"]
        / max(small["batch_reader"]["rss_growth_mb"], 1e-9),
        "to_arrow_growth_2x_over_1x": large["to_arrow"]["rss_growth_mb"]
        / max(small["to_arrow"]["rss_growth_mb"], 1e-9),
    }
    print(
        f"batch reader RSS growth at 2x the rows / at 1x: {ratios['reader_growth_2x_over_1x']:.2f} "
        f"(to_arrow: {ratios['to_arrow_growth_2x_over_1x']:.2f}); to_arrow / reader at 2x: "
        f"{ratios['to_arrow_over_reader']:.1f}",
        flush=True,
    )
    print(json.dumps({"rows": args.rows, "runs": runs, **ratios}))


if __name__ == "__main__":
    main()
