"""``sleeper.client.SleeperClient`` against the emulated instance, in this process: how it finds the instance, what it
sends (Sleeper's JSON, to the queues Sleeper's client sends to, with the files where Sleeper's client puts them), what
it refuses before sending anything, the boto3 objects it is given, and the rows its queries return."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_export import BulkExportQuery as ExportModel
from sleeper.bulk_export import BulkExportQueryError
from sleeper.client import (
    BulkExportQuery,
    ClientArgumentError,
    InstanceNotFoundError,
    Query,
    QueryFailedError,
    QueryTimeoutError,
    Region,
    SleeperClient,
)
from sleeper.core import operations
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.exceptions import MessageError
from sleeper.core.query import QueryValidationError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.runtime.aws.instance import ACCOUNT_ENV, AwsInstance

try:  # where the task containers' entry points are moving (h14's change, in the working tree)
    from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
except ImportError:
    from sleeper.lambdas._common import IDLE_WAIT_ENV

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
INT_SCHEMA = Schema(
    row_key_fields=(Field("id", PrimitiveType.INT),),
    value_fields=(Field("name", PrimitiveType.STRING), Field("tags", PrimitiveType.BYTE_ARRAY)),
)


def _table(emulated: EmulatedAwsInstance, schema: Schema = SCHEMA, **kwargs: Any) -> str:
    return emulated.instance().create_table(f"client-{uuid.uuid4().hex[:8]}", schema, **kwargs).name


def _messages(instance: AwsInstance, logical_name: str) -> list[dict[str, Any]]:
    """Every visible message of a queue, read and deleted."""
    queue = instance.queue(logical_name)
    out = []
    while batch := queue.receive(10):
        for message in batch:
            out.append(json.loads(message.body))
            queue.delete(message.receipt_handle)
    return out


@pytest.fixture(scope="module")
def client(emulated: EmulatedAwsInstance) -> SleeperClient:
    return SleeperClient(emulated.instance_id)


@pytest.fixture
def pump(emulated: EmulatedAwsInstance, tmp_path: Any) -> Iterator[Pump]:
    pump = emulated.pump(task_log_dir=str(tmp_path), environment_extra={IDLE_WAIT_ENV: "1"})
    yield pump
    pump.close()


def _ingest(pump: Pump) -> None:
    """Runs the ingest jobs sent so far, as the ingest task creation schedule would."""
    assert pump.fire(operations.INGEST_TASK_CREATION)
    done = pump.run_until_idle(timeout_seconds=180)
    assert done.tasks_finished and all(code == 0 for _, code in done.tasks_finished)


@pytest.fixture
def answering(pump: Pump) -> Iterator[None]:
    """The pump running in a thread, so queries sent to the query queue are answered while the client waits."""
    stop = threading.Event()
    thread = threading.Thread(target=pump.run_forever, args=(stop,), kwargs={"interval_seconds": 0.1}, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=60)


# --- finding the instance -------------------------------------------------------------------------------------------


def should_find_the_instance_from_its_id_and_the_account_from_sts(
    emulated: EmulatedAwsInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given only the AWS environment (no account): the client asks STS, as Sleeper's does
    monkeypatch.delenv(ACCOUNT_ENV)
    # When a client is made from the instance id
    client = SleeperClient(emulated.instance_id)
    # Then it found the instance's config bucket and properties
    assert client.instance.config.config_bucket == emulated.config.config_bucket
    assert client.instance_id == emulated.instance_id


def should_find_the_instance_in_the_account_given(
    emulated: EmulatedAwsInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ACCOUNT_ENV)
    client = SleeperClient(emulated.instance_id, account_name=emulated.account)
    assert client.instance.config.config_bucket == emulated.config.config_bucket
    with pytest.raises(InstanceNotFoundError, match="check the instance id, the account and the region"):
        SleeperClient(emulated.instance_id, account_name="999999999999")


def should_refuse_an_instance_that_does_not_exist(emulated: EmulatedAwsInstance) -> None:
    with pytest.raises(InstanceNotFoundError, match="no Sleeper instance 'no-such-instance'"):
        SleeperClient("no-such-instance")


def should_use_the_boto3_objects_it_is_given(emulated: EmulatedAwsInstance) -> None:
    # Given boto3 objects of Sleeper's constructor, each recording the calls made through it
    calls: list[str] = []
    kwargs = {"region_name": emulated.region, "endpoint_url": emulated.endpoint}
    s3_client = boto3.client("s3", **kwargs)
    sqs_resource = boto3.resource("sqs", **kwargs)
    dynamo_resource = boto3.resource("dynamodb", **kwargs)
    for name, client in (("s3", s3_client), ("sqs", sqs_resource.meta.client)):
        client.meta.events.register("before-call", lambda model, name=name, **_: calls.append(f"{name}:{model.name}"))
    table = _table(emulated)
    # When a client made with them writes a batch
    sleeper = SleeperClient(
        emulated.instance_id, s3_client=s3_client, sqs_resource=sqs_resource, dynamo_resource=dynamo_resource
    )
    sleeper.write_single_batch(table, [{"key": 1, "value": "a"}])
    # Then the properties were read, the rows uploaded and the job sent through them, and the table index read on
    # the DynamoDB resource's endpoint
    assert "s3:GetObject" in calls and "s3:PutObject" in calls
    assert "sqs:SendMessageBatch" in calls or "sqs:SendMessage" in calls
    assert sleeper.instance.clients.dynamodb.meta.endpoint_url == emulated.endpoint
    _messages(emulated.instance(), operations.INGEST_JOB_Q)


def should_refuse_arguments_of_the_wrong_kind(emulated: EmulatedAwsInstance) -> None:
    with pytest.raises(ClientArgumentError, match="use_threads"):
        SleeperClient(emulated.instance_id, use_threads="yes")  # type: ignore[arg-type]
    with pytest.raises(ClientArgumentError, match="s3_fs"):
        SleeperClient(emulated.instance_id, s3_fs=object())


# --- writes ---------------------------------------------------------------------------------------------------------


def should_write_a_batch_as_sleepers_client_does_and_ingest_it(
    emulated: EmulatedAwsInstance, client: SleeperClient, pump: Pump
) -> None:
    # Given a table of two leaves
    table = _table(emulated, split_points=[10])
    rows = [{"key": k, "value": f"v{k}"} for k in (15, 3, 7, 12)]
    # When the client writes a batch with a job id
    assert client.write_single_batch(table, rows, job_id="my-job") is None
    # Then the rows are in <data bucket>/for_ingest/<job id>.parquet and an ingest job in Sleeper's JSON names them
    instance = emulated.instance()
    path = f"{instance.data_bucket}/for_ingest/my-job.parquet"
    assert pq.read_table(path, filesystem=instance.filesystem).to_pylist() == rows
    assert _messages(instance, operations.INGEST_JOB_Q) == [{"id": "my-job", "tableName": table, "files": [path]}]
    # When the instance runs the job (sent again: the message was read above)
    client.write_single_batch(table, rows, job_id="my-job")
    _ingest(pump)
    # Then the table holds the rows, and the tracker the job
    assert instance.table(table).query().to_pylist() == sorted(rows, key=lambda r: r["key"])
    status = instance.ingest_job_tracker.job("my-job")
    assert status is not None and status.status.name == "FINISHED"


def should_write_int_and_byte_array_fields_in_the_tables_types(
    emulated: EmulatedAwsInstance, client: SleeperClient, pump: Pump
) -> None:
    # Given a table with an IntType row key (Sleeper's client writes Python ints as int64, which its ingest refuses)
    table = _table(emulated, INT_SCHEMA)
    rows = [{"id": 2, "name": "b", "tags": b"\x00\x01"}, {"id": 1, "name": "a", "tags": b""}]
    # When the client writes them and the instance ingests them
    client.write_single_batch(table, rows)
    _ingest(pump)
    # Then they are in the table
    assert emulated.instance().table(table).query().to_pylist() == [rows[1], rows[0]]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"key": 1, "value": "a", "extra": 1}], "fields that table .* does not have: extra"),
        ([{"key": 1}], "'value' is not nullable but holds nulls"),
        ([{"key": "one", "value": "a"}], "do not suit the schema"),
        ({"key": 1, "value": "a"}, "rows must be a list of dicts"),
        (["key"], "rows must be a list of dicts, one per row"),
    ],
)
def should_refuse_rows_that_do_not_suit_the_table_and_send_nothing(
    emulated: EmulatedAwsInstance, client: SleeperClient, rows: Any, message: str
) -> None:
    table = _table(emulated)
    with pytest.raises(ClientArgumentError, match=message):
        client.write_single_batch(table, rows)
    assert _messages(emulated.instance(), operations.INGEST_JOB_Q) == []


def should_refuse_an_unknown_table_or_an_unsafe_job_id(emulated: EmulatedAwsInstance, client: SleeperClient) -> None:
    with pytest.raises(TableNotFoundError):
        client.write_single_batch("no-such-table", [{"key": 1, "value": "a"}])
    with pytest.raises(MessageError, match="job_id"):
        client.write_single_batch(_table(emulated), [{"key": 1, "value": "a"}], job_id="../escape")
    assert _messages(emulated.instance(), operations.INGEST_JOB_Q) == []


def should_send_the_rows_of_a_batch_writer_as_one_job(
    emulated: EmulatedAwsInstance, client: SleeperClient, pump: Pump
) -> None:
    # Given a table
    table = _table(emulated)
    # When rows are written in three batches through a batch writer
    with client.create_batch_writer(table, "batched") as writer:
        for start in (0, 100, 200):
            writer.write([{"key": k, "value": str(k)} for k in range(start, start + 100)])
    # Then one job names one file holding every row, and the instance ingests them
    assert writer.num_rows == 300
    instance = emulated.instance()
    assert _messages(instance, operations.INGEST_JOB_Q) == [
        {"id": "batched", "tableName": table, "files": [f"{instance.data_bucket}/for_ingest/batched.parquet"]}
    ]
    with client.create_batch_writer(table, "batched-again") as writer:
        writer.write([{"key": k, "value": str(k)} for k in range(300)])
    _ingest(pump)
    assert instance.table(table).query().num_rows == 300


def should_send_nothing_when_the_batch_writers_block_raises(
    emulated: EmulatedAwsInstance, client: SleeperClient
) -> None:
    table = _table(emulated)
    with pytest.raises(RuntimeError, match="stop"), client.create_batch_writer(table, "failed") as writer:
        writer.write([{"key": 1, "value": "a"}])
        raise RuntimeError("stop")
    assert _messages(emulated.instance(), operations.INGEST_JOB_Q) == []
    with pytest.raises(ClientArgumentError, match="with statement"):
        client.create_batch_writer(table).write([{"key": 1, "value": "a"}])


def should_send_ingest_bulk_import_and_batcher_messages_in_sleepers_json(
    emulated: EmulatedAwsInstance, client: SleeperClient
) -> None:
    # Given a table and files in S3 named as Sleeper's client names them
    instance = emulated.instance()
    table = _table(emulated)
    files = [f"{instance.data_bucket}/in/a.parquet", f"{instance.data_bucket}/in/dir"]
    # When the client sends an ingest job, a bulk import job with a platform spec and a class name, and a batcher
    # submit request
    client.ingest_parquet_files_from_s3(table, files, "ingest-1")
    client.bulk_import_parquet_files_from_s3(
        table, files, "bulk-1", "EMRServerless", {"sleeper.bulk.import.emr.serverless.executor.cores": "2"}, "X"
    )
    client.bulk_import_parquet_files_from_s3(table, files, "bulk-2", platform="EMR")
    client.submit_to_ingest_batcher(table, files)
    # Then each is on the queue Sleeper's client sends it to, in its JSON
    assert _messages(instance, operations.INGEST_JOB_Q) == [{"id": "ingest-1", "tableName": table, "files": files}]
    assert _messages(instance, operations.BULK_IMPORT_EMR_SERVERLESS_Q) == [
        {
            "id": "bulk-1",
            "tableName": table,
            "files": files,
            "className": "X",
            "platformSpec": {"sleeper.bulk.import.emr.serverless.executor.cores": "2"},
        }
    ]
    assert _messages(instance, operations.BULK_IMPORT_EMR_Q) == [{"id": "bulk-2", "tableName": table, "files": files}]
    assert _messages(instance, operations.INGEST_BATCHER_SUBMIT_Q) == [{"tableName": table, "files": files}]


def should_refuse_bad_bulk_import_and_batcher_requests_and_send_nothing(
    emulated: EmulatedAwsInstance, client: SleeperClient
) -> None:
    table = _table(emulated)
    with pytest.raises(ClientArgumentError, match="Platform must be one of"):
        client.bulk_import_parquet_files_from_s3(table, ["b/k"], platform="Spark")
    with pytest.raises(MessageError, match="lowercase alphanumerics"):
        client.bulk_import_parquet_files_from_s3(table, ["b/k"], id="Upper_Case")
    with pytest.raises(ClientArgumentError, match="non-empty list"):
        client.submit_to_ingest_batcher(table, [])
    with pytest.raises(ClientArgumentError, match="list of 'bucket/key' paths"):
        client.ingest_parquet_files_from_s3(table, "bucket/key")
    instance = emulated.instance()
    for queue in (operations.BULK_IMPORT_EMR_SERVERLESS_Q, operations.INGEST_BATCHER_SUBMIT_Q, operations.INGEST_JOB_Q):
        assert _messages(instance, queue) == []


# --- queries --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filled(emulated: EmulatedAwsInstance, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table of three leaves holding keys 0..59 (values v<key>), written through the client."""
    table = _table(emulated, split_points=[20, 40])
    SleeperClient(emulated.instance_id).write_single_batch(table, [{"key": k, "value": f"v{k}"} for k in range(60)])
    pump = emulated.pump(task_log_dir=str(tmp_path_factory.mktemp("ingest")), environment_extra={IDLE_WAIT_ENV: "1"})
    try:
        _ingest(pump)
    finally:
        pump.close()
    return table


def should_return_the_rows_the_table_api_reads(
    emulated: EmulatedAwsInstance, client: SleeperClient, filled: str, answering: None
) -> None:
    ours = emulated.instance().table(filled)
    # Exact keys, as a field and its values, and as whole row keys
    assert client.exact_key_query(filled, {"key": [5, 25, 45, 99]}) == ours.query(keys=[[5], [25], [45]]).to_pylist()
    assert client.exact_key_query(filled, [{"key": 59}, {"key": 0}]) == ours.query(keys=[[0], [59]]).to_pylist()
    # Ranges: (min, max) is [min, max); four values say which ends are included; None is no maximum
    assert client.range_key_query(filled, [{"key": (15, 45)}]) == ours.range(15, 45).to_pylist()
    four = client.range_key_query(filled, [{"key": [15, False, 45, True]}])
    assert four == ours.range(15, 45, min_inclusive=False, max_inclusive=True).to_pylist()
    assert client.range_key_query(filled, [{"key": (50, None)}]) == ours.range(50).to_pylist()
    # Several regions, and a query built with the request shapes
    query = Query("shaped", filled, [Region.from_field_to_tuple({"key": (0, 2)}), Region.exact_value("key", 30)])
    assert client.query_by_sqs(query) == ours.query(keys=[[0], [1], [30]]).to_pylist()
    # No row matches
    assert client.exact_key_query(filled, {"key": [1000]}) == []


def should_refuse_a_query_that_does_not_suit_the_table_before_sending_it(
    emulated: EmulatedAwsInstance, client: SleeperClient, filled: str
) -> None:
    with pytest.raises(QueryValidationError, match="not a row key field"):
        client.exact_key_query(filled, {"value": ["v1"]})
    with pytest.raises(QueryValidationError, match="integer"):
        client.range_key_query(filled, [{"key": ("a", "b")}])
    with pytest.raises(TableNotFoundError):
        client.exact_key_query("no-such-table", {"key": [1]})
    with pytest.raises(ClientArgumentError, match="keys must be either"):
        client.exact_key_query(filled, "key")  # type: ignore[arg-type]
    with pytest.raises(ClientArgumentError, match="tuple of length 2 or 4"):
        client.range_key_query(filled, [{"key": (1, 2, 3)}])
    assert _messages(emulated.instance(), operations.QUERY_Q) == []


def should_give_up_waiting_after_its_maximum_wait(emulated: EmulatedAwsInstance, filled: str) -> None:
    # Given a client that waits at most 0 s, and no pump answering queries
    client = SleeperClient(emulated.instance_id, max_wait_seconds=0)
    # When it queries, then it says it had no results in time, as Sleeper's client does (a RuntimeError)
    with pytest.raises(QueryTimeoutError, match="No results received from Sleeper within 0 s") as raised:
        client.exact_key_query(filled, {"key": [1]}, "never-answered")
    assert isinstance(raised.value, RuntimeError) and raised.value.query_id == "never-answered"
    _messages(emulated.instance(), operations.QUERY_Q)


def should_return_over_the_web_socket_what_the_queue_queries_return(
    emulated: EmulatedAwsInstance, client: SleeperClient, filled: str, answering: None
) -> None:
    # When the same keys and ranges are queried through the query queue and over the WebSocket API
    exact = client.exact_key_query(filled, {"key": [1, 25, 59]})
    over_socket = asyncio.run(client.web_socket_exact_key_query(filled, {"key": [1, 25, 59]}))
    ranged = asyncio.run(client.web_socket_range_key_query(filled, [{"key": {"min": 10, "max": 50}}]))
    # Then the WebSocket methods return the same rows, across leaves, in row key order
    assert over_socket == exact == [{"key": k, "value": f"v{k}"} for k in (1, 25, 59)]
    assert ranged == client.range_key_query(filled, [{"key": (10, True, 50, True)}])
    assert [r["key"] for r in ranged] == list(range(10, 51))


def should_fail_a_web_socket_query_as_the_api_says(emulated: EmulatedAwsInstance) -> None:
    # Given a query naming no table, sent past the client's own check, so the API's handler reports the error
    from sleeper.client.websocket import query_over_websocket

    body = Query("ws-gone", "no-such-table", [Region.from_field_to_exact_value({"key": 1})]).to_json()
    url = emulated.instance().properties.get("sleeper.query.websocket.api.url")
    # When the query is sent over the socket, then the API's error fails it
    with pytest.raises(QueryFailedError, match="no-such-table") as failed:
        asyncio.run(query_over_websocket(url, emulated.settings, body, "ws-gone", timeout_seconds=30))
    assert failed.value.query_id == "ws-gone"
    # And credentials the emulator does not know are refused at connect
    from sleeper.adapters.aws.clients import AwsSettings

    unsigned = AwsSettings(emulated.region, emulated.endpoint, access_key_id="testing", secret_access_key="wrong")
    with pytest.raises(QueryFailedError, match="HTTP 403"):
        asyncio.run(query_over_websocket(url, unsigned, body, "ws-gone", timeout_seconds=30))


def should_send_a_bulk_export_to_the_bulk_export_queue_in_sleepers_json(
    emulated: EmulatedAwsInstance, client: SleeperClient, filled: str
) -> None:
    # Given exports built as Sleeper's client builds them, and as this package's bulk export model builds one
    instance = emulated.instance()
    table_id = instance.table(filled).table_id
    # When the client sends them
    assert client.bulk_export(BulkExportQuery("export-1", table_name=filled)) is None
    client.bulk_export(BulkExportQuery("export-2", table_id=table_id))
    client.bulk_export(ExportModel(export_id="export-3", table_name=filled))
    # Then they are on the bulk export queue in Sleeper's JSON (the emulated instance does not run bulk exports yet:
    # it has no bulk export cluster or bucket)
    assert sorted(_messages(instance, operations.BULK_EXPORT_Q), key=lambda m: m["exportId"]) == [
        {"exportId": "export-1", "tableName": filled},
        {"exportId": "export-2", "tableId": table_id},
        {"exportId": "export-3", "tableName": filled},
    ]


def should_refuse_an_export_of_an_unknown_table_or_with_an_unsafe_id(
    emulated: EmulatedAwsInstance, client: SleeperClient, filled: str
) -> None:
    with pytest.raises(TableNotFoundError):
        client.bulk_export(BulkExportQuery(table_name="no-such-table"))
    with pytest.raises(TableNotFoundError):
        client.bulk_export(BulkExportQuery(table_id="no-such-id"))
    with pytest.raises(BulkExportQueryError, match="export id"):
        client.bulk_export(BulkExportQuery("../up", table_name=filled))
    assert _messages(emulated.instance(), operations.BULK_EXPORT_Q) == []
