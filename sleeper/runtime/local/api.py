"""The front door (:class:`sleeper.api.instance.Instance`) on a local instance directory: everything runs in this
process, on the instance's SQLite queues and trackers. Running an operation "now" runs it here, with the local runner
draining the queues it feeds; pausing writes a file the scheduler looks for (as disabling Sleeper's rules does).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleeper.api import (
    BulkImportReport,
    IngestJobReport,
    Instance,
    OperationReport,
    UnknownPlatformError,
    job_table_name,
)
from sleeper.core import (
    COMPACTION_COMMIT_Q,
    COMPACTION_JOB_Q,
    PENDING_COMPACTION_JOB_BATCH_Q,
    STATE_STORE_COMMITTER_Q,
    SleeperError,
    counted,
)
from sleeper.core.properties import InstanceProperties
from sleeper.runtime.local.instance import (
    PAUSED_FILE,
    LocalInstance,
    check_local_instance_properties,
    is_paused,
    local_queue_settings,
)

if TYPE_CHECKING:
    from sleeper.api import Table
    from sleeper.bulk_export import BulkExportQuery
    from sleeper.core.jobs import BulkImportJob, IngestJob
    from sleeper.runtime.local.runner import RoundSummary

__all__ = ["PAUSED_FILE", "LocalApi", "is_paused", "pause", "resume", "retry_dead_letters"]

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
    names = list(queue_names) if queue_names else list(local_queue_settings())
    moved: dict[str, int] = {}
    for name in names:
        count = instance.dead_letter_queue(name).redrive_dead_letters(name)
        if count:
            moved[name] = count
    return moved


class LocalApi(Instance):
    """The front door on a local instance directory.

    Args:
        runtime: The local instance.
    """

    runtime: LocalInstance

    def __init__(self, runtime: LocalInstance) -> None:
        super().__init__(runtime)

    @property
    def location(self) -> str:
        """The instance directory."""
        return str(self.runtime.directory)

    @property
    def location_fields(self) -> dict[str, str]:
        """``{"directory": <the instance directory>}``."""
        return {"directory": self.location}

    @property
    def deployed(self) -> bool:
        """Always False: nothing deploys a local instance; every command reads the saved properties."""
        return False

    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Writes ``instance.properties``."""
        self.runtime.save_instance_properties(properties)

    def check_instance_properties(self, properties: InstanceProperties) -> None:
        """``sleeper.filesystem`` must stay ``file://`` (:func:`check_local_instance_properties`)."""
        check_local_instance_properties(properties)

    # --- data --------------------------------------------------------------------------------------------------
    def send_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Sends an ingest job to ``IngestJobQ`` (local paths made absolute: the local ingest tasks read them)."""
        from sleeper.ingest import INGEST_JOB_QUEUE

        job = replace(job, files=_absolute(job.files))
        self.runtime.queue(INGEST_JOB_QUEUE).send(job.to_json())
        return IngestJobReport(job.id, job_table_name(job), "SENT", sent_to=INGEST_JOB_QUEUE)

    def run_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Runs an ingest job in this process (in a local task, as the ingest tasks do) and, when the table commits
        asynchronously, applies the commit as the state store committer would.

        Raises:
            SleeperError: If the job fails or is rejected (with the tracker's reasons).
        """
        from sleeper.core.trackers import JobOutcome
        from sleeper.ingest import IngestJobRunner
        from sleeper.runtime.local.tasks import local_task

        with local_task(self.runtime) as task:
            outcome = IngestJobRunner(self.runtime, task_id=task.task_id, local_dir=task.directory).run(job)
        if outcome.outcome is not JobOutcome.FINISHED or outcome.result is None:
            raise SleeperError(f"ingest job {job.id} {outcome.outcome.value.lower()}: {'; '.join(outcome.reasons)}")
        result = outcome.result
        if result.commit_sent:
            self.apply_job_commit(job_table_name(job), job.id)
        return IngestJobReport(
            job.id,
            job_table_name(job),
            "FINISHED",
            rows_read=result.rows_read,
            rows_written=result.rows_written,
            files=tuple(f.location for f in result.files),
            already_added=result.already_added,
        )

    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to ``BulkImportJobQ`` (local paths made absolute).

        Raises:
            UnknownPlatformError: If a platform is given: a local instance runs every bulk import job with local
                Spark.
        """
        from sleeper.runtime.local.handlers import BULK_IMPORT_QUEUE

        if platform is not None:
            raise UnknownPlatformError(
                f"a local instance has no bulk import platforms ({platform!r} given): its jobs run with local Spark; "
                "leave out --platform"
            )
        job = replace(job, files=_absolute(job.files))
        self.runtime.queue(BULK_IMPORT_QUEUE).send(job.to_json())
        return BULK_IMPORT_QUEUE

    def run_bulk_import_job(self, job: BulkImportJob) -> BulkImportReport:
        """Runs a bulk import job here with Spark ``local[*]`` and, when the table commits asynchronously, applies
        the commit.

        Raises:
            SleeperError: If the job fails or is rejected.
        """
        from sleeper.bulk_import import run_bulk_import
        from sleeper.core.trackers import JobOutcome
        from sleeper.runtime.local.tasks import local_task

        job = replace(job, files=_absolute(job.files))
        with local_task(self.runtime) as task:
            outcome = run_bulk_import(self.runtime, job, task_id=task.task_id)
        if outcome.outcome is not JobOutcome.FINISHED or outcome.result is None:
            raise SleeperError(
                f"bulk import job {job.id} {outcome.outcome.value.lower()}: {'; '.join(outcome.reasons)}"
            )
        result = outcome.result
        if result.commit_sent:
            self.apply_job_commit(job_table_name(job), job.id, what="bulk import job")
        return BulkImportReport(
            job.id,
            job_table_name(job),
            "FINISHED",
            rows_written=result.rows_written,
            files=len(result.references),
            already_added=result.already_added,
            seconds=dict(result.seconds),
        )

    def _export(
        self, table: Table[Any], query: BulkExportQuery, directory: str | Path | None, *, wait: bool, timeout: float
    ) -> dict[str, Any]:
        """Exports the table in this process to ``directory`` (``wait`` and ``timeout`` do not apply: it is done when
        this returns)."""
        from sleeper.bulk_export import export_table

        if directory is None:
            raise SleeperError("give the directory to export to: sleeper export TABLE DIR")
        summary = export_table(self.runtime, query, str(directory))
        return {
            "exportId": summary.export_id,
            "tableId": summary.table_id,
            "state": "ALREADY_FINISHED" if summary.already_finished else "COMPLETED",
            "rows": summary.rows_written,
            "files": list(summary.files),
        }

    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Tracks files in the batcher's store at once (local paths made absolute)."""
        from sleeper.ingest.batcher import IngestBatcherSubmitter, submit_files

        submitter = IngestBatcherSubmitter(self.runtime, self.runtime.batcher_store, allow_local=True)
        tracked = submit_files(submitter, table_name, list(_absolute(files)))
        return f"{counted(len(tracked), 'file')} sent to the ingest batcher for table {table_name}"

    def _drain(self, queues: Sequence[str]) -> dict[str, int]:
        from sleeper.runtime.local.handlers import default_handlers
        from sleeper.runtime.local.runner import LocalRunner, RoundSummary
        from sleeper.runtime.local.tasks import local_task

        runner = LocalRunner(self.runtime, default_handlers())
        total = RoundSummary()
        with local_task(self.runtime):
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
        if not self.runtime.table(table_name).state_store.has_added_job(job_id):
            raise SleeperError(
                f"{what} {job_id}: its files were sent to the state store committer but not added; "
                f"see 'sleeper report ingest-jobs {table_name}'"
            )

    # --- operations now ----------------------------------------------------------------------------------------
    def compact_now(self, name: str, *, compact_all: bool = False, wait: bool = True) -> OperationReport:
        """Creates compaction jobs for a table now and, unless told not to wait, runs them and their commits (first
        applying the assignment of any pending batches and dispatching them, when the table assigns through the
        committer)."""
        from sleeper.compaction import create_jobs_for_table

        table = self.runtime.table(name)
        result = create_jobs_for_table(self.runtime, table, compact_all=compact_all)
        queues = [COMPACTION_JOB_Q, COMPACTION_COMMIT_Q, STATE_STORE_COMMITTER_Q]
        if result.pending_batches:
            queues = [STATE_STORE_COMMITTER_Q, PENDING_COMPACTION_JOB_BATCH_Q, *queues]
        processed = self._drain(queues) if wait else {}
        lines = [
            f"Table {name}: {counted(result.jobs_created, 'compaction job')} created over "
            f"{counted(result.input_files, 'input file')}, "
            f"{counted(result.references_pre_split, 'reference')} pre-split"
        ]
        if processed:
            lines.append(f"Ran {counted(processed.get(COMPACTION_JOB_Q, 0), 'compaction job')}")
        return OperationReport({**result.to_dict(), "messagesHandled": processed}, lines)

    def split_now(self, name: str) -> OperationReport:
        """Finds a table's partitions over the splitting threshold now, and splits them."""
        from sleeper.splitting import PARTITION_SPLITTING_JOB_QUEUE, send_split_jobs

        table = self.runtime.table(name)
        jobs = send_split_jobs(table, self.runtime.queue(PARTITION_SPLITTING_JOB_QUEUE))
        processed = self._drain([PARTITION_SPLITTING_JOB_QUEUE, STATE_STORE_COMMITTER_Q])
        leaves = len(self.runtime.table(name).leaf_partitions())
        return OperationReport(
            {"splitJobs": [j.partition.id for j in jobs], "messagesHandled": processed, "leafPartitions": leaves},
            [f"Table {name}: {counted(len(jobs), 'partition')} to split; now {counted(leaves, 'leaf partition')}"],
        )

    def gc_now(self, name: str, *, orphans: bool = False, dry_run: bool = False) -> OperationReport:
        """Garbage collects a table now; with ``orphans``, also sweeps files no transaction referenced."""
        from sleeper.gc import run_garbage_collection, sweep_orphans

        table = self.runtime.table(name)
        result = run_garbage_collection(self.runtime, table.table_id)
        self._drain([STATE_STORE_COMMITTER_Q])
        swept = sweep_orphans(table, dry_run=dry_run) if orphans else None
        lines = [f"Table {name}: {counted(len(result.deleted), 'file')} garbage collected"]
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

    def run(
        self,
        *,
        until_idle: bool = False,
        poll_seconds: float = 1.0,
        workers: int = 1,
        stop: Any = None,
    ) -> RoundSummary:
        """Runs the scheduler and the queue workers of the instance in this process (with ``workers`` processes for
        compaction jobs): until no work is left (``until_idle``), else until ``stop`` (a ``threading.Event``) is set.

        Returns:
            What the rounds did (``pending`` is what is left when ``until_idle`` gave up after its most rounds).
        """
        import threading

        from sleeper.runtime.local.handlers import default_handlers, drain_in_worker
        from sleeper.runtime.local.runner import LocalRunner
        from sleeper.runtime.local.tasks import local_task

        with local_task(self.runtime):
            runner = LocalRunner(self.runtime, default_handlers(), workers=workers, worker_drain=drain_in_worker)
            try:
                if until_idle:
                    return runner.run_until_idle(poll_seconds=poll_seconds)
                return runner.run_forever(stop if stop is not None else threading.Event(), poll_seconds=poll_seconds)
            finally:
                runner.close()

    # --- queues and reports ------------------------------------------------------------------------------------
    def queue_names(self) -> list[str]:
        """Every queue of a local instance."""
        return list(local_queue_settings())

    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """See :func:`retry_dead_letters`."""
        return retry_dead_letters(self.runtime, queue_names)

    def recover_dead_tasks(self) -> None:
        """Records the runs of this instance's processes that are gone as failed, releases their queue messages and
        deletes their temporary files (``sleeper.runtime.local.tasks.recover_dead_tasks``)."""
        from sleeper.runtime.local.tasks import recover_dead_tasks

        recover_dead_tasks(self.runtime)

    # --- scheduling --------------------------------------------------------------------------------------------
    def is_paused(self) -> bool:
        """Whether the scheduler is paused."""
        return is_paused(self.runtime)

    def pause(self) -> str:
        """See :func:`pause`."""
        pause(self.runtime)
        return "Paused: no compaction, splitting, garbage collection or snapshots are scheduled"

    def resume(self) -> None:
        """See :func:`resume`."""
        resume(self.runtime)


def _absolute(paths: Sequence[str]) -> tuple[str, ...]:
    from sleeper.io import resolve_input_paths

    return resolve_input_paths(paths)
