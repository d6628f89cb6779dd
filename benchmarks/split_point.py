"""Benchmark: the split point of large partitions, from sketches built as every data file's are.

For each key type (int64, and 13-character strings) ``--rows`` sorted random keys (default 10M) are sketched:

- ``one_file``: one file of all the rows (one :class:`sleeper.io.sketches.SketchBuilder` fed 64k-row batches, as
  :class:`sleeper.io.parquet.SortedFileWriter` feeds it);
- ``ten_files``: ten files, each a random tenth of the keys in sorted order, whose sketches are merged
  (:meth:`Sketches.merge`), as the splitter merges a partition's files.

Reported per case: the split point Sleeper's rule picks (:meth:`Sketches.median`) and its normalised rank among all
the keys (target: 0.5 +- 0.01), the worst rank error of the deciles, the sketch's ``n`` (the rows), and the seconds to
build the sketches. Baseline in the same run: the seconds pyarrow takes to write the same sorted keys to Parquet (zstd,
no dictionary, as data files are written), which the sketch accompanies; the ratio is the sketch's cost relative to
that. Also ``two_keys``: a second row key in no order within the file (int64), its median rank and build time.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/split_point.py [--rows 10000000]``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.io.sketches import SketchBuilder, Sketches  # noqa: E402

BATCH_ROWS = 65536


def _keys(kind: str, rows: int, rng: np.random.Generator) -> np.ndarray:
    numbers = rng.integers(0, 10**12, rows)
    if kind == "long":
        return np.sort(numbers)
    return np.sort(np.char.zfill(numbers.astype("U12"), 13))


def _sketch(schema: Schema, table: pa.Table) -> tuple[Sketches, float]:
    start = time.perf_counter()
    builder = SketchBuilder(schema)
    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        builder.add(batch)
    return builder.finish(), time.perf_counter() - start


def _rank(keys: np.ndarray, value: Any) -> float:
    return float(np.searchsorted(keys, value) / len(keys))


def _decile_error(sketches: Sketches, field: str, keys: np.ndarray) -> float:
    ranks = [i / 10 for i in range(1, 10)]
    values = sketches.quantiles(field, ranks)
    return max(abs(_rank(keys, v) - r) for v, r in zip(values, ranks, strict=True))


def _write_seconds(table: pa.Table) -> float:
    start = time.perf_counter()
    pq.write_table(table, io.BytesIO(), compression="zstd", compression_level=1, use_dictionary=False)
    return time.perf_counter() - start


def run_key_type(kind: str, rows: int, rng: np.random.Generator) -> dict[str, Any]:
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG if kind == "long" else PrimitiveType.STRING)])
    keys = _keys(kind, rows, rng)
    table = pa.table({"key": pa.array(keys)})
    one, one_seconds = _sketch(schema, table)
    write_seconds = _write_seconds(table)
    parts = np.array_split(rng.permutation(rows), 10)
    built = []
    ten_seconds = 0.0
    for part in parts:
        sketches, seconds = _sketch(schema, pa.table({"key": pa.array(keys[np.sort(part)])}))
        built.append(sketches)
        ten_seconds += seconds
    merged = Sketches.merge(built)
    out: dict[str, Any] = {"write_parquet_seconds": write_seconds}
    for name, sketches, seconds in (("one_file", one, one_seconds), ("ten_files", merged, ten_seconds)):
        median = sketches.median("key")
        out[name] = {
            "split_point": median,
            "split_point_rank": _rank(keys, median),
            "worst_decile_rank_error": _decile_error(sketches, "key", keys),
            "n": sketches.count("key"),
            "sketch_seconds": seconds,
            "sketch_over_write": seconds / write_seconds,
        }
    return out


def run_two_keys(rows: int, rng: np.random.Generator) -> dict[str, Any]:
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG), Field("second", PrimitiveType.LONG)])
    second = rng.integers(0, 10**12, rows)
    table = pa.table({"key": pa.array(_keys("long", rows, rng)), "second": pa.array(second)})
    sketches, seconds = _sketch(schema, table)
    return {
        "second_key_split_point_rank": _rank(np.sort(second), sketches.median("second")),
        "sketch_seconds": seconds,
        "write_parquet_seconds": _write_seconds(table),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    figures: dict[str, Any] = {"rows": args.rows}
    for kind in ("long", "string"):
        result = run_key_type(kind, args.rows, rng)
        figures[kind] = result
        for case in ("one_file", "ten_files"):
            r = result[case]
            print(
                f"{kind:6} {case:9}  split point rank {r['split_point_rank']:.5f}  worst decile error "
                f"{r['worst_decile_rank_error']:.5f}  n {r['n']:,}  sketch {r['sketch_seconds']:.2f} s "
                f"({r['sketch_over_write']:.2f}x the {result['write_parquet_seconds']:.2f} s Parquet write)"
            )
    two = run_two_keys(args.rows, rng)
    figures["two_keys"] = two
    print(
        f"two keys: second key's split point rank {two['second_key_split_point_rank']:.5f}  sketch "
        f"{two['sketch_seconds']:.2f} s (Parquet write {two['write_parquet_seconds']:.2f} s)"
    )
    cases = [figures[kind][case] for kind in ("long", "string") for case in ("one_file", "ten_files")]
    within = all(abs(r["split_point_rank"] - 0.5) <= 0.01 for r in cases)
    figures["within_target"] = within and abs(two["second_key_split_point_rank"] - 0.5) <= 0.01
    print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
