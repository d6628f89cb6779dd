"""A table's state and files stay its own on the AWS runtime (moto): a forged commit naming another table's file is
refused by the committer Lambda and ``table reinit`` deletes nothing of the other table; an ingest racing a reinit or a
table deletion fails instead of acknowledging rows no query returns; a deleted table's logs refuse appends."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from sleeper.api.maintenance import reinitialise_table
from sleeper.api.table import Table
from sleeper.core import faults
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import PartitionNotFoundError, StateStoreError
from sleeper.core.statestore.transactions.log import LogType
from sleeper.gc.orphans import sweep_deleted_tables
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import exists, filesystem_path, write_bytes
from sleeper.lambdas import sqs
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.conftest import sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys], pa.string())})


def _new_table(instance: AwsInstance, split_points: list[int] | None = None) -> Table[AwsInstance]:
    return instance.create_table(f"table-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=split_points or [])


def _ingest(instance: AwsInstance, table: Table[AwsInstance], rows: pa.Table) -> None:
    ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        rows.to_batches(),
        options=instance.filesystem_options,
    )


def should_reject_a_forged_commit_of_another_tables_file_and_keep_that_table_through_reinit(
    instance: AwsInstance,
) -> None:
    # Given tables a and b, b holding 100 rows, and an ADD_FILES for a naming b's file
    a, b = _new_table(instance), _new_table(instance)
    _ingest(instance, b, _rows(0, 100))
    victim = b.files()[0].filename
    reference = {"partitionId": "root", "numberOfRows": 1, "countApproximate": False}
    reference["onlyContainsDataForThisPartition"] = True
    body = json.dumps(
        {
            "tableId": a.table_id,
            "transactionType": "ADD_FILES",
            "transaction": {"files": [{"filename": victim, "references": [reference]}]},
        }
    )
    # When the committer Lambda handles it, and table a is reinitialised
    response = sqs.statestore_committer(sqs_event([("forged", body, a.table_id)]))
    reinitialise_table(instance.table_by_id(a.table_id))
    # Then the request was finished with (rejected, not retried), a tracks nothing, and b keeps its file and rows
    assert response == {"batchItemFailures": []}
    assert instance.table_by_id(a.table_id).files() == []
    assert exists(instance.filesystem, filesystem_path(victim))
    assert instance.table_by_id(b.table_id).query().num_rows == 100


def should_fail_an_ingest_whose_partitions_a_reinit_replaced_before_it_committed(instance: AwsInstance) -> None:
    # Given a table split at 50 with rows
    table = _new_table(instance, [50])
    _ingest(instance, table, _rows(0, 100))

    def reinit(_: str) -> None:
        reinitialise_table(instance.table_by_id(table.table_id), [20, 70])

    # When the table is reinitialised with other split points while an ingest has written its files, not committed
    with faults.armed("ingest.after_files_written", reinit, times=1), pytest.raises(PartitionNotFoundError):
        _ingest(instance, table, _rows(100, 200))
    # Then the ingest failed: the table tracks nothing and a query returns nothing
    after = instance.table_by_id(table.table_id)
    assert after.file_references() == []
    assert after.query().num_rows == 0


def should_fail_an_ingest_racing_table_delete_and_leave_no_log_entries(instance: AwsInstance) -> None:
    # Given a table with rows
    table = _new_table(instance)
    _ingest(instance, table, _rows(0, 10))
    backend = instance.state_store_backend

    def delete(_: str) -> None:
        AwsApi(instance).delete_table(table.name)

    # When the table is deleted while an ingest has written its files, not committed
    with faults.armed("ingest.after_files_written", delete, times=1), pytest.raises(StateStoreError):
        _ingest(instance, table, _rows(10, 20))
    # Then the ingest failed, the deleted table's logs are empty and refuse appends
    assert backend.is_deleted(table.table_id)
    for log_type in LogType:
        assert list(backend.transaction_log(table.table_id, log_type).read_transactions_after(0)) == []
    # And a file a writer left under the deleted table's prefix is swept by the garbage collector's sweep
    leftover = f"{filesystem_path(table.data_prefix)}/data/partition_root/{uuid.uuid4()}.parquet"
    write_bytes(instance.filesystem, leftover, b"left by a writer racing the deletion")
    swept = sweep_deleted_tables(
        instance.data_root,
        backend.is_deleted,
        live_table_ids=[t.table_id for t in instance.tables()],
        now=datetime.now(tz=UTC) + timedelta(days=2),
        options=instance.filesystem_options,
    )
    assert swept.deleted == (leftover,)
    assert not exists(instance.filesystem, leftover)
