"""Bad input and redelivery on the AWS runtime: malformed JSON, an unknown table, wrong key types
and a missing file each end in their tracker with a reason and change nothing else; an ingest job, a query and a
state store commit request delivered twice leave the table and the results as one delivery does."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.operations import INGEST_JOB_Q, LEAF_PARTITION_QUERY_Q, QUERY_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.query import QueryState
from sleeper.core.trackers.runs import JobOutcome
from sleeper.io.filesystem import list_files
from sleeper.lambdas import sqs
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.conftest import drain_event, sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)

SYNC_INGEST_COMMITS = {
    "sleeper.table.ingest.job.files.commit.async": "false",
    "sleeper.table.bulk.import.job.files.commit.async": "false",
}
"""Ingest and bulk import commit in the job itself (asynchronous by default, as Sleeper's, through a committer these
tests do not run)."""


def _table(instance: AwsInstance) -> Table[AwsInstance]:
    return instance.create_table(
        f"bad-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[50], properties=SYNC_INGEST_COMMITS
    )


def _upload(instance: AwsInstance, table: pa.Table) -> str:
    path = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(table, path, filesystem=instance.filesystem)
    return path


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys])})


def _data_files(instance: AwsInstance, table: Table[AwsInstance]) -> list[str]:
    return [f.path for f in list_files(instance.filesystem, f"{instance.data_bucket}/{table.table_id}")]


def _ingest(instance: AwsInstance, *bodies: str) -> list[JobOutcome]:
    queue = instance.queue(INGEST_JOB_Q)
    for body in bodies:
        queue.send(body)
    return [o.outcome for o in run_task(instance, wait_seconds=0).outcomes]


def _rows_in(table: Table[AwsInstance]) -> int:
    return sum(r.number_of_rows for r in table.file_references())


def should_reject_bad_ingest_jobs_with_reasons_and_change_nothing(instance: AwsInstance) -> None:
    # Given a table, and four bad jobs: malformed JSON, an unknown table, a missing file, a file whose key is a string
    table = _table(instance)
    wrong_type = _upload(instance, pa.table({"key": ["a", "b"], "value": ["x", "y"]}))
    ids = [str(uuid.uuid4()) for _ in range(3)]
    bodies = [
        '{"id": "broken", "tableName": ',
        json.dumps({"id": ids[0], "tableName": "no-such-table", "files": [_upload(instance, _rows(0, 5))]}),
        json.dumps({"id": ids[1], "tableName": table.name, "files": [f"{instance.data_bucket}/missing.parquet"]}),
        json.dumps({"id": ids[2], "tableName": table.name, "files": [wrong_type]}),
    ]
    # When the ingest task takes them
    outcomes = _ingest(instance, *bodies)
    # Then none is finished, and each job the tracker can name is rejected or failed with a reason
    assert JobOutcome.FINISHED not in outcomes and len(outcomes) == 4
    for job_id in ids:
        status = instance.ingest_job_tracker.job(job_id)
        assert status is not None, job_id
        assert status.status in (IngestJobStatusType.REJECTED, IngestJobStatusType.FAILED), job_id
        reasons = [reason for run in status.runs for reason in run.failure_reasons]
        assert reasons and all(reasons), job_id
    # And the table has no file and no data object
    assert table.file_references() == []
    assert _data_files(instance, table) == []


def should_add_an_ingest_jobs_rows_once_when_it_is_delivered_twice(instance: AwsInstance) -> None:
    # Given a table and one ingest job
    table = _table(instance)
    body = json.dumps({"id": str(uuid.uuid4()), "tableName": table.name, "files": [_upload(instance, _rows(0, 80))]})
    # When the job is delivered twice
    outcomes = _ingest(instance, body, body)
    # Then its rows are in the table once, and the second run left no extra data file behind
    assert outcomes[0] is JobOutcome.FINISHED
    assert _rows_in(table) == 80
    referenced = {r.filename.removeprefix("s3a://") for r in table.file_references()}
    assert {path for path in _data_files(instance, table) if path.endswith(".parquet")} == referenced


def should_reject_an_ingest_job_id_reused_for_another_file_keeping_the_first_rows(instance: AwsInstance) -> None:
    # Given a table with the rows of one ingest job
    table = _table(instance)
    job_id = str(uuid.uuid4())
    first = json.dumps({"id": job_id, "tableName": table.name, "files": [_upload(instance, _rows(0, 80))]})
    assert _ingest(instance, first) == [JobOutcome.FINISHED]
    files_before = sorted(_data_files(instance, table))
    # When a job with the same id and another file is delivered, then the first job again
    reused = json.dumps({"id": job_id, "tableName": table.name, "files": [_upload(instance, _rows(80, 100))]})
    outcomes = _ingest(instance, reused, first)
    # Then the reuse is rejected and the retry of the first adds nothing: the table holds the first job's rows only
    assert outcomes == [JobOutcome.REJECTED, JobOutcome.FINISHED]
    assert _rows_in(table) == 80
    assert sorted(_data_files(instance, table)) == files_before
    # And the tracker keeps the run that wrote the rows beside the rejected one, which names the job id
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    rejected = [run for run in status.runs if run.status is IngestJobStatusType.REJECTED]
    assert len(rejected) == 1 and job_id in rejected[0].failure_reasons[0]
    assert [run.rows_written for run in status.runs if run.status is IngestJobStatusType.FINISHED] == [0, 80]


def _answer(instance: AwsInstance) -> None:
    sqs.query(drain_event(instance, QUERY_Q))
    sqs.leaf_partition_query(drain_event(instance, LEAF_PARTITION_QUERY_Q))


def _results(instance: AwsInstance, query_id: str) -> pa.Table:
    directory = f"{instance.query_results_uri.removeprefix('s3a://')}/query-{query_id}"
    files = list_files(instance.filesystem, directory)
    return pa.concat_tables(pq.read_table(f.path, filesystem=instance.filesystem) for f in files).sort_by("key")


def should_fail_bad_queries_in_the_tracker(instance: AwsInstance) -> None:
    # Given a table with rows, and queries with a string for the long key, an unknown table, and malformed JSON
    table = _table(instance)
    _ingest(instance, json.dumps({"id": "q-rows", "tableName": table.name, "files": [_upload(instance, _rows(0, 9))]}))
    wrong_type, unknown = str(uuid.uuid4()), str(uuid.uuid4())
    region = {"key": {"min": "abc", "minInclusive": True, "max": None, "maxInclusive": False}}
    queue = instance.queue(QUERY_Q)
    queue.send(json.dumps({"queryId": wrong_type, "tableName": table.name, "type": "Query", "regions": [region]}))
    good_region = {"key": {"min": 0, "minInclusive": True, "max": None, "maxInclusive": False}}
    queue.send(json.dumps({"queryId": unknown, "tableName": "nope", "type": "Query", "regions": [good_region]}))
    queue.send('{"queryId": "x", "tableName": ')
    # When the query handler takes them
    response = sqs.query(drain_event(instance, QUERY_Q))
    # Then each is deleted (a retry cannot help), the two with ids are FAILED with a reason, and no sub-query was sent
    assert response == {"batchItemFailures": []}
    for query_id in (wrong_type, unknown):
        status = instance.query_tracker.status(query_id)
        assert status is not None and status.last_known_state is QueryState.FAILED
        assert status.error_message
    assert drain_event(instance, LEAF_PARTITION_QUERY_Q)["Records"] == []


def should_publish_a_querys_rows_once_when_it_is_delivered_twice(instance: AwsInstance) -> None:
    # Given a table of two leaves holding keys 0-99
    table = _table(instance)
    _ingest(instance, json.dumps({"id": "q2", "tableName": table.name, "files": [_upload(instance, _rows(0, 100))]}))
    query_id = str(uuid.uuid4())
    region = {"key": {"min": 40, "minInclusive": True, "max": 60, "maxInclusive": False}}
    body = json.dumps({"queryId": query_id, "tableName": table.name, "type": "Query", "regions": [region]})
    # When the query is delivered twice and both deliveries are answered
    for _ in range(2):
        instance.queue(QUERY_Q).send(body)
        _answer(instance)
    # Then the results hold each row once, and the query is complete
    assert _results(instance, query_id).column("key").to_pylist() == list(range(40, 60))
    status = instance.query_tracker.status(query_id)
    assert status is not None and status.last_known_state is QueryState.COMPLETED


def should_apply_a_commit_request_once_when_it_is_delivered_twice(instance: AwsInstance) -> None:
    # Given a table and a commit request adding a file
    table = _table(instance)
    path = f"s3a://{instance.data_bucket}/{table.table_id}/data/partition_root/{uuid.uuid4()}.parquet"
    reference = FileReference(filename=path, partition_id=table.partitions()[0].id, number_of_rows=7)
    body = StateStoreCommitRequest.of_transaction(
        table.table_id, AddFilesTransaction.of_references([reference])
    ).to_json()
    group = table.table_id
    # When it is delivered twice
    first = sqs.statestore_committer(sqs_event([("m1", body, group)]))
    second = sqs.statestore_committer(sqs_event([("m2", body, group)]))
    # Then both are consumed and the file is referenced once
    assert first == second == {"batchItemFailures": []}
    assert [r.filename for r in table.file_references()] == [path]
