"""Benchmark of standard ingest (sleeper.ingest.standard.ingest_batches) beside DuckDB writing one sorted file.

Data: N unsorted rows (default 1,000,000; ``--rows 10000000`` for the large run) with columns ``key`` (12-20 random
letters), ``value`` (int64) and ``payload`` (30 random letters), as Arrow record batches of 64k rows. The table has
16 leaf partitions (15 split points at quantiles of the keys).

Methods, each run in a fresh process that first loads the rows from an uncompressed Arrow IPC file:

- ``ingest``: ``ingest_batches`` into a local table, default strategy (one file, one reference per leaf), buffer
  large enough to hold every row (no spill).
- ``ingest_spill``: the same with a buffer of a sixth of the input's Arrow size, so about six
  sorted runs are spilled to local disk (Arrow IPC) and merged.
- ``ingest_file_per_leaf``: the ``one_file_per_leaf`` strategy (16 files).
- ``duckdb_copy``: DuckDB ``COPY (SELECT * FROM rows ORDER BY key) TO 'x.parquet'`` over the Arrow table (zstd), a
  single sorted file with no partitioning, sketches or commit.

Every run is checked: the rows committed (or written by DuckDB) equal the rows read. Figures are medians over the
repetitions: seconds, rows/s, peak RSS of the process and its extra over the peak after loading the input
(``VmHWM``; the input is memory-mapped, so its pages count once touched). The last line printed is one
JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/ingest.py [--rows 1000000] [--repeats 3] [--methods ingest,duckdb_copy]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
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

from benchmarks.measure import peak_rss_bytes  # noqa: E402

BATCH_ROWS = 65536
LEAVES = 16
SPILL_RUNS = 6
METHODS = ("ingest", "ingest_spill", "ingest_file_per_leaf", "duckdb_copy")
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.Array:
    lengths = rng.integers(min_len, max_len + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = _LETTERS[rng.integers(0, 26, int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def make_rows(n: int, seed: int = 42) -> pa.Table:
    """The benchmark rows, unsorted."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": _random_strings(rng, n, 12, 20),
            "value": pa.array(rng.integers(0, 1 << 40, n), type=pa.int64()),
            "payload": _random_strings(rng, n, 30, 30),
        }
    )


def split_points(rows: pa.Table) -> list[str]:
    """15 split points at quantiles of a sample of the keys."""
    sample = np.sort(np.array(rows.column("key").slice(0, 100_000).to_pylist(), dtype=object))
    return sorted({str(sample[len(sample) * i // LEAVES]) for i in range(1, LEAVES)})


def run_one(method: str, input_path: Path, work_dir: Path) -> dict[str, Any]:
    """Runs one method in this process and returns its figures."""
    with pa.memory_map(str(input_path), "r") as source:
        rows = pa.ipc.open_file(source).read_all()
    batches = rows.to_batches(max_chunksize=BATCH_ROWS)
    points = split_points(rows)
    baseline = peak_rss_bytes()
    if method == "duckdb_copy":
        import duckdb

        out = work_dir / "duckdb.parquet"
        con = duckdb.connect()
        con.register("input_rows", rows)
        start = time.perf_counter()
        con.execute(
            f"COPY (SELECT * FROM input_rows ORDER BY key) TO '{out}' (FORMAT parquet, COMPRESSION zstd)"  # noqa: S608
        )
        seconds = time.perf_counter() - start
        written = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
        rows_written = int(written[0]) if written else 0
        files = 1
    else:
        import sleeper
        from sleeper.core.schema import Field, PrimitiveType, Schema
        from sleeper.ingest import IngestLimits, ingest_batches

        schema = Schema.of(
            row_keys=[Field("key", PrimitiveType.STRING)],
            values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
        )
        strategy = "one_file_per_leaf" if method == "ingest_file_per_leaf" else "one_reference_per_leaf"
        table = sleeper.connect(work_dir / "instance", create=True).create_table(
            "bench", schema, split_points=points, properties={"sleeper.table.ingest.file.writing.strategy": strategy}
        )
        buffer_bytes = rows.nbytes // SPILL_RUNS + 1 if method == "ingest_spill" else 16 * 1024 * 1024 * 1024
        limits = IngestLimits(  # memory as before the ingest settings were honoured; local disk unbounded
            batch_buffer_bytes=buffer_bytes,
            working_buffer_bytes=16 * 1024 * 1024 * 1024,
            max_local_store_bytes=1 << 60,
            max_rows_per_local_write=65536,
        )
        start = time.perf_counter()
        result = ingest_batches(
            table.schema,
            table.properties,
            table.state_store,
            table.data_prefix,
            iter(batches),
            limits=limits,
            local_dir=work_dir / "local",
        )
        seconds = time.perf_counter() - start
        rows_written = sum(r.number_of_rows for r in table.file_references())
        files = len(result.files)
        if method == "ingest_spill" and result.runs_spilled < 2:
            raise SystemExit(f"expected spills, got {result.runs_spilled}")
    if rows_written != rows.num_rows:
        raise SystemExit(f"{method}: wrote {rows_written} rows of {rows.num_rows}")
    return {
        "seconds": seconds,
        "rows_per_second": rows.num_rows / seconds,
        "extra_peak_rss_mib": max(0, peak_rss_bytes() - baseline) / 2**20,
        "peak_rss_mib": peak_rss_bytes() / 2**20,
        "input_arrow_mib": rows.nbytes / 2**20,
        "files": files,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--child", nargs=3, metavar=("METHOD", "INPUT", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, input_path, work_dir = args.child
        print(json.dumps(run_one(method, Path(input_path), Path(work_dir))))
        return
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods: {sorted(unknown)}")
    summary: dict[str, Any] = {"rows": args.rows, "leaves": LEAVES, "repeats": args.repeats, "methods": {}}
    with tempfile.TemporaryDirectory(prefix="sleeper-ingest-bench-") as tmp:
        input_path = Path(tmp) / "rows.arrow"
        rows = make_rows(args.rows)
        with pa.OSFile(str(input_path), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
            writer.write_table(rows, max_chunksize=BATCH_ROWS)
        del rows
        for method in methods:
            runs = []
            for repeat in range(args.repeats):
                work_dir = Path(tmp) / f"{method}-{repeat}"
                work_dir.mkdir()
                out = subprocess.run(
                    [sys.executable, __file__, "--child", method, str(input_path), str(work_dir)],
                    capture_output=True,
                    text=True,
                )
                if out.returncode:
                    raise SystemExit(f"{method} failed:\n{out.stderr}")
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
                subprocess.run(["rm", "-rf", str(work_dir)], check=True)
            figures = {
                key: statistics.median(run[key] for run in runs)
                for key in ("seconds", "rows_per_second", "extra_peak_rss_mib", "peak_rss_mib")
            }
            figures["files"] = runs[0]["files"]
            summary["input_arrow_mib"] = runs[0]["input_arrow_mib"]
            summary["methods"][method] = figures
            print(
                f"{method:22s} {figures['seconds']:7.2f} s  {figures['rows_per_second']:>12,.0f} rows/s  "
                f"peak RSS {figures['peak_rss_mib']:7.1f} MiB (+{figures['extra_peak_rss_mib']:6.1f} after loading)  "
                f"{figures['files']} file(s)",
                flush=True,
            )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
