"""Operator actions on a local instance (spec 10): instance properties, pause/resume, reinitialise tables,
split point estimates, dead-letter retries."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from sleeper.api.table import Table
from sleeper.core.exceptions import SleeperError
from sleeper.core.operations import (
    COMPACTION_COMMIT_Q,
    COMPACTION_JOB_Q,
    PENDING_COMPACTION_JOB_BATCH_Q,
    STATE_STORE_COMMITTER_Q,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.table import TableStatus
from sleeper.runtime.admin import (
    AdminTable,
    InstanceAdmin,
    OperationReport,
    PropertyChange,
    UnknownPlatformError,
    estimate_split_points,
    reinitialise_table,
    update_instance_properties,
)
from sleeper.runtime.local.instance import (
    LOCAL_QUEUES,
    PAUSED_FILE,
    LocalInstance,
    check_local_instance_properties,
    is_paused,
)

if TYPE_CHECKING:
    from sleeper.core.jobs.bulk_import import BulkImportJob
    from sleeper.core.jobs.ingest import IngestJob
    from sleeper.core.query import Query
    from sleeper.ingest.batcher.ports import IngestBatcherStore

__all__ = [
    "PAUSED_FILE",
    "LocalAdmin",
    "PropertyChange",
    "estimate_split_points",
    "is_paused",
    "pause",
    "reinitialise_table",
    "resume",
    "retry_dead_letters",
    "update_instance_properties",
]

"""The file whose presence in the instance directory pauses the scheduler (as disabling Sleeper's rules does)."""

_Table = TypeVar("_Table", bound=AdminTable)
_LOG = logging.getLogger(__name__)


def pause(instance: LocalInstance) -> None:
    """Pauses the scheduler: no periodic operation is triggered until resumed (queued work still runs).

    Raises:
        SleeperError: If it is already paused.
    """
    if is_paused(instance):
        raise SleeperError("the system is already paused")
    (instance.directory / PAUSED_FILE).write_text("paused\n")


def resume(instance: LocalInstance) -> None:
    """Resumes the scheduler.

    Raises:
        SleeperError: If it is not paused.
    """
    if not is_paused(instance):
        raise SleeperError("the system is not paused")
    (instance.directory / PAUSED_FILE).unlink()


def retry_dead_letters(instance: LocalInstance, queue_names: Sequence[str] | None = None) -> dict[str, int]:
    """Moves the messages of each dead-letter queue back to its queue; returns how many per queue (only non-zero).

    Raises:
        SleeperError: If a queue name is unknown.
    """
    names = list(queue_names) if queue_names else list(LOCAL_QUEUES)
    moved: dict[str, int] = {}
    for name in names:
        count = instance.dead_letter_queue(name).redrive_dead_letters(name)
        if count:
            moved[name] = count
    return moved


class LocalAdmin(InstanceAdmin[LocalInstance]):
    """The admin port (``sleeper.runtime.admin.AdminInstance``) on a local instance directory: delegates to
    :class:`LocalInstance`, the functions above and the local runner, which runs an operation now in this process.

    Args:
        instance: The local instance.
    """

    @property
    def is_local(self) -> bool:
        """Always True."""
        return True

    @property
    def location(self) -> str:
        """The instance directory."""
        return str(self.instance.directory)

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        return self.instance.properties

    def local_instance(self, what: str) -> LocalInstance:
        """The local instance."""
        return self.instance

    def update_instance_properties(
        self, values: Mapping[str, str], unset: Sequence[str] = (), *, dry_run: bool = False
    ) -> list[PropertyChange]:
        """See :func:`update_instance_properties`; ``sleeper.filesystem`` must stay ``file://``."""
        return update_instance_properties(
            self.instance, values, unset, dry_run=dry_run, check=check_local_instance_properties
        )

    # --- tables ------------------------------------------------------------------------------------------------
    def tables(self) -> list[TableStatus]:
        """Every table, by name."""
        return self.instance.tables()

    def table(self, name: str) -> Table[LocalInstance]:
        """A table by name."""
        return self.instance.table(name)

    def table_by_id(self, table_id: str) -> Table[LocalInstance]:
        """A table by id."""
        return self.instance.table_by_id(table_id)

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table[LocalInstance]:
        """See :meth:`LocalInstance.create_table`."""
        return self.instance.create_table(name, schema, split_points=split_points, properties=properties)

    def rename_table(self, old_name: str, new_name: str) -> Table[LocalInstance]:
        """Renames a table."""
        return self.instance.rename_table(old_name, new_name)

    def delete_table(self, name: str) -> None:
        """Deletes a table with all its data."""
        self.instance.delete_table(name)

    def set_table_online(self, name: str, online: bool) -> Table[LocalInstance]:
        """Puts a table online or takes it offline."""
        return self.instance.set_table_online(name, online)

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> Table[LocalInstance]:
        """Validates and saves table property edits (a value of None unsets the property)."""
        return self.instance.update_table_properties(name, values)

    # --- trackers and queues -----------------------------------------------------------------------------------

    @property
    def batcher_store(self) -> IngestBatcherStore:
        """The ingest batcher's store."""
        return self.instance.batcher_store

    def queue_names(self) -> list[str]:
        """Every queue of a local instance."""
        return list(LOCAL_QUEUES)

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead-letter queue of a queue."""
        return self.instance.dead_letter_queue(logical_name)

    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """See :func:`retry_dead_letters`."""
        return retry_dead_letters(self.instance, queue_names)

    # --- operations --------------------------------------------------------------------------------------------
    def send_ingest_job(self, job: IngestJob) -> str:
        """Sends an ingest job to ``IngestJobQ`` (local paths made absolute)."""
        from dataclasses import replace

        from sleeper.ingest.job_runner import INGEST_JOB_QUEUE

        job = replace(job, files=_absolute(job.files))
        self.instance.queue(INGEST_JOB_QUEUE).send(job.to_json())
        return INGEST_JOB_QUEUE

    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to ``BulkImportJobQ`` (local paths made absolute).

        Raises:
            UnknownPlatformError: If a platform is given: a local instance runs every bulk import job with local
                Spark.
        """
        from dataclasses import replace

        from sleeper.runtime.local.handlers import BULK_IMPORT_QUEUE

        if platform is not None:
            raise UnknownPlatformError(
                f"a local instance has no bulk import platforms ({platform!r} given): its jobs run with local Spark; "
                "leave out --platform"
            )

        job = replace(job, files=_absolute(job.files))
        self.instance.queue(BULK_IMPORT_QUEUE).send(job.to_json())
        return BULK_IMPORT_QUEUE

    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Tracks files in the batcher's store at once (local paths made absolute)."""
        from sleeper.ingest.batcher.submitter import IngestBatcherSubmitter, submit_files

        submitter = IngestBatcherSubmitter(self.instance, self.instance.batcher_store, allow_local=True)
        tracked = submit_files(submitter, table_name, list(_absolute(files)))
        return f"{len(tracked)} files sent to the ingest batcher for table {table_name}"

    def _drain(self, queues: Sequence[str]) -> dict[str, int]:
        from sleeper.runtime.local.handlers import default_handlers
        from sleeper.runtime.local.runner import LocalRunner, RoundSummary
        from sleeper.runtime.local.tasks import local_task

        runner = LocalRunner(self.instance, default_handlers())
        total = RoundSummary()
        with local_task(self.instance):
            for queue in queues:
                total.add(runner.drain(queue, retry_failed_now=True))
        if total.failed:
            failed = ", ".join(f"{q} {n}" for q, n in total.failed.items())
            raise SleeperError(f"some messages failed and will be retried by 'run': {failed}")
        return total.processed

    def apply_commits(self) -> dict[str, int]:
        """Applies the requests waiting on the state store committer's queue now, as the committer does (an ingest or
        bulk import job run in this process sends its files there when its table commits asynchronously).

        Returns:
            How many messages were handled, by queue.

        Raises:
            SleeperError: If a request failed (it stays queued for ``sleeper run``).
        """
        return self._drain([STATE_STORE_COMMITTER_Q])

    def apply_job_commit(self, table_name: str, job_id: str, *, what: str = "ingest job") -> None:
        """Applies the committer's queue (:meth:`apply_commits`) after a job run here sent its files to it, and checks
        they were added.

        Raises:
            SleeperError: If the job's files are not in the table afterwards (the job tracker says why).
        """
        self.apply_commits()
        if not self.instance.table(table_name).state_store.has_added_job(job_id):
            raise SleeperError(
                f"{what} {job_id}: its files were sent to the state store committer but not added; "
                f"see 'sleeper report ingest-jobs {table_name}'"
            )

    def compact_now(self, name: str, *, compact_all: bool = False, wait: bool = True) -> OperationReport:
        """Creates compaction jobs for a table now and, unless told not to wait, runs them and their commits (first
        applying the assignment of any pending batches and dispatching them, when the table assigns through the
        committer)."""
        from sleeper.compaction.entry import create_jobs_for_table

        table = self.instance.table(name)
        result = create_jobs_for_table(self.instance, table, compact_all=compact_all)
        queues = [COMPACTION_JOB_Q, COMPACTION_COMMIT_Q, STATE_STORE_COMMITTER_Q]
        if result.pending_batches:
            queues = [STATE_STORE_COMMITTER_Q, PENDING_COMPACTION_JOB_BATCH_Q, *queues]
        processed = self._drain(queues) if wait else {}
        lines = [
            f"Table {name}: {result.jobs_created} compaction jobs created over {result.input_files} input files, "
            f"{result.references_pre_split} references pre-split"
        ]
        if processed:
            lines.append(f"Ran {processed.get(COMPACTION_JOB_Q, 0)} compaction jobs")
        return OperationReport({**result.to_dict(), "messagesHandled": processed}, lines)

    def split_now(self, name: str) -> OperationReport:
        """Finds a table's partitions over the splitting threshold now, and splits them."""
        from sleeper.splitting.finder import send_split_jobs
        from sleeper.splitting.ports import PARTITION_SPLITTING_JOB_QUEUE

        table = self.instance.table(name)
        jobs = send_split_jobs(table, self.instance.queue(PARTITION_SPLITTING_JOB_QUEUE))
        processed = self._drain([PARTITION_SPLITTING_JOB_QUEUE, STATE_STORE_COMMITTER_Q])
        leaves = len(self.instance.table(name).leaf_partitions())
        return OperationReport(
            {"splitJobs": [j.partition.id for j in jobs], "messagesHandled": processed, "leafPartitions": leaves},
            [f"Table {name}: {len(jobs)} partitions to split; now {leaves} leaf partitions"],
        )

    def gc_now(self, name: str, *, orphans: bool = False, dry_run: bool = False) -> OperationReport:
        """Garbage collects a table now; with ``orphans``, also sweeps files no transaction referenced."""
        from sleeper.gc.collector import run_garbage_collection
        from sleeper.gc.orphans import sweep_orphans

        table = self.instance.table(name)
        result = run_garbage_collection(self.instance, table.table_id)
        self._drain([STATE_STORE_COMMITTER_Q])
        swept = sweep_orphans(table, dry_run=dry_run) if orphans else None
        lines = [f"Table {name}: {len(result.deleted)} files garbage collected"]
        if swept is not None:
            verb = "would delete" if dry_run else "deleted"
            lines.append(f"Orphans: {verb} {len(swept.deleted)}, {len(swept.young)} too young to delete")
            lines.append(
                f"Unused transaction bodies: {verb} {len(swept.bodies_deleted)}, "
                f"{len(swept.bodies_young)} too young to delete"
            )
        data = {
            "deleted": list(result.deleted),
            "orphansDeleted": list(swept.deleted) if swept else [],
            "orphansTooYoung": list(swept.young) if swept else [],
            "unusedBodiesDeleted": list(swept.bodies_deleted) if swept else [],
            "unusedBodiesTooYoung": list(swept.bodies_young) if swept else [],
        }
        return OperationReport(data, lines)

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table:
        """Sends the query to the query queue, lets the query and leaf handlers run it, and reads the sub-queries'
        result files back in key order (:meth:`LocalInstance.run_queued_query`)."""
        return self.instance.run_queued_query(query, schema)

    def is_paused(self) -> bool:
        """Whether the scheduler is paused."""
        return is_paused(self.instance)

    def pause(self) -> None:
        """See :func:`pause`."""
        pause(self.instance)

    def resume(self) -> None:
        """See :func:`resume`."""
        resume(self.instance)


def _absolute(paths: Sequence[str]) -> tuple[str, ...]:
    from sleeper.io.input_paths import resolve_input_paths

    return resolve_input_paths(paths)
