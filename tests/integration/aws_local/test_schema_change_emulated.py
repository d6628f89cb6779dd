"""Adding a column and truncating on the emulated AWS instance: the schema saved in the config bucket gains the
column, a direct scan and a bulk export (planner Lambda and export tasks as local processes, each reading the table
afresh) read nulls for rows written before it and values for rows after; a truncate empties the table in one
CLEAR_FILES commit, keeps its partitions, deletes its data objects, and later ingests are read."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from sleeper.api.schema_change import add_column, truncate
from sleeper.core import operations
from sleeper.core.exceptions import SchemaError
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.schema import Field, PrimitiveType, Schema, ValueType
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.io.filesystem import resolve
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("name", PrimitiveType.STRING)])


def _rows(keys: range, *, score: bool) -> pa.Table:
    columns = {"key": pa.array(keys, pa.int64()), "name": pa.array([f"n{k}" for k in keys])}
    if score:
        columns["score"] = pa.array([k / 2 for k in keys], pa.float64())
    return pa.table(columns)


def _expected() -> list[dict[str, object]]:
    old: list[dict[str, object]] = [{"key": k, "name": f"n{k}", "score": None} for k in range(100)]
    return old + [{"key": k, "name": f"n{k}", "score": k / 2} for k in range(200, 220)]


def _exported(emulated: EmulatedAwsInstance, table_id: str, export_id: str) -> pa.Table:
    instance = emulated.instance()
    bucket = instance.properties.get(cdk.BULK_EXPORT_S3_BUCKET)
    filesystem, path = resolve(f"s3a://{bucket}/{table_id}/{export_id}", instance.filesystem_options)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    files = sorted(i.path for i in infos if i.path.endswith(".parquet"))
    return pa.concat_tables([pq.read_table(f, filesystem=filesystem) for f in files])


def should_read_an_added_column_as_nulls_for_old_rows_and_truncate(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table of two leaves with rows written before a column is added
    instance = emulated.instance()
    table = instance.create_table(f"evolve-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[150])
    table.ingest(_rows(range(100), score=False), direct=True)
    # When a nullable double column is added and rows with values for it are ingested
    table = add_column(table, "score", ValueType.DOUBLE)
    table.ingest(_rows(range(200, 220), score=True), direct=True)
    # Then the schema saved in the config bucket has it
    assert emulated.instance().table(table.name).schema.value_fields[-1] == Field("score", ValueType.DOUBLE, True)
    # And a direct scan reads nulls for the old rows and the values of the new
    assert table.scan().to_arrow().to_pylist() == _expected()
    # And so does a bulk export, run by the planner Lambda and the export tasks
    sent = AwsApi(instance).export_table(table.name, wait=False, export_id=f"evolved-{table.name}")
    pump = emulated.pump(task_log_dir=str(tmp_path / "tasks"), environment_extra={IDLE_WAIT_ENV: "1"})
    try:
        pump.run_until_idle(timeout_seconds=120)
        pump.fire(operations.BULK_EXPORT_TASK_CREATION)
        codes = [code for _, code in pump.run_until_idle(timeout_seconds=300).tasks_finished]
    finally:
        pump.close()
    assert codes == [0, 0]
    assert _exported(emulated, table.table_id, sent["exportId"]).sort_by("key").to_pylist() == _expected()
    # And a key column name is refused, changing nothing
    with pytest.raises(SchemaError, match="already has a row key field 'key'"):
        add_column(table, "key", "double")
    assert emulated.instance().table(table.name).schema == table.schema

    # When the table is truncated
    leaves = [p.id for p in table.leaf_partitions()]
    files = sorted({r.filename for r in table.file_references()})
    table = truncate(table)
    # Then it has no rows, the same leaves, a CLEAR_FILES as its last transaction, and its data objects are gone
    assert table.scan().to_arrow().num_rows == 0
    assert [p.id for p in table.leaf_partitions()] == leaves
    assert table.history().column("type").to_pylist()[-1] == "CLEAR_FILES"
    filesystem, _ = resolve(files[0], instance.filesystem_options)
    for filename in files:
        assert (
            filesystem.get_file_info(resolve(filename, instance.filesystem_options)[1]).type == pafs.FileType.NotFound
        )
    # And a later ingest is read
    table.ingest(_rows(range(5), score=True), direct=True)
    assert table.scan().to_arrow().column("score").to_pylist() == [0.0, 0.5, 1.0, 1.5, 2.0]


COMPACT_THREE = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "3",
    "sleeper.table.compaction.job.send.retry.delay.seconds": "0",
}
COMPACTION_HANDLERS = tuple(
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


def should_write_the_added_column_into_a_compaction_tasks_output(emulated: EmulatedAwsInstance, tmp_path: Path) -> None:
    # Given a one-partition table of two files written before the column was added and one after
    instance = emulated.instance()
    table = instance.create_table(f"compact-{uuid.uuid4().hex[:8]}", SCHEMA, properties=COMPACT_THREE)
    table.ingest(_rows(range(50), score=False), direct=True)
    table.ingest(_rows(range(50, 100), score=False), direct=True)
    table = add_column(table, "score", ValueType.DOUBLE)
    table.ingest(_rows(range(200, 220), score=True), direct=True)
    # When job creation runs, then task creation, and the pump runs the compaction task as a local process
    pump = emulated.pump(
        handlers=COMPACTION_HANDLERS, task_log_dir=str(tmp_path / "tasks"), environment_extra={IDLE_WAIT_ENV: "0"}
    )
    try:
        assert pump.fire(operations.COMPACTION_JOB_CREATION_TRIGGER)
        pump.run_until_idle(timeout_seconds=60)
        assert pump.fire(operations.COMPACTION_TASK_CREATION)
        ran = pump.run_until_idle(timeout_seconds=180)
    finally:
        pump.close()
    assert [code for _, code in ran.tasks_finished] == [0]
    # Then the partition holds one file, which has the column: nulls for the old rows, the values of the new
    table.state_store.refresh()
    (output,) = {r.filename for r in table.file_references()}
    filesystem, path = resolve(output, instance.filesystem_options)
    assert pq.read_table(path, filesystem=filesystem).to_pylist() == _expected()
