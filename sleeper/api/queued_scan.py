"""A scan run through the query queue (``Table.scan(..., via_queue=True)``, ``sleeper query --via-queue``): the query
is sent to the instance's query queue, run as sub-queries by the query handlers, followed in the query tracker and its
results read back (:func:`sleeper.query.results_reader.run_queued_query`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.api.scan import Scan
from sleeper.core import Query
from sleeper.core.trackers import TrackedQuery
from sleeper.io import FileSystemOptions, s3_filesystem
from sleeper.query import raise_if_failed, run_queued_query, tracked_rows
from sleeper.statestore import QueuedQueries

__all__ = ["DEFAULT_QUERY_WAIT_SECONDS", "QueuedScan", "QueuedScanResult"]

DEFAULT_QUERY_WAIT_SECONDS = 300.0
"""How long ``Table.scan(via_queue=True)`` waits for the query to finish, by default (as ``sleeper query --wait``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuedScan(Scan):
    """A scan run through the query queue (``Table.scan(..., via_queue=True)``): each ``to_*`` call sends the query
    and reads its results as ``sleeper query --via-queue`` does (:func:`sleeper.query.results_reader.run_queued_query`).

    Attributes:
        table_name: The table's name, as the query names it.
        admin: The instance, which sends the query (and runs it, locally).
        results: ``s3`` or ``sqs``: where the sub-queries put their rows.
        timeout_seconds: How long to wait for the query to finish.
    """

    table_name: str
    admin: QueuedQueries = field(repr=False)
    results: str = "s3"
    timeout_seconds: float = DEFAULT_QUERY_WAIT_SECONDS

    def queued(self) -> Query:
        """The query this scan sends (a new random id each call): :meth:`Scan.query` with the results destination."""
        query = self.query()
        if self.results != "sqs":
            return query
        return dataclasses.replace(
            query, processing=dataclasses.replace(query.processing, results_publisher_config={"destination": "SQS"})
        )

    def send(self) -> str:
        """Sends the query to the query queue without waiting for its results, and returns its id (follow it with
        ``sleeper report query ID`` or ``instance.reports.queries``). A local instance runs it at once, so it is
        finished, and tracked, when this returns."""
        query = self.queued()
        self.admin.run_queued_query(query, self.table.schema)
        return query.query_id

    def run(self, *, progress: Callable[[str], None] | None = None) -> QueuedScanResult:
        """Sends the query, waits for it to finish (up to ``timeout_seconds``) and reads its whole result.

        Args:
            progress: Told what is being waited for, as it changes (the CLI shows it).

        Returns:
            The query's id, its rows (limited and projected as the scan asks; none if it failed) and its tracker rows.

        Raises:
            QueryWaitTimeoutError: If the query does not finish in time.
        """
        schema = self.table.schema
        query = self.queued()
        rows = run_queued_query(
            self.admin,
            query,
            schema,
            results_filesystem=self._results_filesystem,
            wait_seconds=self.timeout_seconds,
            progress=progress,
        )
        assert rows is not None, "a queued scan always waits for its query"
        if self.limit is not None:
            rows = rows.slice(0, self.limit)
        if self.columns is not None:
            rows = rows.select(list(self.columns))
        return QueuedScanResult(query.query_id, rows, tuple(tracked_rows(self.admin.query_tracker, query.query_id)))

    def to_arrow_batch_reader(self, *, batch_rows: int | None = None) -> pa.RecordBatchReader:
        """The rows as record batches: the query is run through the queue, and its whole result read, first.

        Args:
            batch_rows: The most rows in a batch returned (every row in one batch per result file if None).

        Raises:
            QueuedQueryFailedError: If the query tracker records the query FAILED or PARTIALLY_FAILED.
            QueryWaitTimeoutError: If the query does not finish in time.
        """
        rows = self.run().raise_if_failed()
        return pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches(max_chunksize=batch_rows))

    def _results_filesystem(self) -> pafs.FileSystem:
        return s3_filesystem((self.options or FileSystemOptions()).s3)


@dataclass(frozen=True, slots=True)
class QueuedScanResult:
    """What a queued scan returned (:meth:`QueuedScan.run`).

    Attributes:
        query_id: The query's id.
        rows: Its rows in key order (possibly only some of them if the query failed: see :meth:`raise_if_failed`).
        tracked: The query tracker's rows for it: the query's own, then its sub-queries'.
    """

    query_id: str
    rows: pa.Table
    tracked: tuple[TrackedQuery, ...]

    def raise_if_failed(self) -> pa.Table:
        """The rows, if the tracker records the query succeeded.

        Raises:
            QueuedQueryFailedError: If the query is FAILED or PARTIALLY_FAILED, with the reasons the tracker holds.
        """
        raise_if_failed(self.tracked, self.query_id)
        return self.rows
