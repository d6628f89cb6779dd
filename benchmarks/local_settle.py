"""Benchmark: a local instance working through a backlog, with each table's state store kept between messages
(``LocalInstance._state_store``) and, as the baseline in the same run, with a new state store per message
(``sleeper.statestore.provider.cache.size`` set to 0, as before the state stores were kept).

A table of ``--leaves`` leaves (split points evenly over the keys) that compacts pairs of files
(``BasicCompactionStrategy``, batch size 2) and splits at ``--threshold`` rows takes ``--ingests`` small ingests of
20 consecutive keys each, at scattered places, before anything runs. Then ``LocalRunner.run_until_idle`` works
through the backlog: compaction job creation, compactions, their commits, splits, GC and snapshots. The figure is the
wall time of that, and the transactions it made; both variants build the same backlog (the files' names differ)
and run alternately, ``--repeats`` times. Each variant's rows are checked to equal the ingested rows.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/local_settle.py [--ingests 300] [--leaves 8] [--threshold 200] [--repeats 2]``.
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

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.core.properties.instance_common import STATESTORE_PROVIDER_CACHE_SIZE  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.runtime.local.handlers import default_handlers  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402
from sleeper.runtime.local.runner import LocalRunner  # noqa: E402
from sleeper.statestore.store import StateStore  # noqa: E402

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
KEYS = 1_000_000
ROWS = 20


def build(directory: Path, ingests: int, leaves: int, threshold: int) -> int:
    """Creates the instance and its backlog; returns the rows ingested."""
    instance = LocalInstance.create(directory)
    table = instance.create_table(
        "t",
        SCHEMA,
        split_points=[KEYS * n // leaves for n in range(1, leaves)],
        properties={
            "sleeper.table.partition.splitting.threshold": str(threshold),
            "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
            "sleeper.table.compaction.files.batch.size": "2",
        },
    )
    step = KEYS // ingests
    for index in range(ingests):
        start = index * 7_919 % ingests * step
        keys = pa.array(range(start, start + ROWS), pa.int64())
        table.ingest(pa.table({"key": keys, "value": keys}), job_id=f"ingest-{index}")
    return ingests * ROWS


def settle(directory: Path, *, keep_state_stores: bool) -> dict[str, Any]:
    """Runs the instance until idle; returns the seconds and the transactions made."""
    instance = LocalInstance(directory)
    if not keep_state_stores:
        instance.properties.set(STATESTORE_PROVIDER_CACHE_SIZE, "0")
    table_id = instance.table("t").table_id
    before = _transactions(instance, table_id)
    runner = LocalRunner(instance, default_handlers())
    began = time.perf_counter()
    summary = runner.run_until_idle(max_rounds=500)
    seconds = time.perf_counter() - began
    runner.close()
    rows = LocalInstance(directory).table("t").query()
    return {
        "seconds": seconds,
        "transactions": _transactions(instance, table_id) - before,
        "failed": sum(summary.failed.values()),
        "rows": rows.num_rows,
        "distinct_keys": len(pc.unique(rows["key"])),
    }


def _transactions(instance: LocalInstance, table_id: str) -> int:
    store: StateStore = instance.table_by_id(table_id).state_store
    store.refresh()
    return store.files_head.last_transaction_number + store.partitions_head.last_transaction_number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ingests", type=int, default=300)
    parser.add_argument("--leaves", type=int, default=8)
    parser.add_argument("--threshold", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs: dict[str, list[dict[str, Any]]] = {"kept": [], "new_per_message": []}
        for repeat in range(args.repeats):
            order = ["new_per_message", "kept"] if repeat % 2 else ["kept", "new_per_message"]
            for variant in order:
                work = Path(tmp) / f"{variant}-{repeat}"
                expected = build(work, args.ingests, args.leaves, args.threshold)
                figures = settle(work, keep_state_stores=variant == "kept")
                if figures["rows"] != expected or figures["distinct_keys"] != expected or figures["failed"]:
                    raise SystemExit(f"{variant}: {figures} (expected {expected} rows, no failures)")
                runs[variant].append(figures)
                print(f"{variant}: {figures['seconds']:.1f} s, {figures['transactions']} transactions", flush=True)
    kept = statistics.median(r["seconds"] for r in runs["kept"])
    baseline = statistics.median(r["seconds"] for r in runs["new_per_message"])
    print(f"median: kept {kept:.1f} s, new state store per message {baseline:.1f} s, ratio {kept / baseline:.2f}")
    print(
        json.dumps(
            {
                "ingests": args.ingests,
                "leaves": args.leaves,
                "threshold": args.threshold,
                "kept_seconds": kept,
                "new_per_message_seconds": baseline,
                "kept_over_new": kept / baseline,
                "runs": runs,
                "load_average": list(os.getloadavg()),
            }
        )
    )


if __name__ == "__main__":
    main()
