"""One run of a job, shared by every job runner (ingest, bulk import, compaction): how it ended
(:class:`JobOutcome`) and the skeleton of its updates in a job tracker (:class:`TrackedRun`).

A runner makes one :class:`IngestRun` or :class:`CompactionRun` per run. Every update it records carries the job,
its table, the run id, the task and the clock's time when recorded. The run's work goes through
:meth:`TrackedRun.attempt`, which records an error as the run failed with its reasons and returns them instead of
raising. A message that cannot be read as a job is recorded rejected by :meth:`IngestRun.reject_unreadable`.
"""

from __future__ import annotations

import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Generic, TypedDict, TypeVar

from sleeper.core.logcontext import log_context
from sleeper.core.metrics import job_run_metrics, publish_metrics
from sleeper.core.trackers.base import TrackerError
from sleeper.core.trackers.compaction import (
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobTracker,
    CompactionJobUpdate,
)
from sleeper.core.trackers.ingest import (
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobTracker,
    IngestJobUpdate,
    IngestJobValidated,
)

__all__ = [
    "CompactionRun",
    "IngestRun",
    "JobOutcome",
    "RunFailure",
    "TrackedRun",
    "failure_reasons",
    "new_run_id",
]

Clock = Callable[[], datetime]
_T = TypeVar("_T")
_U = TypeVar("_U")

_LOG = logging.getLogger(__name__)


class JobOutcome(Enum):
    """How one run (one delivery) of a job ended."""

    FINISHED = "FINISHED"
    """Run and committed (or its commit request sent); the message is deleted."""

    ALREADY_COMMITTED = "ALREADY_COMMITTED"
    """The job was committed by an earlier run: nothing was written and the message is deleted (compaction)."""

    REJECTED = "REJECTED"
    """The job can never succeed (invalid, table gone, inputs gone or assigned elsewhere): nothing was written and
    the message is deleted."""

    FAILED = "FAILED"
    """An error; the message is returned to the queue to be tried again (or dead-lettered)."""


def new_run_id() -> str:
    """A new job run id (a UUID)."""
    return str(uuid.uuid4())


def failure_reasons(error: Exception, *, expected: tuple[type[Exception], ...] = ()) -> tuple[str, ...]:
    """The reasons a run failed with this error: its message alone if it is one of the ``expected`` errors (the
    job's data, not the code, is at fault and the message says why), else its type and message."""
    if isinstance(error, expected):
        return (str(error),)
    return (f"{type(error).__name__}: {error}",)


@dataclass(frozen=True, slots=True)
class RunFailure:
    """A run's work raised, and the run was recorded as failed with these reasons.

    Attributes:
        reasons: The reasons recorded.
        error: What was raised.
    """

    reasons: tuple[str, ...]
    error: Exception


class _Common(TypedDict):
    job_id: str
    update_time: datetime
    job_run_id: str
    task_id: str | None


class TrackedRun(ABC, Generic[_U]):
    """One run of one job, recorded against a job tracker port. Subclasses say which updates a kind of tracker
    records (:class:`IngestRun`, :class:`CompactionRun`).

    The run's work (:meth:`attempt`) logs with the job, table, task and run ids in its log context
    (:mod:`sleeper.core.logcontext`), and a finished run publishes its rows, duration and rate
    (:func:`sleeper.core.metrics.job_run_metrics`).

    Args:
        record: The tracker port's ``record``.
        job_id: The job.
        table_id: The job's table, if it is known (every update but a rejection needs it).
        task_id: The task running the job, if any.
        run_id: The run; a new one if omitted.
        clock: The time of each update (timezone-aware).
    """

    def __init__(
        self,
        record: Callable[[_U], None],
        *,
        job_id: str,
        table_id: str | None,
        task_id: str | None = None,
        run_id: str | None = None,
        clock: Clock,
    ) -> None:
        self._record = record
        self.job_id = job_id
        self.table_id = table_id
        self.task_id = task_id
        self.run_id = run_id or new_run_id()
        self._clock = clock
        self._began: datetime | None = None

    _METRICS_KIND = "Job"
    """The prefix of the metrics of a finished run, e.g. ``Compaction``."""

    def _begin(self, update_time: datetime) -> None:
        if self._began is None:
            self._began = update_time

    def _publish_finished(self, update_time: datetime, *, rows_read: int, rows_written: int) -> None:
        seconds = 0.0 if self._began is None else max(0.0, (update_time - self._began).total_seconds())
        dimensions, metrics = job_run_metrics(
            self._METRICS_KIND, table_id=self._table(), rows_read=rows_read, rows_written=rows_written, seconds=seconds
        )
        publish_metrics(dimensions, *metrics)

    @abstractmethod
    def _failed_update(self, reasons: tuple[str, ...]) -> _U: ...

    def failed(self, reasons: tuple[str, ...]) -> None:
        """Records the run failed with the reasons."""
        self._record(self._failed_update(reasons))

    def attempt(self, work: Callable[[], _T], *, expected: tuple[type[Exception], ...] = ()) -> _T | RunFailure:
        """Does the run's work; if it raises, records the run failed with the error's reasons
        (:func:`failure_reasons`) and returns them instead of raising.

        Args:
            work: The work.
            expected: Errors whose message alone is the reason (the job's fault: logged without a traceback).

        Returns:
            What the work returned, or the failure recorded.
        """
        with log_context(job_id=self.job_id, table_id=self.table_id, task_id=self.task_id, run_id=self.run_id):
            try:
                return work()
            except Exception as e:
                if isinstance(e, expected):
                    _LOG.info("job %s run %s failed: %s", self.job_id, self.run_id, e)
                else:
                    _LOG.exception("job %s run %s failed", self.job_id, self.run_id)
                reasons = failure_reasons(e, expected=expected)
                self.failed(reasons)
                return RunFailure(reasons, e)

    def _common(self) -> _Common:
        return _Common(job_id=self.job_id, update_time=self._clock(), job_run_id=self.run_id, task_id=self.task_id)

    def _table(self) -> str:
        if self.table_id is None:
            raise TrackerError(f"job {self.job_id} run {self.run_id}: only a rejection may name no table")
        return self.table_id


class IngestRun(TrackedRun[IngestJobUpdate]):
    """One run of an ingest or bulk import job in the ingest job tracker: rejected, or validated, started, and
    finished or failed."""

    def __init__(
        self,
        tracker: IngestJobTracker,
        *,
        job_id: str,
        table_id: str | None,
        task_id: str | None = None,
        run_id: str | None = None,
        clock: Clock,
    ) -> None:
        super().__init__(tracker.record, job_id=job_id, table_id=table_id, task_id=task_id, run_id=run_id, clock=clock)

    @classmethod
    def reject_unreadable(
        cls,
        tracker: IngestJobTracker,
        *,
        job_id: str | None,
        reason: str,
        json_message: str,
        task_id: str | None = None,
        clock: Clock,
    ) -> str:
        """Records a message that could not be read as a job: rejected on a new run with no table, under the id it
        gave (a new one if none).

        Returns:
            The job id recorded.
        """
        run = cls(tracker, job_id=job_id or new_run_id(), table_id=None, task_id=task_id, clock=clock)
        run.rejected((reason,), json_message=json_message)
        return run.job_id

    def rejected(self, reasons: tuple[str, ...], *, json_message: str, file_count: int = 0) -> None:
        """Records the job validated and rejected with the reasons, keeping its message to be fixed and resent."""
        self._record(
            IngestJobValidated(
                **self._common(),
                table_id=self.table_id,
                file_count=file_count,
                reasons=reasons,
                json_message=json_message,
            )
        )

    _METRICS_KIND = "Ingest"

    def validated(self, *, file_count: int) -> None:
        """Records the job validated and accepted: the run begins."""
        common = self._common()
        self._begin(common["update_time"])
        self._record(IngestJobValidated(**common, table_id=self._table(), file_count=file_count))

    def started(self, *, file_count: int) -> None:
        """Records the run started (not the start of a run: its validation began it)."""
        common = self._common()
        self._begin(common["update_time"])
        self._record(IngestJobStarted(**common, table_id=self._table(), file_count=file_count, start_of_run=False))

    def finished(
        self, *, rows_read: int, rows_written: int, files_written: int, committed_separately: bool = False
    ) -> None:
        """Records the run finished with what it read and wrote; ``committed_separately`` when its files were sent to
        the state store committer, whose added-files update completes the run."""
        common = self._common()
        self._record(
            IngestJobFinished(
                **common,
                table_id=self._table(),
                rows_read=rows_read,
                rows_written=rows_written,
                files_written=files_written,
                committed_by_separate_file_updates=committed_separately,
            )
        )
        self._publish_finished(common["update_time"], rows_read=rows_read, rows_written=rows_written)

    def _failed_update(self, reasons: tuple[str, ...]) -> IngestJobUpdate:
        return IngestJobFailed(**self._common(), table_id=self._table(), reasons=reasons)


class CompactionRun(TrackedRun[CompactionJobUpdate]):
    """One run of a compaction job in the compaction job tracker: started, finished (its output written), and
    failed if running or committing it raised; a job that cannot run is a run that failed at once."""

    def __init__(
        self,
        tracker: CompactionJobTracker,
        *,
        job_id: str,
        table_id: str,
        task_id: str | None = None,
        run_id: str | None = None,
        clock: Clock,
    ) -> None:
        super().__init__(tracker.record, job_id=job_id, table_id=table_id, task_id=task_id, run_id=run_id, clock=clock)

    _METRICS_KIND = "Compaction"

    def started(self) -> None:
        """Records the run started."""
        common = self._common()
        self._begin(common["update_time"])
        self._record(CompactionJobStarted(**common, table_id=self._table()))

    def finished(self, *, rows_read: int, rows_written: int) -> None:
        """Records the run's output written (its commit may still be pending)."""
        common = self._common()
        self._record(
            CompactionJobFinished(**common, table_id=self._table(), rows_read=rows_read, rows_written=rows_written)
        )
        self._publish_finished(common["update_time"], rows_read=rows_read, rows_written=rows_written)

    def _failed_update(self, reasons: tuple[str, ...]) -> CompactionJobUpdate:
        return CompactionJobFailed(**self._common(), table_id=self._table(), reasons=reasons)
