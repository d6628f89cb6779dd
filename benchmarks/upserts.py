"""Benchmark of upsert tables (``sleeper.table.upsert``): what the rule costs a scan, and what ``Table.upsert`` costs
beside a plain ingest of the same rows.

Rows have an int64 row key ``key`` (random in [0, 1e10)), an int64 ``value`` and a 30-letter ``payload``; tables are on
4 leaves at the key space's quartiles, ingested in two halves (two files per leaf); 10% of the keys appear twice.

Figures, in one run:

- ``by_sort_key``: a table with the sort key ``version`` and ``sleeper.table.upsert=true`` against a plain table of
  the same schema and rows (the baseline): a full scan (``Table.scan().count()``) of each in turn, ``--repeats``
  rounds after one warming round; medians in seconds and their ratio (above 1: the upsert table is slower). This is
  the merge-time rule alone (keep the last row of each run of equal row keys).
- ``by_commit``: a table without a sort key and with the setting, loaded with ``Table.ingest`` (an upsert) and then
  ``Table.upsert`` of ``--upsert-rows`` rows (half replacing stored keys), against a plain table loaded with
  ``Table.ingest`` of the same rows: the time of the load and of the upsert against the plain ingests, the commits
  each made, and a full scan of each (the upsert table hides the replaced rows through its pending deletes; medians as
  above); then the scan again after a compaction of every file (``compact_now(compact_all=True)``), which applies the
  pending deletes.

Row counts are checked against a pyarrow computation. The last line printed is one JSON object.

Usage: ``.venv/bin/python benchmarks/upserts.py [--rows 1000000] [--upsert-rows 20000] [--repeats 5]``.
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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402

VALUES = [Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)]
BY_COMMIT = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=VALUES)
BY_SORT_KEY = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)], sort_keys=[Field("version", PrimitiveType.LONG)], values=VALUES
)
KEY_SPACE = 10_000_000_000
QUARTILES = [KEY_SPACE // 4 * i for i in (1, 2, 3)]
UPSERT = {"sleeper.table.upsert": "true"}


def _rows(rows: int, seed: int, *, versions: bool) -> pa.Table:
    """Rows whose keys are random, 10% of them given twice (the second with a greater version)."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    distinct = rows - rows // 10
    keys = rng.integers(0, KEY_SPACE, distinct)
    keys = np.concatenate((keys, keys[: rows - distinct]))
    columns: dict[str, Any] = {"key": pa.array(keys, pa.int64())}
    if versions:
        columns["version"] = pa.array(np.arange(rows), pa.int64())
    columns["value"] = pa.array(rng.integers(0, 1_000_000, rows), pa.int64())
    columns["payload"] = pa.array(rng.choice(letters, size=(rows, 30)).view("S30").ravel().astype(str), pa.string())
    return pa.table(columns)


def _distinct_keys(*tables: pa.Table) -> int:
    return len(np.unique(np.concatenate([t.column("key").to_numpy() for t in tables])))


def _timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _scan_medians(tables: dict[str, tuple[Any, int]], repeats: int) -> dict[str, float]:
    """Median full-scan seconds of each table, each first in turn, after one warming round; counts checked."""
    times: dict[str, list[float]] = {name: [] for name in tables}
    names = list(tables)
    for repeat in range(repeats + 1):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            table, expected = tables[name]
            start = time.perf_counter()
            count = table.scan().count()
            if repeat:
                times[name].append(time.perf_counter() - start)
            assert count == expected, (name, count, expected)
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def _commits(table: Any) -> int:
    return sum(1 for r in table.history().to_pylist() if r["log"] == "files")


def main() -> None:
    """Builds the tables, runs both comparisons and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--upsert-rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sleeper-upserts-bench-") as directory:
        instance = sleeper.create_instance(Path(directory) / "instance")

        # By sort key: the merge-time rule against a plain table of the same rows
        data = _rows(args.rows, args.seed, versions=True)
        half = data.num_rows // 2
        plain = instance.create_table("plain_sorted", BY_SORT_KEY, split_points=QUARTILES)
        upsert = instance.create_table("upsert_sorted", BY_SORT_KEY, split_points=QUARTILES, properties=UPSERT)
        for table in (plain, upsert):
            table.ingest(data.slice(0, half))
            table.ingest(data.slice(half))
        medians = _scan_medians(
            {"plain": (plain, data.num_rows), "upsert": (upsert, _distinct_keys(data))}, args.repeats
        )
        by_sort_key = {
            "plain_scan_seconds": medians["plain"],
            "upsert_scan_seconds": medians["upsert"],
            "upsert_over_plain": medians["upsert"] / medians["plain"],
        }
        print(
            f"by sort key, scan of {args.rows:,} rows: {medians['plain'] * 1000:.0f} ms plain, "
            f"{medians['upsert'] * 1000:.0f} ms upsert ({by_sort_key['upsert_over_plain']:.2f}x)",
            flush=True,
        )

        # By commit: Table.ingest and Table.upsert against plain ingests of the same rows
        data = _rows(args.rows, args.seed, versions=False)
        later = _rows(args.upsert_rows, args.seed + 1, versions=False)
        replaced = data.column("key").to_numpy()[: args.upsert_rows // 2]
        later = later.set_column(
            0, "key", pa.array(np.concatenate((replaced, later.column("key").to_numpy()[len(replaced) :])), pa.int64())
        )
        plain = instance.create_table("plain", BY_COMMIT, split_points=QUARTILES)
        upsert = instance.create_table("upsert", BY_COMMIT, split_points=QUARTILES, properties=UPSERT)
        plain_load = _timed(lambda: (plain.ingest(data.slice(0, half)), plain.ingest(data.slice(half))))
        upsert_load = _timed(lambda: (upsert.ingest(data.slice(0, half)), upsert.ingest(data.slice(half))))
        load_commits = _commits(upsert)
        plain_upsert = _timed(lambda: plain.ingest(later))
        upsert_upsert = _timed(lambda: upsert.upsert(later))
        upsert_commits = _commits(upsert) - load_commits
        expected = _distinct_keys(data, later)
        pending = len(upsert.state_store.pending_deletes())
        medians = _scan_medians(
            {"plain": (plain, data.num_rows + later.num_rows), "upsert": (upsert, expected)}, args.repeats
        )
        compact_plain = _timed(lambda: instance.compact_now(plain.name, compact_all=True))
        compact_upsert = _timed(lambda: instance.compact_now(upsert.name, compact_all=True))
        compacted = _scan_medians(
            {"plain": (plain, data.num_rows + later.num_rows), "upsert": (upsert, expected)}, args.repeats
        )
        by_commit = {
            "plain_load_seconds": plain_load,
            "upsert_load_seconds": upsert_load,
            "load_commits": load_commits,
            "plain_ingest_seconds": plain_upsert,
            "upsert_seconds": upsert_upsert,
            "upsert_commits": upsert_commits,
            "pending_deletes": pending,
            "plain_scan_seconds": medians["plain"],
            "upsert_scan_seconds": medians["upsert"],
            "upsert_over_plain": medians["upsert"] / medians["plain"],
            "plain_compaction_seconds": compact_plain,
            "upsert_compaction_seconds": compact_upsert,
            "compacted_plain_scan_seconds": compacted["plain"],
            "compacted_upsert_scan_seconds": compacted["upsert"],
            "compacted_upsert_over_plain": compacted["upsert"] / compacted["plain"],
        }
        print(
            f"by commit, load of {args.rows:,} rows: {plain_load:.2f} s plain, {upsert_load:.2f} s upsert "
            f"({load_commits} commits); {args.upsert_rows:,} rows: {plain_upsert:.2f} s ingest, {upsert_upsert:.2f} s "
            f"upsert ({upsert_commits} commits)",
            flush=True,
        )
        print(
            f"by commit, scan: {medians['plain'] * 1000:.0f} ms plain, {medians['upsert'] * 1000:.0f} ms upsert with "
            f"{pending} pending deletes ({by_commit['upsert_over_plain']:.2f}x); after compaction "
            f"{compacted['plain'] * 1000:.0f} ms, {compacted['upsert'] * 1000:.0f} ms "
            f"({by_commit['compacted_upsert_over_plain']:.2f}x)",
            flush=True,
        )
    print(
        json.dumps(
            {
                "rows": args.rows,
                "upsert_rows": args.upsert_rows,
                "load_average": os.getloadavg(),
                "by_sort_key": by_sort_key,
                "by_commit": by_commit,
            }
        )
    )


if __name__ == "__main__":
    main()
