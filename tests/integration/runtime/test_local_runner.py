"""The local runtime's scheduler and workers: per-table triggers, queue handlers, retries and idling."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    inst = LocalInstance.create(tmp_path / "instance")
    inst.create_table("t", SCHEMA, split_points=["m"])
    return inst


def _job(tmp_path: Path, job_id: str, rows: int) -> IngestJob:
    path = tmp_path / f"{job_id}.parquet"
    pq.write_table(pa.table({"key": [f"k{i}" for i in range(rows)], "value": pa.array(range(rows), pa.int64())}), path)
    return IngestJob(id=job_id, files=(str(path),), table_name="t")


def should_run_queued_ingest_jobs_and_snapshot_the_table_until_idle(instance: LocalInstance, tmp_path: Path) -> None:
    # Given two ingest jobs on the queue
    queue = instance.queue("IngestJobQ")
    queue.send(_job(tmp_path, "a", 100).to_json())
    queue.send(_job(tmp_path, "b", 50).to_json())
    # When the runner runs until idle
    summary = LocalRunner(instance, default_handlers()).run_until_idle()
    # Then both jobs ran, the queue is empty, and the table's logs were snapshotted
    table = instance.table("t")
    assert summary.processed["IngestJobQ"] == 2
    assert table.query().num_rows == 150
    assert queue.approximate_counts().visible == 0
    snapshots = table.state_store.snapshot_store
    assert snapshots is not None
    assert snapshots.latest(LogType.FILES) is not None


def should_trigger_each_operation_once_per_period(instance: LocalInstance) -> None:
    # Given a runner with a clock and a 60 s snapshot period
    seen: list[str] = []
    clock = _Clock()
    runner = LocalRunner(
        instance,
        {"TransactionLogSnapshotQ.fifo": lambda _inst, body: seen.append(body) or ""},
        periods={"snapshot-creation": 60},
        clock=clock,
    )
    # When rounds run at 0 s, 30 s and 61 s
    runner.run_round()
    clock.now += 30
    runner.run_round()
    clock.now += 31
    runner.run_round()
    # Then the operation ran for the one online table at 0 s and at 61 s
    table_id = instance.table("t").table_id
    assert seen == [table_id, table_id]


def should_skip_offline_tables(instance: LocalInstance) -> None:
    # Given a second table that is offline
    instance.create_table("off", SCHEMA)
    instance.set_table_online("off", False)
    seen: list[str] = []
    runner = LocalRunner(instance, {"GCJobQ.fifo": lambda _inst, body: seen.append(body) or ""})
    # When the scheduler triggers every operation
    runner.run_round(force=True)
    # Then only the online table got a message
    assert seen == [instance.table("t").table_id]


def should_leave_a_failing_message_for_redelivery_and_count_it(instance: LocalInstance) -> None:
    # Given a handler that fails
    def failing(_inst: LocalInstance, _body: str) -> str:
        raise RuntimeError("boom")

    runner = LocalRunner(instance, {"GCJobQ.fifo": failing})
    # When a round runs
    summary = runner.run_round(force=True)
    # Then the failure is counted and the message is still on the queue, in flight
    assert summary.failed == {"GCJobQ.fifo": 1}
    assert instance.queue("GCJobQ.fifo").approximate_counts().in_flight == 1
