"""Compaction job creation on a local instance: SQLite state store, queue and tracker, then a task runs the jobs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.task import TaskSettings, run_compaction_task
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])
QUICK = TaskSettings(wait_seconds=0, max_idle_seconds=0, failed_visibility_seconds=0, max_consecutive_failures=10)


def _rows(offset: int) -> pa.Table:
    keys = [f"k{i:05d}" for i in range(offset, 4000, 4)]
    return pa.table({"key": pa.array(keys), "value": pa.array(range(len(keys)), pa.int64())})


def _table(tmp_path: Path) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "events",
        SCHEMA,
        split_points=["k02000"],
        properties={
            "sleeper.table.data.engine": "ARROW",
            "sleeper.table.compaction.job.commit.async": "false",
            "sleeper.table.compaction.strategy.sizeratio.ratio": "2",
        },
    )
    for offset in range(4):
        table.ingest(_rows(offset))
    return instance, table


def _content(table: Table[LocalInstance]) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row.values()) for row in table.query().to_pylist())


def should_create_jobs_that_a_local_task_compacts(tmp_path: Path) -> None:
    # Given four ingests into a table of two leaves
    instance, table = _table(tmp_path)
    before = _content(table)
    queue = instance.queue("CompactionJobQ")

    # When jobs are created
    result = create_compaction_jobs(table, queue, instance.compaction_job_tracker)

    # Then there is one job per leaf, on the queue and in the tracker
    leaves = {p.id for p in table.leaf_partitions()}
    assert result.jobs_per_partition == dict.fromkeys(leaves, 1)
    assert queue.approximate_counts().visible == 2
    for job in result.jobs:
        assert job.output_file.startswith(f"{table.data_prefix}/data/partition_{job.partition_id}/")
        status = instance.compaction_job_tracker.job(job.job_id)
        assert status is not None and status.status is CompactionJobStatusType.CREATED

    # When a task runs them
    summary = run_compaction_task(instance, settings=QUICK)

    # Then each leaf has one file, the rows are unchanged and the jobs are finished
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED] * 2
    assert sorted(r.filename for r in table.file_references()) == sorted(j.output_file for j in result.jobs)
    assert _content(table) == before
    for job in result.jobs:
        status = instance.compaction_job_tracker.job(job.job_id)
        assert status is not None and status.status is CompactionJobStatusType.FINISHED

    # And another run finds nothing to compact
    assert create_compaction_jobs(table, queue, instance.compaction_job_tracker).jobs_created == 0


def should_send_jobs_that_parse_back_from_the_local_queue(tmp_path: Path) -> None:
    # Given
    instance, table = _table(tmp_path)
    queue = instance.queue("CompactionJobQ")

    # When
    result = create_compaction_jobs(table, queue, instance.compaction_job_tracker, compact_all=True)

    # Then
    received = [CompactionJob.from_json(m.body) for m in queue.receive(10)]
    assert sorted(received, key=lambda j: j.job_id) == sorted(result.jobs, key=lambda j: j.job_id)
    assigned = {r.job_id for r in table.file_references()}
    assert assigned == {j.job_id for j in result.jobs}
