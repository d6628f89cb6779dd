"""Compaction tasks on a local instance: SQLite queues, trackers and state store, real files."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.compaction.entry import handle_compaction_commit
from sleeper.compaction.task import TaskExit, TaskSettings, run_compaction_task
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.files import AssignJobIdRequest, AssignJobIdsTransaction
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.local.instance import LocalInstance, local_queue_settings
from tests.reliability_report import Reliability

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("time", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG)],
)
QUICK = TaskSettings(wait_seconds=0, max_idle_seconds=0, failed_visibility_seconds=0, max_consecutive_failures=10)


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": pa.array([f"k{x:05d}" for x in rng.integers(0, 5000, n)]),
            "time": pa.array(rng.integers(0, 10**9, n), pa.int64()),
            "value": pa.array(rng.integers(0, 100, n), pa.int64()),
        }
    )


def _table(tmp_path: Path, **properties: str) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "events",
        SCHEMA,
        split_points=["k02500"],
        properties={"sleeper.table.data.engine": "ARROW", **properties},
    )
    for seed in range(3):
        table.ingest(_rows(2000, seed))
    return instance, table


def _leaf_job(table: Table[LocalInstance], index: int) -> CompactionJob:
    leaf = table.leaf_partitions()[index]
    inputs = sorted({r.filename for r in table.file_references() if r.partition_id == leaf.id})
    job_id = str(uuid.uuid4())
    job = CompactionJob(
        table_id=table.table_id,
        job_id=job_id,
        input_files=tuple(inputs),
        output_file=f"{table.data_prefix}/data/partition_{leaf.id}/{job_id}.parquet",
        partition_id=leaf.id,
    )
    table.state_store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id=job_id, partition_id=leaf.id, filenames=inputs),))
    )
    return job


def _content(table: Table[LocalInstance]) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row.values()) for row in table.query().to_pylist())


def should_compact_each_leaf_of_a_local_table_and_keep_its_rows(tmp_path: Path) -> None:
    # Given files shared between two leaves, and one job per leaf on the job queue
    instance, table = _table(tmp_path, **{"sleeper.table.compaction.job.commit.async": "false"})
    before = _content(table)
    jobs = [_leaf_job(table, 0), _leaf_job(table, 1)]
    for job in jobs:
        instance.queue("CompactionJobQ").send(job.to_json())

    # When
    summary = run_compaction_task(instance, settings=QUICK)

    # Then
    assert summary.exit is TaskExit.IDLE
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED] * 2
    assert summary.rows_written == 6000
    assert sorted({r.filename for r in table.file_references()}) == sorted(j.output_file for j in jobs)
    assert _content(table) == before
    for job in jobs:
        status = instance.compaction_job_tracker.job(job.job_id)
        assert status is not None and status.status is CompactionJobStatusType.FINISHED
    task = instance.compaction_task_tracker.task(summary.task_id)
    assert task is not None and task.is_finished and task.job_runs == 2


def should_commit_through_the_commit_queue_when_asynchronous(tmp_path: Path) -> None:
    # Given
    instance, table = _table(tmp_path, **{"sleeper.table.compaction.job.commit.async": "true"})
    before = _content(table)
    job = _leaf_job(table, 0)
    instance.queue("CompactionJobQ").send(job.to_json())
    summary = run_compaction_task(instance, settings=QUICK)
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert job.output_file not in {r.filename for r in table.file_references()}

    # When the committer takes the request
    commit_queue = instance.queue("CompactionCommitQ")
    (message,) = commit_queue.receive(1)
    line = handle_compaction_commit(instance, message.body)
    commit_queue.delete(message.receipt_handle)

    # Then
    assert "committed" in line
    assert job.output_file in {r.filename for r in table.file_references()}
    assert _content(table) == before
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED


def should_send_a_poison_message_to_the_dead_letter_queue(tmp_path: Path, reliability: Reliability) -> None:
    # Given a job of a table whose input file does not exist
    instance, table = _table(tmp_path, **{"sleeper.table.compaction.job.commit.async": "false"})
    job = _leaf_job(table, 0)
    Path(job.input_files[0].removeprefix("file://")).unlink()
    instance.queue("CompactionJobQ").send(job.to_json())

    # When
    started = time.perf_counter()
    summary = run_compaction_task(instance, settings=QUICK)
    to_dlq_s = time.perf_counter() - started

    # Then it failed on each of its 3 receives, then moved to the dead-letter queue
    status = instance.compaction_job_tracker.job(job.job_id)
    reasons = [reason for run in status.runs for reason in run.failure_reasons] if status is not None else []
    still_assigned = [r for r in table.file_references() if r.filename in job.input_files and r.job_id == job.job_id]
    reliability.record(
        "B4",
        case="compaction job whose input file is missing (fails on every delivery)",
        max_receive_count=local_queue_settings()["CompactionJobQ"][2],
        receives_before_dlq=len(summary.outcomes),
        failed_receives=sum(o.outcome is JobOutcome.FAILED for o in summary.outcomes),
        dead_lettered=instance.dead_letter_queue("CompactionJobQ").approximate_counts().visible,
        left_on_queue=sum(instance.queue("CompactionJobQ").approximate_counts()),
        tracker_status=status.status.value if status is not None else None,
        tracker_reason=reasons[0][:200] if reasons else None,
        inputs_still_assigned=len(still_assigned),
        inputs=len(job.input_files),
        time_to_dlq_s=round(to_dlq_s, 3),
    )
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FAILED] * 3
    assert instance.queue("CompactionJobQ").approximate_counts() == (0, 0)
    (dead,) = instance.dead_letter_queue("CompactionJobQ").receive(1)
    assert dead.body == job.to_json()
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FAILED
    assert not Path(job.output_file.removeprefix("file://")).exists()
