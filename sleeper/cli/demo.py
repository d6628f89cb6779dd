"""``sleeper demo``: a local instance, a table, generated rows ingested in batches, queries, and the status."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.progress import Progress

from sleeper.cli import render
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.local import LocalInstance, LocalTable

DEMO_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
)
SPLIT_POINTS = ["key-04", "key-08", "key-12"]


def generate_batch(rng: np.random.Generator, rows: int) -> pa.RecordBatch:
    """Random rows of the demo schema (vectorised)."""
    numbers = pc.cast(pa.array(rng.integers(0, 16_000_000, size=rows)), pa.string())
    keys = pc.binary_join_element_wise("key-", pc.utf8_lpad(numbers, 8, "0"), "")
    timestamps = pa.array(rng.integers(1_700_000_000_000, 1_800_000_000_000, size=rows), pa.int64())
    values = pa.array(rng.integers(0, 1_000_000, size=rows), pa.int64())
    payload = pc.binary_join_element_wise("payload-", numbers, "")
    return pa.record_batch([keys, timestamps, values, payload], names=["key", "timestamp", "value", "payload"])


def run_demo(directory: str | None, *, rows: int, batches: int, console: Console) -> LocalTable:
    """Runs the demo and prints what it does; returns the demo table."""
    path = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="sleeper-demo-"))
    instance = LocalInstance.open_or_create(path)
    console.print(f"Local instance in [bold]{instance.directory}[/]")
    name = f"demo-{int(time.time())}"
    table = instance.create_table(name, DEMO_SCHEMA, split_points=SPLIT_POINTS)
    console.print(f"Created table [bold]{name}[/] with {len(table.leaf_partitions())} leaf partitions")
    rng = np.random.default_rng(42)
    per_batch = max(1, rows // batches)
    started = time.perf_counter()
    sample_key = ""
    with Progress(console=console, transient=False) as progress:
        task = progress.add_task("Ingesting", total=per_batch * batches)
        for _ in range(batches):
            batch = generate_batch(rng, per_batch)
            sample_key = sample_key or str(batch.column("key")[0].as_py())
            table.ingest(batch)
            progress.advance(task, per_batch)
    elapsed = time.perf_counter() - started
    console.print(
        f"Ingested {per_batch * batches:,} rows in {elapsed:.1f} s ({per_batch * batches / elapsed:,.0f} rows/s)"
    )
    key = DEMO_SCHEMA.field("key")
    for label, region in [
        (f"exact {sample_key}", Region.exact(DEMO_SCHEMA, [sample_key])),
        ("range [key-0500, key-0510)", Region.of([Range(field=key, min="key-0500", max="key-0510")])),
    ]:
        started = time.perf_counter()
        result = table.query(regions=[region])
        console.print(f"Query {label}: {result.num_rows} rows in {(time.perf_counter() - started) * 1000:.1f} ms")
    console.print(render.summary_panel(render.table_summary(table)))
    console.print(render.partitions_tree(table, render.partitions_report(table)))
    return table
