"""Bulk export throughput: rows per second exporting a table of 16 leaves (each leaf's two files merged, the table's
iterators applied, one sorted Parquet file written per leaf), beside two baselines measured in the same run on the
same data: a pyarrow read of the table's data files (the reading alone), and a pyarrow read of the exported files.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.bulk_export.local import export_table
from sleeper.bulk_export.model import BulkExportQuery
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.local.instance import LocalInstance

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.STRING), Field("count", PrimitiveType.LONG)],
)
LEAVES = 16


def build(directory: Path, rows: int, seed: int) -> LocalInstance:
    """A local instance with one table of 16 leaves, ingested in two batches (two files per leaf)."""
    rng = np.random.default_rng(seed)
    instance = LocalInstance.create(directory / "instance")
    splits = [int(s) for s in np.linspace(0, 1 << 40, LEAVES + 1)[1:-1]]
    table = instance.create_table("bench", SCHEMA, split_points=splits)
    keys = rng.integers(0, 1 << 40, rows, dtype=np.int64)
    data = pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array(rng.integers(0, 1 << 40, rows, dtype=np.int64), pa.int64()),
            "value": pa.array(np.char.add("value-", (keys % 10_000).astype(str)), pa.string()),
            "count": pa.array(rng.integers(0, 100, rows, dtype=np.int64), pa.int64()),
        }
    )
    half = rows // 2
    table.ingest(data.slice(0, half))
    table.ingest(data.slice(half))
    return instance


def _read_all(paths: list[str]) -> int:
    return sum(pq.read_table(path).num_rows for path in paths)


def main() -> None:
    """Builds the table, times the export and the baselines, prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sleeper-export-bench-") as directory:
        start = time.perf_counter()
        instance = build(Path(directory), args.rows, args.seed)
        print(f"built {args.rows:,} rows in {LEAVES} leaves in {time.perf_counter() - start:.1f}s", flush=True)
        references = instance.table("bench").file_references()
        data_files = sorted({ref.filename.removeprefix("file://") for ref in references})
        export_seconds, input_read_seconds, output_read_seconds = [], [], []
        files: list[str] = []
        for repeat in range(args.repeats):
            out = Path(directory) / f"out-{repeat}"
            start = time.perf_counter()
            summary = export_table(instance, BulkExportQuery(export_id=f"bench-{repeat}", table_name="bench"), str(out))
            export_seconds.append(time.perf_counter() - start)
            assert summary.rows_written == args.rows and len(summary.files) == LEAVES
            files = list(summary.files)
            start = time.perf_counter()
            assert _read_all(data_files) == args.rows
            input_read_seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert _read_all(files) == args.rows
            output_read_seconds.append(time.perf_counter() - start)
        export_s = statistics.median(export_seconds)
        input_s = statistics.median(input_read_seconds)
        output_s = statistics.median(output_read_seconds)
        figures = {
            "rows": args.rows,
            "leaves": LEAVES,
            "data_files": len(data_files),
            "export_seconds": round(export_s, 3),
            "export_rows_per_s": round(args.rows / export_s),
            "pyarrow_read_data_files_rows_per_s": round(args.rows / input_s),
            "pyarrow_read_exported_files_rows_per_s": round(args.rows / output_s),
            "export_vs_read_data_files": round(input_s / export_s, 3),
        }
        print(
            f"export: {figures['export_rows_per_s']:,} rows/s ({export_s:.2f}s); pyarrow read of the data files: "
            f"{figures['pyarrow_read_data_files_rows_per_s']:,} rows/s; of the exported files: "
            f"{figures['pyarrow_read_exported_files_rows_per_s']:,} rows/s",
            flush=True,
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
