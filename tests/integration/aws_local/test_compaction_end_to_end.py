"""Compaction end to end through the emulated instance: the job creation rule fires, the pump delivers the per-table
message to job creation, which sends the job to ``CompactionJobQ``; the task creation rule starts an ECS task, which
the pump runs as a local process of the compaction container's entry point; its batched commit reaches the commit
batcher. The partition then holds fewer files with the same rows, and a job delivered twice ends as one run."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobCommitted, CompactionJobFailed, CompactionJobStatusType
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.emulator.rounds import PumpRound
from sleeper.ingest.standard import ingest_batches
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
from sleeper.runtime.aws.instance import AwsInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
COMPACT_THREE = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "3",
    # a pending batch the dispatcher sees before the committer assigned its files is checked again at once, rather
    # than after a delay the pump's run until idle does not wait for
    "sleeper.table.compaction.job.send.retry.delay.seconds": "0",
}
HANDLERS = tuple(
    operations.handler(name)
    for name in (
        operations.COMPACTION_JOB_CREATION_TRIGGER,
        operations.COMPACTION_JOB_CREATION,
        operations.COMPACTION_JOB_DISPATCHER,
        operations.COMPACTION_TASK_CREATION,
        operations.COMPACTION_COMMIT_BATCHER,
        operations.STATESTORE_COMMITTER,
    )
)


def _table_of_three_files(instance: AwsInstance) -> Table[AwsInstance]:
    """A one-partition table holding keys 0-29 in three files of 10 rows, ingested as three separate writes."""
    table = instance.create_table(f"compact-{uuid.uuid4().hex[:8]}", SCHEMA, properties=COMPACT_THREE)
    for start in (20, 0, 10):
        keys = list(range(start, start + 10))
        rows = pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})
        ingest_batches(
            table.schema,
            table.properties,
            table.state_store,
            table.data_prefix,
            rows.to_batches(),
            options=instance.filesystem_options,
        )
    return table


def _count_and_checksum(table: Table[AwsInstance]) -> tuple[int, str]:
    rows = table.query().sort_by("key").to_pylist()
    return len(rows), hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def _files(table: Table[AwsInstance]) -> list[str]:
    table.state_store.refresh()
    return [r.filename for r in table.file_references()]


def _pump(emulated: EmulatedAwsInstance, log_dir: Path) -> Pump:
    return emulated.pump(handlers=HANDLERS, task_log_dir=str(log_dir), environment_extra={IDLE_WAIT_ENV: "0"})


def _create_jobs(pump: Pump) -> PumpRound:
    """The job creation rule fires and the pump delivers its message to job creation."""
    assert pump.fire(operations.COMPACTION_JOB_CREATION_TRIGGER)
    return pump.run_until_idle(timeout_seconds=60)


def _run_tasks(pump: Pump) -> PumpRound:
    """The task creation rule fires, and the pump runs the tasks and delivers their commits."""
    assert pump.fire(operations.COMPACTION_TASK_CREATION)
    return pump.run_until_idle(timeout_seconds=180)


def should_compact_a_partition_through_job_creation_a_task_and_the_commit_batcher(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table of three small files, with its row count and checksum
    instance = emulated.instance()
    table = _table_of_three_files(instance)
    before = _count_and_checksum(table)
    pump = _pump(emulated, tmp_path)
    # When job creation runs, then task creation, and the pump runs until idle
    created = _create_jobs(pump)
    ran = _run_tasks(pump)
    # Then one job was created in a pending batch, the committer assigned its files and the dispatcher sent it, one
    # task ran as a local process and exited cleanly, and its commit was delivered
    assert created.delivered.get(operations.COMPACTION_JOB_CREATION) == 1
    assert created.delivered.get(operations.STATESTORE_COMMITTER) == 1
    assert created.delivered.get(operations.COMPACTION_JOB_DISPATCHER, 0) >= 1
    assert [code for _, code in ran.tasks_finished] == [0]
    assert ran.delivered == {operations.COMPACTION_COMMIT_BATCHER: 1}
    assert created.failed == ran.failed == {}
    # And the partition holds one file in place of three, with the same rows
    (output,) = _files(table)
    assert output.startswith(f"{table.data_prefix}/data/partition_root/")
    assert _count_and_checksum(table) == before == (30, before[1])
    # And the job is tracked committed
    (job,) = instance.compaction_job_tracker.jobs(table.table_id)
    assert job.status is CompactionJobStatusType.FINISHED


def should_end_as_one_run_when_a_compaction_job_is_delivered_twice(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table of three small files whose compaction job is created
    instance = emulated.instance()
    table = _table_of_three_files(instance)
    before = _count_and_checksum(table)
    pump = _pump(emulated, tmp_path)
    _create_jobs(pump)
    # And the job's message is on the compaction job queue twice
    queue = instance.queue(operations.COMPACTION_JOB_Q)
    (message,) = queue.receive(10)
    queue.delete(message.receipt_handle)
    queue.send_batch([message.body, message.body])
    # When task creation runs and the pump runs the tasks and delivers the commits until idle
    ran = _run_tasks(pump)
    # Then every task exited cleanly and no commit failed
    assert ran.tasks_finished and all(code == 0 for _, code in ran.tasks_finished)
    assert ran.failed == {}
    assert instance.dead_letter_queue(operations.COMPACTION_COMMIT_Q).approximate_counts().visible == 0
    # And the table ends as one run leaves it: one output file, the same rows
    (output,) = _files(table)
    assert json.loads(message.body)["outputFile"] == output
    assert _count_and_checksum(table) == before
    # And the job is committed once and never failed
    (job,) = instance.compaction_job_tracker.jobs(table.table_id)
    assert job.status is CompactionJobStatusType.FINISHED
    updates = [u for run in job.runs for u in run.updates]
    assert sum(isinstance(u, CompactionJobCommitted) for u in updates) == 1
    assert not any(isinstance(u, CompactionJobFailed) for u in updates)
