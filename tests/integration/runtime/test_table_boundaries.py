"""A table's state and files stay its own (issue items 1, 3 and 4), on a local instance: a commit naming another
table's file is refused and no delete leaves the table's prefix; an ingest racing ``table reinit`` or ``table delete``
fails instead of acknowledging rows no query returns; and what a deleted table leaves is swept."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.maintenance import reinitialise_table
from sleeper.core import faults
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import PartitionNotFoundError, StateStoreError
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.log import LogType
from sleeper.gc.orphans import sweep_deleted_tables
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.store import StateStore
from tests.model.invariants import local_path

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.STRING)])
COMMITTER = "StateStoreCommitterQ.fifo"


def _rows(n: int, prefix: str = "k") -> pa.Table:
    return pa.table({"key": [f"{prefix}{i:04d}" for i in range(n)], "value": ["v"] * n})


def _forged_add_files(table_id: str, victim: str) -> str:
    reference = {"partitionId": "root", "numberOfRows": 1, "countApproximate": False}
    reference["onlyContainsDataForThisPartition"] = True
    transaction = {"files": [{"filename": victim, "references": [reference]}]}
    return json.dumps({"tableId": table_id, "transactionType": "ADD_FILES", "transaction": transaction})


def should_refuse_a_forged_commit_of_another_tables_file_and_keep_that_table_whole_through_reinit(
    tmp_path: Path,
) -> None:
    # Given tables a and b, b holding 1000 rows, and an ADD_FILES for a naming b's file on the committer queue
    instance = LocalInstance.create(tmp_path / "instance")
    a = instance.create_table("a", SCHEMA)
    b = instance.create_table("b", SCHEMA)
    b.ingest(_rows(1000))
    victim = b.files()[0].filename
    instance.queue(COMMITTER).send(_forged_add_files(a.table_id, victim), group_id=a.table_id, dedup_id="forged")
    # When the committer handles it, and table a is reinitialised
    (message,) = instance.queue(COMMITTER).receive(1)
    outcome = default_handlers()[COMMITTER](instance, message.body)
    reinitialise_table(instance.table("a"))
    # Then the commit was rejected naming the file, a tracks nothing, and b still returns every row
    assert "rejected" in outcome and victim in outcome and "does not belong to table" in outcome
    assert instance.table("a").files() == []
    assert instance.table("b").query().num_rows == 1000


def should_leave_another_tables_file_tracked_from_before_the_check_when_reinitialising(tmp_path: Path) -> None:
    # Given table a tracking b's file, as a state store that did not check locations recorded it
    instance = LocalInstance.create(tmp_path / "instance")
    a = instance.create_table("a", SCHEMA)
    b = instance.create_table("b", SCHEMA)
    b.ingest(_rows(10))
    victim = b.files()[0].filename
    unchecked = StateStore(schema=SCHEMA, table_id=a.table_id, backend=instance.state_store_backend)
    unchecked.add_files([FileReference(filename=victim, partition_id="root", number_of_rows=10)])
    assert [f.filename for f in instance.table("a").files()] == [victim]
    # When table a is reinitialised
    reinitialise_table(instance.table("a"))
    # Then a tracks nothing, but b's file and sidecar were not deleted: b still returns its rows
    assert instance.table("a").files() == []
    assert local_path(victim).exists()
    assert instance.table("b").query().num_rows == 10


def should_fail_an_ingest_whose_partitions_a_reinit_replaced_before_it_committed(tmp_path: Path) -> None:
    # Given a table split at g, n and t
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=["g", "n", "t"])
    table.ingest(_rows(100, "a"))
    old_partitions = {p.id for p in table.partitions()}

    def reinit(_: str) -> None:
        reinitialise_table(instance.table("t"), ["c", "x"])

    # When the table is reinitialised with other split points while an ingest has written its files, not committed
    with faults.armed("ingest.after_files_written", reinit, times=1), pytest.raises(PartitionNotFoundError):
        table.ingest(_rows(500, "m"))
    # Then the ingest failed: the table counts no rows, a query returns none, and the ingest's files were deleted
    after = instance.table("t")
    assert after.file_references() == []
    assert after.query().num_rows == 0
    assert not old_partitions & {p.id for p in after.partitions()}
    assert list((local_path(after.data_prefix) / "data").rglob("*.*")) == []
    # And an ingest after the reinit is kept and returned
    after.ingest(_rows(5, "z"))
    assert instance.table("t").query().num_rows == 5


def should_fail_an_ingest_racing_table_delete_and_sweep_what_it_left(tmp_path: Path) -> None:
    # Given a table with rows
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA)
    table.ingest(_rows(100))
    table_id = table.table_id

    def delete(_: str) -> None:
        instance.delete_table("t")

    # When the table is deleted while an ingest has written its files, not committed
    with faults.armed("ingest.after_files_written", delete, times=1), pytest.raises(StateStoreError):
        table.ingest(_rows(500, "m"))
    # Then the ingest failed, and the deleted table has no log entry left
    assert [t.table_name for t in instance.tables()] == []
    assert instance.state_store_backend.is_deleted(table_id)
    for log_type in LogType:
        assert list(instance.state_store_backend.transaction_log(table_id, log_type).read_transactions_after(0)) == []
    # And a file a writer left under the deleted table's prefix is swept once old enough
    leftover = local_path(table.data_prefix) / "data" / "partition_root" / f"{uuid.uuid4()}.parquet"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"left by a writer racing the deletion")
    young = sweep_deleted_tables(instance.data_root, instance.state_store_backend.is_deleted)
    swept = sweep_deleted_tables(
        instance.data_root, instance.state_store_backend.is_deleted, now=datetime.now(tz=UTC) + timedelta(days=2)
    )
    assert young.young == (str(leftover),) and leftover.name not in " ".join(young.deleted)
    assert swept.tables == (table_id,) and swept.deleted == (str(leftover),)
    assert not leftover.exists()
    assert not local_path(table.data_prefix).exists()
