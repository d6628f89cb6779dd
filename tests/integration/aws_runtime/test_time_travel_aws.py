"""Time travel on an AWS instance (the moto server), for a table on each state store: three batches ingested by the
ingest task, each committed by the job itself, then every past state read back against a model, and the history
listing the transactions. The local runtime's fuller test is tests/integration/runtime/test_time_travel.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper.core.operations import INGEST_JOB_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.history import StateNotReadableError

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
SYNC_INGEST_COMMITS = {"sleeper.table.ingest.job.files.commit.async": "false"}
"""The ingest job commits its files itself (asynchronous by default, through a committer this test does not run)."""


def _batch(start: int, rows: int) -> pa.Table:
    keys = list(range(start, start + rows))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _rows(table: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True))


@pytest.mark.parametrize("store", ["DynamoDBTransactionLogStateStore", "S3TransactionLogStateStore"])
def should_return_exactly_the_rows_present_as_of_each_ingest_on_aws(
    instance: AwsInstance, tmp_path: Path, store: str
) -> None:
    # Given a table on the state store, given three batches by ingest jobs the ingest task runs and commits
    name = f"tt-{uuid.uuid4().hex[:8]}"
    created = instance.create_table(
        name, SCHEMA, properties={"sleeper.table.statestore.classname": store, **SYNC_INGEST_COMMITS}
    )
    model: dict[int, list[tuple[int, str]]] = {}
    present: list[tuple[int, str]] = []
    for i in range(3):
        batch = _batch(i * 100, 5)
        source = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
        pq.write_table(batch, source, filesystem=instance.filesystem)
        job_id = str(uuid.uuid4())
        instance.queue(INGEST_JOB_Q).send(json.dumps({"id": job_id, "tableName": name, "files": [source]}))
        summary = run_task(instance, wait_seconds=0, local_dir=str(tmp_path))
        assert [(o.job_id, o.outcome) for o in summary.outcomes] == [(job_id, JobOutcome.FINISHED)], summary
        present = sorted(present + _rows(batch))
        model[instance.table(name).state_store.last_transaction_numbers()[LogType.FILES]] = present
    table = instance.table(name)
    # Then the table's logs are in the store it asked for: its files log is in the data bucket only on the S3 store
    listed = instance.clients.s3.list_objects_v2(
        Bucket=instance.data_bucket, Prefix=f"{created.table_id}/statestore/log/files/"
    )
    assert (listed.get("KeyCount", 0) == 3) == (store == "S3TransactionLogStateStore")
    # And each past state returns exactly the rows the model holds then, whole and by range
    assert sorted(model) == [1, 2, 3]
    for number, expected in model.items():
        assert _rows(table.scan(as_of=number).to_arrow()) == expected, number
        ranged = table.scan(as_of=number, ranges={"key": (100, 103)}).to_arrow()
        assert _rows(ranged) == [r for r in expected if 100 <= r[0] < 103], number
    # And a state by the time of its transaction is the state after it
    history = table.history()
    files_log = history.filter(pc.equal(history.column("log"), "files"))
    last_time = files_log.column("time")[2].as_py()
    assert _rows(table.scan(as_of=last_time).to_arrow()) == model[3]
    # And the history lists the three ingests, 5 rows and one file each, all readable
    assert files_log.column("transaction_number").to_pylist() == [1, 2, 3]
    assert files_log.column("type").to_pylist() == ["ADD_FILES"] * 3
    assert files_log.column("rows_added").to_pylist() == [5, 5, 5]
    assert files_log.column("files_added").to_pylist() == [1, 1, 1]
    assert all(files_log.column("readable").to_pylist())
    assert "INITIALISE_PARTITIONS" in history.column("type").to_pylist()
    # And a transaction the table has not reached is refused with the reason
    with pytest.raises(StateNotReadableError, match="has no files transaction 4"):
        table.scan(as_of=4)
