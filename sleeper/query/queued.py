"""Queries sent to the query queue (spec 7.2, 7.3): the query handler plans and fans out sub-queries, the leaf
handler runs one sub-query and publishes its rows; the query tracker follows both.

The query handler reads Sleeper's query JSON. An unreadable query, or one naming an unknown table, is tracked FAILED
with the reason (when its id can be read). Otherwise the query is tracked IN_PROGRESS and planned: one sub-query per
leaf partition overlapping any region and holding files. With none, the query is COMPLETED with 0 rows; otherwise
every sub-query is tracked QUEUED (atomically, before any is sent) and sent to the leaf partition query queue.

The leaf handler tracks its sub-query IN_PROGRESS, runs it, publishes the rows, and tracks it COMPLETED with the row
count, or FAILED with the reason. The tracker rolls sub-queries up into their query.

Results go where the query's ``resultsPublisherConfig`` says: by default (and for ``{"destination": "S3"}``) to one
Parquet file per sub-query at ``<results location>/query-<query id>/<sub-query id>.parquet``, in the table's column
types; ``{"destination": "SQS"}`` sends the rows as JSON to the results queue. Query and sub-query ids are safe ids
(checked when the query is read, so a query whose id could escape the results location is tracked FAILED), and the
results path is joined with ``join_under``, which refuses any part that could leave the results location.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.core.exceptions import SleeperError, TableNotFoundError
from sleeper.core.jobs.exceptions import MessageError
from sleeper.core.jobs.paths import join_under
from sleeper.core.operations import LEAF_PARTITION_QUERY_Q as LEAF_PARTITION_QUERY_QUEUE
from sleeper.core.operations import QUERY_Q as QUERY_QUEUE
from sleeper.core.operations import QUERY_RESULTS_Q as QUERY_RESULTS_QUEUE
from sleeper.core.query import LeafPartitionQuery, Query, QuerySerDe
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.core.trackers.query import QueryState, QueryTracker, QueryUpdate
from sleeper.io.arrow_schema import arrow_schema
from sleeper.io.filesystem import FileSystemOptions, ensure_parent_dir, open_output, resolve
from sleeper.query.executor import QueryableTable, output_fields, processing_config, run_leaf_query
from sleeper.query.planner import plan_query

__all__ = [
    "LEAF_PARTITION_QUERY_QUEUE",
    "QUERY_QUEUE",
    "QUERY_RESULTS_QUEUE",
    "QueryTables",
    "ResultsPublisher",
    "handle_leaf_query_message",
    "handle_query_message",
    "query_results_dir",
    "results_path",
]


_LOG = logging.getLogger(__name__)


class QueryTables(Protocol):
    """The tables queries may name."""

    def table(self, name: str) -> QueryableTable:
        """The table with this name (raises ``TableNotFoundError`` if none)."""
        ...

    def table_by_id(self, table_id: str) -> QueryableTable:
        """The table with this id (raises ``TableNotFoundError`` if none)."""
        ...


class ResultsPublisher(Protocol):
    """Publishes the rows of one sub-query; returns how many rows it published."""

    def __call__(self, leaf_query: LeafPartitionQuery, schema: Schema, batches: Iterator[pa.RecordBatch]) -> int: ...


def _serde(tables: QueryTables) -> QuerySerDe:
    def by_name(name: str) -> Schema | None:
        try:
            return tables.table(name).schema
        except TableNotFoundError:
            return None

    def by_id(table_id: str) -> Schema | None:
        try:
            return tables.table_by_id(table_id).schema
        except TableNotFoundError:
            return None

    return QuerySerDe(by_name, by_id)


def _failed_id(body: str) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    raw = data.get("queryId") if isinstance(data, dict) else None
    return raw if isinstance(raw, str) and raw.strip() else None


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryOutcome:
    """What the query handler did with one message.

    Attributes:
        query_id: The query id, if it could be read.
        sub_queries: The sub-queries sent.
        error: Why the query failed, if it did.
        already_finished: The query was delivered again after the tracker recorded it finished; nothing was done.
    """

    query_id: str | None
    sub_queries: tuple[LeafPartitionQuery, ...] = ()
    error: str | None = None
    already_finished: bool = False


def handle_query_message(
    body: str,
    *,
    tables: QueryTables,
    leaf_queue: Queue,
    tracker: QueryTracker,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> QueryOutcome:
    """Validates, plans and fans out one query (see the module docs). Never raises for a bad query.

    A query delivered again once the tracker records it finished is left alone. One delivered again before that (its
    first handling stopped part way) is planned again: while the partitions are unchanged its sub-queries get the
    same ids, so their results replace, never add to, those already written.
    """
    serde = _serde(tables)
    try:
        query = serde.query_from_json(body)
        table = tables.table(query.table_name)
    except (MessageError, TableNotFoundError) as e:
        query_id = getattr(e, "query_id", None) or _failed_id(body)
        if query_id is not None:
            tracker.record(
                QueryUpdate(query_id=query_id, state=QueryState.FAILED, update_time=clock(), error_message=str(e))
            )
        return QueryOutcome(query_id=query_id, error=str(e))
    previous = tracker.status(query.query_id)
    if previous is not None and previous.last_known_state.is_finished:
        return QueryOutcome(query_id=query.query_id, already_finished=True)
    tracker.record(QueryUpdate(query_id=query.query_id, state=QueryState.IN_PROGRESS, update_time=clock()))
    return _fan_out(query, table, serde, leaf_queue, tracker, clock)


def _fan_out(
    query: Query,
    table: QueryableTable,
    serde: QuerySerDe,
    leaf_queue: Queue,
    tracker: QueryTracker,
    clock: Callable[[], datetime],
) -> QueryOutcome:
    store = table.state_store
    sub_queries = plan_query(query, store.partition_tree(), store.file_references(), table_id=table.table_id)
    if not sub_queries:
        tracker.record(QueryUpdate(query_id=query.query_id, state=QueryState.COMPLETED, update_time=clock()))
        return QueryOutcome(query_id=query.query_id)
    now = clock()
    tracker.record_all(
        [
            QueryUpdate(query_id=q.query_id, sub_query_id=q.sub_query_id, state=QueryState.QUEUED, update_time=now)
            for q in sub_queries
        ]
    )
    messages = [serde.to_json(q) for q in sub_queries]
    for start in range(0, len(messages), 10):
        leaf_queue.send_batch(messages[start : start + 10])
    return QueryOutcome(query_id=query.query_id, sub_queries=tuple(sub_queries))


def handle_leaf_query_message(
    body: str,
    *,
    tables: QueryTables,
    tracker: QueryTracker,
    publish: ResultsPublisher,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    options: FileSystemOptions | None = None,
) -> int:
    """Runs one sub-query, publishes its rows and tracks it; returns the rows published.

    Raises:
        SleeperError: If the message is not a valid leaf partition query (it cannot be tracked).
    """
    leaf_query = _serde(tables).leaf_query_from_json(body)
    query_id, sub_query_id = leaf_query.query_id, leaf_query.sub_query_id
    tracker.record(
        QueryUpdate(query_id=query_id, sub_query_id=sub_query_id, state=QueryState.IN_PROGRESS, update_time=clock())
    )
    try:
        table = tables.table_by_id(leaf_query.table_id)
        config = processing_config(table.properties, table.schema)
        now_ms = int(clock().timestamp() * 1000)
        batches = run_leaf_query(leaf_query, table.schema, config, now_ms, options=options)
        rows = publish(leaf_query, table.schema, batches)
    except Exception as e:  # a sub-query that cannot finish is tracked FAILED, whatever went wrong
        _LOG.exception("sub-query %s of query %s failed", leaf_query.sub_query_id, leaf_query.query_id)
        tracker.record(
            QueryUpdate(
                query_id=query_id,
                sub_query_id=sub_query_id,
                state=QueryState.FAILED,
                update_time=clock(),
                error_message=str(e),
            )
        )
        return 0
    tracker.record(
        QueryUpdate(
            query_id=query_id,
            sub_query_id=sub_query_id,
            state=QueryState.COMPLETED,
            update_time=clock(),
            row_count=rows,
        )
    )
    return rows


NO_RESULTS_OUTPUT = "NO_RESULTS_OUTPUT"
"""The results destination of a query whose rows are read and dropped (Sleeper's warm-up queries ask for it)."""


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


def parquet_publisher(
    results_uri: str, *, options: FileSystemOptions | None = None, results_queue: Queue | None = None
) -> ResultsPublisher:
    """A publisher writing each sub-query's rows to one Parquet file under ``results_uri`` (spec 7.2), or, when the
    query asks for ``{"destination": "SQS"}`` and a results queue is given, sending them there as JSON."""

    def publish(leaf_query: LeafPartitionQuery, schema: Schema, batches: Iterator[pa.RecordBatch]) -> int:
        destination = leaf_query.processing.results_publisher_config.get("destination", "S3").upper()
        if destination == "SQS":
            if results_queue is None:
                raise SleeperError("the query asks for results on SQS but there is no results queue")
            table = pa.Table.from_batches(list(batches), schema=_output_schema(schema, leaf_query))
            message = {"queryId": leaf_query.query_id, "subQueryId": leaf_query.sub_query_id, "rows": table.to_pylist()}
            results_queue.send(json.dumps(message, default=str))
            return int(table.num_rows)
        if destination == NO_RESULTS_OUTPUT:
            return sum(batch.num_rows for batch in batches)
        if destination != "S3":
            raise SleeperError(f"results destination {destination} is not supported here")
        target = _output_schema(schema, leaf_query)
        fs, path = resolve(results_path(results_uri, leaf_query), options)
        ensure_parent_dir(fs, path)
        rows = 0
        with open_output(fs, path) as sink, pq.ParquetWriter(sink, target) as writer:
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows
        return rows

    return publish


def _output_schema(schema: Schema, leaf_query: LeafPartitionQuery) -> pa.Schema:
    full = arrow_schema(schema)
    return pa.schema([full.field(n) for n in output_fields(schema, leaf_query.processing.requested_value_fields)])
