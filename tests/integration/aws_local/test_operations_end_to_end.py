"""The instance's operations end to end through the emulated instance, driven as AWS drives them: files submitted to
the ingest batcher become an ingest job that an ECS task (a local process) runs; the partition splitting schedule
splits a partition over its threshold; the garbage collection schedule deletes the files a compaction left
unreferenced. The pump delivers every message, schedule and task in between."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core import operations
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.io.filesystem import exists
from sleeper.io.sketches import sketches_path
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.direct_commits import compact_one_file_long_ago
from tests.integration.aws_runtime.sleeper_client import CompatClient

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)


def _pump(emulated: EmulatedAwsInstance, tmp_path: Path) -> Pump:
    """A pump whose ingest tasks stop a second after their queue is drained."""
    return emulated.pump(task_log_dir=str(tmp_path), environment_extra={IDLE_WAIT_ENV: "1"})


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})


def _upload(instance: AwsInstance, rows: pa.Table) -> str:
    path = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    pq.write_table(rows, path, filesystem=instance.filesystem)
    return path


def _all_rows(emulated: EmulatedAwsInstance, table_name: str) -> list[dict[str, object]]:
    return emulated.instance().table(table_name).query(regions=[Region.whole(SCHEMA)]).sort_by("key").to_pylist()


def _ingest(emulated: EmulatedAwsInstance, pump: Pump, table_name: str, *jobs: pa.Table) -> None:
    """Sends an ingest job per table of rows and runs the ingest tasks the task creation schedule starts for them."""
    instance = emulated.instance()
    for rows in jobs:
        job = {"id": str(uuid.uuid4()), "tableName": table_name, "files": [_upload(instance, rows)]}
        instance.queue(operations.INGEST_JOB_Q).send(json.dumps(job))
    assert pump.fire(operations.INGEST_TASK_CREATION)
    done = pump.run_until_idle(timeout_seconds=180)
    assert done.tasks_finished and all(code == 0 for _, code in done.tasks_finished)


def should_ingest_files_submitted_to_the_ingest_batcher(emulated: EmulatedAwsInstance, tmp_path: Path) -> None:
    # Given a table whose batcher sends files to standard ingest at once, and two files a client in Sleeper's Python
    # client's formats submitted to the batcher
    instance = emulated.instance()
    properties = {
        "sleeper.table.ingest.batcher.job.min.size": "1",
        "sleeper.table.ingest.batcher.job.min.files": "1",
        "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
    }
    table = instance.create_table(f"batcher-{uuid.uuid4().hex[:8]}", SCHEMA, properties=properties)
    files = [_upload(instance, _rows(0, 10)), _upload(instance, _rows(10, 25))]
    pump = _pump(emulated, tmp_path)
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    client.submit_to_ingest_batcher(table.name, files)
    submitted = pump.run_until_idle(timeout_seconds=60)
    # When the batcher's job creation schedule fires, then the ingest task creation schedule, and the pump runs
    assert pump.fire(operations.INGEST_BATCHER_JOB_CREATION)
    assert pump.fire(operations.INGEST_TASK_CREATION)
    ingested = pump.run_until_idle(timeout_seconds=180)
    # Then the submitter took the request, an ingest task ran, and the files' rows are in the table
    assert submitted.delivered.get(operations.INGEST_BATCHER_SUBMITTER) == 1 and submitted.failed == {}
    assert [code for _, code in ingested.tasks_finished] == [0]
    assert _all_rows(emulated, table.name) == _rows(0, 25).to_pylist()


def should_split_a_partition_over_its_threshold_when_the_splitting_schedule_fires(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table with a split threshold of 20 holding 40 rows in its root
    instance = emulated.instance()
    properties = {"sleeper.table.partition.splitting.threshold": "20"}
    table = instance.create_table(f"split-{uuid.uuid4().hex[:8]}", SCHEMA, properties=properties)
    pump = _pump(emulated, tmp_path)
    _ingest(emulated, pump, table.name, _rows(0, 40))
    # When the partition splitting schedule fires and the pump runs until idle
    assert pump.fire(operations.PARTITION_SPLITTING_TRIGGER)
    split = pump.run_until_idle(timeout_seconds=120)
    # Then the finder sent a split job, the splitter split the root in two, and a query returns the same rows
    assert split.delivered.get(operations.SPLIT_PARTITION) == 1 and split.failed == {}
    store = emulated.instance().table(table.name).state_store
    assert len(store.partitions()) == 3 and len(store.leaf_partitions()) == 2
    assert _all_rows(emulated, table.name) == _rows(0, 40).to_pylist()


def should_delete_files_left_unreferenced_when_the_gc_schedule_fires(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table with two files from two ingest jobs, one of them replaced a day ago by a compaction's output
    instance = emulated.instance()
    table = instance.create_table(f"gc-{uuid.uuid4().hex[:8]}", SCHEMA)
    pump = _pump(emulated, tmp_path)
    _ingest(emulated, pump, table.name, _rows(0, 12), _rows(12, 30))
    old, new = compact_one_file_long_ago(instance, instance.table(table.name))
    store = emulated.instance().table(table.name).state_store
    referenced = [r.filename for r in store.file_references()]
    # When the garbage collection schedule fires and the pump runs until idle
    assert pump.fire(operations.GARBAGE_COLLECTOR_TRIGGER)
    collected = pump.run_until_idle(timeout_seconds=120)
    # Then the unreferenced file and its sketches are gone from S3 and the table, the referenced files remain,
    # and a query returns every row
    assert collected.delivered.get(operations.GARBAGE_COLLECTOR, 0) >= 1 and collected.failed == {}
    fs = instance.filesystem
    assert not exists(fs, old.removeprefix("s3a://"))
    assert not exists(fs, sketches_path(old).removeprefix("s3a://"))
    assert new in referenced and len(referenced) == 2
    assert all(exists(fs, name.removeprefix("s3a://")) for name in referenced)
    store = emulated.instance().table(table.name).state_store
    assert sorted(f.filename for f in store.files()) == sorted(referenced)
    assert _all_rows(emulated, table.name) == _rows(0, 30).to_pylist()
