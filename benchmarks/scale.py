"""Benchmark of metadata work at scale: tables of many partitions and file references, an instance
of many tables, each at three sizes so the growth shows.

Metadata only: the file references name files that do not exist (nothing here reads a data file). For each table
size (``--leaves`` leaf partitions, by default 2,500, 5,000 and 10,000, with 20 references per leaf: 50k, 100k and
200k), a local instance gets a table split into that many leaves, the references are added in ADD_FILES transactions
of 10,000, and then, in this order:

- ``snapshot_save_s`` / ``snapshot_load_s``: saving the files and partitions state as snapshots, and loading both;
- ``state_load_s``: a new ``StateStore`` of the table bringing itself up to date from those snapshots (what a new
  process pays before its first read);
- ``plan_lookup_first_ms`` / ``plan_lookup_ms``: planning a point lookup (``plan_table_query``) on that new store,
  the first (which builds the tree and the files-by-partition index) and the median of 200 more;
- ``split_finder_s``: ``find_partitions_to_split`` (no leaf is over the threshold, so no sketch is read);
- ``gc_scan_s``: ``collect_garbage`` with nothing ready to delete (the scan of every file);
- ``job_creation_s`` / ``job_creation_cpu_s``: ``create_compaction_jobs`` with an in-memory queue and tracker (two
  jobs per leaf, assigned in ASSIGN_JOB_IDS transactions of 1,000 jobs and sent), wall and CPU time (this process's);
  ``job_creation_gc_s``, the wall time Python's cyclic garbage collector ran for meanwhile (a full collection walks
  every object this process holds, the references built as objects for the table included; one is made just before
  job creation, so that it does not pay for the garbage of building the table).

For each instance size (``--tables``, by default 25, 50 and 100 tables), ``trigger_s`` is one forced run of the local
runner's scheduled per-table triggers (one message per online table to each operation's queue).

``growth`` is each figure at the largest size over the smallest, divided by the ratio of the sizes: 1.0 is linear
growth, below 1 sub-linear. With ``--plot`` the figures are drawn against size in a PNG (matplotlib, installed into the
virtualenv for the benchmark only). The last line printed is one JSON object with every figure.

``--only creation`` times job creation alone on each table: after the snapshots are saved and a new state store has
loaded them (nothing else has read the files, so none is an object yet, as in a process that only creates jobs), and
without the instances of many tables.

Usage: ``.venv/bin/python benchmarks/scale.py [--leaves 2500 5000 10000] [--tables 25 50 100] [--only creation]
[--plot out.png]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import sleeper  # noqa: E402
from benchmarks.plot import Panel, Series, plot_panels, require_matplotlib  # noqa: E402
from sleeper.adapters.memory.queue import InMemoryQueues  # noqa: E402
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker  # noqa: E402
from sleeper.compaction.creation import create_compaction_jobs  # noqa: E402
from sleeper.core.query import Query  # noqa: E402
from sleeper.core.range import Region  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import FileReference  # noqa: E402
from sleeper.gc.collector import collect_garbage  # noqa: E402
from sleeper.query.executor import plan_table_query  # noqa: E402
from sleeper.runtime.local.handlers import default_handlers  # noqa: E402
from sleeper.runtime.local.instance import LocalInstance  # noqa: E402
from sleeper.runtime.local.runner import LocalRunner  # noqa: E402
from sleeper.splitting.finder import find_partitions_to_split  # noqa: E402

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),))
KEY_SPACE = 10**10
REFERENCES_PER_LEAF = 20
ADD_BATCH = 10_000


def _timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def table_figures(directory: Path, leaves: int, seed: int, *, only_creation: bool = False) -> dict[str, float]:
    """Builds a table of ``leaves`` leaves and 20 references each, and times the metadata operations on it (with
    ``only_creation``, the snapshots, the state store's load and job creation only)."""
    instance = sleeper.create_instance(directory / f"instance-{leaves}")
    splits = [KEY_SPACE * i // leaves for i in range(1, leaves)]
    table = instance.create_table(
        "scale",
        SCHEMA,
        split_points=splits,
        properties={"sleeper.table.partition.splitting.threshold": str(10**12)},
    )
    store = table.state_store
    leaf_ids = [p.id for p in store.partition_tree().leaves]
    references = [
        FileReference(
            filename=f"{table.data_prefix}/data/partition_{pid}/{uuid.uuid4()}.parquet",
            partition_id=pid,
            number_of_rows=1000,
        )
        for pid in leaf_ids
        for _ in range(REFERENCES_PER_LEAF)
    ]
    for start in range(0, len(references), ADD_BATCH):
        store.add_files(references[start : start + ADD_BATCH])
    figures: dict[str, float] = {"leaves": leaves, "references": len(references)}

    snapshots = store.snapshot_store
    assert snapshots is not None
    store.refresh()
    now = datetime.now(UTC)
    files_state, partitions_state = store.files_state(), store.partitions_state()
    (files_snapshot, partitions_snapshot), figures["snapshot_save_s"] = _timed(
        lambda: (
            snapshots.save_files(files_state, store.files_head.last_transaction_number, now),
            snapshots.save_partitions(partitions_state, store.partitions_head.last_transaction_number, now),
        )
    )
    loaded, figures["snapshot_load_s"] = _timed(
        lambda: (snapshots.load_files(files_snapshot), snapshots.load_partitions(partitions_snapshot))
    )
    if len(loaded[0]) != len(references):
        raise AssertionError("snapshot: files lost")

    fresh = instance.table("scale")  # a new process's view: its state store loads the snapshots
    _, figures["state_load_s"] = _timed(fresh.state_store.refresh)
    if not only_creation:
        _lookups_split_finder_and_gc(figures, fresh, seed)
    queue = InMemoryQueues().queue("CompactionJobQ")
    gc.collect()  # the garbage of building the table (200k references as objects) is not job creation's
    cpu_before = time.process_time()
    with _collections_timed() as collecting:
        created, figures["job_creation_s"] = _timed(
            lambda: create_compaction_jobs(fresh, queue, InMemoryCompactionJobTracker())
        )
    figures["job_creation_cpu_s"] = time.process_time() - cpu_before
    figures["job_creation_gc_s"] = collecting[0]
    if created.jobs_created < leaves:
        raise AssertionError(f"job creation: {created.jobs_created} jobs for {leaves} leaves")
    figures["jobs_created"] = created.jobs_created
    return figures


@contextlib.contextmanager
def _collections_timed() -> Iterator[list[float]]:
    """Adds up the wall time Python's cyclic garbage collector runs for, while in the block (into the list's
    item)."""
    total = [0.0]
    started = [0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            total[0] += time.perf_counter() - started[0]

    gc.callbacks.append(callback)
    try:
        yield total
    finally:
        gc.callbacks.remove(callback)


def _lookups_split_finder_and_gc(figures: dict[str, float], fresh: Any, seed: int) -> None:
    """Times planning lookups, the split finder and the GC scan on the loaded table (into ``figures``)."""
    rng = np.random.default_rng(seed)
    keys = [int(k) for k in rng.integers(0, KEY_SPACE, 201)]

    def plan(key: int) -> int:
        query = Query(query_id="q", table_name="scale", regions=(Region.exact(SCHEMA, [key]),))
        planned = plan_table_query(query, fresh.state_store, table_id=fresh.table_id)
        if len(planned) != 1 or len(planned[0].files) != REFERENCES_PER_LEAF:
            raise AssertionError(f"planning found {[len(p.files) for p in planned]} files")
        return len(planned)

    _, first = _timed(lambda: plan(keys[0]))
    figures["plan_lookup_first_ms"] = first * 1000
    lookups = []
    for key in keys[1:]:
        _, seconds = _timed(lambda key=key: plan(key))
        lookups.append(seconds)
    figures["plan_lookup_ms"] = statistics.median(lookups) * 1000

    jobs, figures["split_finder_s"] = _timed(lambda: find_partitions_to_split(fresh))
    if jobs:
        raise AssertionError("split finder: no leaf should be over the threshold")
    collected, figures["gc_scan_s"] = _timed(lambda: collect_garbage(fresh))
    if collected.deleted:
        raise AssertionError("gc: nothing should be ready")


def trigger_figures(directory: Path, tables: int) -> dict[str, float]:
    """An instance of ``tables`` tables; times one forced run of the scheduled per-table triggers."""
    location = directory / f"tables-{tables}"
    api = sleeper.create_instance(location)
    for i in range(tables):
        api.create_table(f"t{i:03d}", SCHEMA)
    runner = LocalRunner(LocalInstance(location), default_handlers())
    sent, seconds = _timed(lambda: runner.trigger(force=True))
    return {"tables": tables, "trigger_s": seconds, "messages": sent}


def _growth(rows: list[dict[str, float]], size_key: str, figure: str) -> float:
    """The figure's growth from the smallest to the largest size over the sizes' growth (1.0: linear)."""
    first, last = rows[0], rows[-1]
    if first[figure] <= 0:
        return float("nan")
    return (last[figure] / first[figure]) / (last[size_key] / first[size_key])


def _plot(path: str, tables: list[dict[str, float]], instances: list[dict[str, float]]) -> None:
    sizes = [row["references"] / 1000 for row in tables]
    table = Panel("One table", "file references (thousands); leaves = references / 20", "seconds")
    for figure, label in (
        ("snapshot_save_s", "snapshot save"),
        ("snapshot_load_s", "snapshot load"),
        ("state_load_s", "state store load"),
        ("split_finder_s", "split finder"),
        ("gc_scan_s", "GC scan"),
        ("job_creation_s", "compaction job creation"),
    ):
        table.series.append(Series(label, sizes, [row[figure] for row in tables]))
    table.series.append(Series("plan a point lookup", sizes, [row["plan_lookup_ms"] / 1000 for row in tables]))
    triggers = Panel("Scheduled per-table triggers, one run", "tables", "seconds")
    triggers.series.append(
        Series("triggers", [row["tables"] for row in instances], [row["trigger_s"] for row in instances])
    )
    plot_panels(path, [table, triggers])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--leaves", type=int, nargs="+", default=[2500, 5000, 10_000])
    parser.add_argument("--tables", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--plot", help="write a PNG of the figures against size here")
    parser.add_argument(
        "--only", choices=["creation"], help="time only this figure (creation: compaction job creation)"
    )
    args = parser.parse_args()
    if args.plot:
        require_matplotlib()
    only_creation = args.only == "creation"
    table_rows: list[dict[str, float]] = []
    instance_rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="sleeper-scale-bench-") as tmp:
        for leaves in args.leaves:
            row = table_figures(Path(tmp), leaves, args.seed, only_creation=only_creation)
            table_rows.append(row)
            others = (
                ""
                if only_creation
                else f"plan a lookup {row['plan_lookup_ms']:.2f} ms (first {row['plan_lookup_first_ms']:.0f} ms); "
                f"split finder {row['split_finder_s']:.2f} s; GC scan {row['gc_scan_s']:.2f} s; "
            )
            print(
                f"{leaves:,} leaves, {int(row['references']):,} references: snapshot save "
                f"{row['snapshot_save_s']:.2f} s, load {row['snapshot_load_s']:.2f} s; state store load "
                f"{row['state_load_s']:.2f} s; {others}job creation {row['job_creation_s']:.2f} s "
                f"(CPU {row['job_creation_cpu_s']:.2f} s; garbage collector {row['job_creation_gc_s']:.2f} s; "
                f"{int(row['jobs_created']):,} jobs)",
                flush=True,
            )
        for tables in [] if only_creation else args.tables:
            row = trigger_figures(Path(tmp), tables)
            instance_rows.append(row)
            print(f"{tables} tables: triggers {row['trigger_s']:.3f} s ({int(row['messages'])} messages)", flush=True)
    figures = ["snapshot_save_s", "snapshot_load_s", "state_load_s", "job_creation_s", "job_creation_cpu_s"]
    if not only_creation:
        figures[3:3] = ["plan_lookup_ms", "split_finder_s", "gc_scan_s"]
    growth = {figure: _growth(table_rows, "references", figure) for figure in figures}
    if instance_rows:
        growth["trigger_s"] = _growth(instance_rows, "tables", "trigger_s")
    print("growth over the size's growth (1.0 linear): " + ", ".join(f"{k} {v:.2f}" for k, v in growth.items()))
    if args.plot and not only_creation:
        _plot(args.plot, table_rows, instance_rows)
        print(f"plot written to {args.plot}")
    print(
        json.dumps(
            {"load_average": os.getloadavg(), "tables": table_rows, "instances": instance_rows, "growth": growth}
        )
    )


if __name__ == "__main__":
    main()
