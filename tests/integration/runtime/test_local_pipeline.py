"""The whole local pipeline under the runtime: ingest, compaction, splitting and commits until idle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper.compaction.creation import create_compaction_jobs
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.runtime.local.handlers import default_handlers, drain_in_worker
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _batch(rng: np.random.Generator, rows: int) -> pa.RecordBatch:
    keys = pa.array(rng.integers(0, 1_000_000_000, size=rows), pa.int64())
    return pa.record_batch([keys, pc.multiply(keys, 3)], names=["key", "value"])


def should_compact_and_split_until_idle_keeping_every_row(tmp_path: Path) -> None:
    # Given a root-only table that splits above 20,000 rows, compacting 4 files at a time, with async commits
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.partition.splitting.threshold": "20000",
            "sleeper.table.compaction.files.batch.size": "4",
            "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
        },
    )
    rng = np.random.default_rng(7)
    ingested = [_batch(rng, 10_000) for _ in range(8)]
    for batch in ingested:
        table.ingest(batch)
    expected = pa.Table.from_batches(ingested).sort_by("key")
    # When the runtime runs until idle
    summary = LocalRunner(instance, default_handlers()).run_until_idle()
    # Then partitions were split and files compacted, with no failures
    table = instance.table("t")
    assert not summary.failed
    assert len(table.leaf_partitions()) > 1
    assert summary.processed.get("CompactionJobQ", 0) > 0
    assert len({r.filename for r in table.file_references()}) < 8
    # And every row is still there exactly once
    result = table.query()
    assert result.num_rows == expected.num_rows
    assert result.select(["key", "value"]).cast(expected.schema).equals(expected)
    # And every compaction job reached FINISHED in the tracker
    statuses = {j.status for j in instance.compaction_job_tracker.jobs(table.table_id)}
    assert statuses == {CompactionJobStatusType.FINISHED}


def should_run_compaction_jobs_in_worker_processes(tmp_path: Path) -> None:
    # Given a table with 4 leaves and 3 ingested files, all to be compacted
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=[250_000_000, 500_000_000, 750_000_000])
    rng = np.random.default_rng(3)
    ingested = [_batch(rng, 5_000) for _ in range(3)]
    for batch in ingested:
        table.ingest(batch)
    create_compaction_jobs(table, instance.queue("CompactionJobQ"), instance.compaction_job_tracker, compact_all=True)
    # When two worker processes drain the compaction job queue
    runner = LocalRunner(instance, default_handlers(), workers=2, worker_drain=drain_in_worker)
    try:
        summary = runner.drain_in_workers("CompactionJobQ")
    finally:
        runner.close()
    # Then every job ran once between them, and every row is still there
    assert summary.processed == {"CompactionJobQ": 4}
    assert not summary.failed
    LocalRunner(instance, default_handlers()).run_until_idle()
    result = instance.table("t").query()
    expected = pa.Table.from_batches(ingested).sort_by("key")
    assert result.select(["key", "value"]).cast(expected.schema).equals(expected)
