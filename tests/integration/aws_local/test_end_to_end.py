"""End to end through the emulated instance, as a user without an AWS account would drive it: a client written to
Sleeper's Python client formats (plain boto3 on the endpoint) ingests through ``for_ingest/`` and the ingest queue and
queries through the query queue; the pump runs the ingest task that ECS was asked to start as a local process, and
delivers the query and leaf query batches to their handlers; the results are read from ``query-<id>/`` in the
results bucket."""

from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import emr_serverless_client
from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.emulator.aws_services import emr_serverless_job_runs
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
from tests.integration.aws_runtime.sleeper_client import CompatClient

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
ROWS = [{"key": k, "value": f"v{k}"} for k in range(30)]


def _start_ingest_task(emulated: EmulatedAwsInstance) -> None:
    """What AWS does next for a job on the ingest queue: the task creator's schedule fires and it calls RunTask."""
    assert emulated.pump().fire(operations.INGEST_TASK_CREATION)


def should_ingest_through_the_ingest_queue_and_query_through_the_query_queue(
    emulated: EmulatedAwsInstance, tmp_path: object
) -> None:
    # Given a table of two leaves and a client that knows only the instance id and the endpoint
    table = emulated.instance().create_table(f"e2e-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[15])
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    pump = emulated.pump(task_log_dir=str(tmp_path), environment_extra={IDLE_WAIT_ENV: "1"})
    # When it uploads rows to for_ingest/ and sends an ingest job, and an ingest task is started
    job_id = client.write_single_batch(table.name, ROWS)
    _start_ingest_task(emulated)
    ingested = pump.run_until_idle(timeout_seconds=120)
    # Then the ingest task ran as a local process and the job finished
    assert [code for _, code in ingested.tasks_finished] == [0]
    status = emulated.instance().ingest_job_tracker.job(job_id)
    assert status is not None
    assert status.status.name == "FINISHED"
    # When it sends a range query covering both leaves and the pump delivers the query and leaf batches
    query_id = str(uuid.uuid4())
    client.send_range_query(table.name, [{"key": (0, 1000)}], query_id)
    rows = client.wait_for_results(query_id, lambda: pump.run_until_idle(timeout_seconds=60))
    # Then the rows read from query-<id>/ in the results bucket are the rows ingested
    assert client.query_state(query_id) == "COMPLETED"
    assert sorted(rows, key=lambda r: r["key"]) == ROWS


def should_snapshot_a_table_when_the_snapshot_schedule_fires(emulated: EmulatedAwsInstance) -> None:
    # Given a new table, and a pump of the snapshot creation rule and the handler of its queue
    instance = emulated.instance()
    table = instance.create_table(f"snap-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[15])
    online = len(instance.online_tables())
    handlers = (
        operations.handler(operations.SNAPSHOT_CREATION_TRIGGER),
        operations.handler(operations.SNAPSHOT_CREATION),
    )
    pump = emulated.pump(handlers=handlers)
    # When the rule's period has passed and the pump runs until idle
    fired = pump.run_once(now=time.time() + 3600)
    delivered = pump.run_until_idle(timeout_seconds=60)
    # Then the trigger sent one message per online table, each delivered to the snapshot handler, which snapshotted
    # the table's partitions log
    assert fired.fired == [operations.SNAPSHOT_CREATION_TRIGGER]
    total = fired.delivered.get(operations.SNAPSHOT_CREATION, 0) + delivered.delivered.get(
        operations.SNAPSHOT_CREATION, 0
    )
    assert total == online
    assert delivered.failed == {}
    store = instance.table_by_id(table.table_id).state_store
    assert store.snapshot_store is not None
    assert store.snapshot_store.metadata.latest_snapshot(LogType.PARTITIONS) is not None


def should_start_an_emr_serverless_job_run_for_a_bulk_import_job_the_client_sends(
    emulated: EmulatedAwsInstance,
) -> None:
    # Given a table, a Parquet file in the data bucket, and a pump that runs no job run's driver (Spark here has no
    # S3 connector to read the input from the emulator)
    instance = emulated.instance()
    table = instance.create_table(f"bulk-{uuid.uuid4().hex[:8]}", SCHEMA)
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    source = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), source, filesystem=instance.filesystem)
    containers = [c for c in operations.CONTAINERS if c.name != operations.BULK_IMPORT_IMAGE]
    pump = emulated.pump(containers=containers)
    # When the client sends a bulk import job to the EMR Serverless queue, as Sleeper's Python client does
    job_id = client.bulk_import_parquet_files_from_s3(table.name, [source])
    started = pump.run_until_idle(timeout_seconds=60)
    # Then the starter took it, the tracker records it accepted, and one job run of the job's id was started on the
    # instance's application
    assert started.delivered.get(operations.BULK_IMPORT_STARTER) == 1 and started.failed == {}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status.name in ("ACCEPTED", "IN_PROGRESS")
    application = instance.properties.get("sleeper.bulk.import.emr.serverless.application.id")
    assert application
    runs = emr_serverless_job_runs(emr_serverless_client(emulated.settings), application)
    assert [job_id in " ".join(run.arguments) for run in runs].count(True) == 1
