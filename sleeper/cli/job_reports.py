"""Job reports rendered for people: the rows and summaries of :mod:`sleeper.api.reports` as rich renderables (a
summary, every run of each job, one job in detail); the commands are in :mod:`sleeper.cli.reports`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sleeper.api import compaction_summary, ingest_summary
from sleeper.core import counted

__all__ = ["compaction_jobs_renderable", "ingest_jobs_renderable", "run_rows"]

_SUMMARY_LABELS = {
    "jobs": "Total jobs",
    "notStarted": "Jobs not yet started",
    "inUnfinishedRun": "Jobs in an unfinished run",
    "inUnfinishedRunAfterFailedRun": "Jobs in an unfinished run after a failed run",
    "inProgress": "Jobs in progress",
    "failedMayBeRetried": "Failed jobs (may be retried)",
    "rejected": "Rejected jobs",
    "runsInProgress": "Runs in progress",
    "runsAwaitingCommit": "Runs awaiting commit",
    "finished": "Jobs finished successfully",
    "finishedWithMoreThanOneRun": "Jobs finished successfully with more than one run",
    "averageRowsReadPerSecond": "Average rate, rows read per second",
    "averageRowsWrittenPerSecond": "Average rate, rows written per second",
}


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)


def _summary_lines(title: str, summary: dict[str, Any]) -> list[str]:
    lines = [title, "-" * len(title)]
    for key, label in _SUMMARY_LABELS.items():
        if key in summary:
            lines.append(f"{label}: {_fmt(summary[key]) or 'none'}")
    delays = summary.get("finishToCommitSeconds")
    lines.append(
        "Delay between finish and commit: "
        + (
            "no runs committed"
            if delays is None
            else f"min {delays['min']} s, mean {delays['mean']} s, max {delays['max']} s"
        )
    )
    return lines


def _runs_table(title: str, rows: list[dict[str, Any]], job_columns: list[tuple[str, str]]) -> Table:
    out = Table(title=title + " (times in UTC)")
    columns = [
        *job_columns,
        ("State", "status"),
        ("Task", "taskId"),
        ("Start", "startTime"),
        ("Finish", "finishTime"),
        ("Commit", "commitTime"),
        ("Secs", "durationSeconds"),
        ("Rows read", "rowsRead"),
        ("Rows written", "rowsWritten"),
        ("Read/s", "rowsReadPerSecond"),
        ("Written/s", "rowsWrittenPerSecond"),
        ("Reasons", "failureReasons"),
    ]
    for name, key in columns:
        out.add_column(name, overflow="fold", no_wrap=key not in ("taskId", "failureReasons", "partitionId", "jobId"))
    for job in rows:
        runs = job["jobRuns"] or [{"status": job["status"]}]
        for run in runs:
            values = [job.get(key) for _, key in job_columns]
            values += [
                _short_time(run.get(key)) if key.endswith("Time") else run.get(key)
                for _, key in columns[len(job_columns) :]
            ]
            out.add_row(*(_fmt(v) for v in values))
    return out


def _short_time(value: str | None) -> str | None:
    """An ISO time of the JSON report as the table shows it: ``01-31 12:00:00`` (UTC; the year is in --json)."""
    return None if value is None else value[5:19].replace("T", " ")


def _detail_lines(job: dict[str, Any], job_fields: list[tuple[str, str]]) -> list[str]:
    lines = [f"Details for job {job['jobId']}:", f"State: {job['status']}"]
    lines.extend(f"{label}: {_fmt(job.get(key))}" for label, key in job_fields if job.get(key) is not None)
    if not job["jobRuns"]:
        lines.append("No run yet")
    for run in job["jobRuns"]:
        lines.append("")
        lines.append(f"Run {run['runId'] or ''} on task {run['taskId'] or '(none)'}: {run['status']}")
        for label, key in (
            ("Start time", "startTime"),
            ("Finish time", "finishTime"),
            ("State store commit time", "commitTime"),
            ("Delay between finish and commit (s)", "finishToCommitSeconds"),
            ("Duration (s)", "durationSeconds"),
            ("Rows read", "rowsRead"),
            ("Rows written", "rowsWritten"),
            ("Read rate (rows per second)", "rowsReadPerSecond"),
            ("Write rate (rows per second)", "rowsWrittenPerSecond"),
            ("Files written", "filesWritten"),
        ):
            if run.get(key) is not None:
                lines.append(f"{label}: {_fmt(run[key])}")
        if run["status"] == "IN_PROGRESS":
            lines.append("Not finished")
        elif run["status"] == "UNCOMMITTED":
            lines.append("Not committed")
        if run["failureReasons"]:
            lines.append("Run failed, reasons:")
            lines.extend(f"- {reason}" for reason in run["failureReasons"])
    lines.append("-" * 26)
    return lines


def compaction_jobs_renderable(rows: list[dict[str, Any]], *, detailed: bool, title: str) -> Group:
    """The compaction job report: the summary, then a row per run (a job run twice has two), or with ``detailed``
    each job and every run in full."""
    summary = Text("\n".join(_summary_lines(title, compaction_summary(rows))))
    if detailed:
        fields = [("Partition ID", "partitionId"), ("Input files", "inputFiles"), ("Creation time", "createTime")]
        details = [line for job in rows for line in _detail_lines(job, fields)]
        return Group(summary, Text(""), Text("\n".join(details)))
    table = _runs_table(
        f"Compaction job runs ({counted(len(rows), 'job')})", rows, [("Job", "jobId"), ("Partition", "partitionId")]
    )
    return Group(summary, table)


def ingest_jobs_renderable(rows: list[dict[str, Any]], *, detailed: bool, title: str) -> Group:
    """The ingest job report: the summary, then a row per run (a job run twice has two), or with ``detailed`` each
    job and every run in full."""
    summary = Text("\n".join(_summary_lines(title, ingest_summary(rows))))
    if detailed:
        details = [line for job in rows for line in _detail_lines(job, [("Table ID", "tableId")])]
        return Group(summary, Text(""), Text("\n".join(details)))
    table = _runs_table(f"Ingest job runs ({counted(len(rows), 'job')})", rows, [("Job", "jobId")])
    return Group(summary, table)


def run_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The job report flat, one row per run (a job with no run yet has one row): the job's fields, then the run's,
    named ``run`` + the run field (``runStatus``, ``runTaskId``, ...), as the tab-separated report prints them."""
    out = []
    for job in rows:
        fields = {k: v for k, v in job.items() if k != "jobRuns"}
        for run in job["jobRuns"] or [{}]:
            out.append({**fields, **{f"run{k[0].upper()}{k[1:]}": v for k, v in run.items()}})
    return out
