"""The runtime-neutral entries of the query queues (spec 7.2), run by either runtime through the router
(:mod:`sleeper.runtime.router`): :func:`handle_query` plans a query and fans out its sub-queries, and
:func:`handle_leaf_query` runs one sub-query and publishes its rows where the instance keeps query results."""

from __future__ import annotations

from typing import Protocol

from sleeper.core.queue import Queue
from sleeper.core.trackers.query import QueryTracker
from sleeper.io.filesystem import FileSystemOptions
from sleeper.query.queued import (
    LEAF_PARTITION_QUERY_QUEUE,
    QueryTables,
    handle_leaf_query_message,
    handle_query_message,
    parquet_publisher,
)

__all__ = ["QueryRuntime", "handle_leaf_query", "handle_query"]


class QueryRuntime(QueryTables, Protocol):
    """The instance the query entries run in: its tables, query tracker and queues, and where results go."""

    @property
    def query_tracker(self) -> QueryTracker:
        """Where queries and sub-queries are tracked."""
        ...

    @property
    def query_results_uri(self) -> str:
        """Where a sub-query's rows are written by default (``<uri>/query-<query id>/<sub-query id>.parquet``)."""
        ...

    @property
    def query_results_queue(self) -> Queue | None:
        """The queue a query asking for results on SQS gets them on (None when the instance has none)."""
        ...

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How to reach the data and results files (None for the defaults: a local instance)."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (for example ``LeafPartitionQueryQueue``)."""
        ...


def handle_query(instance: QueryRuntime, body: str) -> str:
    """One ``QueryQueue`` message: validates and plans the query and sends one sub-query per leaf partition to
    ``LeafPartitionQueryQueue`` (see :func:`sleeper.query.queued.handle_query_message`). A bad query is tracked
    FAILED and its message is done.

    Returns:
        A line for the log: the sub-queries sent, or why the query failed.
    """
    outcome = handle_query_message(
        body, tables=instance, leaf_queue=instance.queue(LEAF_PARTITION_QUERY_QUEUE), tracker=instance.query_tracker
    )
    if outcome.error is not None:
        return f"query {outcome.query_id or '(no id)'} failed: {outcome.error}"
    return f"query {outcome.query_id}: {len(outcome.sub_queries)} sub-queries sent"


def handle_leaf_query(instance: QueryRuntime, body: str) -> str:
    """One ``LeafPartitionQueryQueue`` message: runs the sub-query and publishes its rows to the instance's query
    results location, or to its results queue when the query asks for SQS (see
    :func:`sleeper.query.queued.handle_leaf_query_message`).

    Returns:
        A line for the log: the rows published.

    Raises:
        SleeperError: If the message is not a valid leaf partition query (it cannot be tracked).
    """
    options = instance.filesystem_options
    publish = parquet_publisher(instance.query_results_uri, options=options, results_queue=instance.query_results_queue)
    rows = handle_leaf_query_message(
        body, tables=instance, tracker=instance.query_tracker, publish=publish, options=options
    )
    return f"sub-query finished: {rows:,} rows"
