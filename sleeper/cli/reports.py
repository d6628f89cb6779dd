"""``report files``, ``report compaction-jobs`` and ``report ingest-jobs``, with the options of Sleeper's status
reports (``FilesStatusReport``, ``CompactionJobStatusReport``, ``IngestJobStatusReport``): a summary with statistics,
every file with ``--verbose``, a CSV line; every run of each job, one job in detail, the jobs of a time range.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.text import Text

from sleeper.cli.common import (
    FormatOption,
    JsonOption,
    chosen_format,
    console,
    err_console,
    is_stdin,
    open_instance,
    print_json,
    print_report,
)
from sleeper.core import SleeperError, counted

if TYPE_CHECKING:
    from sleeper.api import Table, TimeRange
    from sleeper.core.statestore import FileReference
    from sleeper.core.trackers import CompactionJobStatus, IngestJobStatus

__all__ = ["files_csv", "files_report", "reference_stats", "register"]

DEFAULT_MAX_GC_FILES = 1000
"""How many files awaiting garbage collection the files report lists at most, as Sleeper's."""

JobOption = Annotated[
    list[str] | None,
    typer.Option("--job", "-j", help="Report this job in detail, with every run (repeatable, or comma-separated)."),
]
SinceOption = Annotated[
    str | None,
    typer.Option("--since", help="Only jobs created or run since: ISO 8601 (UTC unless given) or how long ago (2h)."),
]
UntilOption = Annotated[
    str | None, typer.Option("--until", help="Only jobs created or run until: ISO 8601 or how long ago.")
]


# --- files --------------------------------------------------------------------------------------------------------


def _percentile(sorted_counts: Sequence[int], fraction: float) -> float | None:
    """Sleeper's percentile: linear between the two nearest ranks of the sorted counts."""
    if not sorted_counts:
        return None
    index = fraction * (len(sorted_counts) - 1)
    low, high = math.floor(index), math.ceil(index)
    return float(sorted_counts[low]) + (index - low) * (sorted_counts[high] - sorted_counts[low])


def reference_stats(files_per_partition: Sequence[int], references: int) -> dict[str, Any]:
    """Statistics of the number of files referenced per partition (over the partitions with any), as Sleeper's
    ``FileReferencesStats``: min, max, mean, median, 90th and 99th percentiles, and the total of references."""
    counts = sorted(files_per_partition)
    return {
        "min": counts[0] if counts else None,
        "max": counts[-1] if counts else None,
        "mean": round(sum(counts) / len(counts), 3) if counts else None,
        "median": _percentile(counts, 0.5),
        "percentile90": _percentile(counts, 0.9),
        "percentile99": _percentile(counts, 0.99),
        "total": references,
    }


def _reference(ref: FileReference) -> dict[str, Any]:
    out = ref.to_dict()
    out["lastUpdateTime"] = ref.last_update_time.isoformat() if ref.last_update_time else None
    return out


def files_report(table: Table[Any], *, max_gc_files: int = DEFAULT_MAX_GC_FILES) -> dict[str, Any]:
    """Files with their references, files awaiting garbage collection (at most ``max_gc_files`` of them, with
    ``moreThanMax`` when there are more), and a summary: partitions, files, references per partition, rows."""
    tree = table.state_store.partition_tree()
    leaves = {p.id for p in [tree.root, *tree.descendants(tree.root.id)] if p.is_leaf}
    partitions = 1 + len(tree.descendants(tree.root.id))
    referenced: list[dict[str, Any]] = []
    unreferenced: list[dict[str, Any]] = []
    unreferenced_count = 0
    files_by_partition: dict[str, set[str]] = {}
    rows = {"leaf": 0, "nonLeaf": 0}
    approx = {"leaf": False, "nonLeaf": False}
    references = {"leaf": 0, "nonLeaf": 0}
    for f in table.files():
        entry = {
            "filename": f.filename,
            "lastUpdateTime": f.last_update_time.isoformat() if f.last_update_time else None,
            "references": [_reference(r) for r in f.references.values()],
        }
        if not f.references:
            unreferenced_count += 1
            if len(unreferenced) < max_gc_files:
                unreferenced.append(entry)
            continue
        referenced.append(entry)
        for ref in f.references.values():
            kind = "leaf" if ref.partition_id in leaves else "nonLeaf"
            files_by_partition.setdefault(ref.partition_id, set()).add(f.filename)
            rows[kind] += ref.number_of_rows
            references[kind] += 1
            approx[kind] = approx[kind] or ref.count_approximate
    total_rows = rows["leaf"] + rows["nonLeaf"]
    leaf_counts = [len(v) for k, v in files_by_partition.items() if k in leaves]
    non_leaf_counts = [len(v) for k, v in files_by_partition.items() if k not in leaves]
    summary = {
        "leafPartitions": len(leaves),
        "nonLeafPartitions": partitions - len(leaves),
        "files": len(referenced) + unreferenced_count,
        "filesWithReferences": len(referenced),
        "filesWithNoReferences": unreferenced_count,
        "moreThanMax": unreferenced_count > max_gc_files,
        "maxGcFiles": max_gc_files,
        "references": references["leaf"] + references["nonLeaf"],
        "referencesInLeafPartitions": reference_stats(leaf_counts, references["leaf"]),
        "referencesInNonLeafPartitions": reference_stats(non_leaf_counts, references["nonLeaf"]),
        "rows": total_rows,
        "rowsInLeafPartitions": rows["leaf"],
        "rowsInNonLeafPartitions": rows["nonLeaf"],
        "rowsApproximate": approx["leaf"] or approx["nonLeaf"],
        "percentageOfRowsInLeafPartitions": round(100.0 * rows["leaf"] / total_rows, 3) if total_rows else None,
    }
    return {
        "summary": summary,
        "referencedFiles": referenced,
        "filesAwaitingGarbageCollection": unreferenced,
        "totalReferences": summary["references"],
        "totalRows": total_rows,
    }


_CSV_COLUMNS = (
    "totalRows",
    "rowsInLeafPartitions",
    "moreThanMax",
    "leafPartitions",
    "nonLeafPartitions",
    "references",
    "referencesInLeafPartitions",
    "referencesInNonLeafPartitions",
)
_STATS = ("total", "max", "min", "mean", "median", "percentile90", "percentile99")


def files_csv(report: dict[str, Any], *, delimiter: str = ",") -> str:
    """The summary as CSV in the columns of Sleeper's CSV files status report (a header line, then the values), or
    tab-separated with ``delimiter="\\t"``."""
    s = report["summary"]
    header = [*_CSV_COLUMNS]
    values: list[Any] = [
        s["rows"],
        s["rowsInLeafPartitions"],
        s["moreThanMax"],
        s["leafPartitions"],
        s["nonLeafPartitions"],
        s["references"],
        s["referencesInLeafPartitions"]["total"],
        s["referencesInNonLeafPartitions"]["total"],
    ]
    for kind in ("leaf", "nonLeaf"):
        stats = s["referencesInLeafPartitions" if kind == "leaf" else "referencesInNonLeafPartitions"]
        header.extend(f"{kind}Partition{name[0].upper()}{name[1:]}" for name in _STATS)
        values.extend(stats[name] for name in _STATS)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", delimiter=delimiter)
    writer.writerow(header)
    writer.writerow(["null" if v is None else str(v).lower() if isinstance(v, bool) else v for v in values])
    return out.getvalue()


def _stats_line(kind: str, stats: dict[str, Any]) -> str:
    if not stats["total"]:
        return f"Number of file references in {kind} partitions: 0"
    return (
        f"Number of file references in {kind} partitions: min = {stats['min']}, max = {stats['max']}, "
        f"mean = {stats['mean']:.3f}, median = {stats['median']:.3f}, 90th percentile = {stats['percentile90']:.3f}, "
        f"99th percentile = {stats['percentile99']:.3f}, total = {stats['total']}"
    )


def _files_text(report: dict[str, Any], *, verbose: bool) -> str:
    s = report["summary"]
    more = ">" if s["moreThanMax"] else ""
    gc_count = s["maxGcFiles"] if s["moreThanMax"] else s["filesWithNoReferences"]
    files = s["filesWithReferences"] + gc_count
    approx = " (approx)" if s["rowsApproximate"] else ""
    lines = [
        "Files Status Report:",
        "--------------------------",
        f"There {'is' if s['leafPartitions'] == 1 else 'are'} {counted(s['leafPartitions'], 'leaf partition')} "
        f"and {counted(s['nonLeafPartitions'], 'non-leaf partition')}",
        f"Number of files: {more}{files}",
        f"Number of files with references: {s['filesWithReferences']}",
        f"Number of files with no references, which will be garbage collected: {more}{gc_count}",
        f"Number of references to files: {s['references']}",
        _stats_line("leaf", s["referencesInLeafPartitions"]),
        _stats_line("non-leaf", s["referencesInNonLeafPartitions"]),
        f"Number of rows referenced in partitions{approx}: {s['rows']:,}",
        f"Number of rows in non-leaf partitions{approx}: {s['rowsInNonLeafPartitions']:,}",
        f"Number of rows in leaf partitions{approx}: {s['rowsInLeafPartitions']:,}",
        f"Percentage of rows in leaf partitions{approx}: {_fmt_percentage(s['percentageOfRowsInLeafPartitions'])}",
    ]
    if verbose:
        gc = report["filesAwaitingGarbageCollection"]
        lines.append("")
        lines.append(
            "Files with no references"
            + (" (more are present, maximum count applied)" if s["moreThanMax"] else "")
            + ":"
            + ("" if gc else " none")
        )
        lines.extend(_file_lines(f) for f in gc)
        lines.append("")
        lines.append("Files with references:" + ("" if report["referencedFiles"] else " none"))
        lines.extend(_file_lines(f) for f in report["referencedFiles"])
    return "\n".join(lines)


def _fmt_percentage(value: float | None) -> str:
    return "n/a" if value is None else str(value)


def _file_lines(entry: dict[str, Any]) -> str:
    count = len(entry["references"])
    total = "" if count < 1 else f", {counted(count, 'reference')} total"
    lines = [f"{entry['filename']}{total}, last updated at {entry['lastUpdateTime']}"]
    for ref in entry["references"]:
        approx = " (approx)" if ref["countApproximate"] else ""
        job = f", assigned to job {ref['jobId']}" if ref.get("jobId") else ""
        lines.append(
            f"\tReference in partition {ref['partitionId']}, {counted(ref['numberOfRows'], 'row')}{approx}, "
            f"last updated at {ref.get('lastUpdateTime')}{job}"
        )
    return "\n".join(lines)


def report_files(
    name: Annotated[str, typer.Argument(help="The table.")],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every file and its references.")] = False,
    max_gc_files: Annotated[
        int,
        typer.Option(
            "--max-gc-files", min=0, help="List and count at most this many files awaiting GC (default 1000)."
        ),
    ] = DEFAULT_MAX_GC_FILES,
    output: Annotated[
        Literal["standard", "table", "json", "csv", "tsv"],
        typer.Option("--format", help="standard (text; also 'table'), json, csv or tsv (the summary in one line)."),
    ] = "standard",
    as_json: JsonOption = False,
) -> None:
    """The files of a table: partitions, files, references per partition (min, max, mean, median, 90th and 99th
    percentiles), rows in leaf and non-leaf partitions, files awaiting garbage collection; --verbose lists them."""
    report = files_report(open_instance().table(name), max_gc_files=max_gc_files)
    if as_json or output == "json":
        print_json(report)
    elif output in ("csv", "tsv"):
        text = files_csv(report, delimiter="," if output == "csv" else "\t")
        console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(Text(_files_text(report, verbose=verbose)))


# --- jobs ---------------------------------------------------------------------------------------------------------


def _job_ids(values: list[str] | None) -> list[str]:
    return [j.strip() for v in values or [] for j in v.split(",") if j.strip()]


def _time_range(since: str | None, until: str | None) -> TimeRange | None:
    from sleeper.api import reports as reports_data

    if since is None and until is None:
        return None
    now = datetime.now(tz=UTC)
    return reports_data.TimeRange(
        None if since is None else reports_data.parse_time(since, now),
        None if until is None else reports_data.parse_time(until, now),
        now,
    )


def _found(ids: list[str], found: dict[str, Any], what: str) -> list[Any]:
    missing = [j for j in ids if j not in found]
    if len(missing) == len(ids):
        raise SleeperError(f"no {what} with id {', '.join(repr(j) for j in missing)} in the tracker")
    for job_id in missing:
        err_console.print(f"note: no {what} with id {job_id!r} in the tracker", markup=False, highlight=False)
    return [found[j] for j in ids if j in found]


def report_compaction_jobs(
    name: Annotated[str, typer.Argument(help="The table.")],
    unfinished: Annotated[bool, typer.Option("--unfinished", help="Only jobs not yet committed.")] = False,
    job: JobOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    output_format: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compaction jobs of a table from the compaction job tracker: a summary, then every run of each job (task,
    start, finish and commit times, rows and rates); --job for one job in detail, --since/--until for a period."""
    chosen = chosen_format(output_format, as_json)
    inst = open_instance()
    inst.recover_dead_tasks()
    table_id = inst.table(name).table_id
    tracker = inst.compaction_job_tracker
    ids = _job_ids(job)
    statuses: list[CompactionJobStatus]
    if ids:
        found = {j: s for j in ids if (s := tracker.job(j)) is not None and s.table_id == table_id}
        statuses = _found(ids, found, f"compaction job of table {name}")
    else:
        statuses = tracker.unfinished_jobs(table_id) if unfinished else tracker.jobs(table_id)
    period = _time_range(since, until)
    if period is not None:
        statuses = [s for s in statuses if period.has_compaction(s)]
    from sleeper.api import reports as reports_data
    from sleeper.cli import job_reports

    rows = reports_data.compaction_job_rows(statuses)
    title = "Compaction Job Status Report" + (f" ({'unfinished' if unfinished else 'all'} jobs)" if not ids else "")
    print_report(
        chosen,
        rows,
        lambda: job_reports.compaction_jobs_renderable(rows, detailed=bool(ids), title=title),
        lambda: job_reports.run_rows(rows),
    )


def report_ingest_jobs(
    name: Annotated[str | None, typer.Argument(help="The table (default: rejected jobs of every table).")] = None,
    unfinished: Annotated[bool, typer.Option("--unfinished", help="Only jobs still in progress.")] = False,
    job: JobOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    output_format: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ingest and bulk import jobs from the ingest job tracker: a summary, then every run of each job (task, start,
    finish and commit times, rows and rates); with no table, the jobs that were rejected; --job for one job in
    detail (of any table), --since/--until for a period."""
    chosen = chosen_format(output_format, as_json)
    inst = open_instance()
    inst.recover_dead_tasks()
    tracker = inst.ingest_job_tracker
    ids = _job_ids(job)
    statuses: list[IngestJobStatus]
    if ids:
        table_id = inst.table(name).table_id if name is not None else None
        found = {
            j: s for j in ids if (s := tracker.job(j)) is not None and (table_id is None or s.table_id == table_id)
        }
        statuses = _found(ids, found, "ingest job" + (f" of table {name}" if name else ""))
    elif name is None:
        statuses = tracker.invalid_jobs()
    else:
        table_id = inst.table(name).table_id
        statuses = tracker.unfinished_jobs(table_id) if unfinished else tracker.jobs(table_id)
    period = _time_range(since, until)
    if period is not None:
        statuses = [s for s in statuses if period.has_ingest(s)]
    from sleeper.api import reports as reports_data
    from sleeper.cli import job_reports

    rows = reports_data.ingest_job_rows(statuses)
    title = "Ingest Job Status Report" + ("" if ids else " (rejected jobs)" if name is None else "")
    print_report(
        chosen,
        rows,
        lambda: job_reports.ingest_jobs_renderable(rows, detailed=bool(ids), title=title),
        lambda: job_reports.run_rows(rows),
    )


# --- html -----------------------------------------------------------------------------------------------------


def report_html(
    name: Annotated[str, typer.Argument(help="The table.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the page to this file (- for standard output).")
    ],
) -> None:
    """One self-contained HTML page of a table (no script, nothing fetched): the partition tree sized by rows, the
    file sizes of each leaf, and the timeline of its ingest and compaction job runs."""
    from sleeper.api import render_html_report

    page = render_html_report(open_instance().table(name), generated_at=datetime.now(tz=UTC))
    if is_stdin(output):
        sys.stdout.write(page)
        return
    try:
        output.write_text(page, encoding="utf-8")
    except OSError as e:
        raise SleeperError(f"--output: cannot write {output}: {e.strerror or e}") from None
    console.print(f"wrote {output} ({counted(len(page.encode()), 'byte')})", markup=False, highlight=False)


def register(report_app: typer.Typer) -> None:
    """Adds the files, job and HTML reports to ``sleeper report``."""
    report_app.command("files")(report_files)
    report_app.command("compaction-jobs")(report_compaction_jobs)
    report_app.command("ingest-jobs")(report_ingest_jobs)
    report_app.command("html")(report_html)
