"""``sleeper query --via-queue`` and ``sleeper report query``: queries through the query queue and the query tracker.

``--results s3`` (the default) has each sub-query write a Parquet file to the results location; ``--results sqs`` has
it send its rows in batches to the results queue. Locally the handlers run the query at once; on AWS the command waits
for the tracker to record the query finished (at most ``--wait`` seconds), then reads the files from the results
bucket, or collects the batches from the results queue as they arrive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from sleeper.core.exceptions import SleeperError
from sleeper.core.filter import Filter
from sleeper.core.range import Region
from sleeper.core.trackers.query import QueryState

if TYPE_CHECKING:
    from sleeper.api.instance import Instance
    from sleeper.api.table import Table as SleeperTable


def run_through_queue(
    instance: Instance,
    table: SleeperTable[Any],
    keys: Sequence[Mapping[str, object]],
    regions: Sequence[Region],
    requested: Sequence[str] | None,
    *,
    console: Console,
    results: str = "s3",
    wait_seconds: float = 300.0,
    iterator: str | None = None,
    iterator_config: str | None = None,
    row_filter: Filter | None = None,
) -> pa.Table | None:
    """Sends the query to the query queue, waits for its results and shows the tracker on ``console`` (the command
    passes a stderr console: the rows it returns are the command's data on stdout). Locally the query and leaf
    handlers run it at once; on AWS the deployed functions run it and this waits up to ``wait_seconds`` (0: only send
    it, and return None). ``row_filter`` travels in the query's ``filter`` field and is applied after the table's
    rules and the query-time iterator. The rows are returned in key order
    (:func:`sleeper.query.results_reader.run_queued_query`, which ``Table.scan(via_queue=True)`` uses too).

    Raises:
        SleeperError: If ``results`` is not s3 or sqs, the query does not finish in time, or the tracker records it
            FAILED or PARTIALLY_FAILED, with the reasons it holds (no rows are returned, so an incomplete answer is
            never shown as the whole one).
    """
    from sleeper.api.reports import query_row, tracker_rows
    from sleeper.query.results_reader import RESULTS_DESTINATIONS, queued_query, raise_if_failed, run_queued_query

    if results not in RESULTS_DESTINATIONS:
        raise SleeperError(f"--results must be one of {', '.join(RESULTS_DESTINATIONS)}, got {results!r}")
    if wait_seconds < 0:
        raise SleeperError(f"--wait must be a number of seconds of at least 0, got {wait_seconds:g}")
    schema = table.schema
    wanted = [Region.exact(schema, k) for k in keys] + list(regions)
    query = queued_query(
        table.name, schema, wanted, requested, results=results, iterator=iterator, iterator_config=iterator_config
    )
    if row_filter is not None:
        query = dataclasses.replace(query, processing=dataclasses.replace(query.processing, filter=row_filter))
    with console.status(f"Running query {query.query_id}") as status:
        result = run_queued_query(
            instance,
            query,
            schema,
            results_filesystem=lambda: table.instance.filesystem,
            wait_seconds=wait_seconds,
            progress=status.update,
        )
    if result is None:
        console.print(
            f"Sent query [bold]{query.query_id}[/] to the query queue; follow it with "
            f"'sleeper report query {query.query_id}'",
            highlight=False,
        )
    tracked = tracker_rows(instance.query_tracker, query.query_id)
    rows = [query_row(r) for r in tracked]
    if rows or result is not None:
        console.print(tracker_table(f"Query {query.query_id}", rows))
    raise_if_failed(tracked, query.query_id)
    return result


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


def tracker_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Tracker rows as a table."""
    columns = ("queryId", "subQueryId", "lastKnownState", "rowCount", "errors")
    out = Table(title=title)
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*(str(row[c]) if row[c] is not None else "" for c in columns))
    return out
