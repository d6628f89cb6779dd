"""``sleeper query --via-queue`` and ``sleeper report query``: queries through the query queue and the query tracker."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from sleeper.core.exceptions import SleeperError
from sleeper.core.query import Query, QueryProcessingConfig
from sleeper.core.range import Region
from sleeper.core.trackers.query import QueryState, TrackedQuery

if TYPE_CHECKING:
    from sleeper.runtime.admin import AdminInstance, AdminTable

_FAILED = (QueryState.FAILED, QueryState.PARTIALLY_FAILED)


def run_through_queue(
    instance: AdminInstance,
    table: AdminTable,
    keys: Sequence[Mapping[str, object]],
    regions: Sequence[Region],
    requested: Sequence[str] | None,
    *,
    console: Console,
) -> pa.Table | None:
    """Sends the query to the query queue and shows the tracker. Locally the query and leaf handlers run it at once
    and its rows are returned in key order; on AWS the deployed functions run it, and None is returned.

    Raises:
        SleeperError: If the tracker records the query FAILED or PARTIALLY_FAILED, with the reasons it holds (no rows
            are returned, so an incomplete answer is never shown as the whole one).
    """
    schema = table.schema
    wanted = [Region.exact(schema, k) for k in keys] + list(regions)
    query = Query(
        query_id=str(uuid.uuid4()),
        table_name=table.name,
        regions=tuple(wanted or [Region.whole(schema)]),
        processing=QueryProcessingConfig(requested_value_fields=None if requested is None else tuple(requested)),
    )
    result = instance.run_queued_query(query, schema)
    if result is None:
        console.print(
            f"Sent query [bold]{query.query_id}[/] to the query queue; follow it with "
            f"'sleeper report query {query.query_id}'",
            highlight=False,
        )
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


def tracker_rows(instance: AdminInstance, query_id: str | None) -> list[TrackedQuery]:
    """The tracker's rows: one query with its sub-queries, or every query."""
    tracker = instance.query_tracker
    if query_id is None:
        return tracker.all_queries()
    parent = tracker.status(query_id)
    return ([parent] if parent else []) + tracker.sub_queries(query_id)


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
