"""Reading federation requests and writing responses in the SDK's wire shapes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.athena.arrow_ipc import decode_block, encode_block, encode_record_batch, encode_schema
from sleeper.athena.exceptions import ENTITY_NOT_FOUND, INVALID_INPUT, AthenaConnectorError, lambda_error_payload
from sleeper.athena.predicates import EquatableValueSet, SortedRangeSet
from sleeper.athena.protocol import (
    SERDE_VERSION,
    EncryptionKey,
    GetSplitsRequest,
    GetTableLayoutRequest,
    ListTablesRequest,
    PingRequest,
    ReadRecordsRequest,
    S3SpillLocation,
    Split,
    parse_request,
    ping_response,
    remote_read_records_response,
)
from tests.unit.athena import federation_requests as fr


def should_answer_ping_with_source_type_and_serde_version() -> None:
    # Given
    request = parse_request(fr.ping())

    # When
    response = ping_response(request)  # type: ignore[arg-type]

    # Then
    assert isinstance(request, PingRequest)
    assert response == {
        "@type": "PingResponse",
        "catalogName": fr.CATALOG,
        "queryId": fr.QUERY_ID,
        "sourceType": "Sleeper",
        "capabilities": 24,
        "serDeVersion": SERDE_VERSION,
    }


def should_read_list_tables_paging() -> None:
    # When
    request = parse_request(fr.list_tables("inst", next_token="2", page_size=5))

    # Then
    assert request == ListTablesRequest(
        catalog_name=fr.CATALOG,
        query_id=fr.QUERY_ID,
        config_options={},
        schema_name="inst",
        next_token="2",
        page_size=5,
    )


def should_read_layout_request_with_constraints_summary() -> None:
    # Given
    columns = pa.schema([pa.field("key", pa.int64())])
    event = fr.get_table_layout(
        "inst",
        "t",
        columns,
        {"key": fr.sorted_ranges([(10, "EXACTLY", 20, "BELOW")], pa.int64()), "v": fr.equatable(["a"], pa.string())},
    )

    # When
    request = parse_request(event)

    # Then
    assert isinstance(request, GetTableLayoutRequest)
    assert request.schema == columns
    key_set = request.summary["key"]
    assert isinstance(key_set, SortedRangeSet)
    assert (key_set.ranges[0].low.value, key_set.ranges[0].low.bound.value) == (10, "EXACTLY")
    assert (key_set.ranges[0].high.value, key_set.ranges[0].high.bound.value) == (20, "BELOW")
    value_set = request.summary["v"]
    assert isinstance(value_set, EquatableValueSet)
    assert value_set.values.to_pylist() == ["a"]


def should_read_splits_request_partitions_in_legacy_ipc_format() -> None:
    # Given
    partitions = pa.record_batch([pa.array(['["a.parquet"]'])], names=["_SleeperRelevantFiles"])
    event = fr.get_splits("inst", "t", fr.block(partitions, legacy=True), continuation_token="3")

    # When
    request = parse_request(event)

    # Then
    assert isinstance(request, GetSplitsRequest)
    assert request.partitions.equals(partitions)
    assert request.continuation_token == "3"


def should_read_records_request_with_split_and_block_sizes_as_text() -> None:
    # Given
    split = {
        "spillLocation": {"@type": "S3SpillLocation", "bucket": "b", "key": "p/q/s", "directory": True},
        "encryptionKey": {"key": fr.b64(b"k" * 32), "nonce": fr.b64(b"n" * 12)},
        "properties": {"_SleeperRelevantFiles": "s3a://d/f.parquet"},
    }
    columns = pa.schema([pa.field("key", pa.string())])

    # When
    request = parse_request(fr.read_records("inst", "t", columns, split, max_block_size=100, max_inline_block_size=50))

    # Then
    assert isinstance(request, ReadRecordsRequest)
    assert request.split == Split(
        spill_location=S3SpillLocation(bucket="b", key="p/q/s"),
        encryption_key=EncryptionKey(key=b"k" * 32, nonce=b"n" * 12),
        properties={"_SleeperRelevantFiles": "s3a://d/f.parquet"},
    )
    assert (request.max_block_size, request.max_inline_block_size) == (100, 50)
    assert request.split.to_dict() == split


def should_reject_unknown_request_type_as_invalid_input() -> None:
    # When / Then
    with pytest.raises(AthenaConnectorError) as caught:
        parse_request({"@type": "DropTableRequest"})
    assert caught.value.error_code == INVALID_INPUT


def should_give_lambda_error_shape_with_error_code_in_message() -> None:
    # Given
    try:
        raise AthenaConnectorError("no table 'x'", error_code=ENTITY_NOT_FOUND)
    except AthenaConnectorError as e:
        error = e

    # When
    payload = lambda_error_payload(error)

    # Then
    assert payload["errorType"] == "AthenaConnectorError"
    assert payload["errorMessage"] == "ENTITY_NOT_FOUND_EXCEPTION: no table 'x'"
    assert isinstance(payload["stackTrace"], list) and payload["stackTrace"]


def should_round_trip_blocks_and_write_empty_records_as_empty_text() -> None:
    # Given
    batch = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array([b"x", None])], names=["a", "b"])
    empty = batch.slice(0, 0)

    # When
    encoded, encoded_empty = encode_block(batch), encode_block(empty)

    # Then
    assert fr.decode_block(encoded).equals(batch)
    assert decode_block(fr.block(batch, legacy=True)).equals(batch)
    assert encoded_empty["records"] == ""
    assert fr.decode_block(encoded_empty).schema == batch.schema


def should_write_legacy_ipc_messages_without_continuation_marker() -> None:
    # Given
    batch = pa.record_batch([pa.array([5, 6], pa.int64())], names=["a"])

    # When
    legacy_schema, legacy_batch = encode_schema(batch.schema, legacy=True), encode_record_batch(batch, legacy=True)
    modern_batch = encode_record_batch(batch)

    # Then
    assert modern_batch[:4] == b"\xff\xff\xff\xff"
    assert legacy_batch[:4] != b"\xff\xff\xff\xff"
    schema = pa.ipc.read_schema(pa.py_buffer(legacy_schema))
    assert pa.ipc.read_record_batch(pa.py_buffer(legacy_batch), schema).equals(batch)


def should_list_spilled_blocks_with_key_in_remote_response() -> None:
    # Given
    schema = pa.schema([pa.field("a", pa.int64())])
    key = EncryptionKey(key=b"\x01" * 32, nonce=b"\x02" * 12)

    # When
    response = remote_read_records_response("c", schema, [S3SpillLocation(bucket="b", key="k.0", directory=False)], key)

    # Then
    assert response["@type"] == "RemoteReadRecordsResponse"
    assert fr.decode_schema(response["schema"]) == schema
    assert response["remoteBlocks"] == [{"@type": "S3SpillLocation", "bucket": "b", "key": "k.0", "directory": False}]
    assert response["encryptionKey"] == {"key": fr.b64(b"\x01" * 32), "nonce": fr.b64(b"\x02" * 12)}
