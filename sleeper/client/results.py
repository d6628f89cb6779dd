"""Waiting for a query sent to the query queue and reading its results, as Sleeper's Python client does: it polls the
query tracker's row for the query until the query finishes (every 0.5 s ten times, then every 2 s 25 times, then
every 5 s, up to a maximum wait), then reads every Parquet file the query wrote under ``query-<query id>/`` in the
query results bucket.

Unlike Sleeper's client (which raises ``RuntimeError("Query failed")``, and waits out its timeout on a partly failed
query), a failed or partly failed query raises :class:`~sleeper.client.errors.QueryFailedError` at once, with the
tracker's reasons.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.adapters.aws import get_bytes, list_keys
from sleeper.client.errors import QueryFailedError, QueryTimeoutError
from sleeper.core import Schema
from sleeper.core.trackers import QueryState, QueryTracker, TrackedQuery
from sleeper.query import query_results_dir

__all__ = ["DEFAULT_MAX_WAIT_TIME", "poll_intervals", "read_results", "sorted_rows", "wait_for_query"]

DEFAULT_MAX_WAIT_TIME = 120
"""The default maximum time, in seconds, to wait for a query to finish (Sleeper's client's)."""


def poll_intervals() -> Iterator[float]:
    """The waits between polls of the tracker: 0.5 s ten times, 2 s 25 times, then 5 s."""
    for _ in range(10):
        yield 0.5
    for _ in range(25):
        yield 2.0
    while True:
        yield 5.0


def _failure(tracker: QueryTracker, status: TrackedQuery) -> QueryFailedError:
    reasons = [status.error_message] if status.error_message else []
    reasons.extend(
        f"sub-query {sub.sub_query_id}: {sub.error_message}"
        for sub in tracker.sub_queries(status.query_id)
        if sub.error_message and not sub.is_parent
    )
    state = status.last_known_state.value
    why = "; ".join(reasons) if reasons else "the tracker gives no reason"
    return QueryFailedError(f"query {status.query_id} {state}: {why}", query_id=status.query_id, state=state)


def wait_for_query(
    tracker: QueryTracker,
    query_id: str,
    *,
    max_wait_seconds: float = DEFAULT_MAX_WAIT_TIME,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> TrackedQuery:
    """Polls the tracker until the query is COMPLETED.

    Raises:
        QueryFailedError: If the tracker says FAILED or PARTIALLY_FAILED.
        QueryTimeoutError: If the query has not finished after ``max_wait_seconds``.
    """
    deadline = clock() + max_wait_seconds
    waits = poll_intervals()
    while True:
        status = tracker.status(query_id)
        if status is not None and status.last_known_state is QueryState.COMPLETED:
            return status
        if status is not None and status.last_known_state in (QueryState.FAILED, QueryState.PARTIALLY_FAILED):
            raise _failure(tracker, status)
        remaining = deadline - clock()
        if remaining <= 0:
            state = "not yet tracked" if status is None else status.last_known_state.value
            raise QueryTimeoutError(
                f"No results received from Sleeper within {max_wait_seconds:g} s: query {query_id} is {state}",
                query_id=query_id,
            )
        sleep(min(next(waits), remaining))


def _bucket_and_prefix(uri: str) -> tuple[str, str]:
    path = uri.split("://", 1)[-1]
    bucket, _, prefix = path.partition("/")
    return bucket, prefix


def read_results(
    s3: Any,
    results_uri: str,
    query_id: str,
    *,
    s3_fs: Any = None,
    use_threads: bool = False,
) -> pa.Table | None:
    """Every row of the Parquet files a query wrote to its results directory, or None if it wrote none.

    Args:
        s3: The boto3 S3 client that lists (and, without ``s3_fs``, reads) the files.
        results_uri: The query results location (``s3a://<bucket>``).
        query_id: The query id.
        s3_fs: A filesystem whose ``open("<bucket>/<key>", "rb")`` reads a file (Sleeper's client takes an
            ``s3fs.S3FileSystem``); None reads with ``s3``.
        use_threads: Whether pyarrow decodes with threads.

    Raises:
        AwsError: If S3 refuses or cannot be reached.
    """
    bucket, prefix = _bucket_and_prefix(query_results_dir(results_uri, query_id))
    keys = [k for k in list_keys(s3, bucket, prefix + "/") if k.endswith(".parquet")]
    tables = []
    for key in keys:
        if s3_fs is not None:
            with s3_fs.open(f"{bucket}/{key}", "rb") as f:
                tables.append(_read(f, use_threads))
        else:
            tables.append(_read(io.BytesIO(get_bytes(s3, bucket, key)), use_threads))
    if not tables:
        return None
    return pa.concat_tables(tables)


def _read(source: BinaryIO, use_threads: bool) -> pa.Table:
    return pq.read_table(source, use_threads=use_threads)


def sorted_rows(table: pa.Table | None, schema: Schema) -> list[dict[str, Any]]:
    """The rows as dicts (Sleeper's client's return shape), in row key then sort key order."""
    if table is None or table.num_rows == 0:
        return []
    keys = [
        (name, "ascending") for name in (*schema.row_key_names, *schema.sort_key_names) if name in table.schema.names
    ]
    rows: list[dict[str, Any]] = (table.sort_by(keys) if keys else table).to_pylist()
    return rows
