"""How one run of an ingest or bulk import job ended, recorded in the ingest job tracker on the way.

Both runners end a run the same way: an unreadable message or a job that fails validation is rejected (its message
kept to be fixed and resent), and the run's work either failed (recorded by ``IngestRun.attempt``) or finished, which
is recorded with what it read and wrote. :class:`FileJobOutcome` records each ending and says what it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, Self, TypeVar

from sleeper.core.jobs.exceptions import MessageError
from sleeper.core.jobs.ingest import FileJob
from sleeper.core.trackers.ingest import IngestJobTracker
from sleeper.core.trackers.runs import IngestRun, JobOutcome, RunFailure


class RunResult(Protocol):
    """What a finished run wrote, as the tracker records it."""

    @property
    def rows_read(self) -> int: ...

    @property
    def rows_written(self) -> int: ...

    @property
    def commit_sent(self) -> bool: ...


R = TypeVar("R", bound=RunResult)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileJobOutcome(Generic[R]):
    """The end of one run of an ingest or bulk import job.

    Attributes:
        job_id: The job id.
        outcome: Finished, rejected (nothing was written) or failed (may be retried).
        table_id: The job's table, if it was found.
        files: The input files the job's paths expanded to (empty if rejected before expansion).
        reasons: Why the job was rejected or failed.
        result: What was written, if the job finished.
    """

    job_id: str
    outcome: JobOutcome
    table_id: str | None = None
    files: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    result: R | None = None

    @classmethod
    def unreadable(
        cls,
        tracker: IngestJobTracker,
        error: MessageError,
        body: str,
        *,
        task_id: str | None,
        clock: Callable[[], datetime],
    ) -> Self:
        """Records a message that could not be read as a job rejected (``IngestRun.reject_unreadable``)."""
        job_id = IngestRun.reject_unreadable(
            tracker,
            job_id=error.job_id,
            reason=str(error),
            json_message=error.json_message if error.json_message is not None else body,
            task_id=task_id,
            clock=clock,
        )
        return cls(job_id=job_id, outcome=JobOutcome.REJECTED, reasons=(str(error),))

    @classmethod
    def rejected(cls, run: IngestRun, job: FileJob, files: Sequence[str], reasons: tuple[str, ...]) -> Self:
        """Records the job rejected with the reasons, keeping its message (as received, or as written now)."""
        run.rejected(
            reasons,
            json_message=job.json_message if job.json_message is not None else job.to_json(),
            file_count=len(job.files),
        )
        return cls(
            job_id=job.id, outcome=JobOutcome.REJECTED, table_id=run.table_id, files=tuple(files), reasons=reasons
        )

    @classmethod
    def of_attempt(
        cls, run: IngestRun, result: R | RunFailure, files: tuple[str, ...], *, files_written: Callable[[R], int]
    ) -> Self:
        """The end of a run's work: failed (already recorded by ``IngestRun.attempt``), or finished, which is
        recorded here with the rows read and written and ``files_written(result)`` files."""
        if isinstance(result, RunFailure):
            return cls(
                job_id=run.job_id, outcome=JobOutcome.FAILED, table_id=run.table_id, files=files, reasons=result.reasons
            )
        run.finished(
            rows_read=result.rows_read,
            rows_written=result.rows_written,
            files_written=files_written(result),
            committed_separately=result.commit_sent,
        )
        return cls(job_id=run.job_id, outcome=JobOutcome.FINISHED, table_id=run.table_id, files=files, result=result)
