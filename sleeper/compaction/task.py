"""The compaction task (spec 4.4): the loop an ECS task or a local worker runs over the compaction job queue.

Each job message is received, kept invisible while the job runs (its visibility is extended every
``sleeper.compaction.keepalive.period.seconds``), checked against the table's state, run
(:func:`~sleeper.compaction.execution.run_compaction`), committed (:func:`~sleeper.compaction.commit.commit_job`) and
deleted. Every run is recorded in the compaction job tracker (started, finished, committed or failed) and the task
in the compaction task tracker (started, finished with totals).

What happens to a message:

* finished (committed or commit request sent), already committed (a duplicate delivery: nothing is written), or
  rejected (its table is gone, or its inputs are assigned elsewhere or gone, so it can never commit; or its iterator
  cannot be loaded or fails, which no retry can mend: the run is tracked failed with the reason, once): deleted;
* failed (an error while running or committing, an unreadable message, or inputs not assigned yet): made visible
  again after ``sleeper.compaction.job.failed.visibility.timeout.seconds``; the queue moves it to the dead-letter
  queue once it has been received its maximum number of times.

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
from enum import Enum

from pyarrow import fs as pafs

from sleeper.compaction.commit import CommitOutcome, JobReadiness, check_job, commit_job
from sleeper.compaction.execution import CompactionResult, ExecutionSettings, run_compaction
from sleeper.compaction.ports import COMPACTION_JOB_QUEUE, CompactionInstance, CompactionTable
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.faults import crash_point
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.jobs.exceptions import MessageError
from sleeper.core.properties import InstanceProperties
from sleeper.core.queue import Message, Queue, QueueError
from sleeper.core.trackers.runs import CompactionRun, JobOutcome, RunFailure
from sleeper.core.trackers.task import TaskFinished, TaskStarted
from sleeper.io.filesystem import FileSystemOptions
from sleeper.iterators.exceptions import IteratorLoadError, IteratorRunError

__all__ = [
    "CompactionJobRunner",
    "JobRunOutcome",
    "TaskExit",
    "TaskSettings",
    "TaskSummary",
    "handle_compaction_job_message",
    "run_compaction_task",
]

_LOG = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSettings:
    """How a compaction task takes jobs and when it stops. The defaults are Sleeper's.

    Attributes:
        wait_seconds: How long one receive waits for a job (0 to 20).
        max_idle_seconds: Stop once no job has arrived for this long (0: at the first empty receive).
        delay_before_retry_seconds: Pause after an empty receive.
        max_consecutive_failures: Stop after this many failed jobs in a row.
        keep_alive_seconds: How often the visibility of the job being run is extended.
        visibility_timeout_seconds: How long a received job stays invisible, and how far each extension reaches.
        failed_visibility_seconds: How long a failed job stays invisible before it may be received again.
        max_alive_seconds: Stop after a job once the task has run this long (None: never).
    """

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
        instance: CompactionInstance,
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
            return self._outcome(JobOutcome.ALREADY_COMMITTED, job, (check.reason,))
        if check.readiness is JobReadiness.NOT_ASSIGNED:
            return self._not_run(job, JobOutcome.REJECTED, check.reason)
        if check.readiness is JobReadiness.AWAITING_ASSIGNMENT:
            return self._not_run(job, JobOutcome.FAILED, check.reason)
        return self._run_ready(job, table)

    def _run_ready(self, job: CompactionJob, table: CompactionTable) -> JobRunOutcome:
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
            ),
            expected=(IteratorLoadError, IteratorRunError),
        )
        if isinstance(result, RunFailure):
            # an iterator that cannot be loaded, or whose own code fails, fails every run alike: no retries
            never = isinstance(result.error, IteratorLoadError | IteratorRunError)
            kind = JobOutcome.REJECTED if never else JobOutcome.FAILED
            return self._outcome(kind, job, result.reasons, run_id=run.run_id)
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


class TaskExit(Enum):
    """Why a compaction task stopped."""

    IDLE = "IDLE"
    MAX_CONSECUTIVE_FAILURES = "MAX_CONSECUTIVE_FAILURES"
    MAX_ALIVE_TIME = "MAX_ALIVE_TIME"
    MAX_JOBS = "MAX_JOBS"
    STOPPED = "STOPPED"


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


class _KeepAlive:
    """Extends a received message's visibility on a thread until stopped, so no other task takes the job."""

    def __init__(self, queue: Queue, message: Message, period: float, extend_to: float) -> None:
        self._queue = queue
        self._handle = message.receipt_handle
        self._period = period
        self._extend_to = extend_to
        self._stop = threading.Event()
        self.lost = threading.Event()
        """Set if an extension failed because the message is no longer ours (it may be delivered again)."""
        self._thread = threading.Thread(target=self._run, name="sleeper-compaction-keepalive", daemon=True)

    def __enter__(self) -> _KeepAlive:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self._queue.change_visibility(self._handle, self._extend_to)
            except QueueError as e:
                _LOG.warning("lost the compaction job message while running it: %s", e)
                self.lost.set()
                return
            except Exception:  # a transient failure: the next period tries again
                _LOG.exception("extending the visibility of a compaction job message failed")


def run_compaction_task(
    instance: CompactionInstance,
    *,
    task_id: str | None = None,
    settings: TaskSettings | None = None,
    runner: CompactionJobRunner | None = None,
    max_jobs: int | None = None,
    stop: threading.Event | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    clock: Clock = _utc_now,
) -> TaskSummary:
    """Runs a compaction task: takes jobs from the instance's compaction job queue until a stop condition.

    Args:
        instance: The instance (queues, tables, job and task trackers).
        task_id: The task id; a new UUID if omitted.
        settings: Receive and stop settings; the instance's compaction properties if omitted.
        runner: Runs each job; one for this task with default settings if omitted.
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
    job_runner = runner or CompactionJobRunner(instance, task_id=chosen_id, clock=clock)
    task_tracker = instance.compaction_task_tracker
    task_tracker.record(TaskStarted(task_id=chosen_id, update_time=clock()))
    queue = instance.queue(COMPACTION_JOB_QUEUE)
    outcomes: list[JobRunOutcome] = []
    rows_read = rows_written = 0
    job_seconds = 0.0
    failures_in_row = 0
    started = monotonic()
    idle_since = started
    reason = TaskExit.IDLE
    try:
        while True:
            if stop is not None and stop.is_set():
                reason = TaskExit.STOPPED
                break
            if max_jobs is not None and len(outcomes) >= max_jobs:
                reason = TaskExit.MAX_JOBS
                break
            messages = queue.receive(
                1, visibility_timeout_seconds=chosen.visibility_timeout_seconds, wait_seconds=chosen.wait_seconds
            )
            if not messages:
                if monotonic() - idle_since >= chosen.max_idle_seconds:
                    reason = TaskExit.IDLE
                    break
                sleep(chosen.delay_before_retry_seconds)
                continue
            message = messages[0]
            job_start = monotonic()
            with _KeepAlive(queue, message, chosen.keep_alive_seconds, chosen.visibility_timeout_seconds):
                outcome = job_runner.run_message(message.body)
            outcomes.append(outcome)
            now = monotonic()
            job_seconds += now - job_start
            idle_since = now
            if outcome.result is not None:
                rows_read += outcome.result.rows_read
                rows_written += outcome.result.rows_written
            if outcome.outcome is JobOutcome.FAILED:
                _LOG.warning("compaction job %s failed: %s", outcome.job_id, "; ".join(outcome.reasons))
                _return(queue, message, chosen.failed_visibility_seconds)
                failures_in_row += 1
                if failures_in_row >= chosen.max_consecutive_failures:
                    reason = TaskExit.MAX_CONSECUTIVE_FAILURES
                    break
            else:
                queue.delete(message.receipt_handle)
                failures_in_row = 0
            if chosen.max_alive_seconds is not None and now - started >= chosen.max_alive_seconds:
                reason = TaskExit.MAX_ALIVE_TIME
                break
    finally:
        task_tracker.record(
            TaskFinished(
                task_id=chosen_id,
                update_time=clock(),
                job_runs=sum(1 for o in outcomes if o.job_run_id is not None),
                rows_read=rows_read,
                rows_written=rows_written,
                time_spent_on_jobs_seconds=job_seconds,
            )
        )
    return TaskSummary(
        task_id=chosen_id,
        exit=reason,
        outcomes=tuple(outcomes),
        rows_read=rows_read,
        rows_written=rows_written,
        time_spent_on_jobs_seconds=job_seconds,
    )


def _return(queue: Queue, message: Message, seconds: float) -> None:
    try:
        queue.change_visibility(message.receipt_handle, seconds)
    except QueueError as e:  # the message is no longer ours: it comes back on its own
        _LOG.warning("could not return a failed compaction job message: %s", e)


def handle_compaction_job_message(instance: CompactionInstance, body: str, *, task_id: str | None = None) -> str:
    """Runs one compaction job message, for queue workers that receive and delete messages themselves.

    Returns:
        A line for the log.

    Raises:
        CompactionError: If the job failed, so that the message is delivered again.
    """
    from sleeper.compaction.exceptions import CompactionError

    outcome = CompactionJobRunner(instance, task_id=task_id).run_message(body)
    if outcome.outcome is JobOutcome.FAILED:
        raise CompactionError(f"compaction job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is not JobOutcome.FINISHED:
        return f"compaction job {outcome.job_id} {outcome.outcome.value.lower()}: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result is not None else 0
    return f"compaction job {outcome.job_id} finished: {rows:,} rows written"
