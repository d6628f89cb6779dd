"""Crash points of RELIABILITY.md 4(c) on the AWS runtime (DynamoDB, S3 and SQS on moto), by an injected failure.

The point is armed to raise ``CrashPointReached`` in this process (a ``BaseException``, so no handler records it as an
error and recovers): the worker unwinds as if it had died there, and the test then does what a restarted worker
does. The local runtime's kill -9 of each point is in ``tests/integration/runtime/test_crash_points.py``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from sleeper.core import faults
from sleeper.core.faults import CrashPointReached
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.io.filesystem import list_files
from sleeper.runtime.admin import reinitialise_table
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.table import Table
from sleeper.statestore.snapshots import filesystem_path
from sleeper.statestore.upkeep import create_snapshot
from tests.model.invariants import check_replay_from_snapshots, rows_of
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
SPLITS_OVER_200_KIB = 700


@pytest.fixture(autouse=True)
def _disarmed() -> object:
    faults.disarm_all()
    yield
    faults.disarm_all()


def _rows(start: int, count: int) -> pa.Table:
    keys = list(range(start, start + count))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([k % 13 for k in keys], pa.int64())})


def _table(instance: AwsInstance) -> Table[AwsInstance]:
    return instance.create_table(f"crash-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[50])


def _bodies(instance: AwsInstance, table: Table[AwsInstance]) -> list[str]:
    prefix = f"{instance.data_bucket}/{table.table_id}/statestore/transactions"
    return sorted(f.path for f in list_files(instance.filesystem, prefix))


def should_apply_an_ingest_once_when_it_crashed_after_its_log_put_and_is_run_again(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and an ingest that crashes after its ADD_FILES entry was put in DynamoDB
    table = _table(instance)
    table.ingest(_rows(0, 100), job_id="first", direct=True)
    with pytest.raises(CrashPointReached), faults.armed("statestore.after_log_put", times=1):
        table.ingest(_rows(100, 80), job_id="crashed", direct=True)
    # When the job is run again (the redelivered message), by a new table object as a restarted worker has
    again = instance.table(table.name)
    again.ingest(_rows(100, 80), job_id="crashed", direct=True)
    # Then its rows are there once, and the log holds one ADD_FILES for it
    expected = rows_of(_rows(0, 180))
    actual = rows_of(again.query())
    assert actual == expected
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0)
    )
    assert [e.transaction_number for e in entries] == list(range(1, len(entries) + 1))
    assert sum('"crashed"' in (e.body or "") for e in entries) == 1
    reliability.record(
        "C3",
        case="C3-ingest-dynamodb",
        crash_point="statestore.after_log_put",
        rows=sum(actual.values()),
        rows_lost=sum((expected - actual).values()),
        rows_duplicated=sum((actual - expected).values()),
        add_files_entries_for_job=1,
        unhandled_exceptions=0,
    )


def should_store_a_large_body_in_s3_once_when_its_writer_crashed_before_the_log_entry(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and a reinit with a partitions body over 200 KiB, crashing after the body's S3 put
    table = _table(instance)
    table.ingest(_rows(0, 100), direct=True)
    splits = [n * 10 for n in range(SPLITS_OVER_200_KIB)]
    transactions = table.state_store.last_transaction_numbers()
    with pytest.raises(CrashPointReached), faults.armed("statestore.after_body_put", times=1):
        reinitialise_table(table, splits)
    # Then the body is in S3 and the table unchanged
    (orphan,) = _bodies(instance, table)
    again = instance.table(table.name)
    assert again.state_store.last_transaction_numbers() == transactions
    assert rows_of(again.query()) == rows_of(_rows(0, 100))
    # When the reinit is run again
    reinitialise_table(again, splits)
    # Then the partitions log points at one body; the crashed attempt's body is unused
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.PARTITIONS).read_transactions_after(0)
    )
    used = {e.body_key for e in entries if e.body_key is not None}
    assert len(used) == 1
    bodies = _bodies(instance, table)
    unused = [b for b in bodies if not any(b.endswith(key) for key in used)]
    assert unused == [orphan]
    final = instance.table(table.name)
    assert len(final.leaf_partitions()) == SPLITS_OVER_200_KIB + 1
    assert rows_of(final.query()) == {}
    reliability.record(
        "C7",
        case="C7-partitions-body-s3",
        crash_point="statestore.after_body_put",
        bodies_referenced=len(used),
        unused_bodies_left=len(unused),
        unused_bodies_swept=0,
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )


@pytest.mark.parametrize("point", ["snapshot.after_upload", "snapshot.after_metadata"])
def should_keep_the_latest_snapshot_live_and_moving_forward_when_a_creator_crashes(
    instance: AwsInstance, point: str, reliability: Reliability
) -> None:
    # Given a table with a snapshot at its first transactions, and more transactions since
    table = _table(instance)
    table.ingest(_rows(0, 40), direct=True)
    first = create_snapshot(instance.table(table.name).state_store).created
    table.ingest(_rows(40, 40), direct=True)
    table.ingest(_rows(80, 40), direct=True)
    store = instance.table(table.name).state_store
    snapshots = store.snapshot_store
    assert snapshots is not None
    before = {log: snapshots.latest(log) for log in LogType}
    # When the snapshot creator crashes at the point
    with pytest.raises(CrashPointReached), faults.armed(point, times=1):
        create_snapshot(instance.table(table.name).state_store)
    # Then the latest snapshot is the earlier one, or (after its metadata) the new one; its file is there
    for log in LogType:
        latest = snapshots.latest(log)
        assert latest is not None
        assert latest.transaction_number >= before[log].transaction_number  # type: ignore[union-attr]
        with instance.filesystem.open_input_stream(filesystem_path(latest.path)):
            pass
    # When the creator runs again
    create_snapshot(instance.table(table.name).state_store)
    # Then the latest pointer moved forward to the head, and every snapshot plus the log tail equals the full replay
    store = instance.table(table.name).state_store
    store.refresh()
    heads = store.last_transaction_numbers()
    for log in LogType:
        latest = snapshots.latest(log)
        assert latest is not None and latest.transaction_number == heads[log]
    replayed = check_replay_from_snapshots(
        backend=instance.state_store_backend,
        snapshots=snapshots,
        schema=SCHEMA,
        table_id=table.table_id,
        expected_files=store.files_state(),
        expected_partitions=store.partitions_state(),
        deleted_up_to={},
        clock=lambda: datetime.now(tz=UTC) + timedelta(seconds=0),
    )
    assert rows_of(instance.table(table.name).query()) == rows_of(_rows(0, 120))
    reliability.record(
        "C4",
        case=f"C4-{point}-dynamodb",
        crash_point=point,
        first_snapshots=len(first),
        snapshots_replayed=replayed,
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
