"""``sleeper demo``: a local instance, a table, generated rows ingested in batches, compaction and partition splitting
run by the local runtime, exact and range queries, and the instance status."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sleeper.api import Table
from sleeper.cli import render, status
from sleeper.core import (
    COMPACTION_JOB_Q,
    PARTITION_SPLITTING_JOB_Q,
    Field,
    PrimitiveType,
    Range,
    Region,
    Schema,
    counted,
)
from sleeper.runtime.local import LocalApi, LocalInstance, LocalRunner, default_handlers

DEMO_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
)
SPLIT_POINTS = ["key-04", "key-08", "key-12"]
MAX_ROUNDS = 20


def generate_batch(rng: np.random.Generator, rows: int) -> pa.RecordBatch:
    """Random rows of the demo schema (vectorised)."""
    numbers = pc.cast(pa.array(rng.integers(0, 16_000_000, size=rows)), pa.string())
    keys = pc.binary_join_element_wise("key-", pc.utf8_lpad(numbers, 8, "0"), "")
    timestamps = pa.array(rng.integers(1_700_000_000_000, 1_800_000_000_000, size=rows), pa.int64())
    values = pa.array(rng.integers(0, 1_000_000, size=rows), pa.int64())
    payload = pc.binary_join_element_wise("payload-", numbers, "")
    return pa.record_batch([keys, timestamps, values, payload], names=["key", "timestamp", "value", "payload"])


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,  # a bar only on a terminal; piped output keeps the lines printed
    )


def run_demo(directory: str | None, *, rows: int, batches: int, console: Console) -> Table[LocalInstance]:
    """Runs the demo and prints what it does; returns the demo table."""
    path = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="sleeper-demo-"))
    instance = LocalInstance.open_or_create(path)
    console.print(f"Local instance in [bold]{instance.directory}[/]")
    name = f"demo-{int(time.time())}"
    per_batch = max(1, rows // batches)
    total = per_batch * batches
    threshold = max(1000, total // 8)
    table = instance.create_table(
        name,
        DEMO_SCHEMA,
        split_points=SPLIT_POINTS,
        properties={"sleeper.table.partition.splitting.threshold": str(threshold)},
    )
    console.print(
        f"Created table [bold]{name}[/] with {counted(len(table.leaf_partitions()), 'leaf partition')}, "
        f"splitting above {threshold:,} rows"
    )
    rng = np.random.default_rng(42)
    sample_key = ""
    started = time.perf_counter()
    with _progress(console) as progress:
        task = progress.add_task("Ingesting", total=total)
        for _ in range(batches):
            batch = generate_batch(rng, per_batch)
            sample_key = sample_key or str(batch.column("key")[0].as_py())
            table.ingest(batch)
            progress.advance(task, per_batch)
    elapsed = time.perf_counter() - started
    console.print(f"Ingested {counted(total, 'row')} in {elapsed:.1f} s ({total / elapsed:,.0f} rows/s)")
    _run_background_work(instance, table, console)
    table = instance.table(name)
    key = DEMO_SCHEMA.field("key")
    for label, region in [
        (f"exact {sample_key}", Region.exact(DEMO_SCHEMA, [sample_key])),
        ("range [key-0500, key-0510)", Region.of([Range(field=key, min="key-0500", max="key-0510")])),
    ]:
        started = time.perf_counter()
        result = table.query(regions=[region])
        console.print(
            f"Query {label}: {counted(result.num_rows, 'row')} in {(time.perf_counter() - started) * 1000:.1f} ms"
        )
    started = time.perf_counter()
    everything = table.query(requested_value_fields=[])
    console.print(f"Full scan: {everything.num_rows:,} rows in {time.perf_counter() - started:.2f} s")
    console.print(render.summary_panel(render.table_summary(table)))
    console.print(render.partitions_tree(table, render.partitions_report(table)))
    console.print(status.status_renderable(status.status_report(LocalApi(instance))))
    return table


def _run_background_work(instance: LocalInstance, table: Table[LocalInstance], console: Console) -> None:
    """Lets the local runtime compact and split, one round at a time, until a round finds no work."""
    runner = LocalRunner(instance, default_handlers())
    started = time.perf_counter()
    with _progress(console) as progress:
        task = progress.add_task("Compacting and splitting", total=MAX_ROUNDS)
        for number in range(1, MAX_ROUNDS + 1):
            summary = runner.run_round(force=True)
            progress.advance(task)
            current = instance.table(table.name)
            files = len({r.filename for r in current.file_references()})
            progress.console.print(
                f"  round {number}: {counted(summary.processed.get(COMPACTION_JOB_Q, 0), 'compaction')}, "
                f"{counted(summary.processed.get(PARTITION_SPLITTING_JOB_Q, 0), 'split')} -> "
                f"{counted(len(current.leaf_partitions()), 'leaf', 'leaves')}, {counted(files, 'file')}"
            )
            if summary.work_done == 0 and not summary.failed:
                progress.update(task, total=number)
                break
    console.print(f"Background work finished in {time.perf_counter() - started:.1f} s")
