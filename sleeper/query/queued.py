"""Queries sent to the query queue: the query handler plans and fans out sub-queries, the leaf
handler runs one sub-query and publishes its rows; the query tracker follows both.

The query handler reads Sleeper's query JSON. An unreadable query, or one naming an unknown table, is tracked FAILED
with the reason (when its id can be read). Otherwise the query is tracked IN_PROGRESS and planned: one sub-query per
leaf partition overlapping any region and holding files. With none, the query is COMPLETED with 0 rows; otherwise
every sub-query is tracked QUEUED (atomically, before any is sent) and sent to the leaf partition query queue.

The leaf handler tracks its sub-query IN_PROGRESS, runs it, publishes the rows, and tracks it COMPLETED with the row
count, or FAILED with the reason. The tracker rolls sub-queries up into their query.

Results go where the query's ``resultsPublisherConfig`` says (:mod:`sleeper.query.publishers`): by default to one
Parquet file per sub-query at ``<results location>/query-<query id>/<sub-query id>.parquet``, or in batches to the
results queue, or to a WebSocket connection. The query handler reads that config and the ``statusReportDestinations``
before it plans anything, so a query this instance cannot honour is tracked FAILED with the reason; so is one whose
table iterator or query-time iterator (``queryTimeIteratorClassName``) cannot be loaded, and the leaf handler loads
them again before reading, so a sub-query never returns rows its iterators did not filter. Status messages
go to the WebSocket connections the query names (:mod:`sleeper.query.status`): the sub-queries it was split into,
each sub-query's completion or error, or the query's own when it has no sub-queries or fails. Query and sub-query ids
are safe ids (checked when the query is read, so a query whose id could escape the results location is tracked
FAILED), and the results path is joined with ``join_under``, which refuses any part that could leave the results
location.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sleeper.core import LEAF_PARTITION_QUERY_Q as LEAF_PARTITION_QUERY_QUEUE
from sleeper.core import QUERY_Q as QUERY_QUEUE
from sleeper.core import QUERY_RESULTS_Q as QUERY_RESULTS_QUEUE
from sleeper.core import (
    LeafPartitionQuery,
    Query,
    QuerySerDe,
    Queue,
    Schema,
    SleeperError,
    TableNotFoundError,
    current_log_context,
)
from sleeper.core.jobs import MessageError
from sleeper.core.trackers import RUN_SEPARATOR, QueryState, QueryTracker, QueryUpdate, run_of
from sleeper.io import FileSystemOptions
from sleeper.iterators import IteratorConfigError
from sleeper.query.executor import QueryableTable, plan_table_query, query_engine, query_iterators, run_leaf_query
from sleeper.query.publishers import (
    NO_WEBSOCKET,
    PublisherSettings,
    ResultsPublisher,
    WebSocketPoster,
    check_destination,
    clear_results,
    query_results_dir,
    results_path,
)
from sleeper.query.results_config import (
    NO_RESULTS_OUTPUT,
    ResultsConfigError,
    WebSocketTarget,
    read_results_config,
    read_status_destinations,
)
from sleeper.query.status import StatusReporter, describe
from sleeper.statestore import SleeperInstance

__all__ = [
    "LEAF_PARTITION_QUERY_QUEUE",
    "NO_RESULTS_OUTPUT",
    "QUERY_QUEUE",
    "QUERY_RESULTS_QUEUE",
    "ReusedQueryIdError",
    "ResultsPublisher",
    "handle_leaf_query_message",
    "handle_query_message",
    "query_results_dir",
    "results_path",
    "run_tag",
]


_LOG = logging.getLogger(__name__)


def _serde(tables: SleeperInstance) -> QuerySerDe:
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


def _lenient_targets(destinations: Sequence[Mapping[str, str]]) -> tuple[WebSocketTarget, ...]:
    """The WebSocket connections to report a failure to, if the destinations can be read at all."""
    try:
        return read_status_destinations(tuple(destinations))
    except ResultsConfigError:
        return ()


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
    tables: SleeperInstance,
    leaf_queue: Queue,
    tracker: QueryTracker,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    settings: PublisherSettings | None = None,
    delivery_id: str | None = None,
) -> QueryOutcome:
    """Validates, plans and fans out one query (see the module docs). Never raises for a bad query.

    A query is one run per message: the delivery id names the message (an SQS message id, which stays the same
    when SQS delivers the message again; a WebSocket message's id), and every sub-query id of the run starts with a
    tag made from it (:func:`run_tag`). The same message delivered again once the tracker records its run finished is
    left alone; delivered again before that (its first handling stopped part way) it is planned again, and while the
    partitions are unchanged its sub-queries get the same ids, so their results replace, never add to, those already
    written, and a sub-query that finished is not run again (:func:`handle_leaf_query_message`). Another message with
    the id of a query seen before is a new query, as Sleeper treats it (its Python client sends every query of a
    process under one default id): it runs again, after the result files of the earlier run are deleted from where
    this run's go, so a reader of ``query-<query id>/`` gets this run's rows only.

    Args:
        body: The query JSON.
        tables: The instance's tables.
        leaf_queue: Where sub-queries go.
        tracker: The query tracker.
        clock: The time of tracker updates.
        settings: What the instance can publish results to, so a destination it cannot honour fails the query here;
            None checks only that the results config can be read, sends no status messages and deletes no earlier
            results.
        delivery_id: The id of the message delivering the query; None takes the ``message_id`` of the log context
            (the id of the SQS message the Lambda handler is handling). With neither, the delivery is unknown and a
            query id the tracker holds a finished run of is taken for that run delivered again.
    """
    poster = settings.websocket if settings is not None else None
    serde = _serde(tables)
    try:
        query = serde.query_from_json(body)
        table = tables.table(query.table_name)
    except (MessageError, TableNotFoundError) as e:
        query_id = getattr(e, "query_id", None) or _failed_id(body)
        reporter = StatusReporter(poster, _lenient_targets(getattr(e, "status_report_destinations", ())))
        return _failed(query_id, e, tracker, reporter, clock)
    try:
        targets = read_status_destinations(query.processing.status_report_destinations)
        destination = read_results_config(query.processing.results_publisher_config)
        if settings is not None:
            check_destination(settings, destination)
            if targets and poster is None:
                raise ResultsConfigError(NO_WEBSOCKET)
        query_iterators(table.properties, table.schema, query.processing, int(clock().timestamp() * 1000))
    except (ResultsConfigError, IteratorConfigError) as e:
        reporter = StatusReporter(poster, _lenient_targets(query.processing.status_report_destinations))
        return _failed(query.query_id, e, tracker, reporter, clock)
    if delivery_id is None:
        delivery_id = current_log_context().get("message_id")
    run = run_tag(delivery_id)
    previous = tracker.status(query.query_id)
    if previous is not None:
        if _delivered_before(tracker, query.query_id, run):
            if previous.last_known_state.is_finished:
                return QueryOutcome(query_id=query.query_id, already_finished=True)
        elif settings is not None:
            try:
                cleared = clear_results(settings, destination, query.query_id)
            except (OSError, ResultsConfigError) as e:
                reporter = StatusReporter(poster, targets)
                reason = ReusedQueryIdError(
                    f"query id {query.query_id!r} was used before and its earlier results cannot be deleted "
                    f"({type(e).__name__}: {e}); send the query under a new id"
                )
                return _failed(query.query_id, reason, tracker, reporter, clock)
            _LOG.info("query %s run again under a reused id: %d earlier result files deleted", query.query_id, cleared)
    tracker.record(QueryUpdate(query_id=query.query_id, state=QueryState.IN_PROGRESS, update_time=clock()))
    return _fan_out(query, table, serde, leaf_queue, tracker, clock, StatusReporter(poster, targets), run)


class ReusedQueryIdError(SleeperError):
    """A query sent under the id of an earlier one cannot run again: the earlier run's result files, which a reader of
    ``query-<query id>/`` would take for this run's, cannot be deleted."""


def run_tag(delivery_id: str | None) -> str | None:
    """The tag of a query's run: the same for every delivery of one message, different for another message (a query
    sent again under the same id). None when the delivery id is unknown."""
    if not delivery_id:
        return None
    return hashlib.sha256(delivery_id.encode()).hexdigest()[:16]


def _delivered_before(tracker: QueryTracker, query_id: str, run: str | None) -> bool:
    """Whether the tracker holds a run of the query from this delivery (always, when the delivery is unknown: a
    query id seen before is then taken for the same message delivered again)."""
    if run is None:
        return True
    return any(run_of(row.sub_query_id) == run for row in tracker.sub_queries(query_id))


def _failed(
    query_id: str | None,
    error: Exception,
    tracker: QueryTracker,
    reporter: StatusReporter,
    clock: Callable[[], datetime],
) -> QueryOutcome:
    if query_id is not None:
        tracker.record(
            QueryUpdate(query_id=query_id, state=QueryState.FAILED, update_time=clock(), error_message=str(error))
        )
    reporter.failed(query_id, describe(error))
    return QueryOutcome(query_id=query_id, error=str(error))


def _fan_out(
    query: Query,
    table: QueryableTable,
    serde: QuerySerDe,
    leaf_queue: Queue,
    tracker: QueryTracker,
    clock: Callable[[], datetime],
    reporter: StatusReporter,
    run: str | None,
) -> QueryOutcome:
    store = table.state_store
    sub_queries = plan_table_query(query, store, table_id=table.table_id, schema=table.schema)
    if run is not None:
        sub_queries = [replace(q, sub_query_id=f"{run}{RUN_SEPARATOR}{q.sub_query_id}") for q in sub_queries]
    if not sub_queries:
        tracker.record(QueryUpdate(query_id=query.query_id, state=QueryState.COMPLETED, update_time=clock()))
        reporter.completed(query.query_id, 0)
        return QueryOutcome(query_id=query.query_id)
    now = clock()
    tracker.record_all(
        [
            QueryUpdate(query_id=q.query_id, sub_query_id=q.sub_query_id, state=QueryState.QUEUED, update_time=now)
            for q in sub_queries
        ]
    )
    reporter.subqueries(query.query_id, [q.sub_query_id for q in sub_queries])
    messages = [serde.to_json(q) for q in sub_queries]
    for start in range(0, len(messages), 10):
        leaf_queue.send_batch(messages[start : start + 10])
    return QueryOutcome(query_id=query.query_id, sub_queries=tuple(sub_queries))


def handle_leaf_query_message(
    body: str,
    *,
    tables: SleeperInstance,
    tracker: QueryTracker,
    publish: ResultsPublisher,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    options: FileSystemOptions | None = None,
    poster: WebSocketPoster | None = None,
) -> int:
    """Runs one sub-query, publishes its rows and tracks it; returns the rows published. The WebSocket connections
    the query names for status get the sub-query's completed or error message (sent through ``poster``). A sub-query
    the tracker records finished is a message delivered again: it is not run again, and 0 is returned.

    Raises:
        SleeperError: If the message is not a valid leaf partition query (it cannot be tracked).
    """
    leaf_query = _serde(tables).leaf_query_from_json(body)
    query_id, sub_query_id = leaf_query.query_id, leaf_query.sub_query_id
    done = tracker.status(query_id, sub_query_id)
    if done is not None and done.last_known_state.is_finished:
        _LOG.info("sub-query %s of query %s already %s: not run again", sub_query_id, query_id, done.last_known_state)
        return 0
    reporter = StatusReporter(poster, _lenient_targets(leaf_query.processing.status_report_destinations))
    tracker.record(
        QueryUpdate(query_id=query_id, sub_query_id=sub_query_id, state=QueryState.IN_PROGRESS, update_time=clock())
    )
    try:
        table = tables.table_by_id(leaf_query.table_id)
        now_ms = int(clock().timestamp() * 1000)
        config = query_iterators(table.properties, table.schema, leaf_query.processing, now_ms)
        engine = query_engine(table.properties)
        batches = run_leaf_query(leaf_query, table.schema, config, now_ms, options=options, engine=engine)
        published = publish(leaf_query, table, batches)
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
        reporter.failed(sub_query_id, describe(e))
        return 0
    tracker.record(
        QueryUpdate(
            query_id=query_id,
            sub_query_id=sub_query_id,
            state=QueryState.COMPLETED,
            update_time=clock(),
            row_count=published.rows,
        )
    )
    reporter.completed(sub_query_id, published.rows, published.locations)
    return published.rows
