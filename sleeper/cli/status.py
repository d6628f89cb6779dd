"""Instance status reports (spec 10) as plain data, also printed as JSON, and their rich renderings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table

from sleeper.cli import render
from sleeper.core.exceptions import SleeperError
from sleeper.core.queue import Queue, QueueCounts
from sleeper.core.trackers.task import TaskStatus

if TYPE_CHECKING:
    from sleeper.api.instance import Instance

DEAD_LETTER_SAMPLE = 10
"""How many messages of each dead-letter queue the report shows."""


def _dead_letter_queue(instance: Instance, name: str) -> Queue | None:
    try:
        return instance.dead_letter_queue(name)
    except SleeperError:
        return None  # a queue without a dead-letter queue (on AWS, the query results queue)


def queues_report(instance: Instance) -> list[dict[str, Any]]:
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


def dead_letters_report(instance: Instance) -> list[dict[str, Any]]:
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
