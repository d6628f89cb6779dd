"""``sleeper query --via-queue`` and ``sleeper report query``: queries through the query queue and the query tracker."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.trackers import TrackedQuery
from sleeper.io.arrow_schema import arrow_schema

if TYPE_CHECKING:
    from sleeper.runtime.local import LocalInstance, LocalTable


def run_through_queue(
    instance: LocalInstance,
    table: LocalTable,
    keys: Sequence[Mapping[str, object]],
    regions: Sequence[Region],
    requested: Sequence[str] | None,
    *,
    console: Console,
) -> pa.Table:
    """Sends the query to the query queue, lets the query and leaf handlers run it, shows the tracker, and reads the
    sub-queries' result files back in key order."""
    from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, QUERY_QUEUE
    from sleeper.runtime.local_handlers import default_handlers
    from sleeper.runtime.local_runner import LocalRunner

    schema = table.schema
    wanted = [Region.exact(schema, k) for k in keys] + list(regions)
    query = Query(
        query_id=str(uuid.uuid4()),
        table_name=table.name,
        regions=tuple(wanted or [Region.whole(schema)]),
        processing=QueryProcessingConfig(requested_value_fields=None if requested is None else tuple(requested)),
    )
    instance.queue(QUERY_QUEUE).send(QuerySerDe.for_schema(schema).to_json(query))
    runner = LocalRunner(instance, default_handlers())
    runner.drain(QUERY_QUEUE)
    runner.drain(LEAF_PARTITION_QUERY_QUEUE)
    rows = [query_row(r) for r in tracker_rows(instance, query.query_id)]
    console.print(tracker_table(f"Query {query.query_id}", rows))
    directory = instance.directory / "query-results" / f"query-{query.query_id}"
    parts = [pq.read_table(p) for p in sorted(directory.glob("*.parquet"))] if directory.exists() else []
    if not parts:
        names = [f.name for f in schema.row_key_fields + schema.sort_key_fields]
        full = arrow_schema(schema)
        values = [f.name for f in schema.value_fields if requested is None or f.name in requested]
        return full.empty_table().select(names + values)
    key_names = [(f.name, "ascending") for f in schema.row_key_fields + schema.sort_key_fields]
    return pa.concat_tables(parts).sort_by(key_names)


def tracker_rows(instance: LocalInstance, query_id: str | None) -> list[TrackedQuery]:
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
