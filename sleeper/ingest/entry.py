"""The ingest job queue's runtime-neutral entry, run by either runtime: the local runner routes
``IngestJobQ`` to :func:`handle_ingest_job` through the router (:mod:`sleeper.runtime.router`), and the ingest task
(:mod:`sleeper.ingest.task`, run by the ingest container) runs each message it takes from the queue with
:func:`run_ingest_job`, the entry's first half, in the task's workspace. Where a job runs
(its task id, the directory it spills to) comes from the instance's ``job_workspace()``, or from the task running it.
"""

from __future__ import annotations

from sleeper.core.jobs import JobWorkspace
from sleeper.core.trackers import JobOutcome
from sleeper.ingest.job_runner import IngestJobOutcome, IngestJobRunner
from sleeper.ingest.ports import IngestRuntime

__all__ = ["handle_ingest_job", "ingest_job_line", "run_ingest_job"]


def run_ingest_job(instance: IngestRuntime, body: str, *, workspace: JobWorkspace | None = None) -> IngestJobOutcome:
    """Runs one ``IngestJobQ`` message in a workspace (by default the instance's ``job_workspace()``); an unreadable
    message is a rejected job."""
    if workspace is None:
        with instance.job_workspace() as given:
            return run_ingest_job(instance, body, workspace=given)
    runner = IngestJobRunner(
        instance, task_id=workspace.task_id, local_dir=workspace.directory, options=instance.filesystem_options
    )
    return runner.run_message(body)


def ingest_job_line(outcome: IngestJobOutcome) -> str:
    """The log line of a finished or rejected job (whose message is done).

    Raises:
        RuntimeError: If the job failed (its message is to be delivered again).
    """
    if outcome.outcome is JobOutcome.FAILED:
        raise RuntimeError(f"ingest job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is JobOutcome.REJECTED:
        return f"ingest job {outcome.job_id} rejected: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result else 0
    return f"ingest job {outcome.job_id} finished: {rows:,} rows written"


def handle_ingest_job(instance: IngestRuntime, body: str) -> str:
    """One ``IngestJobQ`` message: validates, tracks and runs the ingest job (see
    :mod:`sleeper.ingest.job_runner`).

    Returns:
        A line for the log: the rows written, or why the job was rejected.

    Raises:
        RuntimeError: If the job failed (to be delivered again).
    """
    return ingest_job_line(run_ingest_job(instance, body))
