"""Results publishers: where a sub-query's rows go, as Sleeper's leaf query processor publishes them (its
``S3ResultsOutput``, ``SQSResultsOutput``, ``WebSocketResultsOutput``), chosen by the query's
``resultsPublisherConfig`` (:mod:`sleeper.query.results_config`).

* **S3**: one Parquet file per sub-query at ``<results location>/query-<query id>/<sub-query id>.parquet`` (the
  results location is the query's ``bucket`` on S3, else the instance's), written with the table's Parquet settings
  and the query's codec, row group size and page size, or the instance's ``sleeper.default.query.results.*``.
* **SQS**: the rows in messages of at most ``batchSize`` rows (default ``sleeper.query.processor.results.batch.size``),
  as many as needed, in key order within the sub-query, each ``{"queryId", "schema", "rows"}`` as Sleeper's
  ``JSONResultsBatchSerialiser`` writes it, plus ``subQueryId`` and a 1-based ``batchNumber`` so a poller can put
  each sub-query's batches in order (SQS standard queues may reorder). A sub-query with no rows sends one empty batch,
  as Sleeper does. The schema describes the columns the rows hold (the requested fields).
* **WEBSOCKET**: ``{"message": "rows", "queryId", "rows"}`` messages posted to the connection through the port
  :class:`WebSocketPoster`, each at most :data:`ROWS_PAYLOAD_MAX_BYTES` (Sleeper's 120 KiB, under API Gateway's
  128 KiB message limit) and at most ``maxBatchSize`` rows. A single row too big for one message fails the sub-query
  with a reason (use S3 results).
* **NO_RESULTS_OUTPUT**: the rows are read and counted.

Rows are written as Sleeper's row JSON: byte arrays base64, maps as objects (byte array keys base64). Rows are turned
into JSON a column at a time; the JSON text of each row is made by the standard library's encoder.

The value types beyond Sleeper's (:class:`sleeper.core.schema.ValueType`, :class:`sleeper.core.schema.TimestampType`)
are written as :data:`VALUE_TYPES_JSON` says, and :mod:`sleeper.query.results_reader` reads them back exactly.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import (
    Field,
    LeafPartitionQuery,
    ListType,
    MapType,
    PrimitiveType,
    Queue,
    Schema,
    TimestampType,
    ValueType,
    WebSocketPostError,
    WebSocketTarget,
    join_under,
)
from sleeper.io import FileSystemOptions, ParquetSettings, SortedFileWriter, delete, list_files, resolve
from sleeper.query.executor import QueryableTable, output_fields
from sleeper.query.results_config import (
    NoResults,
    ResultsConfigError,
    ResultsDestination,
    S3Results,
    SqsResults,
    WebSocketResults,
    read_results_config,
)

__all__ = [
    "NO_WEBSOCKET",
    "ROWS_PAYLOAD_MAX_BYTES",
    "VALUE_TYPES_JSON",
    "json_float",
    "timestamp_strings",
    "Published",
    "PublisherSettings",
    "ResultsLocation",
    "ResultsPublisher",
    "WebSocketPoster",
    "WebSocketPostError",
    "check_destination",
    "clear_results",
    "output_schema",
    "query_results_dir",
    "results_path",
    "results_publisher",
    "row_dicts",
    "rows_message_batches",
]

ROWS_PAYLOAD_MAX_BYTES = 120 * 1024
"""The most bytes of one ``rows`` message (Sleeper's ``DEFAULT_ROWS_PAYLOAD_MAX_BYTES``), under API Gateway's
128 KiB limit on a WebSocket message."""


NO_WEBSOCKET = (
    "this instance has no WebSocket API to post results or status to: deploy the WebSocketQueryStack, or ask for "
    "S3 or SQS results"
)
"""Why a WebSocket destination is refused on an instance that cannot post to connections."""


class WebSocketPoster(Protocol):
    """Posts messages to WebSocket connections through API Gateway's management API (``PostToConnection``)."""

    def post(self, target: WebSocketTarget, data: str, *, attempts: int, base_delay: float, max_delay: float) -> None:
        """Posts one message, making up to ``attempts`` attempts while throttled, with exponential backoff.

        Raises:
            WebSocketPostError: If it could not be posted.
        """
        ...


@dataclass(frozen=True, slots=True)
class ResultsLocation:
    """Where results went, as Sleeper reports it (``{"type", "location"}``)."""

    type: str
    location: str

    def to_dict(self) -> dict[str, str]:
        """The JSON object."""
        return {"type": self.type, "location": self.location}


@dataclass(frozen=True, slots=True)
class Published:
    """What publishing a sub-query's rows came to: the rows published and where they went."""

    rows: int
    locations: tuple[ResultsLocation, ...] = ()


class ResultsPublisher(Protocol):
    """Publishes the rows of one sub-query of a table."""

    def __call__(
        self, leaf_query: LeafPartitionQuery, table: QueryableTable, batches: Iterator[pa.RecordBatch]
    ) -> Published: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PublisherSettings:
    """What the instance gives the publishers.

    Attributes:
        results_uri: The default results location (``s3a://<results bucket>``, or a local directory's URI).
        options: How to reach S3.
        results_queue: The instance's results queue, if it has one.
        sqs_batch_size: ``sleeper.query.processor.results.batch.size``.
        row_group_bytes: ``sleeper.default.query.results.rowgroup.size``.
        page_bytes: ``sleeper.default.query.results.page.size``.
        websocket: Posts to WebSocket connections, if the instance can.
    """

    results_uri: str
    options: FileSystemOptions | None = None
    results_queue: Queue | None = None
    sqs_batch_size: int = 2000
    row_group_bytes: int = 8 * 1024 * 1024
    page_bytes: int = 128 * 1024
    websocket: WebSocketPoster | None = None


def query_results_dir(results_uri: str, query_id: str) -> str:
    """Where a query's result files go: ``<results location>/query-<query id>``.

    Raises:
        UnsafePathError: If the query id could escape the results location.
    """
    return join_under(results_uri, f"query-{query_id}")


def results_path(results_uri: str, leaf_query: LeafPartitionQuery) -> str:
    """Where a sub-query's rows go: ``<results location>/query-<query id>/<sub-query id>.parquet``.

    Raises:
        UnsafePathError: If an id could escape the results location.
    """
    return join_under(query_results_dir(results_uri, leaf_query.query_id), f"{leaf_query.sub_query_id}.parquet")


def output_schema(schema: Schema, requested_value_fields: Sequence[str] | None) -> Schema:
    """The schema of the rows a query returns: the key fields and the requested value fields (all if None)."""
    wanted = set(output_fields(schema, requested_value_fields))
    return Schema(
        row_key_fields=schema.row_key_fields,
        sort_key_fields=schema.sort_key_fields,
        value_fields=tuple(f for f in schema.value_fields if f.name in wanted),
    )


def results_publisher(settings: PublisherSettings) -> ResultsPublisher:
    """The publisher for an instance: each sub-query's rows go where its ``resultsPublisherConfig`` says.

    The returned publisher raises ``ResultsConfigError`` for a config it cannot honour, ``WebSocketPostError`` when a
    connection cannot be posted to, and what the filesystem or queue raises when results cannot be written.
    """

    def publish(leaf_query: LeafPartitionQuery, table: QueryableTable, batches: Iterator[pa.RecordBatch]) -> Published:
        destination = read_results_config(leaf_query.processing.results_publisher_config)
        schema = output_schema(table.schema, leaf_query.processing.requested_value_fields)
        if isinstance(destination, S3Results):
            return _publish_s3(settings, destination, leaf_query, table, schema, batches)
        if isinstance(destination, SqsResults):
            return _publish_sqs(settings, destination, leaf_query, schema, batches)
        if isinstance(destination, WebSocketResults):
            return _publish_websocket(settings, destination, leaf_query, schema, batches)
        return Published(rows=sum(batch.num_rows for batch in batches))

    return publish


def check_destination(settings: PublisherSettings, destination: ResultsDestination) -> None:
    """Checks that this instance can publish to a destination (before any sub-query runs).

    Raises:
        ResultsConfigError: If it cannot.
    """
    if isinstance(destination, S3Results):
        _s3_results_uri(settings, destination)
    elif isinstance(destination, SqsResults):
        _sqs_queue(settings, destination)
    elif isinstance(destination, WebSocketResults) and settings.websocket is None:
        raise ResultsConfigError(NO_WEBSOCKET)
    elif not isinstance(destination, NoResults | WebSocketResults):  # pragma: no cover - the union is closed
        raise ResultsConfigError(f"unknown destination {destination!r}")


def clear_results(settings: PublisherSettings, destination: ResultsDestination, query_id: str) -> int:
    """Deletes the result files an earlier run of a query id left where this run's go (the results location's
    ``query-<query id>/``), so a reader of this run's results never reads the earlier run's rows; returns how many
    files were deleted. Results sent to a queue or a connection leave nothing to delete.

    Raises:
        ResultsConfigError: If the instance cannot publish to the destination.
    """
    if not isinstance(destination, S3Results):
        return 0
    directory_uri = query_results_dir(_s3_results_uri(settings, destination), query_id)
    filesystem, directory = resolve(directory_uri, settings.options)
    files = list_files(filesystem, directory)
    for info in files:
        delete(filesystem, info.path)
    return len(files)


# --- S3 --------------------------------------------------------------------------------------------------------
def _s3_results_uri(settings: PublisherSettings, destination: S3Results) -> str:
    if destination.bucket is None:
        return settings.results_uri
    if not settings.results_uri.startswith(("s3a://", "s3://")):
        raise ResultsConfigError(
            f"bucket {destination.bucket!r}: a local instance writes results under its own directory; leave bucket "
            "out (it names an S3 bucket on AWS)"
        )
    if "/" in destination.bucket or destination.bucket in (".", ".."):
        raise ResultsConfigError(f"bucket must be a bucket name, got {destination.bucket!r}")
    return f"s3a://{destination.bucket}"


def _publish_s3(
    settings: PublisherSettings,
    destination: S3Results,
    leaf_query: LeafPartitionQuery,
    table: QueryableTable,
    schema: Schema,
    batches: Iterator[pa.RecordBatch],
) -> Published:
    parquet = ParquetSettings.from_table_properties(table.properties)
    parquet = replace(
        parquet,
        row_group_bytes=destination.row_group_bytes or settings.row_group_bytes,
        page_size=destination.page_bytes or settings.page_bytes,
        compression=destination.compression_codec or parquet.compression,
    )
    path = results_path(_s3_results_uri(settings, destination), leaf_query)
    with SortedFileWriter(path, schema, settings=parquet, options=settings.options, sketches=False) as writer:
        writer.write_batches(batches)
    return Published(rows=writer.result.rows, locations=(ResultsLocation("s3", path),))


# --- SQS -------------------------------------------------------------------------------------------------------
def _sqs_queue(settings: PublisherSettings, destination: SqsResults) -> Queue:
    queue = settings.results_queue
    if queue is None:
        raise ResultsConfigError("this instance has no query results queue: deploy the QueryStack, or use S3 results")
    if destination.queue_url is not None and destination.queue_url != getattr(queue, "url", None):
        raise ResultsConfigError(
            f"sqsResultsUrl {destination.queue_url!r} is not this instance's results queue: results go only to the "
            "queue the query functions are granted (leave sqsResultsUrl out, or give sleeper.query.results.queue.url)"
        )
    return queue


def _publish_sqs(
    settings: PublisherSettings,
    destination: SqsResults,
    leaf_query: LeafPartitionQuery,
    schema: Schema,
    batches: Iterator[pa.RecordBatch],
) -> Published:
    queue = _sqs_queue(settings, destination)
    batch_size = destination.batch_size or settings.sqs_batch_size
    schema_json = schema.to_dict()
    rows = 0
    number = 0
    for chunk in _rebatch(batches, batch_size):
        number += 1
        message = {
            "queryId": leaf_query.query_id,
            "subQueryId": leaf_query.sub_query_id,
            "batchNumber": number,
            "schema": schema_json,
            "rows": row_dicts(chunk, schema),
        }
        queue.send(json.dumps(message, separators=(",", ":")))
        rows += chunk.num_rows
    location = getattr(queue, "url", None) or getattr(queue, "name", "results queue")
    return Published(rows=rows, locations=(ResultsLocation("sqs", str(location)),))


def _rebatch(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """Tables of exactly ``size`` rows (the last may be smaller; one empty table when there are no rows)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    sent = False
    arrow_schema: pa.Schema | None = None
    for batch in batches:
        arrow_schema = batch.schema
        if not batch.num_rows:
            continue
        pending.append(batch)
        count += batch.num_rows
        while count >= size:
            table = pa.Table.from_batches(pending, schema=arrow_schema)
            yield table.slice(0, size)
            rest = table.slice(size)
            pending, count, sent = rest.to_batches(), rest.num_rows, True
    if count or not sent:
        yield pa.Table.from_batches(pending, schema=arrow_schema) if arrow_schema is not None else pa.table({})


# --- WebSocket -------------------------------------------------------------------------------------------------
def _publish_websocket(
    settings: PublisherSettings,
    destination: WebSocketResults,
    leaf_query: LeafPartitionQuery,
    schema: Schema,
    batches: Iterator[pa.RecordBatch],
) -> Published:
    poster = settings.websocket
    if poster is None:
        raise ResultsConfigError(NO_WEBSOCKET)

    def post(data: str) -> None:
        poster.post(
            destination.target,
            data,
            attempts=destination.max_attempts,
            base_delay=destination.base_delay_seconds,
            max_delay=destination.max_delay_seconds,
        )

    rows = rows_message_batches(leaf_query.query_id, batches, schema, post, max_rows=destination.max_batch_size)
    target = destination.target
    locations = (
        ResultsLocation("websocket-endpoint", target.endpoint),
        ResultsLocation("websocket-connection-id", target.connection_id),
    )
    return Published(rows=rows, locations=locations)


def rows_message_batches(
    query_id: str,
    batches: Iterable[pa.RecordBatch | pa.Table],
    schema: Schema,
    send: Callable[[str], None],
    *,
    max_rows: int | None = None,
    max_bytes: int = ROWS_PAYLOAD_MAX_BYTES,
) -> int:
    """Sends the rows as ``{"message": "rows", "queryId", "rows"}`` messages of at most ``max_bytes`` bytes and
    ``max_rows`` rows, in order; returns the rows sent.

    Raises:
        WebSocketPostError: If one row alone does not fit in a message.
    """
    head = '{"message":"rows","queryId":' + json.dumps(query_id) + ',"rows":['
    tail = "]}"
    room = max_bytes - len(head) - len(tail)
    pending: list[str] = []
    size = 0
    sent = 0

    def flush() -> None:
        nonlocal pending, size, sent
        send(head + ",".join(pending) + tail)
        sent += len(pending)
        pending, size = [], 0

    for batch in batches:
        for row in row_dicts(batch, schema):
            text = json.dumps(row, separators=(",", ":"))  # ASCII (ensure_ascii), so characters are bytes
            if len(text) > room:
                raise WebSocketPostError(
                    f"a row of query {query_id} is {len(text):,} bytes as JSON, more than fits in one WebSocket "
                    f"message ({max_bytes:,} bytes): ask for S3 results instead"
                )
            extra = len(text) + (1 if pending else 0)
            if pending and (size + extra > room or (max_rows is not None and len(pending) >= max_rows)):
                flush()
                extra = len(text)
            pending.append(text)
            size += extra
    if pending:
        flush()
    return sent


# --- row JSON --------------------------------------------------------------------------------------------------
def row_dicts(data: pa.RecordBatch | pa.Table, schema: Schema) -> list[dict[str, Any]]:
    """The rows as Sleeper's row JSON objects (byte arrays base64, maps as objects), converted a column at a time."""
    names = data.schema.names
    columns = [_json_column(data.column(i), _field(schema, name)) for i, name in enumerate(names)]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _field(schema: Schema, name: str) -> Field | None:
    return schema.field(name) if schema.has_field(name) else None


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


VALUE_TYPES_JSON = (
    "FloatType and DoubleType as JSON numbers, except NaN, Infinity and -Infinity as those strings; BooleanType as "
    "true or false; DateType as an ISO 8601 date string (2024-05-31); TimestampType as an ISO 8601 date and time "
    "string with as many fraction digits as the unit holds (none for s, 3 for ms, 6 for us, 9 for ns), in UTC with a "
    "Z suffix when the type has a time zone (2024-05-31T12:30:00.250000Z) and with no suffix when it has none"
)
"""How row JSON writes the value types beyond Sleeper's; null is null for every type."""

NON_FINITE_JSON = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
"""The strings row JSON writes for the floating point values JSON numbers cannot hold."""


def timestamp_strings(column: pa.Array | pa.ChunkedArray, kind: TimestampType) -> list[str | None]:
    """A timestamp column as row JSON's ISO 8601 strings (see :data:`VALUE_TYPES_JSON`)."""
    if kind.time_zone is None:
        strings = pc.strftime(column, format="%Y-%m-%dT%H:%M:%S")
    else:
        strings = pc.strftime(column.cast(pa.timestamp(kind.unit, tz="UTC")), format="%Y-%m-%dT%H:%M:%SZ")
    result: list[str | None] = strings.to_pylist()
    return result


def json_float(value: float | None) -> float | str | None:
    """A float as row JSON writes it: itself if finite (or None), else ``NaN``, ``Infinity`` or ``-Infinity``."""
    return _float_json(value)


def _float_json(value: float | None) -> float | str | None:
    if value is None or value - value == 0:  # finite
        return value
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _json_column(column: pa.Array | pa.ChunkedArray, field: Field | None) -> list[Any]:
    kind = field.type if field is not None else None
    if isinstance(kind, TimestampType):
        return timestamp_strings(column, kind)
    if kind is ValueType.DATE:
        dates: list[Any] = column.cast(pa.string()).to_pylist()
        return dates
    values: list[Any] = column.to_pylist()
    if kind in (ValueType.FLOAT, ValueType.DOUBLE):
        return [_float_json(v) for v in values]
    if kind is PrimitiveType.BYTE_ARRAY:
        return [_b64(v) for v in values]
    if isinstance(kind, ListType) and kind.element_type is PrimitiveType.BYTE_ARRAY:
        return [None if v is None else [_b64(x) for x in v] for v in values]
    if isinstance(kind, MapType):
        key_bytes = kind.key_type is PrimitiveType.BYTE_ARRAY
        value_bytes = kind.value_type is PrimitiveType.BYTE_ARRAY
        return [
            None if v is None else {(_b64(k) if key_bytes else str(k)): (_b64(x) if value_bytes else x) for k, x in v}
            for v in values
        ]
    return values
