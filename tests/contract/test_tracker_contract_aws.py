"""The tracker contract (tests/contract/test_tracker_contract.py) run against DynamoDB on moto (``mock_aws``).

Every behaviour of the shared contract is imported; the SQLite-only ones (sharing a database file, deleting expired
updates, which DynamoDB's time to live does instead) are left out.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client
from sleeper.adapters.aws.dynamodb_query_tracker import DynamoDBQueryTracker
from sleeper.adapters.aws.dynamodb_trackers import (
    DynamoDBCompactionJobTracker,
    DynamoDBIngestJobTracker,
    DynamoDBTaskTracker,
)
from sleeper.adapters.aws.resources import (
    create_job_tracker_tables,
    create_query_tracker_table,
    create_task_tracker_table,
)
from sleeper.core.naming import JobTrackerTableNames, query_tracker_table_name, task_tracker_table_name
from tests.contract.test_tracker_contract import (
    should_complete_a_query_when_every_sub_query_completes,
    should_count_a_retried_ingest_job_once_with_every_run,
    should_ignore_a_duplicate_update_of_a_finished_sub_query,
    should_list_a_tables_compaction_jobs,
    should_list_a_tables_ingest_jobs_and_the_unfinished_ones,
    should_list_every_query_with_parents_first,
    should_list_rejected_ingest_jobs_of_every_table,
    should_report_a_compaction_job_through_its_life,
    should_report_an_ingest_job_from_its_recorded_updates,
    should_report_no_status_for_an_unknown_job,
    should_report_tasks_in_progress_and_finished,
    should_roll_sub_queries_up_into_the_query,
)

pytestmark = [pytest.mark.integration, pytest.mark.aws]

__all__ = [
    "should_complete_a_query_when_every_sub_query_completes",
    "should_count_a_retried_ingest_job_once_with_every_run",
    "should_ignore_a_duplicate_update_of_a_finished_sub_query",
    "should_list_a_tables_compaction_jobs",
    "should_list_a_tables_ingest_jobs_and_the_unfinished_ones",
    "should_list_every_query_with_parents_first",
    "should_list_rejected_ingest_jobs_of_every_table",
    "should_report_a_compaction_job_through_its_life",
    "should_report_an_ingest_job_from_its_recorded_updates",
    "should_report_no_status_for_an_unknown_job",
    "should_report_tasks_in_progress_and_finished",
    "should_roll_sub_queries_up_into_the_query",
]

SETTINGS = AwsSettings("eu-west-2", access_key_id="testing", secret_access_key="testing")
INSTANCE_ID = "contract"


@pytest.fixture
def ingest_tracker() -> Iterator[DynamoDBIngestJobTracker]:
    with mock_aws():
        client = dynamodb_client(SETTINGS)
        create_job_tracker_tables(client, JobTrackerTableNames.ingest(INSTANCE_ID))
        yield DynamoDBIngestJobTracker.for_instance(client, INSTANCE_ID)


@pytest.fixture
def compaction_tracker() -> Iterator[DynamoDBCompactionJobTracker]:
    with mock_aws():
        client = dynamodb_client(SETTINGS)
        create_job_tracker_tables(client, JobTrackerTableNames.compaction(INSTANCE_ID), validation_index=False)
        yield DynamoDBCompactionJobTracker.for_instance(client, INSTANCE_ID)


@pytest.fixture
def task_tracker() -> Iterator[DynamoDBTaskTracker]:
    with mock_aws():
        client = dynamodb_client(SETTINGS)
        create_task_tracker_table(client, task_tracker_table_name(INSTANCE_ID, "ingest"))
        yield DynamoDBTaskTracker.for_instance(client, INSTANCE_ID, "ingest")


@pytest.fixture
def query_tracker() -> Iterator[DynamoDBQueryTracker]:
    with mock_aws():
        client = dynamodb_client(SETTINGS)
        create_query_tracker_table(client, query_tracker_table_name(INSTANCE_ID))
        yield DynamoDBQueryTracker.for_instance(client, INSTANCE_ID)
