"""Scenario tests of the local runtime: compaction and splitting until idle, checked end to end."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.compaction.creation import create_compaction_jobs, plan_jobs
from sleeper.compaction.strategies import files_in_leaf_partitions
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _checksum(table: pa.Table) -> tuple[int, int, int]:
    """Row count, XOR and wrapping sum of a 64-bit hash per row (docs/reliability.md I1)."""
    keys = table.column("key").to_numpy().astype(np.uint64)
    values = table.column("value").to_numpy().astype(np.uint64)
    hashed = (keys * np.uint64(0x9E3779B97F4A7C15)) ^ (values * np.uint64(0xC2B2AE3D27D4EB4F))
    return table.num_rows, int(np.bitwise_xor.reduce(hashed)), int(hashed.sum(dtype=np.uint64))


def _batch(rng: np.random.Generator, rows: int) -> pa.Table:
    keys = rng.integers(0, 2**62, size=rows)
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys // 7, pa.int64())})


def _planned_jobs(table: Table[LocalInstance]) -> int:
    leaves = files_in_leaf_partitions(table.file_references(), table.partitions())
    return len(plan_jobs(table.properties, leaves))


def should_compact_50_small_files_to_what_the_strategy_leaves(tmp_path: Path) -> None:
    # Given 50 small files ingested into one partition
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA)
    rng = np.random.default_rng(50)
    batches = [_batch(rng, 200) for _ in range(50)]
    for batch in batches:
        table.ingest(batch)
    inputs = {r.filename for r in table.file_references()}
    # When compaction runs until idle
    summary = LocalRunner(instance, default_handlers()).run_until_idle()
    # Then the strategy plans nothing more, fewer files remain, and every row is there once
    table = instance.table("t")
    assert not summary.failed
    remaining = {r.filename for r in table.file_references()}
    assert 0 < len(remaining) < 50
    assert _planned_jobs(table) == 0
    assert _checksum(table.query()) == _checksum(pa.concat_tables(batches))
    # And the replaced inputs (and intermediate outputs compacted again) are unreferenced, waiting for GC
    awaiting = {f.filename for f in table.files() if not f.references}
    assert inputs - remaining <= awaiting
    assert not awaiting & remaining
    assert all(Path(name.removeprefix("file://")).exists() for name in awaiting)
    # And a further creation run makes no job
    again = create_compaction_jobs(table, instance.queue("CompactionJobQ"), instance.compaction_job_tracker)
    assert again.jobs_created == 0


@pytest.mark.slow
def should_split_20m_rows_until_every_leaf_is_under_the_threshold(tmp_path: Path) -> None:
    # Given 20M rows ingested in 20 batches into a table that splits at 2M rows
    instance = LocalInstance.create(tmp_path / "instance")
    threshold = 2_000_000
    table = instance.create_table(
        "t", SCHEMA, properties={"sleeper.table.partition.splitting.threshold": str(threshold)}
    )
    rng = np.random.default_rng(20)
    total_xor, total_sum, total_rows = 0, 0, 0
    for _ in range(20):
        batch = _batch(rng, 1_000_000)
        rows, xor, hashed_sum = _checksum(batch)
        total_rows += rows
        total_xor ^= xor
        total_sum = (total_sum + hashed_sum) % 2**64
        table.ingest(batch)
    # When the runtime runs until idle
    summary = LocalRunner(instance, default_handlers()).run_until_idle()
    # Then every leaf holds fewer rows than the threshold
    table = instance.table("t")
    assert not summary.failed
    rows_per_leaf = Counter[str]()
    for ref in table.file_references():
        rows_per_leaf[ref.partition_id] += ref.number_of_rows
    leaves = table.leaf_partitions()
    assert len(leaves) >= 10
    assert all(rows_per_leaf[leaf.id] < threshold for leaf in leaves)
    # And each leaf has at most the files the strategy leaves: it would plan no more jobs
    assert _planned_jobs(table) == 0
    # And a full query returns the input's rows (count and checksum)
    assert _checksum(table.query()) == (total_rows, total_xor, total_sum)
