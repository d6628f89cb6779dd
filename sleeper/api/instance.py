"""The front door of an instance: the one API ``sleeper.connect(...)`` hands a user and the ``sleeper`` command is a
shell over, the same verbs for a local instance directory and for an instance on AWS (``aws:ID``).

:class:`Instance` groups the verbs a user sees; the plumbing stays behind :attr:`Instance.runtime` (the runtime's
composition root, ``LocalInstance`` or ``AwsInstance``). It is implemented once per runtime,
``sleeper.runtime.local.api.LocalApi`` and ``sleeper.runtime.aws.api.AwsApi``, which add only what differs between
the two: where the instance lives, renaming and deleting tables, what "now" means for compaction, splitting and
garbage collection (run here locally; on AWS the table's message goes to the FIFO queue its scheduled rule would send
to, for the deployed functions), how pausing works (a file locally, EventBridge rules on AWS) and where a job runs.

A verb one runtime cannot do is refused there with :class:`LocalOnlyError` naming what to do instead, never missing:
running the scheduler (``run``), a bulk import with Spark ``local[*]``, and the orphan sweep are local only.

The groups:

- identity and properties: :attr:`location`, :attr:`location_fields`, :attr:`properties`,
  :meth:`update_instance_properties`;
- tables: :meth:`tables`, :meth:`table`, :meth:`create_table`, :meth:`rename_table`, :meth:`delete_table`,
  :meth:`set_table_online`, :meth:`update_table_properties`, :meth:`reinitialise_table`,
  :meth:`estimate_split_points`, :meth:`publish_iceberg`;
- data: :meth:`ingest_files`, :meth:`bulk_import_files`, :meth:`submit_to_batcher`, :meth:`export_table`,
  :meth:`run_queued_query`, :meth:`sql` (read-only SQL over the tables)
  (rows in and out of one table go through :class:`~sleeper.api.table.Table`: ``ingest`` and ``scan``);
- operations now: :meth:`compact_now`, :meth:`split_now`, :meth:`gc_now`, :meth:`run`;
- queues and dead letters: :meth:`queue_names`, :meth:`queue`, :meth:`dead_letter_queue`,
  :meth:`retry_dead_letters`;
- reports as Arrow tables: :meth:`queues_report`, :meth:`dead_letters_report`, :meth:`tasks_report`,
  :meth:`ingest_jobs_report`, :meth:`compaction_jobs_report`, :meth:`queries_report` (the rows ``sleeper report``
  prints), over the trackers (:attr:`ingest_job_tracker`, :attr:`compaction_job_tracker`, :attr:`ingest_task_tracker`,
  :attr:`compaction_task_tracker`, :attr:`query_tracker`, :attr:`batcher_store`); :meth:`recover_dead_tasks`;
- scheduling: :meth:`is_paused`, :meth:`pause`, :meth:`resume`.
"""

from __future__ import annotations

import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sleeper.api.maintenance import estimate_split_points, reinitialise_table
from sleeper.core import KeyValue, Queue, Schema, SleeperError, TableStatus, operations, partitions_from_split_points
from sleeper.core.jobs import BulkImportJob, IngestJob
from sleeper.core.properties import InstanceProperties, validate_instance_update
from sleeper.core.trackers import CompactionJobTracker, IngestJobTracker, QueryTracker, TaskStatus, TaskTracker
from sleeper.io import resolve_input_paths

if TYPE_CHECKING:
    import pyarrow as pa

    from sleeper.api.table import Table
    from sleeper.bulk_export import BulkExportQuery
    from sleeper.core import Filter, Query
    from sleeper.iceberg import PublishResult
    from sleeper.ingest.batcher import IngestBatcherStore

__all__ = [
    "AWS_PREFIX",
    "BulkImportReport",
    "IngestJobReport",
    "Instance",
    "LocalOnlyError",
    "OperationReport",
    "PropertyChange",
    "UnknownPlatformError",
    "bulk_import_platform_queue",
    "job_table_name",
]

AWS_PREFIX = "aws:"
"""``--instance aws:ID`` (and ``sleeper.connect("aws:ID")``) names an instance on AWS by its id; anything else is a
local instance directory."""

_LOG = logging.getLogger(__name__)


class LocalOnlyError(SleeperError):
    """The verb works only on a local instance, and was asked of an instance on AWS."""


class UnknownPlatformError(SleeperError):
    """A bulk import platform the instance does not have."""


def bulk_import_platform_queue(platform: str | None) -> str:
    """The queue of an AWS instance's bulk import platform (``operations.BULK_IMPORT_PLATFORM_QUEUES``; the first,
    EMR Serverless, if None).

    Raises:
        UnknownPlatformError: If the platform is not one of them.
    """
    platforms = operations.BULK_IMPORT_PLATFORM_QUEUES
    if platform is None:
        return next(iter(platforms.values()))
    queue = platforms.get(platform)
    if queue is None:
        raise UnknownPlatformError(f"unknown bulk import platform {platform!r}: use one of {', '.join(platforms)}")
    return queue


@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One property's value before and after an edit (None = unset)."""

    name: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class OperationReport:
    """What an operation run now did: plain data (printed as JSON) and lines for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class IngestJobReport:
    """What :meth:`Instance.ingest_files` did with an ingest job: sent it (``SENT``), or saw it finish (``FINISHED``).

    Attributes:
        job_id: The job id.
        table_name: The table.
        status: ``SENT`` or ``FINISHED``.
        sent_to: The queue the job was sent to (None if it ran in this process).
        rows_read: Rows read (None if only sent).
        rows_written: Rows written (None if only sent).
        files: The files written (only known when the job ran in this process).
        already_added: Whether the job had been done before, so nothing was added (only known when it ran here).
    """

    job_id: str
    table_name: str
    status: str
    sent_to: str | None = None
    rows_read: int | None = None
    rows_written: int | None = None
    files: tuple[str, ...] | None = None
    already_added: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as Sleeper-style JSON fields (those known)."""
        out: dict[str, Any] = {"jobId": self.job_id, "tableName": self.table_name}
        if self.status == "SENT":
            return {**out, "sentTo": self.sent_to, "status": "SENT"}
        out.update(status=self.status, rowsRead=self.rows_read, rowsWritten=self.rows_written)
        if self.files is not None:
            out.update(files=list(self.files), alreadyDone=self.already_added)
        return out


@dataclass(frozen=True, slots=True)
class BulkImportReport:
    """What :meth:`Instance.bulk_import_files` did with a bulk import job: sent it, or ran it with local Spark.

    Attributes:
        job_id: The job id.
        table_name: The table.
        status: ``SENT`` or ``FINISHED``.
        sent_to: The queue the job was sent to (None if it ran here).
        rows_written: Rows written (None if only sent).
        files: How many files it wrote (None if only sent).
        already_added: Whether the job had been done before (None if only sent).
        seconds: Seconds per phase (empty if only sent).
    """

    job_id: str
    table_name: str
    status: str
    sent_to: str | None = None
    rows_written: int | None = None
    files: int | None = None
    already_added: bool | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as Sleeper-style JSON fields (those known)."""
        out: dict[str, Any] = {"jobId": self.job_id, "tableName": self.table_name}
        if self.status == "SENT":
            return {**out, "sentTo": self.sent_to, "status": "SENT"}
        return {
            **out,
            "status": self.status,
            "rowsWritten": self.rows_written,
            "files": self.files,
            "alreadyDone": self.already_added,
            "seconds": dict(self.seconds),
        }


class Instance(ABC):
    """An instance, local or on AWS: the verbs of the module docstring, the same on both runtimes.

    Args:
        runtime: The runtime's composition root (``LocalInstance`` or ``AwsInstance``): the plumbing the features
            run on, for tools that need it.
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    def _repr_html_(self) -> str:
        """A notebook's view: where the instance is and its tables."""
        from sleeper.api.views import html_summary

        tables = self.tables()
        listed = ", ".join(f"{t.table_name}{'' if t.online else ' (offline)'}" for t in tables) or "none"
        return html_summary(
            f"Sleeper instance {self.instance_id}",
            [*self.location_fields.items(), ("tables", listed), ("paused", self.is_paused())],
        )

    # --- identity and properties -------------------------------------------------------------------------------
    @property
    @abstractmethod
    def location(self) -> str:
        """Where the instance is, as ``--instance`` names it (a directory, or ``aws:ID``)."""

    @property
    @abstractmethod
    def location_fields(self) -> dict[str, str]:
        """Where the instance keeps its properties, as a status report names it (``directory`` or
        ``configBucket``)."""

    @property
    @abstractmethod
    def deployed(self) -> bool:
        """Whether a deployment (``cdk deploy``) builds the instance's resources from its properties, so that some
        property edits only take effect when it is deployed again."""

    @property
    def instance_id(self) -> str:
        """The instance id (``sleeper.id``)."""
        return str(self.properties.get("sleeper.id"))

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        return cast(InstanceProperties, self.runtime.properties)

    @abstractmethod
    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Saves instance properties as they are (validate them first: :meth:`update_instance_properties` does)."""

    def check_instance_properties(self, properties: InstanceProperties) -> None:  # noqa: B027 - optional hook
        """A further rule of the kind of instance on edited properties (none by default).

        Raises:
            PropertyError: If the properties break it.
        """

    def update_instance_properties(
        self, values: Mapping[str, str], unset: Sequence[str] = (), *, dry_run: bool = False
    ) -> list[PropertyChange]:
        """Validates and saves instance property edits; returns the changes (the diff). Nothing is saved if one is
        invalid or with ``dry_run``.

        Raises:
            PropertyError: If a value is invalid or a property may not change (nothing is saved).
            SleeperError: If a property is one only a deployment sets.
        """
        old = self.properties
        updated = InstanceProperties(dict(old.items()))
        for name in [*values, *unset]:
            definition = updated.index.get(name)
            if definition is not None and definition.set_by_cdk:
                raise SleeperError(f"{name} is set by the deployment (cdk deploy) and cannot be edited")
        for name, value in values.items():
            updated.set(name, value)
        for name in unset:
            updated.unset(name)
        updated.validate_all()
        validate_instance_update(old, updated)
        self.check_instance_properties(updated)
        before, after = old.to_dict(), updated.to_dict()
        changes = [
            PropertyChange(name, before.get(name), after.get(name))
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]
        if changes and not dry_run:
            self.save_instance_properties(updated)
        return changes

    # --- tables ------------------------------------------------------------------------------------------------
    def tables(self) -> list[TableStatus]:
        """Every table, by name."""
        return cast("list[TableStatus]", self.runtime.tables())

    def table(self, name: str) -> Table[Any]:
        """A table by name.

        Raises:
            TableNotFoundError: If there is none.
        """
        return cast("Table[Any]", self.runtime.table(name))

    def table_by_id(self, table_id: str) -> Table[Any]:
        """A table by id.

        Raises:
            TableNotFoundError: If there is none.
        """
        return cast("Table[Any]", self.runtime.table_by_id(table_id))

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table[Any]:
        """Creates a table (with one root partition, or the partitions the split points give).

        Raises:
            TableAlreadyExistsError: If a table has the name.
            PropertyError: If a property is invalid.
        """
        return cast(
            "Table[Any]", self.runtime.create_table(name, schema, split_points=split_points, properties=properties)
        )

    def rename_table(self, old_name: str, new_name: str) -> Table[Any]:
        """Renames a table (the new name follows the one table name rule).

        Raises:
            TableAlreadyExistsError: If a table has the new name.
        """
        return cast("Table[Any]", self.runtime.rename_table(old_name, new_name))

    def delete_table(self, name: str) -> None:
        """Deletes a table with all its data: its index entry, logs, snapshots, properties and files."""
        self.runtime.delete_table(name)

    def set_table_online(self, name: str, online: bool) -> Table[Any]:
        """Puts a table online or takes it offline."""
        return cast("Table[Any]", self.runtime.set_table_online(name, online))

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> Table[Any]:
        """Validates and saves table property edits (a value of None unsets the property); nothing is saved if one
        is invalid. An edit that gives the table rules (filters, aggregations, an iterator) withdraws its Iceberg
        view first."""
        return cast("Table[Any]", self.runtime.update_table_properties(name, values))

    def reinitialise_table(self, name: str, split_points: Sequence[KeyValue] | None = None) -> Table[Any]:
        """Empties a table (:func:`sleeper.api.maintenance.reinitialise_table`) with its Iceberg view withdrawn first
        and published again after (:func:`sleeper.iceberg.publisher.reinitialise_with_view`), so the view never lists
        a deleted file. Split points are checked before the view is withdrawn.

        Raises:
            WithdrawalError: If the view could not be withdrawn; the table is not reinitialised.
        """
        from sleeper.iceberg import reinitialise_with_view

        table = self.table(name)
        if split_points is not None:
            partitions_from_split_points(table.schema, list(split_points))  # refused before the view is withdrawn
        return reinitialise_with_view(self.runtime, table, lambda: reinitialise_table(table, split_points))

    def publish_iceberg(self, name: str) -> PublishResult:
        """Publishes a table's current state as a new snapshot of its Apache Iceberg view, in this process (a local
        instance's SQL catalog, or the Glue Data Catalog on AWS); see docs/usage/iceberg.md.

        Raises:
            RulesRefusedError: If the table has filters, aggregations or an iterator (a view would bypass them).
        """
        from sleeper.iceberg import publish_table

        return publish_table(self.runtime, self.table(name))

    def estimate_split_points(self, name: str, partitions: int) -> list[KeyValue]:
        """See :func:`sleeper.api.maintenance.estimate_split_points`."""
        return estimate_split_points(self.table(name), partitions)

    # --- data --------------------------------------------------------------------------------------------------
    def ingest_files(
        self,
        table_name: str,
        paths: Sequence[str],
        *,
        job_id: str | None = None,
        via_queue: bool = False,
        wait: bool = False,
        timeout_seconds: float = 600.0,
        on_sent: Callable[[IngestJobReport], None] | None = None,
    ) -> IngestJobReport:
        """Ingests Parquet files into a table as an ingest job (validated, tracked, idempotent per job id).

        Where the job runs is the instance's way, as ``Table.ingest`` decides it: a local instance runs it in this
        process (unless ``via_queue``); an instance on AWS always sends it to the ingest job queue, for its ingest
        tasks, first staging local files under ``for_ingest/`` in the data bucket (the tasks cannot read this
        machine's files). A job sent is waited for only with ``wait`` (polling the ingest job tracker).

        Args:
            table_name: The table.
            paths: Parquet files or directories: local paths (relative to the working directory) or S3 URIs.
            job_id: The job id (generated if None).
            via_queue: Send the job to the ingest job queue even where it could run here.
            wait: For a job sent: wait until the tracker has it finished.
            timeout_seconds: With ``wait``: the most seconds to wait.
            on_sent: Called with the ``SENT`` report once a job is sent, before waiting.

        Raises:
            MissingFileError: If a local path names nothing.
            TableNotFoundError: If there is no such table.
            IngestJobError: If a job waited for is rejected, fails or does not finish in time.
            SleeperError: If the job run here fails or is rejected.
        """
        job = IngestJob(id=job_id or str(uuid.uuid4()), files=resolve_input_paths(paths), table_name=table_name)
        if not (via_queue or self.runtime.ingests_in_process):
            via_queue = True
        if not via_queue:
            return self.run_ingest_job(job)
        self.table(table_name)  # an unknown table is refused before anything is staged or sent
        sent = self.send_ingest_job(job)
        if on_sent is not None:
            on_sent(sent)
        if not wait:
            return sent
        from sleeper.api.ingest_job import wait_for_ingest_job

        done = wait_for_ingest_job(self.ingest_job_tracker, sent.job_id, timeout_seconds=timeout_seconds)
        return IngestJobReport(
            sent.job_id, table_name, "FINISHED", sent.sent_to, rows_read=done.rows_read, rows_written=done.rows_written
        )

    @abstractmethod
    def send_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Sends an ingest job to the ingest job queue (local files made absolute, or staged where the ingest tasks
        cannot read them); returns the ``SENT`` report."""

    @abstractmethod
    def run_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Runs an ingest job in this process and commits it (local only).

        Raises:
            LocalOnlyError: On an instance on AWS.
        """

    def bulk_import_files(
        self,
        table_name: str,
        paths: Sequence[str],
        *,
        job_id: str | None = None,
        class_name: str | None = None,
        via_queue: bool = False,
        platform: str | None = None,
    ) -> BulkImportReport:
        """Bulk imports Parquet files into a table: with ``via_queue``, sends the job to the bulk import queue (on
        AWS, the queue of ``platform``, EMR Serverless by default); otherwise runs it here with Spark ``local[*]``
        (local only).

        Raises:
            SleeperError: If ``platform`` is given without ``via_queue``.
            UnknownPlatformError: If the platform is not one of the instance's.
            LocalOnlyError: A run here asked of an instance on AWS.
        """
        if platform is not None and not via_queue:
            raise SleeperError("--platform chooses the queue a job is sent to: give --queue too")
        if class_name is not None:
            from sleeper.core.jobs import bulk_import_algorithm

            bulk_import_algorithm(class_name, source="--class-name")
        job = BulkImportJob(
            id=job_id or str(uuid.uuid4()), files=tuple(paths), table_name=table_name, class_name=class_name
        )
        if via_queue:
            queue = self.send_bulk_import_job(job, platform=platform)
            return BulkImportReport(job.id, table_name, "SENT", sent_to=queue)
        return self.run_bulk_import_job(job)

    @abstractmethod
    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to its queue; returns the queue's name.

        Raises:
            UnknownPlatformError: If a platform is given that the instance does not have.
        """

    @abstractmethod
    def run_bulk_import_job(self, job: BulkImportJob) -> BulkImportReport:
        """Runs a bulk import job here with Spark ``local[*]`` and commits it (local only).

        Raises:
            LocalOnlyError: On an instance on AWS.
        """

    def export_table(
        self,
        name: str,
        directory: str | Path | None = None,
        *,
        export_id: str | None = None,
        wait: bool = True,
        timeout: float = 600.0,
        filter: str | Filter | None = None,
    ) -> dict[str, Any]:
        """Exports every row of a table, through its rules, as one sorted Parquet file per leaf partition: a local
        instance writes them to ``directory`` in this process; on AWS the export is sent to the bulk export queue and
        written to the instance's bulk export bucket (``directory`` is refused), waited for up to ``timeout`` seconds
        unless ``wait`` is False. With ``filter`` (as ``Table.scan``'s: text or a :mod:`sleeper.core.filter` model),
        only the rows it selects are exported, after the table's rules.

        Returns:
            ``exportId``, ``tableId``, ``state`` (``SENT``, ``COMPLETED``, ``ALREADY_FINISHED`` or the tracker's final
            state), ``rows`` and ``files`` (and ``error`` if the tracker has one).

        Raises:
            SleeperError: If ``directory`` is missing locally or given on AWS, or the export does not finish in time.
            FilterError: If the filter does not suit the table, before anything is sent or written.
        """
        from sleeper.bulk_export import BulkExportQuery
        from sleeper.core import filter_of

        table = self.table(name)
        checked = None if filter is None else filter_of(filter, table.schema)
        query = BulkExportQuery.for_table(table_name=name, filter=checked) if export_id is None else BulkExportQuery(
            export_id=export_id, table_name=name, filter=None if checked is None else str(checked)
        )  # fmt: skip
        return self._export(table, query, directory, wait=wait, timeout=timeout)

    @abstractmethod
    def _export(
        self, table: Table[Any], query: BulkExportQuery, directory: str | Path | None, *, wait: bool, timeout: float
    ) -> dict[str, Any]:
        """Runs or sends a bulk export of the table (:meth:`export_table`)."""

    @abstractmethod
    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Hands files to the ingest batcher; returns what was done, for people."""

    def sql(self, statement: str) -> pa.RecordBatchReader:
        """Beyond Sleeper: runs a read-only SQL statement over the instance's tables with DuckDB and streams the
        result, e.g. ``instance.sql("select name, count(*) from people where age > 30 group by name").read_all()``.

        Only one ``SELECT`` (or ``WITH ... SELECT``) is accepted, over the instance's tables (joins allowed); each
        table is read as its lazy :class:`~sleeper.api.scan.Scan` with the table's rules applied, and the ``WHERE``
        clause's simple predicates on one table are pushed into its scan as a filter (:mod:`sleeper.api.sql` says
        which), so only the leaves and row groups that can match are read.

        Raises:
            SqlError: If the statement is not one SELECT, uses a table function that reads files (``read_parquet``,
                ``read_csv``...), names a table the instance does not have (the message lists them), has bad syntax,
                or DuckDB cannot run it.
            MissingExtraError: If DuckDB is not installed (the ``dataframes`` extra).
        """
        from sleeper.api.sql import run_sql

        return run_sql(self, statement)

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table | None:
        """Sends a query to the query queue: a local instance runs it at once and returns the rows; on AWS the
        deployed functions run it (None is returned: follow it in the query tracker)."""
        return cast("pa.Table | None", self.runtime.run_queued_query(query, schema))

    # --- operations now ----------------------------------------------------------------------------------------
    @abstractmethod
    def compact_now(self, name: str, *, compact_all: bool = False, wait: bool = True) -> OperationReport:
        """Creates a table's compaction jobs now (locally runs them unless told not to wait; on AWS the deployed
        functions do)."""

    @abstractmethod
    def split_now(self, name: str) -> OperationReport:
        """Splits a table's partitions over the threshold now (on AWS: through the deployed functions)."""

    @abstractmethod
    def gc_now(self, name: str, *, orphans: bool = False, dry_run: bool = False) -> OperationReport:
        """Garbage collects a table now (on AWS: through the deployed functions); ``orphans`` also sweeps files no
        transaction referenced (local only)."""

    @abstractmethod
    def run(
        self,
        *,
        until_idle: bool = False,
        poll_seconds: float = 1.0,
        workers: int = 1,
        stop: Any = None,
    ) -> Any:
        """Runs the scheduler and the queue workers in this process (local only): until idle, or until ``stop``
        (a ``threading.Event``) is set. Returns the rounds' summary.

        Raises:
            LocalOnlyError: On an instance on AWS, whose deployed functions do this work.
        """

    # --- queues ------------------------------------------------------------------------------------------------
    @abstractmethod
    def queue_names(self) -> list[str]:
        """The logical names of the instance's queues."""

    def queue(self, logical_name: str) -> Queue:
        """A queue by logical name."""
        return cast(Queue, self.runtime.queue(logical_name))

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead-letter queue of a queue."""
        return cast(Queue, self.runtime.dead_letter_queue(logical_name))

    @abstractmethod
    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """Moves dead letters back to their queues; returns how many per queue (non-zero).

        Raises:
            SleeperError: If a queue named is not one of the instance's.
        """

    # --- reports -----------------------------------------------------------------------------------------------
    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """The ingest job tracker."""
        return cast(IngestJobTracker, self.runtime.ingest_job_tracker)

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """The compaction job tracker."""
        return cast(CompactionJobTracker, self.runtime.compaction_job_tracker)

    @property
    def ingest_task_tracker(self) -> TaskTracker:
        """The ingest task tracker."""
        return cast(TaskTracker, self.runtime.ingest_task_tracker)

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """The compaction task tracker."""
        return cast(TaskTracker, self.runtime.compaction_task_tracker)

    @property
    def query_tracker(self) -> QueryTracker:
        """The query tracker."""
        return cast(QueryTracker, self.runtime.query_tracker)

    @property
    def batcher_store(self) -> IngestBatcherStore:
        """The ingest batcher's store."""
        return cast("IngestBatcherStore", self.runtime.batcher_store)

    def task_statuses(self, kind: str, *, unfinished: bool = False) -> list[TaskStatus]:
        """The compaction or ingest tasks from the task tracker (only those still running with ``unfinished``).

        Raises:
            SleeperError: If ``kind`` is neither ``compaction`` nor ``ingest``.
        """
        if kind not in ("compaction", "ingest"):
            raise SleeperError(f"task kind must be compaction or ingest, got {kind!r}")
        tracker = self.compaction_task_tracker if kind == "compaction" else self.ingest_task_tracker
        return tracker.tasks_in_progress() if unfinished else tracker.all_tasks()

    def queues_report(self) -> pa.Table:
        """Every queue with its visible, in-flight and dead-lettered message counts, as an Arrow table."""
        from sleeper.api import reports

        return _arrow(reports.queues_report(self))

    def dead_letters_report(self) -> pa.Table:
        """Each dead-letter queue holding messages, with its count and a sample of bodies, as an Arrow table."""
        from sleeper.api import reports

        return _arrow(reports.dead_letters_report(self))

    def tasks_report(self, kind: str, *, unfinished: bool = False) -> pa.Table:
        """The compaction or ingest tasks (:meth:`task_statuses`) as an Arrow table, a row a task."""
        from sleeper.api import reports

        return _arrow(reports.tasks_report(self.task_statuses(kind, unfinished=unfinished)))

    def ingest_jobs_report(self, table: str | None = None, *, unfinished: bool = False) -> pa.Table:
        """A table's ingest and bulk import jobs (only those in progress with ``unfinished``; with no table, the
        rejected jobs of every table) as an Arrow table: a row a job, with its runs (task, times, rows, rates)."""
        from sleeper.api import reports

        tracker = self.ingest_job_tracker
        if table is None:
            return _arrow(reports.ingest_job_rows(tracker.invalid_jobs()))
        table_id = self.table(table).table_id
        return _arrow(
            reports.ingest_job_rows(tracker.unfinished_jobs(table_id) if unfinished else tracker.jobs(table_id))
        )

    def compaction_jobs_report(self, table: str, *, unfinished: bool = False) -> pa.Table:
        """A table's compaction jobs (only those not committed with ``unfinished``) as an Arrow table: a row a job,
        with its runs (task, times, rows, rates)."""
        from sleeper.api import reports

        tracker = self.compaction_job_tracker
        table_id = self.table(table).table_id
        statuses = tracker.unfinished_jobs(table_id) if unfinished else tracker.jobs(table_id)
        return _arrow(reports.compaction_job_rows(statuses))

    def queries_report(self, query_id: str | None = None) -> pa.Table:
        """The query tracker's rows, of every query or of one with its sub-queries, as an Arrow table."""
        from sleeper.api import reports

        return _arrow([reports.query_row(row) for row in reports.tracker_rows(self.query_tracker, query_id)])

    def recover_dead_tasks(self) -> None:  # noqa: B027 - only a local instance has processes of its own to recover
        """Before a report of jobs: records the runs of this machine's processes that are gone as failed (a local
        instance's tasks run here; on AWS nothing is to do: the deployed tasks' runs are recorded by them)."""

    # --- scheduling --------------------------------------------------------------------------------------------
    @abstractmethod
    def is_paused(self) -> bool:
        """Whether the scheduled operations are paused."""

    @abstractmethod
    def pause(self) -> str:
        """Pauses the scheduled operations; returns what was done, for people.

        Raises:
            SleeperError: If already paused (nothing changes).
        """

    @abstractmethod
    def resume(self) -> None:
        """Resumes the scheduled operations.

        Raises:
            SleeperError: If not paused (nothing changes).
        """


def _arrow(rows: list[dict[str, Any]]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(rows)


def job_table_name(job: IngestJob | BulkImportJob) -> str:
    """The name of the table a job sent from here names (jobs from the front door always name their table).

    Raises:
        SleeperError: If the job names its table only by id.
    """
    if job.table_name is None:
        raise SleeperError(f"job {job.id} names no table name: give the table by name")
    return job.table_name
