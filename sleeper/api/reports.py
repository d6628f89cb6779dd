"""Reports of an instance as plain data: its queues, dead letters and tasks, and its jobs at the depth of Sleeper's
(``CompactionJobStatusReport``, ``IngestJobStatusReport``): every run of a job with its task, start, finish and commit
times, rows and rates; the jobs of a time range. :class:`sleeper.api.instance.Instance` gives each as an Arrow table
(``queues_report()``, ``dead_letters_report()``, ``tasks_report(kind)``, ``ingest_jobs_report(...)``,
``compaction_jobs_report(table)``, ``queries_report()``); the ``sleeper report`` commands print the same rows as JSON
or render them for people.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sleeper.core import Queue, QueueCounts, SleeperError
from sleeper.core.trackers import (
    CompactionJobRun,
    CompactionJobStatus,
    CompactionJobStatusType,
    IngestJobAddedFiles,
    IngestJobRun,
    IngestJobStatus,
    IngestJobStatusType,
    QueryState,
    QueryTracker,
    TaskStatus,
    TrackedQuery,
)


class QueueSet(Protocol):
    """The queues a report reads: an instance's (``sleeper.api.instance.Instance`` has them)."""

    def queue_names(self) -> list[str]:
        """The logical names of the queues."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """A queue by logical name."""
        ...

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead-letter queue of a queue."""
        ...


__all__ = [
    "DEAD_LETTER_SAMPLE",
    "QueueSet",
    "TimeRange",
    "compaction_job_rows",
    "compaction_summary",
    "dead_letters_report",
    "ingest_job_rows",
    "ingest_summary",
    "parse_time",
    "query_row",
    "queues_report",
    "tasks_report",
    "tracker_rows",
]

DEAD_LETTER_SAMPLE = 10
"""How many messages of each dead-letter queue the report shows."""

_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now: datetime) -> datetime:
    """A time given on the command line: ISO 8601 (``2026-01-31T12:00``, ``2026-01-31``; UTC unless it says
    otherwise), or how long ago (``90s``, ``30m``, ``2h``, ``7d``, ``1w``).

    Raises:
        SleeperError: Naming the text, if it is neither.
    """
    value = text.strip()
    relative = _RELATIVE.fullmatch(value.lower())
    if relative:
        return now - timedelta(seconds=float(relative.group(1)) * _UNITS[relative.group(2)])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise SleeperError(
            f"{text!r} is not a time: give ISO 8601 (2026-01-31T12:00, UTC unless it says otherwise) or how long ago "
            "(30m, 2h, 7d)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class TimeRange:
    """The jobs of a period: those created in it, or with a run that overlaps it (an unfinished run lasts until
    now), as Sleeper's range query selects them."""

    def __init__(self, since: datetime | None, until: datetime | None, now: datetime) -> None:
        """Raises SleeperError if ``since`` is after ``until``."""
        if since is not None and until is not None and since > until:
            raise SleeperError(f"--since ({_time(since)}) is after --until ({_time(until)})")
        self.since = since
        self.until = until
        self._now = now

    def _overlaps(self, start: datetime, end: datetime | None) -> bool:
        end = end or self._now
        return (self.until is None or start <= self.until) and (self.since is None or end >= self.since)

    def has_compaction(self, status: CompactionJobStatus) -> bool:
        """Whether a compaction job belongs to the period."""
        if status.create_time is not None and self._overlaps(status.create_time, status.create_time):
            return True
        return any(self._overlaps(run.start_time, _compaction_run_end(run)) for run in status.runs)

    def has_ingest(self, status: IngestJobStatus) -> bool:
        """Whether an ingest or bulk import job belongs to the period."""
        return any(
            self._overlaps(run.start_time, None if run.status.is_run_in_progress else run.updates[-1].update_time)
            for run in status.runs
        )


def _compaction_run_end(run: CompactionJobRun) -> datetime | None:
    """When a compaction run ended (its last update), or None while it is in progress or awaiting its commit."""
    if run.status in (CompactionJobStatusType.IN_PROGRESS, CompactionJobStatusType.UNCOMMITTED):
        return None
    return run.updates[-1].update_time


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round((end - start).total_seconds(), 3)


def _rate(rows: int, seconds: float | None) -> float | None:
    return round(rows / seconds, 2) if seconds else None


def _compaction_run(run: CompactionJobRun) -> dict[str, Any]:
    finished = run.finish_time is not None and run.status is not CompactionJobStatusType.FAILED
    duration = _seconds(run.start_time, run.finish_time)
    return {
        "runId": run.job_run_id,
        "taskId": run.task_id,
        "status": run.status.value,
        "startTime": _time(run.start_time),
        "finishTime": _time(run.finish_time),
        "commitTime": _time(run.commit_time),
        "durationSeconds": duration,
        "finishToCommitSeconds": _seconds(run.finish_time, run.commit_time),
        "rowsRead": run.rows_read if finished else None,
        "rowsWritten": run.rows_written if finished else None,
        "rowsReadPerSecond": _rate(run.rows_read, duration) if finished else None,
        "rowsWrittenPerSecond": _rate(run.rows_written, duration) if finished else None,
        "failureReasons": list(run.failure_reasons),
    }


def compaction_job_rows(statuses: Sequence[CompactionJobStatus]) -> list[dict[str, Any]]:
    """Compaction jobs as plain data: each job's partition, input files, status and figures of its latest run, and
    every run (``jobRuns``, latest first) with its times, rows and rates."""
    out = []
    for status in statuses:
        run = status.latest_run
        out.append(
            {
                "jobId": status.job_id,
                "tableId": status.table_id,
                "partitionId": status.partition_id,
                "inputFiles": status.input_files_count,
                "status": status.status.value,
                "createTime": _time(status.create_time),
                "runs": len(status.runs),
                "taskId": run.task_id if run else None,
                "rowsRead": run.rows_read if run else 0,
                "rowsWritten": run.rows_written if run else 0,
                "reasons": list(run.failure_reasons) if run else [],
                "jobRuns": [_compaction_run(r) for r in status.runs],
            }
        )
    return out


def _ingest_commit_time(run: IngestJobRun) -> datetime | None:
    """When a finished run's files were committed: its last added-files update when they were committed separately
    (the committer, or a bulk import), else its finish, when it committed them itself."""
    if run.status is not IngestJobStatusType.FINISHED:
        return None
    added = [u.update_time for u in run.updates if isinstance(u, IngestJobAddedFiles)]
    return added[-1] if added else run.finish_time


def _ingest_run(run: IngestJobRun) -> dict[str, Any]:
    finished = run.status in (IngestJobStatusType.FINISHED, IngestJobStatusType.UNCOMMITTED)
    duration = _seconds(run.start_time, run.finish_time) if finished else None
    commit = _ingest_commit_time(run)
    return {
        "runId": run.job_run_id,
        "taskId": run.task_id,
        "status": run.status.value,
        "startTime": _time(run.start_time),
        "finishTime": _time(run.finish_time),
        "commitTime": _time(commit),
        "durationSeconds": duration,
        "finishToCommitSeconds": _seconds(run.finish_time, commit) if finished else None,
        "rowsRead": run.rows_read if finished else None,
        "rowsWritten": run.rows_written if finished else None,
        "rowsReadPerSecond": _rate(run.rows_read, duration) if finished else None,
        "rowsWrittenPerSecond": _rate(run.rows_written, duration) if finished else None,
        "filesWritten": run.files_written,
        "failureReasons": list(run.failure_reasons),
    }


def ingest_job_rows(statuses: Sequence[IngestJobStatus]) -> list[dict[str, Any]]:
    """Ingest and bulk import jobs as plain data.

    The job's times and figures are those of the run that gave it its status (for a finished job, the run that wrote
    its data), its reasons and ``latestRunStatus`` those of the latest run (a rerun that was rejected, for example);
    ``jobRuns`` holds every run, latest first, with its times, rows and rates.
    """
    out: list[dict[str, Any]] = []
    for status in statuses:
        run = next(r for r in status.runs if r.status is status.status)
        latest = status.latest_run
        out.append(
            {
                "jobId": status.job_id,
                "tableId": status.table_id,
                "status": status.status.value,
                "runs": len(status.runs),
                "latestRunStatus": latest.status.value,
                "startTime": run.start_time.isoformat(),
                "finishTime": run.finish_time.isoformat() if run.finish_time else None,
                "rowsRead": run.rows_read,
                "rowsWritten": run.rows_written,
                "filesWritten": run.files_written,
                "reasons": list(latest.failure_reasons),
                "jobRuns": [_ingest_run(r) for r in status.runs],
            }
        )
    return out


# --- summaries --------------------------------------------------------------------------------------------------


def _rates(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    done = [r for r in runs if r["durationSeconds"] is not None and r["rowsRead"] is not None]
    seconds = sum(r["durationSeconds"] for r in done)
    return {
        "averageRowsReadPerSecond": round(sum(r["rowsRead"] for r in done) / seconds, 2) if seconds else None,
        "averageRowsWrittenPerSecond": round(sum(r["rowsWritten"] for r in done) / seconds, 2) if seconds else None,
    }


def _delays(runs: list[dict[str, Any]]) -> dict[str, float] | None:
    delays = [r["finishToCommitSeconds"] for r in runs if r["finishToCommitSeconds"] is not None]
    if not delays:
        return None
    return {"min": min(delays), "mean": round(sum(delays) / len(delays), 3), "max": max(delays)}


def compaction_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the jobs and runs by state, the average rates and the delays between finish and commit, as in
    Sleeper's report."""
    runs = [r for job in rows for r in job["jobRuns"]]

    def any_run(job: dict[str, Any], *states: str) -> bool:
        return any(r["status"] in states for r in job["jobRuns"])

    return {
        "jobs": len(rows),
        "notStarted": sum(1 for j in rows if not j["jobRuns"]),
        "inUnfinishedRun": sum(1 for j in rows if any_run(j, "IN_PROGRESS", "UNCOMMITTED")),
        "inUnfinishedRunAfterFailedRun": sum(
            1 for j in rows if any_run(j, "IN_PROGRESS", "UNCOMMITTED") and any_run(j, "FAILED")
        ),
        "failedMayBeRetried": sum(
            1 for j in rows if j["jobRuns"] and j["jobRuns"][0]["status"] == "FAILED" and not any_run(j, "FINISHED")
        ),
        "runsInProgress": sum(1 for r in runs if r["status"] == "IN_PROGRESS"),
        "runsAwaitingCommit": sum(1 for r in runs if r["status"] == "UNCOMMITTED"),
        "finished": sum(1 for j in rows if any_run(j, "FINISHED")),
        "finishedWithMoreThanOneRun": sum(1 for j in rows if any_run(j, "FINISHED") and len(j["jobRuns"]) > 1),
        **_rates(runs),
        "finishToCommitSeconds": _delays(runs),
    }


def ingest_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the jobs and runs by state and the average rates of the finished runs."""
    runs = [r for job in rows for r in job["jobRuns"]]

    def any_run(job: dict[str, Any], *states: str) -> bool:
        return any(r["status"] in states for r in job["jobRuns"])

    return {
        "jobs": len(rows),
        "inProgress": sum(1 for j in rows if any_run(j, "ACCEPTED", "IN_PROGRESS", "UNCOMMITTED")),
        "finished": sum(1 for j in rows if any_run(j, "FINISHED")),
        "finishedWithMoreThanOneRun": sum(1 for j in rows if any_run(j, "FINISHED") and len(j["jobRuns"]) > 1),
        "failedMayBeRetried": sum(1 for j in rows if j["jobRuns"][0]["status"] == "FAILED"),
        "rejected": sum(1 for j in rows if j["status"] == "REJECTED"),
        "runsInProgress": sum(1 for r in runs if r["status"] in ("ACCEPTED", "IN_PROGRESS")),
        "runsAwaitingCommit": sum(1 for r in runs if r["status"] == "UNCOMMITTED"),
        **_rates(runs),
        "finishToCommitSeconds": _delays(runs),
    }


# --- rendering --------------------------------------------------------------------------------------------------


def _dead_letter_queue(instance: QueueSet, name: str) -> Queue | None:
    try:
        return instance.dead_letter_queue(name)
    except SleeperError:
        return None  # a queue without a dead-letter queue (on AWS, the query results queue)


def queues_report(instance: QueueSet) -> list[dict[str, Any]]:
    """Every queue of the instance with its visible, in-flight and dead-lettered message counts."""
    out = []
    for name in instance.queue_names():
        counts = instance.queue(name).approximate_counts()
        dead_letter_queue = _dead_letter_queue(instance, name)
        dead = dead_letter_queue.approximate_counts() if dead_letter_queue is not None else QueueCounts(0, 0)
        out.append(
            {
                "queue": name,
                "visible": counts.visible,
                "inFlight": counts.in_flight,
                "deadLetters": dead.visible + dead.in_flight,
            }
        )
    return out


def dead_letters_report(instance: QueueSet) -> list[dict[str, Any]]:
    """Each dead-letter queue holding messages, with its count and up to a few of its message bodies.

    Reading the sample leaves the messages where they are (they are received with no visibility timeout).
    """
    out = []
    for name in instance.queue_names():
        queue = _dead_letter_queue(instance, name)
        if queue is None:
            continue
        counts = queue.approximate_counts()
        if counts.visible + counts.in_flight == 0:
            continue
        sample = queue.receive(DEAD_LETTER_SAMPLE, visibility_timeout_seconds=0)
        out.append(
            {
                "queue": name,
                "deadLetterQueue": queue.name,
                "messages": counts.visible + counts.in_flight,
                "sample": [m.body for m in sample],
            }
        )
    return out


def tasks_report(statuses: list[TaskStatus]) -> list[dict[str, Any]]:
    """Task statuses as plain data."""
    return [
        {
            "taskId": t.task_id,
            "startTime": t.start_time.isoformat(),
            "finishTime": t.finish_time.isoformat() if t.finish_time else None,
            "jobRuns": t.job_runs,
            "rowsRead": t.rows_read,
            "rowsWritten": t.rows_written,
            "secondsOnJobs": round(t.time_spent_on_jobs_seconds, 3),
        }
        for t in statuses
    ]


def tracker_rows(tracker: QueryTracker, query_id: str | None, state: QueryState | None = None) -> list[TrackedQuery]:
    """The tracker's rows: one query with its sub-queries, or every query; with a state, only the rows in it."""
    from sleeper.query import tracked_rows

    if query_id is None:
        return tracker.all_queries() if state is None else tracker.queries_with_state(state)
    rows = tracked_rows(tracker, query_id)
    return rows if state is None else [r for r in rows if r.last_known_state is state]


def query_row(row: TrackedQuery) -> dict[str, Any]:
    """A tracker row as plain data, named as Sleeper's tracker attributes."""
    return {
        "queryId": row.query_id,
        "subQueryId": row.sub_query_id,
        "lastKnownState": row.last_known_state.value,
        "lastUpdateTime": row.last_update_time.isoformat(),
        "rowCount": row.row_count,
        "errors": row.error_message,
    }
