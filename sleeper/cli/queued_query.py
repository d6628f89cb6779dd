"""``sleeper query --via-queue`` and ``sleeper report query``: queries through the query queue and the query tracker.

``--results s3`` (the default) has each sub-query write a Parquet file to the results location; ``--results sqs`` has
it send its rows in batches to the results queue. Locally the handlers run the query at once; on AWS the command waits
for the tracker to record the query finished (at most ``--wait`` seconds), then reads the files from the results
bucket, or collects the batches from the results queue as they arrive.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from sleeper.core.exceptions import SleeperError
from sleeper.core.operations import QUERY_RESULTS_Q
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.query import Query, QueryProcessingConfig
from sleeper.core.range import Region
from sleeper.core.trackers.query import QueryState, TrackedQuery

if TYPE_CHECKING:
    from sleeper.runtime.admin import AdminInstance, AdminTable

_FAILED = (QueryState.FAILED, QueryState.PARTIALLY_FAILED)
RESULTS = ("s3", "sqs")
"""Where ``query --via-queue`` asks for results: Parquet files in the results location, or the results queue."""


def run_through_queue(
    instance: AdminInstance,
    table: AdminTable,
    keys: Sequence[Mapping[str, object]],
    regions: Sequence[Region],
    requested: Sequence[str] | None,
    *,
    console: Console,
    results: str = "s3",
    wait_seconds: float = 300.0,
    iterator: str | None = None,
    iterator_config: str | None = None,
) -> pa.Table | None:
    """Sends the query to the query queue, waits for its results and shows the tracker. Locally the query and leaf
    handlers run it at once; on AWS the deployed functions run it and this waits up to ``wait_seconds`` (0: only send
    it, and return None). The rows are returned in key order.

    Raises:
        SleeperError: If ``results`` is not s3 or sqs, the query does not finish in time, or the tracker records it
            FAILED or PARTIALLY_FAILED, with the reasons it holds (no rows are returned, so an incomplete answer is
            never shown as the whole one).
    """
    if results not in RESULTS:
        raise SleeperError(f"--results must be one of {', '.join(RESULTS)}, got {results!r}")
    if wait_seconds < 0:
        raise SleeperError(f"--wait must be a number of seconds of at least 0, got {wait_seconds:g}")
    schema = table.schema
    wanted = [Region.exact(schema, k) for k in keys] + list(regions)
    fields = None if requested is None else tuple(requested)
    query = Query(
        query_id=str(uuid.uuid4()),
        table_name=table.name,
        regions=tuple(wanted or [Region.whole(schema)]),
        processing=QueryProcessingConfig(
            requested_value_fields=fields,
            results_publisher_config={"destination": "SQS"} if results == "sqs" else {},
            query_time_iterator_class_name=iterator,
            query_time_iterator_config=iterator_config,
        ),
    )
    result = instance.run_queued_query(query, schema)
    if result is None and wait_seconds == 0:
        console.print(
            f"Sent query [bold]{query.query_id}[/] to the query queue; follow it with "
            f"'sleeper report query {query.query_id}'",
            highlight=False,
        )
    elif results == "sqs":
        result = _collect_from_queue(instance, table, query, wait_seconds, console)
    elif result is None:
        result = _read_from_bucket(instance, table, query, wait_seconds, console)
    tracked = tracker_rows(instance, query.query_id)
    rows = [query_row(r) for r in tracked]
    if rows or result is not None:
        console.print(tracker_table(f"Query {query.query_id}", rows))
    failed = [r for r in tracked if r.is_parent and r.last_known_state in _FAILED]
    if failed:
        reasons = sorted({r.error_message for r in tracked if r.error_message}) or ["no reason recorded"]
        state = failed[0].last_known_state.value
        raise SleeperError(f"query {query.query_id} {state} in the query tracker: {'; '.join(reasons)}")
    return result


def _collect_from_queue(
    instance: AdminInstance, table: AdminTable, query: Query, wait_seconds: float, console: Console
) -> pa.Table:
    from sleeper.query.results_reader import SqsResultsCollector

    fields = query.processing.requested_value_fields
    collector = SqsResultsCollector(instance.queue(QUERY_RESULTS_Q), query.query_id, table.schema, fields)
    with console.status(f"Collecting the results of query {query.query_id} from the results queue") as status:

        def shown(rows: int) -> None:
            status.update(f"Collecting the results of query {query.query_id}: {collector.rows:,} rows so far")

        return collector.collect(instance.query_tracker, timeout_seconds=wait_seconds, on_rows=shown)


def _read_from_bucket(
    instance: AdminInstance, table: AdminTable, query: Query, wait_seconds: float, console: Console
) -> pa.Table:
    from sleeper.query.results_reader import read_results_files, wait_for_query

    with console.status(f"Waiting for query {query.query_id} to finish"):
        status = wait_for_query(instance.query_tracker, query.query_id, timeout_seconds=wait_seconds)
    bucket = instance.properties.get(cdk.QUERY_RESULTS_BUCKET)
    if status.last_known_state is not QueryState.COMPLETED or not bucket:
        return pa.table({})  # the failure is reported from the tracker; no bucket means no results were written
    fields = query.processing.requested_value_fields
    return read_results_files(table.instance.filesystem, bucket, query.query_id, table.schema, fields)


def tracker_rows(instance: AdminInstance, query_id: str | None, state: QueryState | None = None) -> list[TrackedQuery]:
    """The tracker's rows: one query with its sub-queries, or every query; with a state, only the rows in it."""
    tracker = instance.query_tracker
    if query_id is None:
        return tracker.all_queries() if state is None else tracker.queries_with_state(state)
    parent = tracker.status(query_id)
    rows = ([parent] if parent else []) + tracker.sub_queries(query_id)
    return rows if state is None else [r for r in rows if r.last_known_state is state]


def parse_state(text: str | None) -> QueryState | None:
    """A query state named on the command line (any case), or None.

    Raises:
        SleeperError: If it names no state.
    """
    if text is None:
        return None
    try:
        return QueryState(text.strip().upper().replace("-", "_"))
    except ValueError:
        names = ", ".join(s.value for s in QueryState)
        raise SleeperError(f"--state must be one of {names}, got {text!r}") from None


def query_row(row: TrackedQuery) -> dict[str, Any]:
    """A tracker row as plain data, named as Sleeper's tracker attributes."""
    return {
        "queryId": row.query_id,
        "subQueryId": row.sub_query_id,
        "lastKnownState": row.last_known_state.value,
        "lastUpdateTime": row.last_update_time.isoformat(),
        "rowCount": row.row_count,
        "errors": row.error_message,
    }


def tracker_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Tracker rows as a table."""
    columns = ("queryId", "subQueryId", "lastKnownState", "rowCount", "errors")
    out = Table(title=title)
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*(str(row[c]) if row[c] is not None else "" for c in columns))
    return out
