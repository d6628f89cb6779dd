"""Bulk export with a filter on the emulated instance: ``export_table(filter=...)`` sends the export message with its
``filter`` field to the bulk export queue, the planner Lambda plans only the leaves its row key predicates reach, and
each leaf's task (the bulk export container's entry point, as a local process) writes the filtered rows: together
the rows ``Table.scan(filter=...)`` returns. A bad filter is refused before anything is sent; one sent on the queue
anyway is tracked FAILED with ``$.filter`` and starts no task."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from sleeper.core import operations
from sleeper.core.filter import FilterError
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.io.filesystem import resolve
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("age", PrimitiveType.INT, True), Field("name", PrimitiveType.STRING, True)],
)
ROWS = 4_000
SPLITS = [1_000, 2_000, 3_000]


def _input() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(ROWS)], pa.string()),
        }
    )


def _exported(emulated: EmulatedAwsInstance, table_id: str, export_id: str) -> list[pa.Table]:
    instance = emulated.instance()
    bucket = instance.properties.get(cdk.BULK_EXPORT_S3_BUCKET)
    filesystem, path = resolve(f"s3a://{bucket}/{table_id}/{export_id}", instance.filesystem_options)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    files = sorted(i.path for i in infos if i.path.endswith(".parquet"))
    return [pq.read_table(f, filesystem=filesystem) for f in files]


def _run(emulated: EmulatedAwsInstance, tmp_path: Path) -> list[int]:
    """The planner Lambda, then the task creation schedule and the tasks it starts; the tasks' exit codes."""
    pump = emulated.pump(task_log_dir=str(tmp_path / "tasks"), environment_extra={IDLE_WAIT_ENV: "1"})
    try:
        planned = pump.run_until_idle(timeout_seconds=120)
        assert planned.delivered.get(operations.BULK_EXPORT_PLANNER) == 1
        pump.fire(operations.BULK_EXPORT_TASK_CREATION)
        return [code for _, code in pump.run_until_idle(timeout_seconds=300).tasks_finished]
    finally:
        pump.close()


def should_export_a_filtered_scans_rows_through_the_queues_and_tasks(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table of four leaves on the emulated instance
    instance = emulated.instance()
    table = instance.create_table(f"export-filter-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=SPLITS)
    table.ingest(_input(), direct=True)
    row_filter = "key >= 1500 and (age < 10 or name = 'n7')"
    expected = table.scan(filter=row_filter).to_arrow()
    assert 0 < expected.num_rows < ROWS
    # When the export is sent with the filter, and the instance runs it
    api = AwsApi(instance)
    sent = api.export_table(table.name, filter=row_filter, wait=False, export_id=f"filtered-{table.name}")
    assert sent["state"] == "SENT"
    codes = _run(emulated, tmp_path)
    # Then only the three leaves the row key predicate reaches got a task, each ending well
    assert codes == [0, 0, 0]
    status = instance.query_tracker.status(sent["exportId"])
    assert status is not None and status.last_known_state is QueryState.COMPLETED
    assert status.row_count == expected.num_rows
    # And the files in the bucket hold exactly the filtered scan's rows
    parts = _exported(emulated, table.table_id, sent["exportId"])
    exported = pa.concat_tables(parts).sort_by("key")
    assert len(parts) == 3 and exported.to_pylist() == expected.select(exported.column_names).to_pylist()


def should_refuse_a_bad_filter_and_track_one_sent_anyway_failed(emulated: EmulatedAwsInstance, tmp_path: Path) -> None:
    instance = emulated.instance()
    table = instance.create_table(f"export-bad-{uuid.uuid4().hex[:8]}", SCHEMA)
    table.ingest(_input().slice(0, 10), direct=True)
    # When the API is asked for an export with a bad filter, Then it refuses and sends nothing
    with pytest.raises(FilterError, match="no column 'agee'"):
        AwsApi(instance).export_table(table.name, filter="agee > 3", wait=False, export_id=f"api-{table.name}")
    assert instance.query_tracker.status(f"api-{table.name}") is None
    # When a message with a bad filter is sent to the queue anyway
    export_id = f"queued-{table.name}"
    body = {"exportId": export_id, "tableName": table.name, "filter": "age > 'old'"}
    instance.queue(operations.BULK_EXPORT_Q).send(json.dumps(body))
    pump = emulated.pump(task_log_dir=str(tmp_path / "tasks"), environment_extra={IDLE_WAIT_ENV: "1"})
    try:
        pump.run_until_idle(timeout_seconds=120)
        pump.fire(operations.BULK_EXPORT_TASK_CREATION)
        assert pump.run_until_idle(timeout_seconds=60).tasks_finished == []
    finally:
        pump.close()
    # Then it is tracked FAILED with the filter's path and reason, and nothing is written
    status = instance.query_tracker.status(export_id)
    assert status is not None and status.last_known_state is QueryState.FAILED
    assert status.error_message is not None and "$.filter" in status.error_message
    assert "compare it with an integer" in status.error_message
    assert _exported(emulated, table.table_id, export_id) == []
