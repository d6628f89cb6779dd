"""Builds Athena Query Federation requests in the wire shapes the SDK (serialisation version 4) sends.

Arrow data is encoded here with pyarrow directly (not with sleeper.athena), so tests check the connector against
an independent encoding. Value blocks hold one column named ``col1``, as the SDK writes them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

CATALOG = "sleeper"
QUERY_ID = "query-1"


def identity(config_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "id": "UNKNOWN",
        "principal": "UNKNOWN",
        "account": "123456789012",
        "arn": "arn:aws:iam::123456789012:user/tester",
        "tags": {},
        "groups": [],
        "configOptions": dict(config_options or {}),
    }


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def schema_b64(schema: pa.Schema) -> str:
    return b64(schema.serialize().to_pybytes())


def block(batch: pa.RecordBatch, *, legacy: bool = False) -> dict[str, Any]:
    """A block as the SDK writes one; ``legacy`` writes the pre-version-3 IPC format."""
    if legacy:
        options = ipc.IpcWriteOptions(use_legacy_format=True, metadata_version=ipc.MetadataVersion.V4)
        empty = pa.BufferOutputStream()
        with ipc.new_stream(empty, batch.schema, options=options):
            pass
        full = pa.BufferOutputStream()
        with ipc.new_stream(full, batch.schema, options=options) as writer:
            writer.write_batch(batch)
        schema_bytes = empty.getvalue().to_pybytes()[:-4]
        batch_bytes = full.getvalue().to_pybytes()[len(schema_bytes) : -4]
        return {"aId": "allocator", "schema": b64(schema_bytes), "records": b64(batch_bytes) if batch.num_rows else ""}
    return {
        "aId": "allocator",
        "schema": schema_b64(batch.schema),
        "records": b64(batch.serialize().to_pybytes()) if batch.num_rows else "",
    }


def value_block(values: Sequence[object], arrow_type: pa.DataType) -> dict[str, Any]:
    return block(pa.record_batch([pa.array(values, type=arrow_type)], names=["col1"]))


def arrow_type_json(arrow_type: pa.DataType) -> dict[str, Any]:
    if pa.types.is_integer(arrow_type):
        return {"@type": "Int", "bitWidth": arrow_type.bit_width, "isSigned": pa.types.is_signed_integer(arrow_type)}
    if pa.types.is_string(arrow_type):
        return {"@type": "Utf8"}
    if pa.types.is_binary(arrow_type):
        return {"@type": "Binary"}
    raise ValueError(arrow_type)


def equatable(
    values: Sequence[object], arrow_type: pa.DataType, *, white_list: bool = True, null_allowed: bool = False
) -> dict[str, Any]:
    return {
        "@type": "EquatableValueSet",
        "valueBlock": value_block(values, arrow_type),
        "whiteList": white_list,
        "nullAllowed": null_allowed,
    }


def marker(value: object, bound: str, arrow_type: pa.DataType) -> dict[str, Any]:
    """A range end; ``value`` None is unbounded (pass bound ABOVE for a low end, BELOW for a high end)."""
    if value is None:
        empty = pa.record_batch([pa.array([], type=arrow_type)], names=["col1"])
        return {"valueBlock": block(empty), "bound": bound, "nullValue": True}
    return {"valueBlock": value_block([value], arrow_type), "bound": bound, "nullValue": False}


def sorted_ranges(
    ranges: Sequence[tuple[object, str, object, str]], arrow_type: pa.DataType, *, null_allowed: bool = False
) -> dict[str, Any]:
    """Ranges as (low value, low bound, high value, high bound); a None value is unbounded."""
    return {
        "@type": "SortedRangeSet",
        "type": arrow_type_json(arrow_type),
        "ranges": [
            {"low": marker(lo, lb, arrow_type), "high": marker(hi, hb, arrow_type)} for lo, lb, hi, hb in ranges
        ],
        "nullAllowed": null_allowed,
    }


def all_or_none(arrow_type: pa.DataType, *, all_values: bool, null_allowed: bool) -> dict[str, Any]:
    return {
        "@type": "AllOrNoneValueSet",
        "type": arrow_type_json(arrow_type),
        "all": all_values,
        "nullAllowed": null_allowed,
    }


def constraints(summary: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"summary": dict(summary or {}), "expression": [], "orderByClause": [], "limit": -1}


def _metadata(kind: str, **fields: Any) -> dict[str, Any]:
    return {"@type": kind, "identity": identity(), "queryId": QUERY_ID, "catalogName": CATALOG, **fields}


def ping() -> dict[str, Any]:
    return {"@type": "PingRequest", "identity": identity(), "catalogName": CATALOG, "queryId": QUERY_ID}


def list_schemas() -> dict[str, Any]:
    return _metadata("ListSchemasRequest")


def list_tables(schema_name: str, *, next_token: str | None = None, page_size: int = -1) -> dict[str, Any]:
    return _metadata("ListTablesRequest", schemaName=schema_name, nextToken=next_token, pageSize=page_size)


def table_name(schema_name: str, table: str) -> dict[str, str]:
    return {"schemaName": schema_name, "tableName": table}


def get_table(schema_name: str, table: str) -> dict[str, Any]:
    return _metadata("GetTableRequest", tableName=table_name(schema_name, table))


def get_table_layout(
    schema_name: str, table: str, table_schema: pa.Schema, summary: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return _metadata(
        "GetTableLayoutRequest",
        tableName=table_name(schema_name, table),
        constraints=constraints(summary),
        schema=schema_b64(table_schema),
        partitionColumns=[],
    )


def get_splits(
    schema_name: str,
    table: str,
    partitions: Mapping[str, Any],
    summary: Mapping[str, Any] | None = None,
    *,
    continuation_token: str | None = None,
) -> dict[str, Any]:
    return _metadata(
        "GetSplitsRequest",
        tableName=table_name(schema_name, table),
        partitions=dict(partitions),
        partitionColumns=[],
        constraints=constraints(summary),
        continuationToken=continuation_token,
    )


def read_records(
    schema_name: str,
    table: str,
    columns: pa.Schema,
    split: Mapping[str, Any],
    summary: Mapping[str, Any] | None = None,
    *,
    max_block_size: int = 16_000_000,
    max_inline_block_size: int = 5_242_880,
) -> dict[str, Any]:
    return {
        "@type": "ReadRecordsRequest",
        "identity": identity(),
        "queryId": QUERY_ID,
        "catalogName": CATALOG,
        "tableName": table_name(schema_name, table),
        "schema": schema_b64(columns),
        "split": dict(split),
        "constraints": constraints(summary),
        "maxBlockSize": str(max_block_size),
        "maxInlineBlockSize": str(max_inline_block_size),
    }


def decode_block(data: Mapping[str, Any]) -> pa.RecordBatch:
    """Reads a block returned by the connector, with pyarrow directly."""
    schema = ipc.read_schema(pa.py_buffer(base64.b64decode(data["schema"])))
    if not data["records"]:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return ipc.read_record_batch(pa.py_buffer(base64.b64decode(data["records"])), schema)


def decode_schema(text: str) -> pa.Schema:
    return ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
