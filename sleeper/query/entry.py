"""The runtime-neutral entries of the query queues, run by either runtime through the router
(:mod:`sleeper.runtime.router`): :func:`handle_query` plans a query and fans out its sub-queries, and
:func:`handle_leaf_query` runs one sub-query and publishes its rows where the instance keeps query results."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sleeper.core.properties import instance_query as qp
from sleeper.query.publishers import PublisherSettings, WebSocketPoster, results_publisher
from sleeper.query.queued import (
    LEAF_PARTITION_QUERY_QUEUE,
    handle_leaf_query_message,
    handle_query_message,
)
from sleeper.statestore import SleeperRuntime

__all__ = ["WebSocketRuntime", "handle_leaf_query", "handle_query", "publisher_settings"]


@runtime_checkable
class WebSocketRuntime(Protocol):
    """An instance whose query functions can post to WebSocket connections (an AWS instance)."""

    @property
    def websocket_poster(self) -> WebSocketPoster:
        """Posts to connections through API Gateway's management API."""
        ...


def publisher_settings(instance: SleeperRuntime) -> PublisherSettings:
    """What the instance gives the results publishers: its results location and queue, the results defaults of its
    properties, and a WebSocket poster when it has one."""
    props = instance.properties
    return PublisherSettings(
        results_uri=instance.query_results_uri,
        options=instance.filesystem_options,
        results_queue=instance.query_results_queue,
        sqs_batch_size=props.get_int(qp.QUERY_PROCESSING_LAMBDA_RESULTS_BATCH_SIZE),
        row_group_bytes=props.get_int(qp.DEFAULT_RESULTS_ROW_GROUP_SIZE),
        page_bytes=props.get_int(qp.DEFAULT_RESULTS_PAGE_SIZE),
        websocket=instance.websocket_poster if isinstance(instance, WebSocketRuntime) else None,
    )


def handle_query(instance: SleeperRuntime, body: str) -> str:
    """One ``QueryQueue`` message: validates and plans the query and sends one sub-query per leaf partition to
    ``LeafPartitionQueryQueue`` (see :func:`sleeper.query.queued.handle_query_message`). A bad query is tracked
    FAILED and its message is done.

    Returns:
        A line for the log: the sub-queries sent, or why the query failed.
    """
    outcome = handle_query_message(
        body,
        tables=instance,
        leaf_queue=instance.queue(LEAF_PARTITION_QUERY_QUEUE),
        tracker=instance.query_tracker,
        settings=publisher_settings(instance),
    )
    if outcome.error is not None:
        return f"query {outcome.query_id or '(no id)'} failed: {outcome.error}"
    return f"query {outcome.query_id}: {len(outcome.sub_queries)} sub-queries sent"


def handle_leaf_query(instance: SleeperRuntime, body: str) -> str:
    """One ``LeafPartitionQueryQueue`` message: runs the sub-query and publishes its rows where the query asks
    (:mod:`sleeper.query.publishers`: the results location by default, the results queue, or a WebSocket
    connection; see :func:`sleeper.query.queued.handle_leaf_query_message`).

    Returns:
        A line for the log: the rows published.

    Raises:
        SleeperError: If the message is not a valid leaf partition query (it cannot be tracked).
    """
    settings = publisher_settings(instance)
    rows = handle_leaf_query_message(
        body,
        tables=instance,
        tracker=instance.query_tracker,
        publish=results_publisher(settings),
        options=settings.options,
        poster=settings.websocket,
    )
    return f"sub-query finished: {rows:,} rows"
