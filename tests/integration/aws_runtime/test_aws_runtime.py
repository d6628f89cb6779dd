"""The AWS runtime end to end on a moto server: the instance found from the environment, the handlers invoked with
the events AWS sends them, the ingest task run as its container runs it."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import s3_client
from sleeper.adapters.aws.exceptions import AwsResourceNotFoundError
from sleeper.adapters.aws.properties import S3PropertiesStore
from sleeper.api.table import Table
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.commit import StateStoreCommitRequest, transaction_body_prefix
from sleeper.core.operations import COMPACTION_JOB_Q, INGEST_JOB_Q, LEAF_PARTITION_QUERY_Q, SNAPSHOT_CREATION_Q
from sleeper.core.queue import QueueNotFoundError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.trackers.query import QueryState
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import list_files
from sleeper.lambdas import sqs, table_trigger
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.conftest import drain_event, sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(row_key_fields=(KEY,), value_fields=(Field("value", PrimitiveType.STRING),))

SYNC_INGEST_COMMITS = {
    "sleeper.table.ingest.job.files.commit.async": "false",
    "sleeper.table.bulk.import.job.files.commit.async": "false",
}
"""Ingest and bulk import commit in the job itself (asynchronous by default, as Sleeper's, through a committer these
tests do not run)."""


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys], pa.string())})


def _new_table(instance: AwsInstance, *, split_points: list[int] | None = None) -> Table[AwsInstance]:
    return instance.create_table(
        f"table-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=split_points or [], properties=SYNC_INGEST_COMMITS
    )


@pytest.fixture(scope="module")
def queried(instance: AwsInstance) -> Table[AwsInstance]:
    """A table of two leaves holding keys 0-99, written straight to S3."""
    table = _new_table(instance, split_points=[50])
    ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        _rows(0, 100).to_batches(),
        options=instance.filesystem_options,
    )
    return table


def should_find_tables_by_name_and_id_from_the_environment(instance: AwsInstance, queried: Table[AwsInstance]) -> None:
    # Given an instance found afresh from the environment
    fresh = AwsInstance.from_environment()
    # When its table is looked up by name and by id
    by_name = fresh.table(queried.name)
    by_id = fresh.table_by_id(queried.table_id)
    # Then both are the table, with its properties from the config bucket and its files from the state store
    assert (by_name.table_id, by_id.name) == (queried.table_id, queried.name)
    assert by_id.schema == SCHEMA
    assert by_id.data_prefix == f"s3a://{fresh.data_bucket}/{queried.table_id}"
    assert sum(r.number_of_rows for r in by_name.file_references()) == 100


def should_answer_a_query_through_the_query_and_leaf_handlers_as_a_direct_query(
    instance: AwsInstance, queried: Table[AwsInstance]
) -> None:
    # Given a query in Sleeper's JSON over both leaves
    query_id = str(uuid.uuid4())
    region = {"key": {"min": 10, "minInclusive": True, "max": 80, "maxInclusive": False}, "stringsBase64Encoded": False}
    body = json.dumps({"queryId": query_id, "tableName": queried.name, "type": "Query", "regions": [region]})
    # When the query handler and then the leaf handler process it
    planned = sqs.query(sqs_event([("q1", body, None)]))
    leaf_event = drain_event(instance, LEAF_PARTITION_QUERY_Q)
    queued = instance.query_tracker.sub_queries(query_id)
    answered = sqs.leaf_partition_query(leaf_event)
    # Then one sub-query per leaf was queued and each wrote one results file
    assert planned == answered == {"batchItemFailures": []}
    assert len(leaf_event["Records"]) == 2  # type: ignore[arg-type]
    assert {q.last_known_state for q in queued if not q.is_parent} == {QueryState.QUEUED}
    results_dir = f"{instance.query_results_uri.removeprefix('s3a://')}/query-{query_id}"
    files = list_files(instance.filesystem, results_dir)
    assert len(files) == 2
    got = pa.concat_tables(pq.read_table(f.path, filesystem=instance.filesystem) for f in files).sort_by("key")
    # And the rows are those of a direct query
    expected = queried.query(regions=[Region.of([Range(field=KEY, min=10, max=80)])])
    assert got.to_pylist() == expected.to_pylist()
    assert got.num_rows == 70
    # And the tracker rolled the sub-queries up into a completed query with their row count
    parent = instance.query_tracker.status(query_id)
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 70)
    children = [q for q in instance.query_tracker.sub_queries(query_id) if not q.is_parent]
    assert {q.last_known_state for q in children} == {QueryState.COMPLETED}


def should_track_a_query_of_an_unknown_table_as_failed(instance: AwsInstance) -> None:
    # Given a query naming a table that does not exist
    query_id = str(uuid.uuid4())
    body = json.dumps({"queryId": query_id, "tableName": "no-such-table", "type": "Query", "regions": []})
    # When the query handler processes it
    response = sqs.query(sqs_event([("q1", body, None)]))
    # Then the message is done with, and the query is tracked FAILED with the reason
    assert response == {"batchItemFailures": []}
    status = instance.query_tracker.status(query_id)
    assert status is not None
    assert status.last_known_state is QueryState.FAILED
    assert "no-such-table" in (status.error_message or "")


def should_commit_in_order_and_return_the_rest_of_the_batch_after_a_request_to_retry(instance: AwsInstance) -> None:
    # Given a table and a batch: an unreadable message, a commit, one whose uploaded body is missing, another commit
    table = _new_table(instance)
    tid = table.table_id

    def add_file() -> tuple[str, str]:
        name = f"{table.data_prefix}/data/partition_root/{uuid.uuid4()}.parquet"
        reference = FileReference(filename=name, partition_id="root", number_of_rows=5)
        request = StateStoreCommitRequest.of_transaction(tid, AddFilesTransaction.of_references([reference]))
        return name, request.to_json()

    first, first_body = add_file()
    second, second_body = add_file()
    missing = StateStoreCommitRequest.in_body_store(
        tid, TransactionType.ADD_FILES, f"{transaction_body_prefix(tid)}missing-{uuid.uuid4()}.json"
    )
    event = sqs_event(
        [
            ("bad", "not json", tid),
            ("first", first_body, tid),
            ("missing", missing.to_json(), tid),
            ("second", second_body, tid),
        ]
    )
    # When the committer handles the batch
    response = sqs.statestore_committer(event)
    # Then the request to retry and every message after it go back to the queue, and only the first file is added
    assert response == {"batchItemFailures": [{"itemIdentifier": "missing"}, {"itemIdentifier": "second"}]}
    names = {r.filename for r in AwsInstance.from_environment().table_by_id(tid).file_references()}
    assert names == {first}
    assert second not in names


def should_run_an_ingest_job_from_the_queue_in_the_ingest_task(instance: AwsInstance, tmp_path: object) -> None:
    # Given a table, a Parquet file in S3 and an ingest job for it on the ingest job queue
    table = _new_table(instance)
    source = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(_rows(0, 30), source, filesystem=instance.filesystem)
    job_id = str(uuid.uuid4())
    instance.queue(INGEST_JOB_Q).send(json.dumps({"id": job_id, "tableName": table.name, "files": [source]}))
    # When the ingest task runs until the queue is idle
    summary = run_task(instance, wait_seconds=0, local_dir=str(tmp_path))
    # Then the job finished, its rows are in the table, and the job and task are tracked
    assert [(o.job_id, o.outcome) for o in summary.outcomes] == [(job_id, JobOutcome.FINISHED)], summary
    assert table.query().to_pylist() == _rows(0, 30).to_pylist()
    job = instance.ingest_job_tracker.job(job_id)
    assert job is not None
    assert instance.queue(INGEST_JOB_Q).receive(1) == []
    tasks = instance.ingest_task_tracker.all_tasks()
    assert any(t.finish_time is not None and t.rows_written == 30 for t in tasks)


def should_trigger_one_message_per_online_table_and_snapshot_it(
    instance: AwsInstance, queried: Table[AwsInstance]
) -> None:
    # Given the instance's online tables
    online = {t.table_id for t in instance.online_tables()}
    # When the scheduled trigger runs, and the snapshot handler takes the message of one table
    sent = table_trigger.snapshot_creation({}, None)
    event = drain_event(instance, SNAPSHOT_CREATION_Q, max_messages=len(online) + 5)
    records = event["Records"]
    assert isinstance(records, list)
    mine = [r for r in records if r["body"] == queried.table_id]
    response = sqs.snapshot_creation({"Records": mine})
    # Then there was one message per online table, grouped by table, and the table's logs were snapshotted
    assert sent == {"tablesSent": len(online)}
    assert sorted(r["body"] for r in records) == sorted(online)
    assert all(r["attributes"]["MessageGroupId"] == r["body"] for r in records)
    assert response == {"batchItemFailures": []}
    store = instance.table_by_id(queried.table_id).state_store
    assert store.snapshot_store is not None
    latest = store.snapshot_store.metadata.latest_snapshot(LogType.FILES)
    assert latest is not None
    assert latest.path.startswith(f"s3a://{instance.data_bucket}/{queried.table_id}/statestore/snapshots/")


def should_run_the_hourly_upkeep_handlers_on_a_table(instance: AwsInstance, queried: Table[AwsInstance]) -> None:
    # Given a message naming a table, and one naming a table that does not exist
    event = sqs_event([("m1", queried.table_id, queried.table_id), ("m2", "no-such-table", "no-such-table")])
    # When the snapshot deletion and transaction deletion handlers take them
    responses = [sqs.snapshot_deletion(event), sqs.transaction_deletion(event)]
    # Then both finish every message (nothing is old enough to delete, and an unknown table cannot be retried)
    assert responses == [{"batchItemFailures": []}] * 2
    assert sum(r.number_of_rows for r in instance.table_by_id(queried.table_id).file_references()) == 100


def should_not_create_a_queue_the_instance_does_not_have(instance: AwsInstance) -> None:
    # Given a queue that was not provisioned
    # When it is asked for
    # Then it is not found, and not created
    with pytest.raises(QueueNotFoundError, match="CompactionJobQ"):
        instance.queue(COMPACTION_JOB_Q)
    with pytest.raises(QueueNotFoundError):
        instance.queue(COMPACTION_JOB_Q)


def should_keep_properties_in_the_config_bucket_layout(instance: AwsInstance, queried: Table[AwsInstance]) -> None:
    # Given the instance's properties store
    store = instance.properties_store
    # When its objects are listed and read
    ids = store.table_ids()
    values = store.load_table(queried.table_id)
    # Then each table has tables/table-<id>.properties holding its name and schema, and a missing one is an error
    assert queried.table_id in ids
    assert values["sleeper.table.name"] == queried.name
    assert Schema.from_json(values["sleeper.table.schema"]) == SCHEMA
    assert store.load_instance()["sleeper.config.bucket"] == instance.config.config_bucket
    with pytest.raises(TableNotFoundError):
        store.load_table("00000000")


def should_report_a_config_bucket_without_instance_properties(instance: AwsInstance) -> None:
    # Given a store over a bucket that holds no instance properties
    store = S3PropertiesStore(s3_client(instance.config.settings), instance.data_bucket)
    # When the instance properties are loaded
    # Then the error names the missing object
    with pytest.raises(AwsResourceNotFoundError, match="instance.properties"):
        store.load_instance()
