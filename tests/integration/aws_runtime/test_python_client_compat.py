"""Sleeper's own Python client against an instance of ours, through a client written to its
formats (``sleeper_client.py``): it finds the instance from the config bucket alone, ingests through ``for_ingest/``
and the ingest queue, queries through the query queue, polls the query tracker and reads the results from S3."""

from __future__ import annotations

import uuid

import pytest

from sleeper.core.operations import LEAF_PARTITION_QUERY_Q, QUERY_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.lambdas import sqs
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, moto_endpoint
from tests.integration.aws_runtime.conftest import drain_event
from tests.integration.aws_runtime.sleeper_client import (
    DATA_BUCKET,
    INGEST_QUEUE_URL,
    QUERY_QUEUE_URL,
    RESULTS_BUCKET,
    TRACKER_TABLE,
    CompatClient,
    QueryFailed,
)

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
ROWS = [{"key": k, "value": f"v{k}"} for k in range(20)]

SYNC_INGEST_COMMITS = {
    "sleeper.table.ingest.job.files.commit.async": "false",
    "sleeper.table.bulk.import.job.files.commit.async": "false",
}
"""Ingest and bulk import commit in the job itself (asynchronous by default, as Sleeper's, through a committer these
tests do not run)."""


def _answer_queries(instance: AwsInstance) -> None:
    """One round of what AWS delivers for queries: the query queue to its handler, then the leaf queue to its."""
    sqs.query(drain_event(instance, QUERY_Q))
    sqs.leaf_partition_query(drain_event(instance, LEAF_PARTITION_QUERY_Q))


@pytest.fixture(scope="module")
def client(instance: AwsInstance) -> CompatClient:
    return CompatClient(instance.instance_id, endpoint_url=moto_endpoint(), region=REGION)


@pytest.fixture(scope="module")
def table_name(instance: AwsInstance, client: CompatClient) -> str:
    """A table of two leaves that the client filled through ``for_ingest/`` and the ingest queue."""
    table = instance.create_table(
        f"compat-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[10], properties=SYNC_INGEST_COMMITS
    )
    client.write_single_batch(table.name, ROWS)
    summary = run_task(instance, wait_seconds=0)
    assert [o.outcome.name for o in summary.outcomes] == ["FINISHED"]
    return table.name


def should_find_every_property_the_client_reads_in_the_config_bucket(
    instance: AwsInstance, client: CompatClient
) -> None:
    # Given the properties the client loaded from sleeper-<id>-config-<account> with configparser
    properties = client.properties
    # Then the names and URLs it needs are there and are the instance's
    assert properties[DATA_BUCKET] == instance.data_bucket
    assert properties[INGEST_QUEUE_URL].endswith(f"/sleeper-{instance.instance_id}-IngestJobQ")
    assert properties[QUERY_QUEUE_URL].endswith(f"/sleeper-{instance.instance_id}-QueryQueue")
    assert properties[RESULTS_BUCKET] and properties[TRACKER_TABLE]


def should_read_back_rows_ingested_through_for_ingest_with_an_exact_query(
    instance: AwsInstance, client: CompatClient, table_name: str
) -> None:
    # Given rows the client ingested
    query_id = str(uuid.uuid4())
    # When it sends an exact query for keys in both leaves, as the client builds one
    client.exact_key_query_message(table_name, "key", [3, 15, 99], query_id)
    rows = client.wait_for_results(query_id, lambda: _answer_queries(instance))
    # Then it reads those rows from the results bucket
    assert sorted(rows, key=lambda r: r["key"]) == [ROWS[3], ROWS[15]]


def should_read_back_a_range_with_no_maximum(instance: AwsInstance, client: CompatClient, table_name: str) -> None:
    # Given a range query from key 5 with a null maximum (the client's open range)
    query_id = str(uuid.uuid4())
    client.send_range_query(table_name, [{"key": (5, None)}], query_id)
    # When the instance answers it
    rows = client.wait_for_results(query_id, lambda: _answer_queries(instance))
    # Then every row from key 5 comes back
    assert sorted(rows, key=lambda r: r["key"]) == ROWS[5:]


def should_raise_as_the_client_does_for_a_query_of_an_unknown_table(
    instance: AwsInstance, client: CompatClient
) -> None:
    # Given a query naming a table that does not exist
    query_id = str(uuid.uuid4())
    client.send_range_query("no-such-table", [{"key": (0, 10)}], query_id)
    # When the instance handles it
    _answer_queries(instance)
    # Then the tracker says FAILED, which the client raises on
    assert client.query_state(query_id) == "FAILED"
    with pytest.raises(QueryFailed):
        client.results(query_id)
