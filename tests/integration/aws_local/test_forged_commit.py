"""A forged commit on the emulated instance: an ADD_FILES sent on the state store committer's queue for one table,
naming another table's file, is refused by the committer the pump delivers it to; reinitialising the forging table
leaves the other table's file and rows intact."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import exists, filesystem_path
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.instance import AwsInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
COMMITTER_QUEUE = "StateStoreCommitterQ.fifo"


def _table_with_rows(instance: AwsInstance, rows: int) -> Table[AwsInstance]:
    table = instance.create_table(f"forge-{uuid.uuid4().hex[:8]}", SCHEMA)
    keys = list(range(rows))
    data = pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})
    ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        data.to_batches(),
        options=instance.filesystem_options,
    )
    return table


def should_refuse_a_forged_add_files_on_the_committer_queue_and_keep_the_other_table_through_reinit(
    emulated: EmulatedAwsInstance,
) -> None:
    # Given tables a (empty) and b (30 rows), and an ADD_FILES for a naming b's file sent on the committer queue
    instance = emulated.instance()
    a = instance.create_table(f"forge-{uuid.uuid4().hex[:8]}", SCHEMA)
    b = _table_with_rows(instance, 30)
    (victim,) = [f.filename for f in b.files()]
    reference = {"partitionId": "root", "numberOfRows": 1, "countApproximate": False}
    reference["onlyContainsDataForThisPartition"] = True
    transaction = {"files": [{"filename": victim, "references": [reference]}]}
    body = json.dumps({"tableId": a.table_id, "transactionType": "ADD_FILES", "transaction": transaction})
    instance.queue(COMMITTER_QUEUE).send(body, group_id=a.table_id, dedup_id=str(uuid.uuid4()))
    # When the pump delivers it to the committer, and table a is reinitialised through the admin client
    delivered = emulated.pump().run_until_idle(timeout_seconds=60)
    AwsApi(emulated.instance()).reinitialise_table(a.name, None)
    # Then the committer handled it without failing (rejected, not retried), table a tracks nothing, and b's file
    # and rows are intact
    assert delivered.delivered.get("statestore_committer") == 1 and delivered.failed == {}
    fresh = emulated.instance()
    assert fresh.table(a.name).files() == []
    assert exists(fresh.filesystem, filesystem_path(victim))
    assert fresh.table(b.name).query().num_rows == 30
    assert [f.filename for f in fresh.table(b.name).files()] == [victim]
