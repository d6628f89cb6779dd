"""The operation handlers of the AWS runtime on moto: ingest task creation, the ingest batcher, the bulk
import starter and driver, partition splitting, garbage collection, table metrics and warm-up queries. Bad input ends
in a typed error that is recorded (tracker or dead-letter queue) and changes nothing; a split job or a GC message
delivered twice leaves the table as one delivery does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import ecs_client, emr_serverless_client
from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.query import QueryState
from sleeper.emulator.aws_services import emr_serverless_job_runs, running_ecs_tasks
from sleeper.emulator.resources import provision_emulated_instance
from sleeper.io.filesystem import exists, list_files, resolve
from sleeper.io.sketches import sketches_path
from sleeper.lambdas import bulk_import_starter, ingest_batcher_job_creation, ingest_task_creation, query_warm, sqs
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers import bulk_import as bulk_import_driver
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.aws.operations import ingest_batcher_store
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
from tests.integration.aws_runtime.conftest import drain_event, sqs_event
from tests.integration.aws_runtime.direct_commits import compact_one_file_long_ago

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
BATCH_AT_ONCE = {
    "sleeper.table.ingest.batcher.job.min.size": "1",
    "sleeper.table.ingest.batcher.job.min.files": "1",
    "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
}
SYNC_COMMITS = {"sleeper.table.partition.splitting.commit.async": "false", "sleeper.table.gc.commit.async": "false"}

SYNC_INGEST_COMMITS = {
    "sleeper.table.ingest.job.files.commit.async": "false",
    "sleeper.table.bulk.import.job.files.commit.async": "false",
}
"""Ingest and bulk import commit in the job itself (asynchronous by default, as Sleeper's, through a committer these
tests do not run)."""


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """An instance as a deployment leaves it, with the ECS clusters, EMR Serverless application, bulk import bucket
    and batcher store the operations use; the handlers find it from the environment."""
    config = provision_emulated_instance(aws_settings(), new_instance_id())
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


def _table(instance: AwsInstance, prefix: str, **properties: str) -> Table[AwsInstance]:
    return instance.create_table(
        f"{prefix}-{uuid.uuid4().hex[:8]}", SCHEMA, properties={**SYNC_INGEST_COMMITS, **properties}
    )


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})


def _upload(instance: AwsInstance, rows: pa.Table) -> str:
    path = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(rows, path, filesystem=instance.filesystem)
    return path


def _ingest(instance: AwsInstance, table: Table[AwsInstance], rows: pa.Table) -> None:
    job = {"id": str(uuid.uuid4()), "tableName": table.name, "files": [_upload(instance, rows)]}
    instance.queue(operations.INGEST_JOB_Q).send(json.dumps(job))
    run_task(instance, wait_seconds=0)


def _rows_in(table: Table[AwsInstance]) -> int:
    table.state_store.refresh()
    return sum(r.number_of_rows for r in table.file_references())


def _drain(instance: AwsInstance, logical_name: str) -> list[str]:
    return [r["body"] for r in drain_event(instance, logical_name)["Records"]]  # type: ignore[index]


def _arn(instance: AwsInstance, logical_name: str) -> str:
    return f"arn:aws:sqs:{REGION}:123456789012:sleeper-{instance.instance_id}-{logical_name}"


# --- ingest task creation ------------------------------------------------------------------------------------------


def should_start_an_ingest_task_per_visible_job_and_none_without_jobs(instance: AwsInstance) -> None:
    # Given no ingest job waiting
    ecs = ecs_client(instance.config.settings)
    cluster = instance.properties.get(cdk.INGEST_CLUSTER.name) or ""
    before = len(running_ecs_tasks(ecs, cluster))
    # When the schedule fires, Then no task is started
    assert ingest_task_creation.handler({})["tasksLaunched"] == 0
    # Given one job on the ingest queue
    instance.queue(operations.INGEST_JOB_Q).send(json.dumps({"id": "task-job", "tableName": "t", "files": ["b/k"]}))
    # When the schedule fires
    response = ingest_task_creation.handler({})
    # Then one ECS task was started on the ingest cluster
    assert response == {"visibleJobs": 1, "tasksLaunched": 1}
    assert len(running_ecs_tasks(ecs, cluster)) == before + 1
    _drain(instance, operations.INGEST_JOB_Q)


# --- ingest batcher ------------------------------------------------------------------------------------------------


def should_batch_submitted_files_into_an_ingest_job_that_adds_their_rows(instance: AwsInstance) -> None:
    # Given a table whose batcher sends any file at once to standard ingest, and two files submitted to the batcher
    table = _table(instance, "batch", **BATCH_AT_ONCE)
    files = [_upload(instance, _rows(0, 10)), _upload(instance, _rows(10, 25))]
    request = json.dumps({"tableName": table.name, "files": files})
    # When the submitter handles the request
    response = sqs.ingest_batcher_submitter(sqs_event([("m1", request, None)]))
    # Then both files are pending in the store
    assert response == {"batchItemFailures": []}
    pending = [f for f in ingest_batcher_store(instance).pending_files_oldest_first() if f.table_id == table.table_id]
    assert sorted(f.file for f in pending) == sorted(files)
    # When job creation runs and an ingest task takes the job
    created = ingest_batcher_job_creation.handler({})
    run_task(instance, wait_seconds=0)
    # Then one job held both files, and their rows are in the table
    assert created["jobsCreated"] >= 1 and created["jobsNotSent"] == 0
    assert not [f for f in ingest_batcher_store(instance).pending_files_oldest_first() if f.table_id == table.table_id]
    assert _rows_in(table) == 25


def should_send_a_batcher_request_for_an_unknown_table_to_the_dead_letter_queue(instance: AwsInstance) -> None:
    # Given a request naming no table of the instance
    store = ingest_batcher_store(instance)
    before = store.all_files_newest_first()
    body = json.dumps({"tableName": "no-such-table", "files": [_upload(instance, _rows(0, 3))]})
    # When the submitter handles it
    response = sqs.ingest_batcher_submitter(sqs_event([("bad", body, None)]))
    # Then the message is done with (not retried), it is on the dead-letter queue, and nothing was stored
    assert response == {"batchItemFailures": []}
    dead = instance.dead_letter_queue(operations.INGEST_BATCHER_SUBMIT_Q).receive(10)
    assert [m.body for m in dead] == [body]
    assert store.all_files_newest_first() == before


# --- bulk import starter and driver --------------------------------------------------------------------------------


def _job_runs(instance: AwsInstance) -> list[tuple[str, ...]]:
    client = emr_serverless_client(instance.config.settings)
    application = instance.properties.get(cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID.name) or ""
    return [run.arguments for run in emr_serverless_job_runs(client, application)]


def _bulk_import_event(instance: AwsInstance, body: str) -> dict[str, object]:
    event = sqs_event([(str(uuid.uuid4()), body, None)])
    for record in event["Records"]:  # type: ignore[attr-defined]
        record["eventSourceARN"] = _arn(instance, operations.BULK_IMPORT_EMR_SERVERLESS_Q)
    return event


def should_reject_a_bulk_import_job_for_an_unknown_table_and_start_nothing(instance: AwsInstance) -> None:
    # Given a bulk import job naming no table
    job_id = str(uuid.uuid4())
    body = json.dumps({"id": job_id, "tableName": "no-such-table", "files": [_upload(instance, _rows(0, 3))]})
    runs_before = _job_runs(instance)
    # When the starter handles it
    response = bulk_import_starter.handler(_bulk_import_event(instance, body))
    # Then the message is done with, the job is rejected in the tracker with a reason, and no job run was started
    assert response == {"batchItemFailures": []}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert any("no-such-table" in reason for run in status.runs for reason in run.failure_reasons)
    assert _job_runs(instance) == runs_before


def should_start_a_bulk_import_job_on_emr_serverless_and_fail_its_run_when_the_job_file_is_gone(
    instance: AwsInstance,
) -> None:
    # Given a table and a bulk import job for it
    table = _table(instance, "bulk")
    job_id = str(uuid.uuid4())
    body = json.dumps({"id": job_id, "tableName": table.name, "files": [_upload(instance, _rows(0, 5))]})
    # When the starter handles it
    response = bulk_import_starter.handler(_bulk_import_event(instance, body))
    # Then the job file is in the bulk import bucket and an EMR Serverless job run has the driver's arguments
    assert response == {"batchItemFailures": []}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None
    run_id = status.latest_run.job_run_id
    assert run_id is not None
    bucket = instance.properties.get(cdk.BULK_IMPORT_BUCKET.name)
    job_file = f"{bucket}/bulk_import/{job_id}-{run_id}.json"
    assert json.loads(instance.filesystem.open_input_stream(job_file).read())["tableId"] == table.table_id
    matching = [args for args in _job_runs(instance) if job_id in args]
    assert len(matching) == 1
    assert matching[0][0] == instance.config.config_bucket and matching[0][3] == run_id
    # When the job file disappears before the driver runs
    instance.filesystem.delete_file(job_file)
    code = bulk_import_driver.main(list(matching[0]))
    # Then the driver fails the starter's run in the tracker, and the table is unchanged
    assert code == 1
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.FAILED
    assert status.latest_run.job_run_id == run_id
    assert _rows_in(table) == 0


def should_fail_a_bulk_import_run_whose_job_id_added_other_files_before_spark_starts(instance: AwsInstance) -> None:
    # Given a table holding the rows of an ingest job
    table = _table(instance, "reuse")
    job_id = str(uuid.uuid4())
    first = json.dumps({"id": job_id, "tableName": table.name, "files": [_upload(instance, _rows(0, 5))]})
    instance.queue(operations.INGEST_JOB_Q).send(first)
    run_task(instance, wait_seconds=0)
    assert _rows_in(table) == 5
    # When a bulk import job with the same id and another file is started, and its driver runs
    other = json.dumps({"id": job_id, "tableName": table.name, "files": [_upload(instance, _rows(5, 12))]})
    assert bulk_import_starter.handler(_bulk_import_event(instance, other)) == {"batchItemFailures": []}
    (arguments,) = [args for args in _job_runs(instance) if job_id in args]
    code = bulk_import_driver.main(list(arguments))
    # Then the driver fails the run naming the job id (no Spark needed), and the table keeps the first rows only
    assert code == 1
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None
    assert status.latest_run.status is IngestJobStatusType.FAILED
    assert status.latest_run.job_run_id == arguments[3]
    assert "JobIdReusedError" in status.latest_run.failure_reasons[0] and job_id in status.latest_run.failure_reasons[0]
    assert _rows_in(table) == 5


# --- partition splitting -------------------------------------------------------------------------------------------


def should_split_a_partition_over_the_threshold_once_when_the_split_job_is_delivered_twice(
    instance: AwsInstance,
) -> None:
    # Given a table with 40 rows in its root and a split threshold of 20
    table = _table(instance, "split", **{"sleeper.table.partition.splitting.threshold": "20"}, **SYNC_COMMITS)
    _ingest(instance, table, _rows(0, 40))
    # When the finder handles the table's message
    response = sqs.find_partitions_to_split(sqs_event([("f1", table.table_id, table.table_id)]))
    jobs = _drain(instance, operations.PARTITION_SPLITTING_JOB_Q)
    # Then one split job was sent for the root
    assert response == {"batchItemFailures": []}
    assert len(jobs) == 1 and json.loads(jobs[0])["partition"]["partitionId"] == "root"
    # When the split job is delivered twice
    first = sqs.split_partition(sqs_event([("s1", jobs[0], None)]))
    second = sqs.split_partition(sqs_event([("s2", jobs[0], None)]))
    # Then the root was split once into two leaves, and every row is still there
    assert first == second == {"batchItemFailures": []}
    table.state_store.refresh()
    assert len(table.partitions()) == 3
    assert len(table.leaf_partitions()) == 2
    assert table.query(regions=[Region.whole(SCHEMA)]).num_rows == 40


def should_fail_bad_split_jobs_and_leave_the_partitions_unchanged(instance: AwsInstance) -> None:
    # Given a table with rows, a malformed split job, and one naming a file the table does not track
    table = _table(instance, "badsplit", **{"sleeper.table.partition.splitting.threshold": "5"}, **SYNC_COMMITS)
    _ingest(instance, table, _rows(0, 10))
    sqs.find_partitions_to_split(sqs_event([("f1", table.table_id, table.table_id)]))
    (job,) = _drain(instance, operations.PARTITION_SPLITTING_JOB_Q)
    untracked = json.loads(job)
    untracked["filenames"] = [f"s3a://{instance.data_bucket}/{table.table_id}/data/partition_root/nope.parquet"]
    # When the splitter handles them
    response = sqs.split_partition(
        sqs_event([("malformed", '{"tableId": ', None), ("untracked", json.dumps(untracked), None)])
    )
    # Then both are reported failed (so they are retried, then dead-lettered), and the root is not split
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {"malformed", "untracked"}
    table.state_store.refresh()
    assert len(table.partitions()) == 1


# --- garbage collection --------------------------------------------------------------------------------------------


def should_delete_unreferenced_files_once_when_the_gc_message_is_delivered_twice(instance: AwsInstance) -> None:
    # Given a table whose one file was replaced by a compaction a day ago
    table = _table(instance, "gc", **SYNC_COMMITS)
    _ingest(instance, table, _rows(0, 12))
    old, new = compact_one_file_long_ago(instance, table)
    # When the collector handles the table's message twice
    first = sqs.garbage_collector(sqs_event([("g1", table.table_id, table.table_id)]))
    second = sqs.garbage_collector(sqs_event([("g2", table.table_id, table.table_id)]))
    # Then the old file and its sketches are gone from S3 and the table, the output remains, and so do the rows
    assert first == second == {"batchItemFailures": []}
    fs = instance.filesystem
    assert not exists(fs, old.removeprefix("s3a://")) and not exists(fs, sketches_path(old).removeprefix("s3a://"))
    assert exists(fs, new.removeprefix("s3a://"))
    table.state_store.refresh()
    assert [f.filename for f in table.files()] == [new]
    assert _rows_in(table) == 12


def should_drop_a_gc_message_for_an_unknown_table_and_delete_nothing(instance: AwsInstance) -> None:
    # Given the data objects of the instance
    before = {f.path for f in list_files(instance.filesystem, instance.data_bucket)}
    # When the collector gets a table id that does not exist
    response = sqs.garbage_collector(sqs_event([("g", "no-such-table-id", "no-such-table-id")]))
    # Then the message is dropped (a retry cannot help) and nothing was deleted
    assert response == {"batchItemFailures": []}
    assert before <= {f.path for f in list_files(instance.filesystem, instance.data_bucket)}


# --- table metrics and warm-up queries -----------------------------------------------------------------------------


def should_log_a_tables_metrics_in_embedded_metric_format(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table with 30 rows in two leaves, in one file each
    table = instance.create_table(
        f"metrics-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[15], properties=SYNC_INGEST_COMMITS
    )
    _ingest(instance, table, _rows(0, 30))
    # When the metrics handler handles the table's message
    capsys.readouterr()
    response = sqs.table_metrics(sqs_event([("m", table.table_id, table.table_id)]))
    # Then one EMF line names the namespace, the dimensions and Sleeper's metrics with the table's values
    assert response == {"batchItemFailures": []}
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    (record,) = [line for line in lines if line.get("tableName") == table.name]
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Sleeper"
    assert directive["Dimensions"] == [["instanceId", "tableName"]]
    assert record["instanceId"] == instance.instance_id
    # (Powertools' EMF gives each value as a list of the values recorded, here one)
    assert (record["ActiveFileCount"], record["RecordCount"]) == ([2], [30])
    assert (record["PartitionCount"], record["LeafPartitionCount"]) == ([3], [2])
    assert record["AverageActiveFilesPerPartition"] == [1.0]
    assert {m["Name"] for m in directive["Metrics"]} >= {"ActiveFileCount", "RecordCount", "LeafPartitionCount"}


def should_send_a_warm_up_query_per_online_table_that_the_query_handlers_complete(instance: AwsInstance) -> None:
    # Given the instance's online tables, one of them with rows
    table = _table(instance, "warm")
    _ingest(instance, table, _rows(0, 3))
    _drain(instance, operations.QUERY_Q)
    online = len(instance.online_tables())
    # When the warm-up schedule fires
    response = query_warm.handler({})
    # Then one query per online table was sent, and the query handlers complete them
    assert response == {"queriesSent": online}
    event = drain_event(instance, operations.QUERY_Q, max_messages=online + 10)
    bodies = [json.loads(r["body"]) for r in event["Records"]]  # type: ignore[index]
    assert len(bodies) == online
    assert sqs.query(event) == {"batchItemFailures": []}
    sqs.leaf_partition_query(drain_event(instance, operations.LEAF_PARTITION_QUERY_Q, max_messages=100))
    (ours,) = [b["queryId"] for b in bodies if b["tableName"] == table.name]
    tracked = instance.query_tracker.status(ours)
    assert tracked is not None and tracked.last_known_state is QueryState.COMPLETED
    # and the row the warm-up query found (key 0) was published nowhere
    fs, results = resolve(f"{instance.query_results_uri.rstrip('/')}/query-{ours}", instance.filesystem_options)
    assert fs.get_file_info(pafs.FileSelector(results, allow_not_found=True, recursive=True)) == []
