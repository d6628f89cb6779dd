"""Instance status reports as plain data, also printed as JSON, and their rich renderings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table

from sleeper.api import queues_report
from sleeper.cli import render

if TYPE_CHECKING:
    from sleeper.api import Instance


def _by_status(statuses: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return dict(sorted(counts.items()))


def status_report(instance: Instance) -> dict[str, Any]:
    """The whole instance: tables in numbers, queues, jobs by status and tasks in progress."""
    tables = []
    ingest_jobs: list[str] = []
    compaction_jobs: list[str] = []
    for status in instance.tables():
        table = instance.table_by_id(status.table_id)
        summary = render.table_summary(table)
        summary.pop("schema")
        tables.append(summary)
        ingest_jobs.extend(j.status.value for j in instance.ingest_job_tracker.jobs(status.table_id))
        compaction_jobs.extend(j.status.value for j in instance.compaction_job_tracker.jobs(status.table_id))
    return {
        "instanceId": instance.properties.get("sleeper.id"),
        **instance.location_fields,
        "tables": tables,
        "queues": queues_report(instance),
        "ingestJobs": _by_status(ingest_jobs),
        "rejectedIngestJobs": len(instance.ingest_job_tracker.invalid_jobs()),
        "compactionJobs": _by_status(compaction_jobs),
        "ingestTasksInProgress": len(instance.ingest_task_tracker.tasks_in_progress()),
        "compactionTasksInProgress": len(instance.compaction_task_tracker.tasks_in_progress()),
    }


def _table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    out = Table(title=title)
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*(_cell(row.get(c)) for c in columns))
    return out


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)


def tasks_table(kind: str, report: list[dict[str, Any]]) -> Table:
    """A task report."""
    columns = ["taskId", "startTime", "finishTime", "jobRuns", "rowsRead", "rowsWritten", "secondsOnJobs"]
    return _table(f"{kind.capitalize()} tasks ({len(report)})", report, columns)


def dead_letters_table(report: list[dict[str, Any]]) -> Table:
    """The dead letter report."""
    return _table("Dead letters", report, ["queue", "deadLetterQueue", "messages", "sample"])


def status_renderable(report: dict[str, Any]) -> Group:
    """The whole-instance status as tables."""
    tables = _table(
        f"Instance {report['instanceId']}: tables",
        report["tables"],
        ["tableName", "online", "partitions", "leafPartitions", "files", "fileReferences", "rows"],
    )
    busy = [q for q in report["queues"] if q["visible"] or q["inFlight"] or q["deadLetters"]]
    queues = _table("Queues with messages", busy, ["queue", "visible", "inFlight", "deadLetters"])
    jobs = Table(title="Jobs and tasks")
    jobs.add_column("What")
    jobs.add_column("Counts", overflow="fold")
    jobs.add_row("Ingest jobs", ", ".join(f"{k} {v}" for k, v in report["ingestJobs"].items()) or "none")
    jobs.add_row("Rejected ingest jobs", str(report["rejectedIngestJobs"]))
    jobs.add_row("Compaction jobs", ", ".join(f"{k} {v}" for k, v in report["compactionJobs"].items()) or "none")
    jobs.add_row("Ingest tasks running", str(report["ingestTasksInProgress"]))
    jobs.add_row("Compaction tasks running", str(report["compactionTasksInProgress"]))
    return Group(tables, queues, jobs)


def status_sections(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The whole-instance status as tab-separated sections: tables, queues (every one), jobs and tasks by status."""
    counts: list[dict[str, Any]] = []
    for what, key in (("ingestJob", "ingestJobs"), ("compactionJob", "compactionJobs")):
        counts.extend({"what": what, "status": status, "count": n} for status, n in report[key].items())
    counts.append({"what": "ingestJob", "status": "REJECTED", "count": report["rejectedIngestJobs"]})
    counts.append({"what": "ingestTask", "status": "IN_PROGRESS", "count": report["ingestTasksInProgress"]})
    counts.append({"what": "compactionTask", "status": "IN_PROGRESS", "count": report["compactionTasksInProgress"]})
    return {"tables": report["tables"], "queues": report["queues"], "jobs and tasks": counts}
