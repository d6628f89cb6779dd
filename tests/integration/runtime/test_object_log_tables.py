"""Tables whose state store is S3TransactionLogStateStore on a local instance: logs as files, chosen per table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import TableDeletedError
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.log import LogType
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
OBJECT_LOG = {"sleeper.table.statestore.classname": "S3TransactionLogStateStore"}


def should_keep_a_tables_logs_as_files_when_its_classname_says_so(tmp_path: Path) -> None:
    # Given a table on the object log and one on the default (SQLite) log
    instance = LocalInstance.create(tmp_path / "instance")
    objects = instance.create_table("objects", SCHEMA, properties=OBJECT_LOG)
    default = instance.create_table("default", SCHEMA)
    # When both are given rows
    for table in (objects, default):
        table.ingest(pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": pa.array([4, 5, 6], pa.int64())}))
    # Then each table's transactions are in its own store only, and both return their rows
    log_dir = instance.directory / "data" / objects.table_id / "statestore" / "log" / "files"
    assert sorted(p.name for p in log_dir.iterdir()) == ["00000000000000000001.json"]
    sqlite_log = instance.state_store_backend.transaction_log(objects.table_id, LogType.FILES)
    assert list(sqlite_log.read_transactions_after(0)) == []
    assert (
        len(
            list(
                instance.state_store_backend.transaction_log(default.table_id, LogType.FILES).read_transactions_after(0)
            )
        )
        == 1
    )
    assert instance.table("objects").scan().count() == 3
    assert instance.table("default").scan().count() == 3


def should_refuse_appends_after_the_table_is_deleted_and_mark_it_for_the_sweep(tmp_path: Path) -> None:
    # Given a table on the object log, and a state store of it held by a writer
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("objects", SCHEMA, properties=OBJECT_LOG)
    stale = table.state_store
    stale.refresh()
    # When the table is deleted and the writer appends
    instance.delete_table("objects")
    with pytest.raises(TableDeletedError):
        stale.add_files(
            [
                FileReference(
                    filename=f"{table.data_prefix}/data/partition_root/late.parquet",
                    partition_id="root",
                    number_of_rows=1,
                )
            ]
        )
    # Then its store marks it deleted, so does the instance the sweep of deleted tables asks, and its log stays empty
    assert instance.object_log_backend.is_deleted(table.table_id)
    assert instance.is_table_deleted(table.table_id)
    assert (
        list(instance.object_log_backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0))
        == []
    )


def should_refuse_a_state_store_this_port_does_not_have(tmp_path: Path) -> None:
    # Given / When a table is created naming an unknown state store / Then it is refused, naming the choices
    instance = LocalInstance.create(tmp_path / "instance")
    with pytest.raises(PropertyError, match="use one of DynamoDBTransactionLogStateStore"):
        instance.create_table(
            "t", SCHEMA, properties={"sleeper.table.statestore.classname": "sleeper.statestore.s3.S3StateStore"}
        )
    assert instance.tables() == []
