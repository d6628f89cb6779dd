"""Reading a queued query's results back, as Sleeper's clients do (its ``QueryResultsSQSQueuePoller`` and its Python
client's S3 results reader): wait for the query tracker to record the query finished, then read its result files from
the results location, or collect its batches from the results queue.

Batches on the results queue are those :mod:`sleeper.query.publishers` sends (``{"queryId", "subQueryId",
"batchNumber", "schema", "rows"}``); the collector takes the batches of one query, puts each sub-query's batches in
order, and leaves other queries' messages for other readers. It is done once the tracker records the query finished
and the rows collected add up to the row count the tracker holds.

:func:`run_queued_query` is the whole round trip both ``sleeper query --via-queue`` and ``Table.scan(via_queue=True)``
make: send the query (built by :func:`queued_query`) through an instance's admin port, wait for it, read its results,
and :func:`raise_if_failed` refuses an answer the tracker records as failed.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import (
    QUERY_RESULTS_Q,
    ListType,
    MapType,
    PrimitiveType,
    Query,
    QueryProcessingConfig,
    Queue,
    Region,
    Schema,
    SleeperError,
    TimestampType,
    ValueType,
)
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.trackers import QueryState, QueryTracker, TrackedQuery
from sleeper.io import arrow_schema, list_files
from sleeper.query.publishers import NON_FINITE_JSON, output_schema, query_results_dir
from sleeper.statestore import QueuedQueries

__all__ = [
    "RESULTS_DESTINATIONS",
    "QueryWaitTimeoutError",
    "QueuedQueryFailedError",
    "SqsResultsCollector",
    "queued_query",
    "raise_if_failed",
    "read_results_files",
    "run_queued_query",
    "tracked_rows",
    "wait_for_query",
]

RESULTS_DESTINATIONS = ("s3", "sqs")
"""Where a queued query's sub-queries put their rows: Parquet files in the results location, or the results queue."""

_FAILED = (QueryState.FAILED, QueryState.PARTIALLY_FAILED)


class QueryWaitTimeoutError(SleeperError):
    """A query did not finish (or its results did not all arrive) within the time allowed."""


class QueuedQueryFailedError(SleeperError):
    """The query tracker records a queued query FAILED or PARTIALLY_FAILED (its rows are not returned)."""


def queued_query(
    table_name: str,
    schema: Schema,
    regions: Sequence[Region],
    requested: Sequence[str] | None,
    *,
    results: str = "s3",
    iterator: str | None = None,
    iterator_config: str | None = None,
) -> Query:
    """A query for the query queue, with a new id.

    Args:
        table_name: The table.
        schema: The table schema.
        regions: The regions of row keys to read (exact keys as ``Region.exact``); every row if empty.
        requested: The value fields to return (None for all).
        results: ``s3`` (Parquet files in the results location) or ``sqs`` (batches on the results queue).
        iterator: A query-time iterator class name, applied after the table's.
        iterator_config: Its config.
    """
    return Query(
        query_id=str(uuid.uuid4()),
        table_name=table_name,
        regions=tuple(regions or [Region.whole(schema)]),
        processing=QueryProcessingConfig(
            requested_value_fields=None if requested is None else tuple(requested),
            results_publisher_config={"destination": "SQS"} if results == "sqs" else {},
            query_time_iterator_class_name=iterator,
            query_time_iterator_config=iterator_config,
        ),
    )


def run_queued_query(
    instance: QueuedQueries,
    query: Query,
    schema: Schema,
    *,
    results_filesystem: Callable[[], pafs.FileSystem],
    wait_seconds: float,
    progress: Callable[[str], None] | None = None,
) -> pa.Table | None:
    """Sends a query to the query queue and returns its rows in key order. A local instance runs it at once; on AWS
    the deployed functions run it, and this waits up to ``wait_seconds`` for the tracker to record it finished (0: only
    send it, and return None), then reads the result files from the results bucket, or collects the batches from the
    results queue if the query asks for them there. Follow with :func:`raise_if_failed`: a query that failed may have
    returned some rows.

    Args:
        instance: The instance (its runtime, or its instance API).
        query: The query (see :func:`queued_query`).
        schema: The table schema.
        results_filesystem: The filesystem of the results bucket (S3; asked for only when the files are read).
        wait_seconds: The longest to wait for the query to finish.
        progress: Told what is being waited for, as it changes (to show it).

    Raises:
        QueryWaitTimeoutError: If the query does not finish, or its rows do not all arrive, in time.
    """
    result = instance.run_queued_query(query, schema)
    if result is None and wait_seconds == 0:
        return None
    fields = query.processing.requested_value_fields
    if query.processing.results_publisher_config.get("destination") == "SQS":
        collector = SqsResultsCollector(instance.queue(QUERY_RESULTS_Q), query.query_id, schema, fields)
        if progress is not None:
            progress(f"Collecting the results of query {query.query_id} from the results queue")

        def shown(rows: int) -> None:
            if progress is not None:
                progress(f"Collecting the results of query {query.query_id}: {collector.rows:,} rows so far")

        return collector.collect(instance.query_tracker, timeout_seconds=wait_seconds, on_rows=shown)
    if result is not None:
        return result
    if progress is not None:
        progress(f"Waiting for query {query.query_id} to finish")
    status = wait_for_query(instance.query_tracker, query.query_id, timeout_seconds=wait_seconds)
    bucket = instance.properties.get(cdk.QUERY_RESULTS_BUCKET)
    if status.last_known_state is not QueryState.COMPLETED or not bucket:
        # the failure is in the tracker; no bucket means no results were written
        return arrow_schema(output_schema(schema, fields)).empty_table()
    return read_results_files(results_filesystem(), bucket, query.query_id, schema, fields)


def tracked_rows(tracker: QueryTracker, query_id: str) -> list[TrackedQuery]:
    """A query's tracker rows: the query's own (if tracked yet), then its sub-queries'."""
    parent = tracker.status(query_id)
    return ([parent] if parent else []) + tracker.sub_queries(query_id)


def raise_if_failed(tracked: Sequence[TrackedQuery], query_id: str) -> None:
    """Refuses a queued query whose tracker rows (the query's and its sub-queries') record it failed.

    Raises:
        QueuedQueryFailedError: If the query is FAILED or PARTIALLY_FAILED, with the reasons the tracker holds.
    """
    failed = [r for r in tracked if r.is_parent and r.last_known_state in _FAILED]
    if failed:
        reasons = sorted({r.error_message for r in tracked if r.error_message}) or ["no reason recorded"]
        state = failed[0].last_known_state.value
        raise QueuedQueryFailedError(f"query {query_id} {state} in the query tracker: {'; '.join(reasons)}")


def wait_for_query(
    tracker: QueryTracker,
    query_id: str,
    *,
    timeout_seconds: float,
    poll_seconds: float = 1.0,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> TrackedQuery:
    """Waits until the tracker records the query finished (COMPLETED, FAILED or PARTIALLY_FAILED).

    Raises:
        QueryWaitTimeoutError: If it has not finished after ``timeout_seconds``.
    """
    deadline = monotonic() + timeout_seconds
    while True:
        status = tracker.status(query_id)
        if status is not None and status.last_known_state.is_finished:
            return status
        if monotonic() >= deadline:
            state = status.last_known_state.value if status is not None else "not yet tracked"
            raise QueryWaitTimeoutError(
                f"query {query_id} is {state} after {timeout_seconds:g} s; follow it with "
                f"'sleeper report query {query_id}'"
            )
        sleep(poll_seconds)


def read_results_files(
    filesystem: pafs.FileSystem, results_root: str, query_id: str, schema: Schema, requested: tuple[str, ...] | None
) -> pa.Table:
    """Every result file of a query (``<results root>/query-<query id>/*.parquet``, the root a path in the
    filesystem: ``<bucket>`` on S3), in key order."""
    fs, directory = filesystem, query_results_dir(results_root, query_id)
    target = arrow_schema(output_schema(schema, requested))
    parts = [
        pq.read_table(info.path, filesystem=fs, schema=target)
        for info in list_files(fs, directory)
        if info.path.endswith(".parquet")
    ]
    return _in_key_order(pa.concat_tables(parts) if parts else target.empty_table(), schema)


def _in_key_order(table: pa.Table, schema: Schema) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in schema.key_names]) if table.num_rows else table


class SqsResultsCollector:
    """Collects one query's batches from a results queue.

    Args:
        queue: The results queue.
        query_id: The query.
        schema: The table schema (the batches' own schema gives their columns).
        requested: The value fields asked for (None for all).
    """

    def __init__(self, queue: Queue, query_id: str, schema: Schema, requested: tuple[str, ...] | None) -> None:
        self._queue = queue
        self._query_id = query_id
        self._schema = output_schema(schema, requested)
        self._batches: dict[tuple[str, int], pa.Table] = {}
        self.rows = 0

    def poll(self, wait_seconds: float = 0.0) -> int:
        """Receives what is on the queue: keeps and deletes this query's batches, puts others back at once.

        Returns:
            The rows collected by this call.
        """
        found = 0
        for message in self._queue.receive(10, wait_seconds=wait_seconds):
            body = _parse(message.body)
            if body is None or body.get("queryId") != self._query_id:
                self._queue.change_visibility(message.receipt_handle, 0)
                continue
            key = (str(body.get("subQueryId", "")), int(body.get("batchNumber", 0)))
            if key not in self._batches:
                table = _rows_table(body.get("rows", []), self._schema)
                self._batches[key] = table
                found += table.num_rows
            self._queue.delete(message.receipt_handle)
        self.rows += found
        return found

    def collect(
        self,
        tracker: QueryTracker,
        *,
        timeout_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
        on_rows: Callable[[int], None] | None = None,
    ) -> pa.Table:
        """Polls until the tracker records the query finished and every row it counts has arrived.

        Args:
            tracker: The query tracker.
            timeout_seconds: The longest to wait.
            monotonic: The clock.
            on_rows: Told the rows of each poll that found some (to show progress).

        Raises:
            QueryWaitTimeoutError: If that does not happen in time.
        """
        deadline = monotonic() + timeout_seconds
        while True:
            found = self.poll(wait_seconds=1.0)
            if found and on_rows is not None:
                on_rows(found)
            status = tracker.status(self._query_id)
            if status is not None and status.last_known_state.is_finished and self.rows >= status.row_count:
                return self.table()
            if monotonic() >= deadline:
                raise QueryWaitTimeoutError(
                    f"query {self._query_id}: {self.rows:,} rows arrived on the results queue after "
                    f"{timeout_seconds:g} s, the tracker has {status.row_count if status else 0:,} "
                    f"({status.last_known_state.value if status else 'not yet tracked'})"
                )

    def table(self) -> pa.Table:
        """The rows collected, each sub-query's batches in order, all in key order."""
        target = arrow_schema(self._schema)
        parts = [self._batches[key] for key in sorted(self._batches)]
        return _in_key_order(pa.concat_tables(parts) if parts else target.empty_table(), self._schema)


def _parse(body: str) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _rows_table(rows: list[dict[str, Any]], schema: Schema) -> pa.Table:
    """Rows of Sleeper's row JSON as a table of the schema's types (base64 byte arrays decoded a column at a time;
    dates and timestamps from their ISO 8601 strings, as :data:`sleeper.query.publishers.VALUE_TYPES_JSON` says)."""
    target = arrow_schema(schema)
    columns = []
    for field in schema.all_fields:
        values = [row.get(field.name) for row in rows]
        kind = field.type
        if isinstance(kind, TimestampType):
            utc = pa.timestamp(kind.unit, tz=None if kind.time_zone is None else "UTC")
            columns.append(pa.array(values, type=pa.string()).cast(utc).cast(target.field(field.name).type))
            continue
        if kind is ValueType.DATE:
            columns.append(pa.array(values, type=pa.string()).cast(pa.date32()))
            continue
        if kind in (ValueType.FLOAT, ValueType.DOUBLE):
            values = [NON_FINITE_JSON.get(v, v) if isinstance(v, str) else v for v in values]
        if kind is PrimitiveType.BYTE_ARRAY:
            values = [None if v is None else base64.b64decode(v) for v in values]
        elif isinstance(kind, ListType) and kind.element_type is PrimitiveType.BYTE_ARRAY:
            values = [None if v is None else [base64.b64decode(x) for x in v] for v in values]
        elif isinstance(kind, MapType):
            values = [None if v is None else list(_map_items(v, kind)) for v in values]
        columns.append(pa.array(values, type=target.field(field.name).type))
    return pa.Table.from_arrays(columns, schema=target)


def _map_items(value: dict[str, Any], kind: MapType) -> list[tuple[Any, Any]]:
    def key(k: str) -> Any:
        if kind.key_type is PrimitiveType.BYTE_ARRAY:
            return base64.b64decode(k)
        return int(k) if kind.key_type in (PrimitiveType.INT, PrimitiveType.LONG) else k

    def item(v: Any) -> Any:
        return base64.b64decode(v) if kind.value_type is PrimitiveType.BYTE_ARRAY and v is not None else v

    return [(key(k), item(v)) for k, v in value.items()]
