"""Results publishers at Sleeper's semantics: SQS results in batches of the configured size with the schema,
S3 results with the query's codec, row group and page size, WebSocket rows in messages under API Gateway's limit, and
results configs this instance cannot honour refused with the reason (tracked FAILED, nothing run)."""

from __future__ import annotations

import json
import math
import random
import string
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.core.websocket import MESSAGE_MAX_BYTES, WebSocketTarget
from sleeper.emulator.provision import provision_instance
from sleeper.io.thrift_compact import decode_struct
from sleeper.query.entry import handle_leaf_query, handle_query
from sleeper.query.publishers import ROWS_PAYLOAD_MAX_BYTES, rows_message_batches
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, query_results_dir
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.tables import SleeperRuntime

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.STRING), Field("blob", PrimitiveType.BYTE_ARRAY)],
)
ROWS = 10_000


def _instance(
    tmp_path: Path,
    split_points: list[int] | None = None,
    properties: dict[str, str] | None = None,
    data: pa.Table | None = None,
) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    if properties:
        edited = instance.properties.copy()
        for name, value in properties.items():
            edited.set(name, value)
        instance.save_instance_properties(edited)
    table = instance.create_table("t", SCHEMA, split_points=split_points)
    if data is None:
        keys = pa.array(range(ROWS), pa.int64())
        data = pa.table({"key": keys, "value": [f"v{i}" for i in range(ROWS)], "blob": [b"\x00\x01"] * ROWS})
    table.ingest(data)
    return instance


def _run(instance: SleeperRuntime, query_id: str, config: dict[str, str]) -> None:
    """Sends a whole-table query with a results publisher config through the query and leaf entries."""
    query = Query(
        query_id=query_id,
        table_name="t",
        regions=(Region.whole(SCHEMA),),
        processing=QueryProcessingConfig(results_publisher_config=config),
    )
    handle_query(instance, QuerySerDe.for_schema(SCHEMA).to_json(query))
    leaf_queue = instance.queue(LEAF_PARTITION_QUERY_QUEUE)
    while messages := leaf_queue.receive(10):
        for message in messages:
            handle_leaf_query(instance, message.body)
            leaf_queue.delete(message.receipt_handle)


def _results_messages(instance: LocalInstance) -> list[dict[str, Any]]:
    queue = instance.query_results_queue
    found = []
    while messages := queue.receive(10):
        for message in messages:
            found.append(json.loads(message.body))
            queue.delete(message.receipt_handle)
    return found


@pytest.mark.parametrize(("config", "batch_size"), [({}, 2000), ({"batchSize": "3000"}, 3000)])
def should_send_sqs_results_in_batches_of_the_batch_size_each_with_the_schema(
    tmp_path: Path, config: dict[str, str], batch_size: int
) -> None:
    # Given a table of 10,000 rows on one leaf
    instance = _instance(tmp_path)
    # When they are queried with SQS results (the instance's batch size, or the query's)
    _run(instance, "sqs-1", {"destination": "SQS", **config})
    # Then they arrive in ceil(10000 / batch size) messages, each with the schema, in order, every row once
    messages = _results_messages(instance)
    assert len(messages) == math.ceil(ROWS / batch_size)
    assert all(m["queryId"] == "sqs-1" and m["schema"] == SCHEMA.to_dict() for m in messages)
    ordered = sorted(messages, key=lambda m: m["batchNumber"])
    keys = [row["key"] for m in ordered for row in m["rows"]]
    assert keys == list(range(ROWS))
    assert ordered[0]["rows"][0] == {"key": 0, "value": "v0", "blob": "AAE="}
    # And the tracker counts every row
    parent = instance.query_tracker.status("sqs-1")
    assert parent is not None and (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, ROWS)


def should_send_each_sub_query_its_own_batches(tmp_path: Path) -> None:
    # Given 10,000 rows over two leaves of 4,000 and 6,000 rows
    instance = _instance(tmp_path, split_points=[4000])
    # When they are queried with SQS results in batches of 2,000
    _run(instance, "sqs-2", {"destination": "SQS"})
    # Then each sub-query sends ceil(its rows / 2000) batches, numbered from 1
    by_sub_query: dict[str, list[int]] = {}
    for message in _results_messages(instance):
        by_sub_query.setdefault(message["subQueryId"], []).append(message["batchNumber"])
    assert sorted(sorted(numbers) for numbers in by_sub_query.values()) == [[1, 2], [1, 2, 3]]


def should_write_s3_results_with_the_query_codec_and_row_group_size(tmp_path: Path) -> None:
    # Given a table of 10,000 rows
    instance = _instance(tmp_path)
    # When they are queried with S3 results asking for snappy and 16 KiB row groups
    _run(instance, "s3-1", {"destination": "S3", "compressionCodec": "snappy", "rowGroupSize": "16384"})
    # Then the results file is written with that codec, in row groups of that size
    (path,) = Path(query_results_dir(str(instance.directory / "query-results"), "s3-1")).glob("*.parquet")
    metadata = pq.ParquetFile(path).metadata
    assert metadata.row_group(0).column(0).compression == "SNAPPY"
    assert metadata.num_rows == ROWS
    _assert_row_groups_of(path, 16384)


@pytest.mark.parametrize("row_group_bytes", [16384, 65536])
def should_fill_each_row_group_to_the_requested_row_group_size(tmp_path: Path, row_group_bytes: int) -> None:
    # Given a table of 10,000 rows (about 230 KB as Arrow data)
    instance = _instance(tmp_path)
    # When they are queried with S3 results asking for a row group size
    _run(instance, "s3-rg", {"destination": "S3", "rowGroupSize": str(row_group_bytes)})
    # Then every row group holds that size of data, to within a row group's last rows
    (path,) = Path(query_results_dir(str(instance.directory / "query-results"), "s3-rg")).glob("*.parquet")
    _assert_row_groups_of(path, row_group_bytes)


def _assert_row_groups_of(path: Path, row_group_bytes: int) -> None:
    """``rowGroupSize`` is in bytes, as in Sleeper (Parquet's row group size; ``S3ResultsOutput`` passes it to the
    writer), so a row group holds as many rows as fit in it: here measured as the row group's rows read back as Arrow
    data, the measure the writer cuts at. Every row group but the last holds between 90% and 100% of the size; the
    last no more; together every row once, in order."""
    parquet = pq.ParquetFile(path)
    groups = [parquet.read_row_group(i) for i in range(parquet.metadata.num_row_groups)]
    sizes = [group.nbytes for group in groups]
    assert len(groups) >= math.ceil(sum(sizes) / row_group_bytes) > 1
    assert all(0.9 * row_group_bytes <= size <= row_group_bytes for size in sizes[:-1]), sizes
    assert 0 < sizes[-1] <= row_group_bytes
    assert [k for group in groups for k in group["key"].to_pylist()] == list(range(ROWS))


def should_write_s3_results_with_the_instance_defaults(tmp_path: Path) -> None:
    # Given an instance whose default results row group size is 32 KiB (the table's codec is zstd)
    instance = _instance(tmp_path, properties={"sleeper.default.query.results.rowgroup.size": "32768"})
    # When the table is queried with the default results destination
    _run(instance, "s3-2", {})
    # Then the file uses the table's codec and the instance's row group size
    (path,) = Path(query_results_dir(str(instance.directory / "query-results"), "s3-2")).glob("*.parquet")
    metadata = pq.ParquetFile(path).metadata
    assert metadata.row_group(0).column(0).compression == "ZSTD"
    _assert_row_groups_of(path, 32768)


def _data_page_sizes(path: Path, column: int) -> list[int]:
    """The uncompressed size of each data page of a column's chunk in the first row group, read from the page headers
    (Thrift compact ``PageHeader``: 1 type, 2 uncompressed size, 3 compressed size) that pyarrow does not expose."""
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(column)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = path.read_bytes()[start : start + chunk.total_compressed_size]
    sizes, offset = [], 0
    while offset < len(data):
        header, offset = decode_struct(data, offset)
        if header.get(1) in (_DATA_PAGE, _DATA_PAGE_V2):
            sizes.append(header.get(2))
        offset += header.get(3)
    return sizes


_DATA_PAGE, _DATA_PAGE_V2 = 0, 3


@pytest.mark.parametrize(
    ("properties", "paged_config", "unpaged_config"),
    [
        ({}, {"destination": "S3", "pageSize": "16384"}, {}),
        ({"sleeper.default.query.results.page.size": "16384"}, {}, {"destination": "S3", "pageSize": "131072"}),
    ],
    ids=["query-over-default", "instance-default-under-query"],
)
def should_cut_data_pages_at_the_requested_page_size(
    tmp_path: Path, properties: dict[str, str], paged_config: dict[str, str], unpaged_config: dict[str, str]
) -> None:
    # Given a table of 10,000 rows of random keys, strings and bytes (so that each column encodes to 40-80 KB, under
    # 128 KiB, whatever the encoding), and an instance default page size
    rng = random.Random(7)
    data = pa.table(
        {
            "key": pa.array([rng.getrandbits(62) - 2**61 for _ in range(ROWS)], pa.int64()),
            "value": ["".join(rng.choices(string.ascii_letters, k=8)) for _ in range(ROWS)],
            "blob": [rng.randbytes(4) for _ in range(ROWS)],
        }
    )
    instance = _instance(tmp_path, properties=properties, data=data)
    # When they are queried with S3 results and 16 KiB pages (asked by the query, or the instance's default), and
    # with 128 KiB pages (the instance's default, or asked by the query)
    _run(instance, "paged", paged_config)
    _run(instance, "unpaged", unpaged_config)
    results = instance.directory / "query-results"
    (paged,) = Path(query_results_dir(str(results), "paged")).glob("*.parquet")
    (unpaged,) = Path(query_results_dir(str(results), "unpaged")).glob("*.parquet")
    # Then each column's pages are cut once they reach 16 KiB (the writer checks after each batch of 1,024 values,
    # which is under 16 KiB here, so a page is under twice the size); with 128 KiB each column is one page
    for column in range(3):
        sizes = _data_page_sizes(paged, column)
        assert len(sizes) > 1
        assert all(16384 <= size < 2 * 16384 for size in sizes[:-1]), sizes
        assert 0 < sizes[-1] < 2 * 16384
        assert len(_data_page_sizes(unpaged, column)) == 1
    assert pq.read_table(paged).equals(pq.read_table(unpaged))


@pytest.mark.aws
def should_write_s3_results_to_the_bucket_the_query_names(tmp_path: Path) -> None:
    # Given a table of four leaves on an instance on moto, and another bucket
    from sleeper.adapters.aws.clients import s3_client
    from sleeper.adapters.aws.resources import create_bucket
    from sleeper.core.operations import LEAF_PARTITION_QUERY_Q
    from sleeper.core.properties import instance_cdk as cdk
    from sleeper.io.filesystem import resolve
    from sleeper.runtime.aws.instance import AwsInstance
    from tests.contract.aws_backends import aws_settings, new_instance_id

    settings = aws_settings()
    instance = AwsInstance(
        provision_instance(settings, new_instance_id(), queues=[LEAF_PARTITION_QUERY_Q]), table_cache_seconds=0
    )
    other = f"results-elsewhere-{instance.instance_id}".lower()[:63]
    s3 = s3_client(settings)
    create_bucket(s3, other, settings.region)
    table = instance.create_table("t", SCHEMA, split_points=[2500, 5000, 7500])
    keys = pa.array(range(ROWS), pa.int64())
    table.ingest(
        pa.table({"key": keys, "value": [f"v{i}" for i in range(ROWS)], "blob": [b"\x00\x01"] * ROWS}), direct=True
    )
    # When it is queried with S3 results in that bucket, through the query and leaf entries
    _run(instance, "to-bucket", {"destination": "S3", "bucket": other})
    # Then each sub-query's file is in the named bucket, under the query's directory, and none in the results bucket
    tracked = instance.query_tracker.status("to-bucket")
    assert tracked is not None and tracked.last_known_state is QueryState.COMPLETED, tracked
    written = [o["Key"] for o in s3.list_objects_v2(Bucket=other).get("Contents", [])]
    assert len(written) == 4 and all(k.startswith("query-to-bucket/") and k.endswith(".parquet") for k in written)
    default = instance.properties.get(cdk.QUERY_RESULTS_BUCKET)
    assert default is not None and default != other
    assert s3.list_objects_v2(Bucket=default).get("KeyCount") == 0
    # And together they hold every row of the table
    filesystem, root = resolve(f"s3a://{other}", instance.filesystem_options)
    parts = [pq.read_table(f"{root}/{key}", filesystem=filesystem) for key in written]
    assert sorted(k for part in parts for k in part["key"].to_pylist()) == list(range(ROWS))


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"destination": "S3", "compresionCodec": "zstd"}, "compresionCodec is not a setting of the S3 destination"),
        ({"destination": "SQS", "batchSize": "0"}, "batchSize must be a positive whole number"),
        ({"destination": "S3", "bucket": "other"}, "a local instance writes results under its own directory"),
        ({"destination": "SQS", "sqsResultsUrl": "https://sqs/x"}, "is not this instance's results queue"),
        ({"destination": "WEBSOCKET", "awsAccessKey": "a"}, "credentials are never taken from a query"),
        ({"destination": "WEBSOCKET"}, "needs webSocketManagementApiEndpoint and webSocketConnectionId"),
        ({"destination": "FTP"}, "unknown results destination 'FTP'"),
        ({"bucket": "b"}, 'resultsPublisherConfig has no "destination"'),
    ],
)
def should_fail_a_query_whose_results_config_cannot_be_honoured(
    tmp_path: Path, config: dict[str, str], reason: str
) -> None:
    # Given a table
    instance = _instance(tmp_path)
    # When it is queried with a results config this instance cannot honour
    _run(instance, "bad", config)
    # Then the query is tracked FAILED with the reason, and no sub-query ran
    tracked = instance.query_tracker.status("bad")
    assert tracked is not None and tracked.last_known_state is QueryState.FAILED
    assert reason in (tracked.error_message or "")
    assert instance.query_tracker.sub_queries("bad") == []


def should_fail_a_websocket_destination_on_an_instance_without_a_websocket_api(tmp_path: Path) -> None:
    # Given a local instance (it has no WebSocket API)
    instance = _instance(tmp_path)
    # When a query asks for its results on a WebSocket connection
    target = {"webSocketManagementApiEndpoint": "https://api.example/live", "webSocketConnectionId": "c1"}
    _run(instance, "ws", {"destination": "WEBSOCKET", **target})
    # Then it is tracked FAILED saying so
    tracked = instance.query_tracker.status("ws")
    assert tracked is not None and "has no WebSocket API" in (tracked.error_message or "")


def should_keep_every_websocket_rows_message_under_the_payload_limit() -> None:
    # Given 2 MB of rows
    rows = 4000
    batch = pa.record_batch(
        {
            "key": pa.array(range(rows), pa.int64()),
            "value": ["x" * 500] * rows,
            "blob": pa.array([b"\xff" * 10] * rows, pa.binary()),
        }
    )
    assert batch.nbytes > 2_000_000
    sent: list[str] = []
    # When they are sent as rows messages
    count = rows_message_batches("q", [batch.slice(0, 1500), batch.slice(1500)], SCHEMA, sent.append)
    # Then several messages carry every row once, in order, none over Sleeper's payload limit
    assert count == rows
    assert len(sent) > 10
    assert max(len(m.encode()) for m in sent) <= ROWS_PAYLOAD_MAX_BYTES < MESSAGE_MAX_BYTES
    decoded = [json.loads(m) for m in sent]
    assert {m["message"] for m in decoded} == {"rows"} and {m["queryId"] for m in decoded} == {"q"}
    assert [r["key"] for m in decoded for r in m["rows"]] == list(range(rows))


def should_cut_websocket_rows_messages_at_the_max_batch_size() -> None:
    batch = pa.record_batch({"key": pa.array(range(10), pa.int64()), "value": ["a"] * 10, "blob": [b""] * 10})
    sent: list[str] = []
    rows_message_batches("q", [batch], SCHEMA, sent.append, max_rows=4)
    assert [len(json.loads(m)["rows"]) for m in sent] == [4, 4, 2]


def should_refuse_a_websocket_endpoint_that_is_not_https() -> None:
    from sleeper.query.results_config import ResultsConfigError, read_results_config

    with pytest.raises(ResultsConfigError, match="must be the https URL"):
        read_results_config(
            {
                "destination": "WEBSOCKET",
                "webSocketManagementApiEndpoint": "http://attacker.example/live",
                "webSocketConnectionId": "c",
            }
        )
    ok = read_results_config(
        {"destination": "WEBSOCKET", "webSocketManagementApiEndpoint": "https://a/live/", "webSocketConnectionId": "c"}
    )
    assert getattr(ok, "target", None) == WebSocketTarget(endpoint="https://a/live", connection_id="c")
