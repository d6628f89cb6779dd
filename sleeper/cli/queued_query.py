"""``sleeper query --via-queue`` and ``sleeper report query``: queries through the query queue and the query tracker.

``--results s3`` (the default) has each sub-query write a Parquet file to the results location; ``--results sqs`` has
it send its rows in batches to the results queue. Locally the handlers run the query at once; on AWS the command waits
for the tracker to record the query finished (at most ``--wait`` seconds), then reads the files from the results
bucket, or collects the batches from the results queue as they arrive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from sleeper.core import SleeperError
from sleeper.core.trackers import QueryState

if TYPE_CHECKING:
    from sleeper.api import QueuedScan


def run_through_queue(scan: QueuedScan, *, send_only: bool, console: Console) -> pa.Table | None:
    """Runs a queued scan (``Table.scan(via_queue=True)``) and shows its progress and its tracker rows on ``console``
    (the command passes a stderr console: the rows it returns are the command's data on stdout). With ``send_only``
    it only sends the query, says how to follow it and returns None.

    Raises:
        QueuedQueryFailedError: If the tracker records the query FAILED or PARTIALLY_FAILED, with the reasons it holds
            (no rows are returned, so an incomplete answer is never shown as the whole one).
        QueryWaitTimeoutError: If the query does not finish in time.
    """
    from sleeper.api import query_row
    from sleeper.query import tracked_rows

    if send_only:
        query_id = scan.send()
        console.print(
            f"Sent query [bold]{query_id}[/] to the query queue; follow it with 'sleeper report query {query_id}'",
            highlight=False,
        )
        rows = [query_row(r) for r in tracked_rows(scan.admin.query_tracker, query_id)]
        if rows:
            console.print(tracker_table(f"Query {query_id}", rows))
        return None
    with console.status("Running the query through the query queue") as status:
        result = scan.run(progress=status.update)
    console.print(tracker_table(f"Query {result.query_id}", [query_row(r) for r in result.tracked]))
    return result.raise_if_failed()


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
