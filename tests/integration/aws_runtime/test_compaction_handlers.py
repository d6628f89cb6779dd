"""The compaction handlers of the AWS runtime on moto: job creation, the dispatcher of pending batches, the
compaction task, the commit batcher, task creation over ECS and the transaction log follower, each invoked with the
event AWS sends it. Bad input is recorded (dead-letter queue, reported failure) and changes nothing; a commit or a
pending batch delivered twice leaves the table and the tracker as one delivery does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from sleeper.adapters.aws.clients import ecs_client
from sleeper.api.table import Table
from sleeper.compaction.creation import compaction_output_file
from sleeper.compaction.task import TaskSettings
from sleeper.core import operations
from sleeper.core.jobs.compaction import CompactionJob, CompactionJobBatch, CompactionJobDispatchRequest
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobStatusType,
)
from sleeper.core.trackers.runs import JobOutcome
from sleeper.emulator.aws_services import running_ecs_tasks
from sleeper.emulator.resources import provision_emulated_instance
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import exists, write_bytes
from sleeper.lambdas import compaction_commit_batcher, compaction_task_creation, sqs, transaction_follower
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV, idle_wait_seconds
from sleeper.runtime.aws.containers.compaction import run_task, task_settings
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
from tests.integration.aws_runtime.conftest import create_compaction_jobs_through_handlers, drain_event, sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
COMPACT_THREE = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "3",
}
QUICK_TASK = TaskSettings(wait_seconds=0, max_idle_seconds=0, delay_before_retry_seconds=0)


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """An instance as a deployment leaves it, with the compaction cluster; the handlers find it from the
    environment."""
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


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})


def _table_of_three_files(instance: AwsInstance, **properties: str) -> Table[AwsInstance]:
    """A one-partition table holding keys 0-29 in three files of 10 rows."""
    table = instance.create_table(f"compact-{uuid.uuid4().hex[:8]}", SCHEMA, properties={**COMPACT_THREE, **properties})
    for start in (0, 10, 20):
        ingest_batches(
            table.schema,
            table.properties,
            table.state_store,
            table.data_prefix,
            _rows(start, start + 10).to_batches(),
            options=instance.filesystem_options,
        )
    return table


def _files(table: Table[AwsInstance]) -> list[FileReference]:
    table.state_store.refresh()
    return table.file_references()


def _drain(instance: AwsInstance, logical_name: str) -> list[str]:
    return [r["body"] for r in drain_event(instance, logical_name)["Records"]]  # type: ignore[index]


def _create_jobs(instance: AwsInstance, table: Table[AwsInstance]) -> list[CompactionJob]:
    """The jobs creation sends for the table, through the committer and the dispatcher when it makes pending batches."""
    return [CompactionJob.from_json(body) for body in create_compaction_jobs_through_handlers(instance, table.table_id)]


def _updates_of(instance: AwsInstance, job_id: str) -> list[object]:
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None
    return [u for run in status.runs for u in run.updates]


# --- job creation ----------------------------------------------------------------------------------------------------


def should_create_a_pending_batch_the_dispatcher_sends_once_the_committer_assigned_its_files(
    instance: AwsInstance,
) -> None:
    # Given a table of three small files that assigns input files through the committer (the default)
    table = _table_of_three_files(instance)
    # When the job creation handler gets the table's id
    event = sqs_event([(str(uuid.uuid4()), table.table_id, table.table_id)])
    assert sqs.compaction_job_creation(event) == {"batchItemFailures": []}
    # Then nothing is sent or assigned yet: the batch file is in the data bucket, its request on the pending queue and
    # the assignment on the committer's queue
    assert _drain(instance, operations.COMPACTION_JOB_Q) == []
    assert {r.job_id for r in _files(table)} == {None}
    (pending,) = _drain(instance, operations.PENDING_COMPACTION_JOB_BATCH_Q)
    request = CompactionJobDispatchRequest.from_json(pending)
    (job,) = CompactionJobBatch.from_json(
        instance.filesystem.open_input_stream(f"{instance.data_bucket}/{request.batch_key}").read()
    ).jobs
    (commit,) = _drain(instance, operations.STATE_STORE_COMMITTER_Q)
    assert json.loads(commit)["transactionType"] == "ASSIGN_JOB_IDS"
    # When the committer applies the assignment and the dispatcher gets the request
    assert sqs.statestore_committer(sqs_event([("c1", commit, table.table_id)])) == {"batchItemFailures": []}
    assert sqs.compaction_job_dispatcher(sqs_event([("p1", pending, None)])) == {"batchItemFailures": []}
    # Then the job is sent once, its files assigned to it, and the tracker records it created
    assert _drain(instance, operations.COMPACTION_JOB_Q) == [job.to_json()]
    assert {r.job_id for r in _files(table)} == {job.job_id}
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.CREATED
    # And a second run creates nothing more (the files are assigned)
    assert _create_jobs(instance, table) == []


def should_create_a_job_of_the_files_assigned_to_it_and_track_it(instance: AwsInstance) -> None:
    # Given a table of three small files and a strategy compacting three at a time, assigning input files itself
    table = _table_of_three_files(instance, **{"sleeper.table.compaction.job.id.assignment.commit.async": "false"})
    # When the job creation handler gets the table's id
    event = sqs_event([(str(uuid.uuid4()), table.table_id, table.table_id)])
    assert sqs.compaction_job_creation(event) == {"batchItemFailures": []}
    jobs = [CompactionJob.from_json(body) for body in _drain(instance, operations.COMPACTION_JOB_Q)]
    # Then one job of the three files was sent at once, each file assigned to it, and the tracker records it created
    assert _drain(instance, operations.PENDING_COMPACTION_JOB_BATCH_Q) == []
    assert len(jobs) == 1
    assert sorted(jobs[0].input_files) == sorted(r.filename for r in _files(table))
    assert {r.job_id for r in _files(table)} == {jobs[0].job_id}
    status = instance.compaction_job_tracker.job(jobs[0].job_id)
    assert status is not None
    assert (status.status, status.input_files_count) == (CompactionJobStatusType.CREATED, 3)
    # And a second run creates nothing more (the files are assigned)
    assert _create_jobs(instance, table) == []


def should_drop_a_job_creation_message_of_a_table_that_does_not_exist(instance: AwsInstance) -> None:
    # Given a job creation message naming no table
    event = sqs_event([("m1", "no-such-table-id", "no-such-table-id")])
    # When the handler gets it
    response = sqs.compaction_job_creation(event)
    # Then it is dropped (deleted, not retried) and no job is sent
    assert response == {"batchItemFailures": []}
    assert _drain(instance, operations.COMPACTION_JOB_Q) == []


# --- the task and the commit batcher ---------------------------------------------------------------------------------


def should_compact_then_commit_through_the_batcher_once_however_often_the_commit_arrives(instance: AwsInstance) -> None:
    # Given a created job of three files (commits are asynchronous and batched by default)
    table = _table_of_three_files(instance)
    expected = table.query().sort_by("key")
    (job,) = _create_jobs(instance, table)
    instance.queue(operations.COMPACTION_JOB_Q).send(job.to_json())
    # When the compaction task runs until idle
    summary = run_task(instance, settings=QUICK_TASK)
    # Then the job ran and its commit request waits on the commit queue, the table unchanged
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert len(_files(table)) == 3
    commit_event = drain_event(instance, operations.COMPACTION_COMMIT_Q)
    assert len(commit_event["Records"]) == 1  # type: ignore[arg-type]
    # When the commit batcher gets it, and then the same message again
    first = compaction_commit_batcher.handler(commit_event)
    second = compaction_commit_batcher.handler(commit_event)
    # Then both succeed, the partition holds the one output file with the same rows
    assert first == second == {"batchItemFailures": []}
    assert [r.filename for r in _files(table)] == [job.output_file]
    assert table.query().sort_by("key").equals(expected)
    # And the tracker records the job committed once and never failed
    updates = _updates_of(instance, job.job_id)
    assert sum(isinstance(u, CompactionJobCommitted) for u in updates) == 1
    assert not any(isinstance(u, CompactionJobFailed) for u in updates)
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    # And the task is recorded finished with the rows it read
    task = instance.compaction_task_tracker.task(summary.task_id)
    assert task is not None and task.finish_time is not None


def should_report_an_unreadable_commit_message_failed_and_commit_the_rest(instance: AwsInstance) -> None:
    # Given a job run whose commit request is valid, batched with a message that is not a commit request
    table = _table_of_three_files(instance)
    (job,) = _create_jobs(instance, table)
    instance.queue(operations.COMPACTION_JOB_Q).send(job.to_json())
    run_task(instance, settings=QUICK_TASK)
    (good,) = _drain(instance, operations.COMPACTION_COMMIT_Q)
    event = sqs_event([("bad", '{"tableId": 7}', None), ("good", good, None)])
    # When the batcher gets both
    response = compaction_commit_batcher.handler(event)
    # Then only the unreadable one is reported failed (to be dead-lettered) and the other is committed
    assert response == {"batchItemFailures": [{"itemIdentifier": "bad"}]}
    assert [r.filename for r in _files(table)] == [job.output_file]


def should_refuse_a_commit_whose_inputs_moved_on_deleting_its_output(instance: AwsInstance) -> None:
    # Given a finished job whose input files were then removed from the table
    table = _table_of_three_files(instance)
    (job,) = _create_jobs(instance, table)
    instance.queue(operations.COMPACTION_JOB_Q).send(job.to_json())
    run_task(instance, settings=QUICK_TASK)
    commit_event = drain_event(instance, operations.COMPACTION_COMMIT_Q)
    table.state_store.clear_files()
    # When the batcher gets the job's commit
    response = compaction_commit_batcher.handler(commit_event)
    # Then the message is done with, the table stays empty, the job's output is deleted and the job is failed
    assert response == {"batchItemFailures": []}
    assert _files(table) == []
    assert not exists(instance.filesystem, job.output_file.removeprefix("s3a://"))
    assert any(isinstance(u, CompactionJobFailed) for u in _updates_of(instance, job.job_id))


# --- the dispatcher --------------------------------------------------------------------------------------------------


def _pending_batch(
    instance: AwsInstance, table: Table[AwsInstance], job_id: str | None = None
) -> tuple[CompactionJob, str]:
    """A Sleeper-format batch of one job of every file of the table, written to the data bucket, and its request."""
    files = _files(table)
    job_id = job_id or str(uuid.uuid4())
    job = CompactionJob(
        table_id=table.table_id,
        job_id=job_id,
        input_files=tuple(r.filename for r in files),
        output_file=compaction_output_file(table.data_prefix, "root", job_id),
        partition_id="root",
    )
    key = f"{table.table_id}/compactions/{uuid.uuid4()}.json"
    write_bytes(instance.filesystem, f"{instance.data_bucket}/{key}", CompactionJobBatch.of([job]).to_json().encode())
    request = CompactionJobDispatchRequest(table_id=table.table_id, batch_key=key, create_time=datetime.now(tz=UTC))
    return job, request.to_json()


def _assign(table: Table[AwsInstance], job: CompactionJob) -> None:
    request = AssignJobIdRequest(job_id=job.job_id, partition_id=job.partition_id, filenames=job.input_files)
    table.state_store.commit(AssignJobIdsTransaction(requests=(request,)))


def should_send_a_pending_batch_once_its_files_are_assigned_and_only_once(instance: AwsInstance) -> None:
    # Given a pending batch whose files are not assigned yet (retried at once)
    table = _table_of_three_files(instance, **{"sleeper.table.compaction.job.send.retry.delay.seconds": "0"})
    job, request = _pending_batch(instance, table)
    # When the dispatcher gets it
    first = sqs.compaction_job_dispatcher(sqs_event([("p1", request, None)]))
    # Then nothing is sent and the request is back on the pending queue
    assert first == {"batchItemFailures": []}
    assert _drain(instance, operations.COMPACTION_JOB_Q) == []
    assert _drain(instance, operations.PENDING_COMPACTION_JOB_BATCH_Q) == [request]
    # When the files are assigned and the dispatcher gets the request again, and once more
    _assign(table, job)
    second = sqs.compaction_job_dispatcher(sqs_event([("p2", request, None)]))
    third = sqs.compaction_job_dispatcher(sqs_event([("p3", request, None)]))
    # Then the job was sent once, tracked created, and the batch file deleted; nothing went back or to dead letters
    assert second == third == {"batchItemFailures": []}
    assert _drain(instance, operations.COMPACTION_JOB_Q) == [job.to_json()]
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.create_time is not None
    assert _drain(instance, operations.PENDING_COMPACTION_JOB_BATCH_Q) == []
    key = json.loads(request)["batchKey"]
    assert not exists(instance.filesystem, f"{instance.data_bucket}/{key}")


def should_dead_letter_a_pending_batch_whose_files_belong_to_another_job(instance: AwsInstance) -> None:
    # Given a pending batch whose files are assigned to a different job
    table = _table_of_three_files(instance)
    job, request = _pending_batch(instance, table)
    other, _ = _pending_batch(instance, table, job_id="someone-else")
    _assign(table, other)
    dead_letters = instance.dead_letter_queue(operations.PENDING_COMPACTION_JOB_BATCH_Q)
    # When the dispatcher gets it
    response = sqs.compaction_job_dispatcher(sqs_event([("p1", request, None)]))
    # Then it goes to the dead-letter queue, nothing is sent and the files stay with the other job
    assert response == {"batchItemFailures": []}
    assert [m.body for m in dead_letters.receive(10)] == [request]
    assert _drain(instance, operations.COMPACTION_JOB_Q) == []
    assert {r.job_id for r in _files(table)} == {"someone-else"}
    assert instance.compaction_job_tracker.job(job.job_id) is None


def should_dead_letter_an_unreadable_pending_batch_request_and_one_past_its_send_timeout(
    instance: AwsInstance,
) -> None:
    # Given a request that is not a pending batch request, and one whose files were never assigned, made long ago
    table = _table_of_three_files(instance)
    _, fresh = _pending_batch(instance, table)
    stale = json.dumps({**json.loads(fresh), "createTime": 1_000})
    unreadable = '{"tableId": "x", "batchKey": "../../etc/passwd", "createTime": 1}'
    dead_letters = instance.dead_letter_queue(operations.PENDING_COMPACTION_JOB_BATCH_Q)
    # When the dispatcher gets both
    response = sqs.compaction_job_dispatcher(sqs_event([("u", unreadable, None), ("s", stale, None)]))
    # Then both go to the dead-letter queue at once, nothing is sent or requeued, and the files stay unassigned
    assert response == {"batchItemFailures": []}
    assert sorted(m.body for m in dead_letters.receive(10)) == sorted([unreadable, stale])
    assert _drain(instance, operations.COMPACTION_JOB_Q) == []
    assert _drain(instance, operations.PENDING_COMPACTION_JOB_BATCH_Q) == []
    assert {r.job_id for r in _files(table)} == {None}


# --- task creation ---------------------------------------------------------------------------------------------------


def should_start_a_compaction_task_per_visible_job(instance: AwsInstance) -> None:
    # Given two compaction jobs waiting
    ecs = ecs_client(instance.config.settings)
    cluster = instance.properties.get(cdk.COMPACTION_CLUSTER.name) or ""
    before = len(running_ecs_tasks(ecs, cluster))
    queue = instance.queue(operations.COMPACTION_JOB_Q)
    queue.send_batch(["{}", "{}"])
    # When the scheduled task creation runs
    response = compaction_task_creation.handler({"detail-type": "Scheduled Event"})
    # Then it saw both and started a task for each on the compaction cluster
    assert response == {"visibleJobs": 2, "tasksLaunched": 2}
    assert len(running_ecs_tasks(ecs, cluster)) == before + 2
    _drain(instance, operations.COMPACTION_JOB_Q)


def should_cap_idle_waits_from_the_environment() -> None:
    # Given the instance defaults of a compaction task
    defaults = TaskSettings()
    # When the idle wait cap is read from environments with and without it
    unset = idle_wait_seconds({})
    capped = idle_wait_seconds({IDLE_WAIT_ENV: "1.5"})
    # Then only a set value caps, and a bad value is refused naming the variable
    assert (unset, capped) == (None, 1.5)
    assert defaults.max_idle_seconds > 1.5
    with pytest.raises(ValueError, match=IDLE_WAIT_ENV):
        idle_wait_seconds({IDLE_WAIT_ENV: "soon"})


def should_apply_the_idle_cap_to_the_instance_task_settings(instance: AwsInstance) -> None:
    # Given the instance's compaction task properties (waits of 20 s, idle for 60 s)
    # When the settings are read with a cap of 1 s
    settings = task_settings(instance, {IDLE_WAIT_ENV: "1"})
    # Then every idle wait is at most 1 s and the rest are the instance's
    assert (settings.wait_seconds, settings.max_idle_seconds, settings.delay_before_retry_seconds) == (1, 1, 1)
    assert (
        settings.max_consecutive_failures
        == TaskSettings.from_instance_properties(instance.properties).max_consecutive_failures
    )


# --- the transaction follower ----------------------------------------------------------------------------------------


def _stream_record(sequence: str, table_id: str, number: int, kind: str, body: str) -> dict[str, object]:
    """One record of the files log's DynamoDB stream, as Lambda delivers it."""
    image = {
        "TABLE_ID": {"S": table_id},
        "TRANSACTION_NUMBER": {"N": str(number)},
        "UPDATE_TIME": {"N": str(int(datetime.now(tz=UTC).timestamp() * 1000))},
        "TYPE": {"S": kind},
        "BODY": {"S": body},
    }
    return {
        "eventID": sequence,
        "eventName": "INSERT",
        "eventSource": "aws:dynamodb",
        "dynamodb": {"Keys": {}, "NewImage": image, "SequenceNumber": sequence, "StreamViewType": "NEW_IMAGE"},
    }


def _finished_but_uncommitted_job(
    instance: AwsInstance, table: Table[AwsInstance]
) -> tuple[str, ReplaceFileReferencesTransaction]:
    """A job run tracked finished whose commit (as the state store committer would apply it) is returned."""
    job_id, run_id, now = str(uuid.uuid4()), str(uuid.uuid4()), datetime.now(tz=UTC)
    tracker = instance.compaction_job_tracker
    tracker.record(
        CompactionJobCreated(
            job_id=job_id, table_id=table.table_id, update_time=now, partition_id="root", input_files_count=3
        )
    )
    tracker.record(CompactionJobStarted(job_id=job_id, table_id=table.table_id, update_time=now, job_run_id=run_id))
    tracker.record(CompactionJobFinished(job_id=job_id, table_id=table.table_id, update_time=now, job_run_id=run_id))
    output = FileReference(
        filename=f"{table.data_prefix}/data/partition_root/{job_id}.parquet", partition_id="root", number_of_rows=30
    )
    inputs = tuple(r.filename for r in _files(table))
    request = ReplaceFileReferencesRequest(job_id=job_id, job_run_id=run_id, input_files=inputs, new_reference=output)
    return job_id, ReplaceFileReferencesTransaction(jobs=(request,))


def should_record_a_compaction_committed_when_its_transaction_lands_once_per_job(instance: AwsInstance) -> None:
    # Given a finished job run whose REPLACE_FILE_REFERENCES transaction the committer applied
    table = _table_of_three_files(instance)
    job_id, transaction = _finished_but_uncommitted_job(instance, table)
    job = transaction.jobs[0]
    _assign(
        table,
        CompactionJob(
            table_id=table.table_id,
            job_id=job_id,
            input_files=job.input_files,
            output_file=job.new_reference.filename,
            partition_id="root",
        ),
    )
    number = table.state_store.commit(transaction).transaction_number
    body = table.state_store.serde.to_json(transaction)
    event = {
        "Records": [
            {"eventName": "REMOVE", "dynamodb": {"SequenceNumber": "100"}},
            _stream_record("101", table.table_id, number, "REPLACE_FILE_REFERENCES", body),
            _stream_record("102", table.table_id, number, "ADD_FILES", '{"files": []}'),
        ]
    }
    assert instance.compaction_job_tracker.job(job_id).status is CompactionJobStatusType.UNCOMMITTED  # type: ignore[union-attr]
    # When the follower gets the stream records, and the same records again
    first = transaction_follower.handler(event)
    second = transaction_follower.handler(event)
    # Then both succeed and the job is recorded committed once
    assert first == second == {"batchItemFailures": []}
    assert sum(isinstance(u, CompactionJobCommitted) for u in _updates_of(instance, job_id)) == 1
    assert instance.compaction_job_tracker.job(job_id).status is CompactionJobStatusType.FINISHED  # type: ignore[union-attr]


def should_retry_the_stream_from_a_record_whose_body_cannot_be_read(instance: AwsInstance) -> None:
    # Given a record whose large body is missing from S3, followed by a record of a finished job's commit
    table = _table_of_three_files(instance)
    job_id, transaction = _finished_but_uncommitted_job(instance, table)
    missing = _stream_record("201", table.table_id, 5, "REPLACE_FILE_REFERENCES", "")
    image = missing["dynamodb"]["NewImage"]  # type: ignore[index]
    del image["BODY"]
    image["BODY_S3_KEY"] = {"S": f"{table.table_id}/statestore/transactions/missing.json"}
    later = _stream_record(
        "202", table.table_id, 6, "REPLACE_FILE_REFERENCES", table.state_store.serde.to_json(transaction)
    )
    # When the follower gets them
    response = transaction_follower.handler({"Records": [missing, later]})
    # Then the stream is retried from the unreadable record and the later one is not followed yet
    assert response == {"batchItemFailures": [{"itemIdentifier": "201"}]}
    assert not any(isinstance(u, CompactionJobCommitted) for u in _updates_of(instance, job_id))


def should_skip_stream_records_that_are_not_log_entries_or_of_deleted_tables(instance: AwsInstance) -> None:
    # Given a record without a type and a record of a table that does not exist
    broken = _stream_record("301", "some-table", 1, "REPLACE_FILE_REFERENCES", "{}")
    del broken["dynamodb"]["NewImage"]["TYPE"]  # type: ignore[index]
    gone = _stream_record("302", "no-such-table", 1, "REPLACE_FILE_REFERENCES", '{"jobs": []}')
    # When the follower gets them
    response = transaction_follower.handler({"Records": [broken, gone]})
    # Then neither blocks the stream
    assert response == {"batchItemFailures": []}
