"""Benchmark of row deletes: what pending deletes cost a scan, and what a purge costs beside a plain compaction.

The table has an int64 row key ``key`` (random in [0, 1e10)), an int64 ``value`` (random in [0, 1e6)) and a
30-letter ``payload``, on 4 leaves at the key space's quartiles, ingested twice (two files per leaf); Sleeper's
default Parquet settings.

Figures, in one run:

- ``scan``: three tables built alike from the same rows, one with no pending delete (the baseline), one with 1 and
  one with ``--deletes`` pending deletes (each ``key between A and B or value = V``, about 0.1% of the rows); a full
  scan (``Table.scan().count()``) of each in turn (each table first in turn), ``--repeats`` rounds after one warming
  round; the medians as seconds and the ratio to the baseline (above 1: slower).
- ``purge``: ``Table.purge`` of the table with every delete (compacting every file, dropping the deleted rows) against
  a plain ``compact_now(compact_all=True)`` of the baseline table's files; seconds of each and their ratio (above 1:
  the purge is slower).

Row counts are checked against a pyarrow computation of the deleted rows. The last line printed is one JSON object.

Usage: ``.venv/bin/python benchmarks/deletes.py [--rows 2000000] [--deletes 10] [--repeats 5]``.
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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
)
KEY_SPACE = 10_000_000_000


def _rows(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    payload = rng.choice(letters, size=(rows, 30)).view("S30").ravel().astype(str)
    return pa.table(
        {
            "key": pa.array(rng.integers(0, KEY_SPACE, rows), pa.int64()),
            "value": pa.array(rng.integers(0, 1_000_000, rows), pa.int64()),
            "payload": pa.array(payload, pa.string()),
        }
    )


def _build(instance: Any, name: str, data: pa.Table) -> Any:
    quartiles = [KEY_SPACE // 4 * i for i in (1, 2, 3)]
    table = instance.create_table(name, SCHEMA, split_points=quartiles)
    half = data.num_rows // 2
    table.ingest(data.slice(0, half))
    table.ingest(data.slice(half))
    return table


def _filters(count: int, seed: int) -> list[tuple[str, pc.Expression]]:
    """Deletes of about 0.1% of the rows each: a key range of 0.1% of the key space or one value."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(count):
        low = int(rng.integers(0, KEY_SPACE - KEY_SPACE // 1000))
        high = low + KEY_SPACE // 1000
        value = int(rng.integers(0, 1_000_000))
        text = f"key between {low} and {high} or value = {value}"
        expression = ((pc.field("key") >= low) & (pc.field("key") <= high)) | (pc.field("value") == value)
        out.append((text, expression))
    return out


def main() -> None:
    """Builds the tables, runs both comparisons and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--deletes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    data = _rows(args.rows, args.seed)
    filters = _filters(args.deletes, args.seed)
    with tempfile.TemporaryDirectory(prefix="sleeper-deletes-bench-") as directory:
        instance = sleeper.create_instance(Path(directory) / "instance")
        # Three tables alike: no delete, one pending delete, all of them; scanned in turn each repeat (warmed first)
        plain, one, many = (_build(instance, name, data) for name in ("plain", "one", "many"))
        one.delete(filters[0][0])
        kept_one = data.filter(~filters[0][1])
        kept = data
        for text, expression in filters:
            many.delete(text)
            kept = kept.filter(~expression)
        tables = {"none": (plain, data.num_rows), "one": (one, kept_one.num_rows), "many": (many, kept.num_rows)}
        times: dict[str, list[float]] = {name: [] for name in tables}
        names = list(tables)
        for repeat in range(args.repeats + 1):
            for name in names[repeat % 3 :] + names[: repeat % 3]:  # each table first in turn
                table, expected = tables[name]
                start = time.perf_counter()
                count = table.scan().count()
                if repeat:  # the first round warms the caches
                    times[name].append(time.perf_counter() - start)
                assert count == expected, (name, count, expected)
        baseline = statistics.median(times["none"])
        scan: dict[str, Any] = {"no_delete_seconds": baseline}
        for name, done in (("one", 1), ("many", args.deletes)):
            seconds = statistics.median(times[name])
            scan[f"{done}_deletes_seconds"] = seconds
            scan[f"{done}_deletes_over_none"] = seconds / baseline
            print(
                f"scan of {args.rows:,} rows: {baseline * 1000:.0f} ms with no delete, "
                f"{seconds * 1000:.0f} ms with {done} pending ({seconds / baseline:.2f}x)",
                flush=True,
            )
        # The same files compacted by a purge of the deletes and by a plain compaction
        start = time.perf_counter()
        result = many.purge()
        purge_seconds = time.perf_counter() - start
        assert result.done and many.scan().count() == kept.num_rows
        start = time.perf_counter()
        instance.compact_now(plain.name, compact_all=True)
        compact_seconds = time.perf_counter() - start
        assert plain.scan().count() == data.num_rows
        purge = {
            "purge_seconds": purge_seconds,
            "plain_compaction_seconds": compact_seconds,
            "purge_over_compaction": purge_seconds / compact_seconds,
            "jobs": len(result.jobs),
        }
        print(
            f"purge of {args.deletes} deletes: {purge_seconds:.2f} s, plain compaction of the same files "
            f"{compact_seconds:.2f} s ({purge_seconds / compact_seconds:.2f}x)",
            flush=True,
        )
    print(
        json.dumps(
            {
                "rows": args.rows,
                "deletes": args.deletes,
                "rows_deleted": args.rows - kept.num_rows,
                "load_average": os.getloadavg(),
                "scan": scan,
                "purge": purge,
            }
        )
    )


if __name__ == "__main__":
    main()
