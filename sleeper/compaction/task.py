"""The compaction task: what the compaction container runs over the compaction job queue, through the one
task loop it shares with the ingest task (:mod:`sleeper.core.jobs.task_loop`).

Each job message is received, kept invisible while the job runs (its visibility is extended every
``sleeper.compaction.keepalive.period.seconds``), checked against the table's state, run
(:func:`~sleeper.compaction.execution.run_compaction`), committed (:func:`~sleeper.compaction.commit.commit_job`) and
deleted. Every run is recorded in the compaction job tracker (started, finished, committed or failed) and the task
in the compaction task tracker (started, finished with totals).

What happens to a message:

* finished (committed or commit request sent), already committed (a duplicate delivery: nothing is written), or
  rejected (its table is gone, or its inputs are assigned elsewhere or gone, so it can never commit): deleted;
* failed (an error while running or committing, an iterator that cannot be loaded or whose own code fails, an
  unreadable message, or inputs not assigned yet): the run is tracked failed with the reason, and the message made
  visible again after ``sleeper.compaction.job.failed.visibility.timeout.seconds``; the queue moves it to the
  dead-letter queue once it has been received ``sleeper.compaction.job.max.retries`` times, as in Sleeper. Its input
  files stay assigned to it meanwhile and there (no other job may take them): sending the job again from the
  dead-letter queue (:func:`sleeper.compaction.retry.retry_dead_lettered_jobs`, which ``sleeper compact`` does) runs
  it again once its cause is mended, e.g. the iterator's code installed again.

The task stops when no job has arrived for ``sleeper.compaction.task.max.idle.time.seconds`` (receiving with long
polls of ``...task.wait.time.seconds`` and pausing ``...task.delay.before.retry.seconds`` between empty receives),
after ``...task.max.consecutive.failures`` failed jobs in a row, or after a job once it has run for
``...task.max.alive.time.minutes`` less a random jitter of up to ``...task.max.alive.jitter.minutes``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyarrow import fs as pafs

from sleeper.compaction.commit import CommitOutcome, JobReadiness, check_job, commit_job, record_landed_commit
from sleeper.compaction.execution import CompactionResult, ExecutionSettings, run_compaction
from sleeper.compaction.ports import COMPACTION_JOB_QUEUE
from sleeper.core import TableNotFoundError, crash_point
from sleeper.core.jobs import CompactionJob, LoopSettings, MessageError, TaskExit, TaskLoop, run_task_loop
from sleeper.core.properties import InstanceProperties
from sleeper.core.trackers import CompactionRun, JobOutcome, RunFailure, TaskFinished, TaskStarted
from sleeper.io import FileSystemOptions
from sleeper.iterators import IteratorLoadError, IteratorRunError
from sleeper.statestore import SleeperRuntime, SleeperTable

__all__ = [
    "CompactionJobRunner",
    "JobRunOutcome",
    "TaskExit",
    "TaskSettings",
    "TaskSummary",
    "run_compaction_task",
]

_LOG = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSettings(LoopSettings):
    """How a compaction task takes jobs and when it stops: the task loop's settings (see ``LoopSettings``), with
    Sleeper's defaults; a failed job is returned after ``failed_visibility_seconds``."""

    wait_seconds: float = 20.0
    max_idle_seconds: float = 60.0
    delay_before_retry_seconds: float = 10.0
    max_consecutive_failures: int = 3
    keep_alive_seconds: float = 300.0
    visibility_timeout_seconds: float = 900.0
    failed_visibility_seconds: float = 60.0
    max_alive_seconds: float | None = None

    @classmethod
    def from_instance_properties(
        cls, properties: InstanceProperties, *, jitter: Callable[[], float] = random.random
    ) -> TaskSettings:
        """The settings in an instance's compaction properties.

        Args:
            properties: The instance properties.
            jitter: A random fraction in [0, 1) of the maximum jitter taken off the maximum alive time.
        """
        from sleeper.core.properties import instance_compaction as ic

        alive_minutes = properties.get_int(ic.COMPACTION_TASK_MAX_ALIVE_TIME_IN_MINUTES)
        jitter_minutes = properties.get_int(ic.COMPACTION_TASK_MAX_ALIVE_JITTER_IN_MINUTES)
        return cls(
            wait_seconds=float(properties.get_int(ic.COMPACTION_TASK_WAIT_TIME_IN_SECONDS)),
            max_idle_seconds=float(properties.get_int(ic.COMPACTION_TASK_MAX_IDLE_TIME_IN_SECONDS)),
            delay_before_retry_seconds=float(properties.get_int(ic.COMPACTION_TASK_DELAY_BEFORE_RETRY_IN_SECONDS)),
            max_consecutive_failures=properties.get_int(ic.COMPACTION_TASK_MAX_CONSECUTIVE_FAILURES),
            keep_alive_seconds=float(properties.get_int(ic.COMPACTION_KEEP_ALIVE_PERIOD_IN_SECONDS)),
            visibility_timeout_seconds=float(properties.get_int(ic.COMPACTION_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS)),
            failed_visibility_seconds=float(properties.get_int(ic.COMPACTION_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS)),
            max_alive_seconds=max(0.0, (alive_minutes - jitter() * jitter_minutes) * 60.0) if alive_minutes else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRunOutcome:
    """The end of one delivery of a compaction job.

    Attributes:
        outcome: How it ended.
        job_id: The job, if the message could be read.
        table_id: The job's table, if the message could be read.
        job_run_id: The run recorded in the tracker, if the job started.
        reasons: Why it was not finished.
        result: What the run read and wrote, if it ran.
    """

    outcome: JobOutcome
    job_id: str | None = None
    table_id: str | None = None
    job_run_id: str | None = None
    reasons: tuple[str, ...] = ()
    result: CompactionResult | None = None


class CompactionJobRunner:
    """Runs compaction jobs of an instance's tables: check, run, commit, with every step tracked.

    Args:
        instance: The instance (tables, job tracker, commit queues).
        task_id: The task running the jobs, recorded in the tracker.
        engine: An engine overriding each table's ``sleeper.table.data.engine``.
        settings: Batch sizes and threads of the merge.
        clock: The time of tracker updates (timezone-aware).
        now_ms: The time age-off filters measure from, in epoch milliseconds; now if omitted.
        filesystem: A filesystem for every data file instead of the one each URI names (tests).
        options: How to reach S3.
    """

    def __init__(
        self,
        instance: SleeperRuntime,
        *,
        task_id: str | None = None,
        engine: str | None = None,
        settings: ExecutionSettings | None = None,
        clock: Clock = _utc_now,
        now_ms: Callable[[], int] | None = None,
        filesystem: pafs.FileSystem | None = None,
        options: FileSystemOptions | None = None,
    ) -> None:
        self._instance = instance
        self._task_id = task_id
        self._engine = engine
        self._settings = settings
        self._clock = clock
        self._now_ms = now_ms
        self._filesystem = filesystem
        self._options = options

    def run_message(self, body: str) -> JobRunOutcome:
        """Reads a compaction job message and runs it; an unreadable message fails (and is retried, then
        dead-lettered)."""
        try:
            job = CompactionJob.from_json(body)
        except MessageError as e:
            return JobRunOutcome(outcome=JobOutcome.FAILED, reasons=(f"invalid compaction job message: {e}",))
        return self.run(job)

    def run(self, job: CompactionJob) -> JobRunOutcome:
        """Checks, runs and commits a job. Errors are recorded and returned, not raised."""
        tracker = self._instance.compaction_job_tracker
        try:
            table = self._instance.table_by_id(job.table_id)
        except TableNotFoundError:
            return self._not_run(job, JobOutcome.REJECTED, f"table {job.table_id} does not exist")
        try:
            check = check_job(job, table, tracker=tracker)
        except Exception as e:
            _LOG.exception("compaction job %s: checking the state store failed", job.job_id)
            return self._not_run(job, JobOutcome.FAILED, f"{type(e).__name__}: {e}")
        if check.readiness is JobReadiness.ALREADY_COMMITTED:
            record_landed_commit(tracker, job.table_id, job.job_id, self._clock())
            return self._outcome(JobOutcome.ALREADY_COMMITTED, job, (check.reason,))
        if check.readiness is JobReadiness.NOT_ASSIGNED:
            return self._not_run(job, JobOutcome.REJECTED, check.reason)
        if check.readiness is JobReadiness.AWAITING_ASSIGNMENT:
            return self._not_run(job, JobOutcome.FAILED, check.reason)
        return self._run_ready(job, table)

    def _run_ready(self, job: CompactionJob, table: SleeperTable) -> JobRunOutcome:
        tracker = self._instance.compaction_job_tracker
        run = self._tracked(job)
        run.started()
        result = run.attempt(
            lambda: run_compaction(
                job,
                table,
                engine=self._engine,
                now_ms=self._now_ms() if self._now_ms is not None else None,
                settings=self._settings,
                filesystem=self._filesystem,
                options=self._options,
                run_id=run.run_id,
            ),
            expected=(IteratorLoadError, IteratorRunError),
        )
        if isinstance(result, RunFailure):
            # retried, then dead-lettered, as Sleeper does: the job keeps its input files, so it must not be deleted
            # (an iterator that cannot be loaded now, e.g. its code not yet installed again, may load on a retry)
            return self._outcome(JobOutcome.FAILED, job, result.reasons, run_id=run.run_id)
        run.finished(rows_read=result.rows_read, rows_written=result.rows_written)
        crash_point("compaction.after_output_written")
        committed = run.attempt(
            lambda: commit_job(
                job,
                table,
                rows_written=result.rows_written,
                task_id=self._task_id,
                job_run_id=run.run_id,
                tracker=tracker,
                queue=self._instance.queue,
                clock=self._clock,
                filesystem=self._filesystem,
                options=self._options,
                applied_deletes=result.applied_deletes,
            )
        )
        if isinstance(committed, RunFailure):
            return self._outcome(JobOutcome.FAILED, job, committed.reasons, run_id=run.run_id, result=result)
        crash_point("compaction.after_commit")
        outcome, reason = committed
        kind = {
            CommitOutcome.COMMITTED: JobOutcome.FINISHED,
            CommitOutcome.SENT: JobOutcome.FINISHED,
            CommitOutcome.ALREADY_COMMITTED: JobOutcome.ALREADY_COMMITTED,
            CommitOutcome.REJECTED: JobOutcome.REJECTED,
        }[outcome]
        return self._outcome(kind, job, (reason,) if reason else (), run_id=run.run_id, result=result)

    def _not_run(self, job: CompactionJob, outcome: JobOutcome, reason: str) -> JobRunOutcome:
        self._tracked(job).failed((reason,))
        return self._outcome(outcome, job, (reason,))

    def _tracked(self, job: CompactionJob) -> CompactionRun:
        return CompactionRun(
            self._instance.compaction_job_tracker,
            job_id=job.job_id,
            table_id=job.table_id,
            task_id=self._task_id,
            clock=self._clock,
        )

    @staticmethod
    def _outcome(
        outcome: JobOutcome,
        job: CompactionJob,
        reasons: tuple[str, ...],
        *,
        run_id: str | None = None,
        result: CompactionResult | None = None,
    ) -> JobRunOutcome:
        return JobRunOutcome(
            outcome=outcome, job_id=job.job_id, table_id=job.table_id, job_run_id=run_id, reasons=reasons, result=result
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSummary:
    """What a compaction task did.

    Attributes:
        task_id: The task.
        exit: Why it stopped.
        outcomes: The outcome of every message received, in order.
        rows_read: Rows read over the jobs run.
        rows_written: Rows written over the jobs run.
        time_spent_on_jobs_seconds: Time spent handling messages.
    """

    task_id: str
    exit: TaskExit
    outcomes: tuple[JobRunOutcome, ...] = field(default=())
    rows_read: int = 0
    rows_written: int = 0
    time_spent_on_jobs_seconds: float = 0.0

    def count(self, outcome: JobOutcome) -> int:
        """How many deliveries ended this way."""
        return sum(1 for o in self.outcomes if o.outcome is outcome)


def run_compaction_task(
    instance: SleeperRuntime,
    *,
    task_id: str | None = None,
    settings: TaskSettings | None = None,
    runner: CompactionJobRunner | None = None,
    run_job: Callable[[str], JobRunOutcome] | None = None,
    max_jobs: int | None = None,
    stop: threading.Event | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    clock: Clock = _utc_now,
) -> TaskSummary:
    """Runs a compaction task: takes jobs from the instance's compaction job queue until a stop condition, through
    the one task loop (:func:`sleeper.core.jobs.task_loop.run_task_loop`).

    Args:
        instance: The instance (queues, tables, job and task trackers).
        task_id: The task id; a new UUID if omitted.
        settings: Receive and stop settings; the instance's compaction properties if omitted.
        runner: Runs each job; one for this task with default settings if omitted (ignored given ``run_job``).
        run_job: Runs one job message (a container gives the compaction job queue's entry, run in its workspace).
        max_jobs: Stop after this many messages (for workers that share a process).
        stop: Stop before the next receive once set.
        monotonic: Seconds for idle and alive times (a fake in tests).
        sleep: Waits between empty receives (a fake in tests).
        clock: The time of task tracker updates.

    Returns:
        Why the task stopped and what it did.
    """
    chosen_id = task_id or str(uuid.uuid4())
    chosen = settings or TaskSettings.from_instance_properties(instance.properties)
    if run_job is None:
        run_job = (runner or CompactionJobRunner(instance, task_id=chosen_id, clock=clock)).run_message
    task_tracker = instance.compaction_task_tracker
    task_tracker.record(TaskStarted(task_id=chosen_id, update_time=clock()))
    loop = TaskLoop[JobRunOutcome](outcomes=[])
    try:
        run_task_loop(
            instance.queue(COMPACTION_JOB_QUEUE),
            run_job,
            _failed,
            chosen,
            loop=loop,
            max_jobs=max_jobs,
            stop=stop,
            monotonic=monotonic,
            sleep=sleep,
        )
    finally:
        results = [o.result for o in loop.outcomes if o.result is not None]
        task_tracker.record(
            TaskFinished(
                task_id=chosen_id,
                update_time=clock(),
                job_runs=sum(1 for o in loop.outcomes if o.job_run_id is not None),
                rows_read=sum(r.rows_read for r in results),
                rows_written=sum(r.rows_written for r in results),
                time_spent_on_jobs_seconds=loop.job_seconds,
            )
        )
    return TaskSummary(
        task_id=chosen_id,
        exit=loop.exit,
        outcomes=tuple(loop.outcomes),
        rows_read=sum(r.rows_read for r in results),
        rows_written=sum(r.rows_written for r in results),
        time_spent_on_jobs_seconds=loop.job_seconds,
    )


def _failed(outcome: JobRunOutcome) -> bool:
    if outcome.outcome is JobOutcome.FAILED:
        _LOG.warning("compaction job %s failed: %s", outcome.job_id, "; ".join(outcome.reasons))
        return True
    return False
