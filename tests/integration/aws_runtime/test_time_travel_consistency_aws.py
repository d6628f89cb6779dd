"""Time travel on an AWS instance (the moto server) pairs a past state's files with partitions holding every partition
they reference, whatever the committers' clocks said, and refuses the states a `table reinit` deleted the files of.
The local runtime's fuller test is tests/integration/statestore/test_time_travel_consistency.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.maintenance import reinitialise_table
from sleeper.core.partition import split_partition
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.history import StateNotReadableError
from sleeper.statestore.store import StateStore

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
STORES = ["DynamoDBTransactionLogStateStore", "S3TransactionLogStateStore"]


def _batch(start: int, rows: int) -> pa.Table:
    keys = list(range(start, start + rows))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _create(instance: AwsInstance, store: str) -> str:
    name = f"tt-{uuid.uuid4().hex[:8]}"
    instance.create_table(
        name,
        SCHEMA,
        properties={
            "sleeper.table.statestore.classname": store,
            "sleeper.table.statestore.commit.async.enabled": "false",
            "sleeper.table.ingest.job.files.commit.async": "false",
        },
    )
    return name


def _ingest(instance: AwsInstance, name: str, rows: pa.Table, tmp_path: Path) -> None:
    """Ingests rows through the ingest job queue, run here by the ingest task, which commits them itself."""
    instance.table(name).ingest(rows, wait=False)
    summary = run_task(instance, wait_seconds=0, local_dir=str(tmp_path))
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED], summary


@pytest.mark.parametrize("store", STORES)
def should_read_every_row_as_of_head_when_the_split_was_committed_by_a_clock_ahead_on_aws(
    instance: AwsInstance, store: str, tmp_path: Path
) -> None:
    # Given a table on the state store given 1,000 rows on its root
    name = _create(instance, store)
    table = instance.table(name)
    _ingest(instance, name, _batch(0, 1000), tmp_path)
    # And its root split by a process whose clock runs 5 seconds ahead
    skewed = StateStore(
        schema=SCHEMA,
        table_id=table.table_id,
        backend=instance.object_log_backend if store == "S3TransactionLogStateStore" else instance.state_store_backend,
        clock=lambda: datetime.now(tz=UTC) + timedelta(seconds=5),
        data_prefix=instance.data_uri(table.table_id),
    )
    parent, left, right = split_partition(SCHEMA, skewed.partition_tree().root, 0, 1500)
    skewed.add_transaction(SplitPartitionTransaction(parent=parent, new_children=(left, right)))
    # And 1,000 more rows ingested across both new leaves, whose transaction's time is before the split's
    _ingest(instance, name, _batch(1000, 1000), tmp_path)
    table = instance.table(name)
    head = table.state_store.last_transaction_numbers()[LogType.FILES]
    assert table.scan().count() == 2000
    # When the table is scanned as of its last files transaction
    # Then every row is returned, and the state before the split its 1,000
    assert table.scan(as_of=head).count() == 2000
    assert table.scan(as_of=head - 1).count() == 1000


@pytest.mark.parametrize("store", STORES)
def should_refuse_states_before_a_reinitialisation_on_aws(instance: AwsInstance, store: str, tmp_path: Path) -> None:
    # Given a table given two batches, then reinitialised with a split point (its files deleted), then one more
    name = _create(instance, store)
    _ingest(instance, name, _batch(0, 100), tmp_path)
    _ingest(instance, name, _batch(100, 100), tmp_path)
    reinitialise_table(instance.table(name), [50])
    _ingest(instance, name, _batch(200, 10), tmp_path)
    table = instance.table(name)
    head = table.state_store.last_transaction_numbers()[LogType.FILES]
    clear = head - 1
    history = table.history()
    files = [
        (n, readable)
        for log, n, readable in zip(
            history.column("log").to_pylist(),
            history.column("transaction_number").to_pylist(),
            history.column("readable").to_pylist(),
            strict=True,
        )
        if log == "files"
    ]
    # Then the history marks the states before the reinitialisation unreadable
    assert files == [(n, n >= clear) for n in range(1, head + 1)]
    # And reading one is refused with the documented error naming the oldest readable transaction
    with pytest.raises(StateNotReadableError, match=f"oldest readable transaction is {clear} ") as e:
        table.scan(as_of=1).count()
    assert e.value.oldest_readable == clear
    assert table.scan(as_of=head).count() == 10
