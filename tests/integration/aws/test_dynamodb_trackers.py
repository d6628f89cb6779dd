"""Job, task and query trackers in DynamoDB (moto, in-process): Sleeper's tables, keys and attributes, and what the
shared contract cannot show (concurrent sub-queries, updates in one millisecond, updates under two tables)."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from moto import mock_aws

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client
from sleeper.adapters.aws.dynamodb_query_tracker import DynamoDBQueryTracker
from sleeper.adapters.aws.dynamodb_trackers import DynamoDBIngestJobTracker, DynamoDBTaskTracker
from sleeper.adapters.aws.resources import (
    create_job_tracker_tables,
    create_query_tracker_table,
    create_task_tracker_table,
)
from sleeper.core.naming import JobTrackerTableNames, query_tracker_table_name, task_tracker_table_name
from sleeper.core.trackers.ingest import IngestJobStarted, IngestJobStatusType, IngestJobValidated
from sleeper.core.trackers.query import QueryState, QueryUpdate
from sleeper.core.trackers.task import TaskFinished, TaskStarted

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SETTINGS = AwsSettings("eu-west-2", access_key_id="testing", secret_access_key="testing")
INSTANCE = "abc"
T0 = datetime(2026, 1, 1, 12, 0, 0, 250000, tzinfo=UTC)
RECORDED = datetime(2026, 1, 2, 9, 30, 0, 500000, tzinfo=UTC)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoDBClient]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # the in-process mock, never a server another test named
    with mock_aws():
        yield dynamodb_client(SETTINGS)


def _ingest_tracker(client: DynamoDBClient) -> DynamoDBIngestJobTracker:
    names = JobTrackerTableNames.ingest(INSTANCE)
    create_job_tracker_tables(client, names)
    return DynamoDBIngestJobTracker(client, names, clock=lambda: RECORDED)


def _query_tracker(client: DynamoDBClient) -> DynamoDBQueryTracker:
    create_query_tracker_table(client, query_tracker_table_name(INSTANCE))
    return DynamoDBQueryTracker.for_instance(client, INSTANCE)


def _keys(client: DynamoDBClient, table: str) -> list[tuple[str, str, str]]:
    description = client.describe_table(TableName=table)["Table"]
    types = {d["AttributeName"]: d["AttributeType"] for d in description["AttributeDefinitions"]}
    return [(k["AttributeName"], types[k["AttributeName"]], k["KeyType"]) for k in description["KeySchema"]]


def _ttl(client: DynamoDBClient, table: str) -> str:
    description = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    return str(description["AttributeName"])


# --- tables ----------------------------------------------------------------------------------------------------------


def should_create_the_tracker_tables_as_sleeper_names_and_keys_them(client: DynamoDBClient) -> None:
    # When
    for names in (JobTrackerTableNames.ingest(INSTANCE), JobTrackerTableNames.compaction(INSTANCE)):
        create_job_tracker_tables(client, names)
    for kind in ("ingest", "compaction"):
        create_task_tracker_table(client, task_tracker_table_name(INSTANCE, kind))
    create_query_tracker_table(client, query_tracker_table_name(INSTANCE))
    # Then
    for kind in ("ingest", "compaction"):
        assert _keys(client, f"sleeper-abc-{kind}-job-updates") == [
            ("TableId", "S", "HASH"),
            ("JobIdAndUpdate", "S", "RANGE"),
        ]
        assert _keys(client, f"sleeper-abc-{kind}-job-lookup") == [("JobId", "S", "HASH")]
        assert _keys(client, f"sleeper-abc-{kind}-task-status") == [
            ("TaskId", "S", "HASH"),
            ("UpdateTime", "N", "RANGE"),
        ]
        assert _ttl(client, f"sleeper-abc-{kind}-job-updates") == "ExpiryDate"
        assert _ttl(client, f"sleeper-abc-{kind}-task-status") == "ExpiryDate"
    lookup = client.describe_table(TableName="sleeper-abc-ingest-job-lookup")["Table"]
    assert [(i["IndexName"], i["KeySchema"][0]["AttributeName"]) for i in lookup["GlobalSecondaryIndexes"]] == [
        ("by-validation", "LastValidationResult")
    ]
    assert _keys(client, "sleeper-abc-query-tracking-table") == [("queryId", "S", "HASH"), ("subQueryId", "S", "RANGE")]
    assert _ttl(client, "sleeper-abc-query-tracking-table") == "expiryDate"


# --- job trackers ----------------------------------------------------------------------------------------------------


def should_store_a_rejected_ingest_job_with_sleepers_attributes(client: DynamoDBClient) -> None:
    # Given a job that named no valid table
    tracker = _ingest_tracker(client)
    message = '{"id":"bad","tableName":"missing","files":[]}'
    # When its rejection is recorded
    tracker.record(
        IngestJobValidated(job_id="bad", table_id=None, update_time=T0, reasons=("no files",), json_message=message)
    )
    # Then the update and the lookup hold Sleeper's attributes, under the unknown table "-"
    [item] = client.scan(TableName="sleeper-abc-ingest-job-updates")["Items"]
    recorded_ms = int(RECORDED.timestamp() * 1000)
    assert re.fullmatch(rf"bad\|{recorded_ms}\|[0-9a-f]{{8}}", item["JobIdAndUpdate"]["S"])
    assert {name: item[name] for name in ("TableId", "JobId", "UpdateType", "UpdateTime", "ExpiryDate")} == {
        "TableId": {"S": "-"},
        "JobId": {"S": "bad"},
        "UpdateType": {"S": "validated"},
        "UpdateTime": {"N": str(recorded_ms)},
        "ExpiryDate": {"N": str(int((RECORDED + timedelta(days=7)).timestamp()))},
    }
    assert (item["ValidationResult"], item["ValidationReasons"], item["JsonMessage"]) == (
        {"S": "REJECTED"},
        {"L": [{"S": "no files"}]},
        {"S": message},
    )
    lookup = client.get_item(TableName="sleeper-abc-ingest-job-lookup", Key={"JobId": {"S": "bad"}})["Item"]
    assert (lookup["TableId"], lookup["LastValidationResult"], lookup["LastUpdateType"]) == (
        {"S": "-"},
        {"S": "REJECTED"},
        {"S": "validated"},
    )


def should_report_a_job_whose_updates_are_stored_under_two_tables(client: DynamoDBClient) -> None:
    # Given a job validated before its table was known, then started on a table
    tracker = _ingest_tracker(client)
    tracker.record(IngestJobValidated(job_id="job-1", table_id=None, update_time=T0, job_run_id="run-1"))
    tracker.record(
        IngestJobStarted(job_id="job-1", table_id="table-1", update_time=T0 + timedelta(seconds=1), job_run_id="run-1")
    )
    # When
    status = tracker.job("job-1")
    # Then both updates count towards its one run
    assert status is not None
    assert (status.table_id, status.status) == ("table-1", IngestJobStatusType.IN_PROGRESS)
    assert [type(update).__name__ for update in status.latest_run.updates] == ["IngestJobValidated", "IngestJobStarted"]


def should_skip_updates_without_a_body_written_by_another_implementation(client: DynamoDBClient) -> None:
    # Given an update item holding only Sleeper's attributes, next to one written by this tracker
    tracker = _ingest_tracker(client)
    tracker.record(IngestJobStarted(job_id="job-1", table_id="table-1", update_time=T0))
    client.put_item(
        TableName="sleeper-abc-ingest-job-updates",
        Item={
            "TableId": {"S": "table-1"},
            "JobIdAndUpdate": {"S": "job-1|1|00000000"},
            "JobId": {"S": "job-1"},
            "UpdateType": {"S": "finished"},
            "UpdateTime": {"N": "1"},
        },
    )
    # When
    jobs = tracker.jobs("table-1")
    # Then the job is reported from the update it can read
    assert [(j.job_id, j.status) for j in jobs] == [("job-1", IngestJobStatusType.IN_PROGRESS)]


def should_keep_two_updates_of_a_task_recorded_in_the_same_millisecond(client: DynamoDBClient) -> None:
    # Given a task tracker whose clock does not move
    table = task_tracker_table_name(INSTANCE, "compaction")
    create_task_tracker_table(client, table)
    tracker = DynamoDBTaskTracker(client, table, clock=lambda: RECORDED)
    # When a task starts and finishes
    tracker.record(TaskStarted(task_id="task-1", update_time=T0))
    tracker.record(TaskFinished(task_id="task-1", update_time=T0 + timedelta(minutes=1), job_runs=3))
    # Then both updates are kept
    status = tracker.task("task-1")
    assert status is not None
    assert (status.start_time, status.finish_time, status.job_runs) == (T0, T0 + timedelta(minutes=1), 3)
    assert tracker.tasks_in_progress() == []


# --- query tracker ---------------------------------------------------------------------------------------------------


def should_write_query_rows_with_the_attributes_sleepers_client_polls(client: DynamoDBClient) -> None:
    # Given a query with one sub-query
    tracker = _query_tracker(client)
    tracker.record(QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=T0))
    tracker.record(QueryUpdate(query_id="q", sub_query_id="s", state=QueryState.QUEUED, update_time=T0))
    # When the sub-query fails
    finished = T0 + timedelta(seconds=2)
    tracker.record(
        QueryUpdate(query_id="q", sub_query_id="s", state=QueryState.FAILED, update_time=finished, error_message="x")
    )
    # Then the parent row, keyed (queryId, "-"), holds Sleeper's attributes in Sleeper's units
    parent = client.get_item(
        TableName="sleeper-abc-query-tracking-table", Key={"queryId": {"S": "q"}, "subQueryId": {"S": "-"}}
    )["Item"]
    assert {
        name: parent[name] for name in ("lastKnownState", "lastUpdateTime", "expiryDate", "rowCount", "errors")
    } == {
        "lastKnownState": {"S": "FAILED"},
        "lastUpdateTime": {"N": str(int(finished.timestamp()))},
        "expiryDate": {"N": str(math.ceil((finished + timedelta(days=1)).timestamp()))},
        "rowCount": {"N": "0"},
        "errors": {"S": "x"},
    }
    assert parent["firstUpdateTime"] == {"N": str(int(T0.timestamp()))}


def should_complete_a_query_whose_sub_queries_finish_concurrently(client: DynamoDBClient) -> None:
    # Given a query with eight queued sub-queries
    tracker = _query_tracker(client)
    subs = [f"sub-{i}" for i in range(8)]
    tracker.record_all(
        [QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=T0)]
        + [QueryUpdate(query_id="q", sub_query_id=s, state=QueryState.QUEUED, update_time=T0) for s in subs]
    )
    start = threading.Barrier(len(subs))
    errors: list[BaseException] = []

    def finish(index: int) -> None:
        own = DynamoDBQueryTracker.for_instance(dynamodb_client(SETTINGS), INSTANCE)
        start.wait()
        try:
            own.record(
                QueryUpdate(
                    query_id="q",
                    sub_query_id=subs[index],
                    state=QueryState.COMPLETED,
                    update_time=T0 + timedelta(seconds=1),
                    row_count=index,
                )
            )
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    # When they all finish at once, each in its own thread
    threads = [threading.Thread(target=finish, args=(i,)) for i in range(len(subs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # Then the query completes with every sub-query's rows
    parent = tracker.status("q")
    assert errors == []
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, sum(range(8)))
