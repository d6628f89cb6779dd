"""The Athena Query Federation wire protocol: the JSON a connector Lambda receives and returns.

Every request and response is an object whose ``@type`` names its class in the Athena Query Federation SDK
(``PingRequest``, ``ListSchemasRequest``, ``ListTablesRequest``, ``GetTableRequest``, ``GetTableLayoutRequest``,
``GetSplitsRequest``, ``ReadRecordsRequest``, ``GetDataSourceCapabilitiesRequest``). Requests carry the caller's
``identity``, the ``queryId`` and the ``catalogName``; tables are named ``{"schemaName", "tableName"}``. Arrow schemas
and blocks travel as base64 IPC messages (see :mod:`sleeper.athena.arrow_ipc`).

Of the ``identity`` only ``configOptions`` (a spill location) is read. Its principal tags, ARN and groups are not: they
are part of the event body, which whoever invokes the function writes, so they prove nothing about the caller.

The connector answers a ping with serialisation version :data:`SERDE_VERSION` (4): Athena then sends requests in that
version's shapes, and expects Arrow data in the current IPC format. Requests are read leniently: fields of other
versions (``expression``, ``orderByClause``, ``limit``, ``queryPassthroughArguments``, ``queryPlan``) are ignored, and
both Arrow IPC formats are accepted.

Value types beyond Sleeper's travel as the SDK's types (:func:`athena_value_type`): ``FloatType`` FLOAT4 (float32),
``DoubleType`` FLOAT8 (float64), ``BooleanType`` BIT (bool), ``DateType`` DATEDAY (date32), a ``TimestampType`` with a
time zone TIMESTAMPMILLITZ (Arrow ``timestamp[ms, tz]``, the instant, in the field's zone) and one without DATEMILLI
(Arrow ``date64``: milliseconds since the epoch of the wall-clock time, which the SDK reads as a local date-time).
Athena's timestamps are milliseconds, so finer units are truncated towards the past (:func:`to_athena_column`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper.athena.arrow_ipc import b64decode, b64encode, decode_block, decode_schema, encode_block, encode_schema
from sleeper.athena.exceptions import INVALID_INPUT, OPERATION_NOT_SUPPORTED, AthenaConnectorError
from sleeper.athena.predicates import ValueSet, parse_summary
from sleeper.core import TimestampType, ValueType

__all__ = [
    "CAPABILITIES",
    "SERDE_VERSION",
    "SOURCE_TYPE",
    "athena_value_type",
    "to_athena_column",
    "UNLIMITED_PAGE_SIZE",
    "EncryptionKey",
    "FederationRequest",
    "GetDataSourceCapabilitiesRequest",
    "GetSplitsRequest",
    "GetTableLayoutRequest",
    "GetTableRequest",
    "ListSchemasRequest",
    "ListTablesRequest",
    "PingRequest",
    "ReadRecordsRequest",
    "S3SpillLocation",
    "Split",
    "TableName",
    "capabilities_response",
    "get_splits_response",
    "get_table_layout_response",
    "get_table_response",
    "list_schemas_response",
    "list_tables_response",
    "parse_request",
    "ping_response",
    "read_records_response",
    "remote_read_records_response",
]

_ATHENA_VALUE_TYPES = {
    ValueType.FLOAT: pa.float32(),
    ValueType.DOUBLE: pa.float64(),
    ValueType.BOOLEAN: pa.bool_(),
    ValueType.DATE: pa.date32(),
}


def athena_value_type(value_type: ValueType | TimestampType) -> pa.DataType:
    """The Arrow type Athena is given for a value type beyond Sleeper's (see the module docs)."""
    if isinstance(value_type, TimestampType):
        return pa.date64() if value_type.time_zone is None else pa.timestamp("ms", tz=value_type.time_zone)
    return _ATHENA_VALUE_TYPES[value_type]


def to_athena_column(column: pa.Array, target: pa.DataType) -> pa.Array:
    """A column of a table's rows as the type Athena asked for: a timestamp as milliseconds (finer units truncated
    towards the past), as ``date64`` of its wall-clock milliseconds where Athena has DATEMILLI; any other column cast
    as is (safely)."""
    if pa.types.is_timestamp(column.type) and (pa.types.is_timestamp(target) or pa.types.is_date64(target)):
        millis = pc.floor_temporal(column, unit="millisecond").cast(pa.timestamp("ms", tz=column.type.tz))
        if pa.types.is_date64(target):
            return millis.cast(pa.int64()).cast(pa.date64())
        return millis.cast(target)
    return column.cast(target)


SOURCE_TYPE = "Sleeper"
"""The source type a ping reports, as Sleeper's Java connectors do."""
CAPABILITIES = 24
"""The SDK feature level reported by a ping (24: explicit, versioned serialisation)."""
SERDE_VERSION = 4
"""The serialisation version reported by a ping; Athena then sends requests in this version."""
UNLIMITED_PAGE_SIZE = -1
"""``pageSize`` of a list tables request that wants every table at once."""


def _object(data: object, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise AthenaConnectorError(f"{where} must be a JSON object", error_code=INVALID_INPUT)
    return data


def _string(data: Mapping[str, Any], name: str, where: str, *, required: bool = True) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise AthenaConnectorError(f"{where} has no {name!r}", error_code=INVALID_INPUT)
        return None
    if not isinstance(value, str):
        raise AthenaConnectorError(f"{where}.{name} must be text", error_code=INVALID_INPUT)
    return value


def _required_string(data: Mapping[str, Any], name: str, where: str) -> str:
    value = _string(data, name, where)
    assert value is not None
    return value


def _int(data: Mapping[str, Any], name: str, where: str, default: int) -> int:
    value = data.get(name)
    if value is None:
        return default
    try:
        return int(value)  # the SDK writes the block sizes of a read request as text
    except (TypeError, ValueError):
        raise AthenaConnectorError(f"{where}.{name} must be a whole number", error_code=INVALID_INPUT) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableName:
    """A table as Athena names it: its schema (database) and table name."""

    schema_name: str
    table_name: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"schemaName": self.schema_name, "tableName": self.table_name}

    @classmethod
    def from_dict(cls, data: object, where: str = "tableName") -> TableName:
        """Reads the JSON form."""
        obj = _object(data, where)
        return cls(
            schema_name=_required_string(obj, "schemaName", where), table_name=_required_string(obj, "tableName", where)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class S3SpillLocation:
    """Where a read may spill blocks: a key prefix (``directory``) or one block's key."""

    bucket: str
    key: str
    directory: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"@type": "S3SpillLocation", "bucket": self.bucket, "key": self.key, "directory": self.directory}

    @classmethod
    def from_dict(cls, data: object, where: str = "spillLocation") -> S3SpillLocation:
        """Reads the JSON form."""
        obj = _object(data, where)
        kind = obj.get("@type", "S3SpillLocation")
        if kind != "S3SpillLocation":
            raise AthenaConnectorError(f"{where} has unsupported type {kind!r}", error_code=INVALID_INPUT)
        return cls(
            bucket=_required_string(obj, "bucket", where),
            key=_required_string(obj, "key", where),
            directory=bool(obj.get("directory", True)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EncryptionKey:
    """The AES-GCM key (32 bytes) and nonce (12 bytes) spilled blocks of a split are encrypted with."""

    key: bytes = field(repr=False)
    nonce: bytes = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"key": b64encode(self.key), "nonce": b64encode(self.nonce)}

    @classmethod
    def from_dict(cls, data: object, where: str = "encryptionKey") -> EncryptionKey | None:
        """Reads the JSON form; null means spills are not encrypted."""
        if data is None:
            return None
        obj = _object(data, where)
        return cls(
            key=b64decode(obj.get("key"), where=f"{where}.key"),
            nonce=b64decode(obj.get("nonce"), where=f"{where}.nonce"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Split:
    """One unit of reading: where to spill, how to encrypt, and the connector's own properties."""

    spill_location: S3SpillLocation
    encryption_key: EncryptionKey | None
    properties: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "spillLocation": self.spill_location.to_dict(),
            "encryptionKey": None if self.encryption_key is None else self.encryption_key.to_dict(),
            "properties": dict(self.properties),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "split") -> Split:
        """Reads the JSON form."""
        obj = _object(data, where)
        properties = obj.get("properties") or {}
        if not isinstance(properties, Mapping):
            raise AthenaConnectorError(f"{where}.properties must be an object", error_code=INVALID_INPUT)
        return cls(
            spill_location=S3SpillLocation.from_dict(obj.get("spillLocation"), f"{where}.spillLocation"),
            encryption_key=EncryptionKey.from_dict(obj.get("encryptionKey"), f"{where}.encryptionKey"),
            properties={str(k): str(v) for k, v in properties.items() if v is not None},
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    catalog_name: str
    query_id: str
    config_options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PingRequest(_Base):
    """Athena checking the connector is there, and learning its capabilities and serialisation version."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetDataSourceCapabilitiesRequest(_Base):
    """Athena asking which optimisations (complex pushdown, limit, top-N) the connector supports."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListSchemasRequest(_Base):
    """The schemas (databases) of the catalog."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTablesRequest(_Base):
    """The tables of a schema, a page at a time (``page_size`` -1 means all)."""

    schema_name: str | None
    next_token: str | None = None
    page_size: int = UNLIMITED_PAGE_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTableRequest(_Base):
    """A table's columns."""

    table_name: TableName


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTableLayoutRequest(_Base):
    """The partitions of a table a query must read, given its predicates."""

    table_name: TableName
    summary: Mapping[str, ValueSet]
    schema: pa.Schema | None
    partition_columns: Sequence[str] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetSplitsRequest(_Base):
    """The splits to read the partitions chosen by the layout."""

    table_name: TableName
    partitions: pa.RecordBatch
    summary: Mapping[str, ValueSet]
    continuation_token: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadRecordsRequest(_Base):
    """Read one split: the rows matching the predicates, with the columns of ``schema``."""

    table_name: TableName
    schema: pa.Schema
    split: Split
    summary: Mapping[str, ValueSet]
    max_block_size: int
    max_inline_block_size: int


FederationRequest = (
    PingRequest
    | GetDataSourceCapabilitiesRequest
    | ListSchemasRequest
    | ListTablesRequest
    | GetTableRequest
    | GetTableLayoutRequest
    | GetSplitsRequest
    | ReadRecordsRequest
)

DEFAULT_MAX_BLOCK_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_INLINE_BLOCK_SIZE = 5_242_880


def _config_options(event: Mapping[str, Any]) -> dict[str, str]:
    identity = event.get("identity")
    if not isinstance(identity, Mapping):
        return {}
    options = identity.get("configOptions")
    if not isinstance(options, Mapping):
        return {}
    return {str(k): str(v) for k, v in options.items() if v is not None}


def _schema_field(obj: Mapping[str, Any], name: str, where: str) -> pa.Schema | None:
    raw = obj.get(name)
    if raw is None:
        return None
    return decode_schema(b64decode(raw, where=f"{where}.{name}"), where=f"{where}.{name}")


def _summary(obj: Mapping[str, Any]) -> dict[str, ValueSet]:
    constraints = obj.get("constraints")
    if not isinstance(constraints, Mapping):
        return {}
    return parse_summary(constraints.get("summary"))


def parse_request(event: object) -> FederationRequest:
    """Reads a federation request from the JSON object a Lambda receives.

    Raises:
        AthenaConnectorError: If it is not a request this connector serves, or a field cannot be read.
    """
    obj = _object(event, "request")
    kind = obj.get("@type")
    where = str(kind)
    if kind == "UserDefinedFunctionRequest":
        raise AthenaConnectorError(
            "the Sleeper connector has no user defined functions", error_code=OPERATION_NOT_SUPPORTED
        )
    if kind not in _KINDS:
        raise AthenaConnectorError(f"unknown request type {kind!r}", error_code=INVALID_INPUT)
    base: dict[str, Any] = {
        "catalog_name": _string(obj, "catalogName", where, required=False) or "",
        "query_id": _string(obj, "queryId", where, required=False) or "",
        "config_options": _config_options(obj),
    }
    if kind == "PingRequest":
        return PingRequest(**base)
    if kind == "GetDataSourceCapabilitiesRequest":
        return GetDataSourceCapabilitiesRequest(**base)
    if kind == "ListSchemasRequest":
        return ListSchemasRequest(**base)
    if kind == "ListTablesRequest":
        return ListTablesRequest(
            **base,
            schema_name=_string(obj, "schemaName", where, required=False),
            next_token=_string(obj, "nextToken", where, required=False),
            page_size=_int(obj, "pageSize", where, UNLIMITED_PAGE_SIZE),
        )
    table_name = TableName.from_dict(obj.get("tableName"), f"{where}.tableName")
    if kind == "GetTableRequest":
        return GetTableRequest(**base, table_name=table_name)
    if kind == "GetTableLayoutRequest":
        columns = obj.get("partitionColumns") or ()
        return GetTableLayoutRequest(
            **base,
            table_name=table_name,
            summary=_summary(obj),
            schema=_schema_field(obj, "schema", where),
            partition_columns=tuple(str(c) for c in columns),
        )
    if kind == "GetSplitsRequest":
        return GetSplitsRequest(
            **base,
            table_name=table_name,
            partitions=decode_block(obj.get("partitions"), where=f"{where}.partitions"),
            summary=_summary(obj),
            continuation_token=_string(obj, "continuationToken", where, required=False),
        )
    schema = _schema_field(obj, "schema", where)
    if schema is None:
        raise AthenaConnectorError(f"{where} has no 'schema'", error_code=INVALID_INPUT)
    return ReadRecordsRequest(
        **base,
        table_name=table_name,
        schema=schema,
        split=Split.from_dict(obj.get("split"), f"{where}.split"),
        summary=_summary(obj),
        max_block_size=_int(obj, "maxBlockSize", where, DEFAULT_MAX_BLOCK_SIZE),
        max_inline_block_size=_int(obj, "maxInlineBlockSize", where, DEFAULT_MAX_INLINE_BLOCK_SIZE),
    )


_KINDS = {
    "PingRequest",
    "GetDataSourceCapabilitiesRequest",
    "ListSchemasRequest",
    "ListTablesRequest",
    "GetTableRequest",
    "GetTableLayoutRequest",
    "GetSplitsRequest",
    "ReadRecordsRequest",
}


# --- responses -----------------------------------------------------------------------------------------------------


def ping_response(request: PingRequest) -> dict[str, Any]:
    """The answer to a ping: source type, capabilities and serialisation version."""
    return {
        "@type": "PingResponse",
        "catalogName": request.catalog_name,
        "queryId": request.query_id,
        "sourceType": SOURCE_TYPE,
        "capabilities": CAPABILITIES,
        "serDeVersion": SERDE_VERSION,
    }


def capabilities_response(catalog_name: str) -> dict[str, Any]:
    """No optional optimisations: predicates come only as the constraints summary."""
    return {"@type": "GetDataSourceCapabilitiesResponse", "catalogName": catalog_name, "capabilities": {}}


def list_schemas_response(catalog_name: str, schemas: Sequence[str]) -> dict[str, Any]:
    """The schema (database) names."""
    return {"@type": "ListSchemasResponse", "catalogName": catalog_name, "schemas": list(schemas)}


def list_tables_response(catalog_name: str, tables: Sequence[TableName], next_token: str | None) -> dict[str, Any]:
    """A page of table names, with the token of the next page (None on the last)."""
    return {
        "@type": "ListTablesResponse",
        "tables": [t.to_dict() for t in tables],
        "catalogName": catalog_name,
        "nextToken": next_token,
    }


def get_table_response(catalog_name: str, table_name: TableName, schema: pa.Schema) -> dict[str, Any]:
    """A table's columns (no partition columns: Sleeper's partitions are not exposed as columns)."""
    return {
        "@type": "GetTableResponse",
        "catalogName": catalog_name,
        "tableName": table_name.to_dict(),
        "schema": b64encode(encode_schema(schema)),
        "partitionColumns": [],
    }


def get_table_layout_response(catalog_name: str, table_name: TableName, partitions: pa.RecordBatch) -> dict[str, Any]:
    """The partitions to read, one row each, as a block."""
    return {
        "@type": "GetTableLayoutResponse",
        "catalogName": catalog_name,
        "tableName": table_name.to_dict(),
        "partitions": encode_block(partitions),
    }


def get_splits_response(catalog_name: str, splits: Sequence[Split], continuation_token: str | None) -> dict[str, Any]:
    """Splits, with the token to ask for more (None when there are no more)."""
    return {
        "@type": "GetSplitsResponse",
        "catalogName": catalog_name,
        "splits": [s.to_dict() for s in splits],
        "continuationToken": continuation_token,
    }


def read_records_response(catalog_name: str, records: pa.RecordBatch) -> dict[str, Any]:
    """Rows returned inline, as one block."""
    return {"@type": "ReadRecordsResponse", "catalogName": catalog_name, "records": encode_block(records)}


def remote_read_records_response(
    catalog_name: str,
    schema: pa.Schema,
    remote_blocks: Sequence[S3SpillLocation],
    encryption_key: EncryptionKey | None,
) -> dict[str, Any]:
    """Rows spilled to S3: the blocks' locations and the key they are encrypted with (None if not encrypted)."""
    return {
        "@type": "RemoteReadRecordsResponse",
        "catalogName": catalog_name,
        "schema": b64encode(encode_schema(schema)),
        "remoteBlocks": [b.to_dict() for b in remote_blocks],
        "encryptionKey": None if encryption_key is None else encryption_key.to_dict(),
    }
