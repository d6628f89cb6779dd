"""The HTML report of a table, rendered from Arrow views built here (no instance, no browser): one element per
partition, leaf and job run with stable ids and classes, widths by rows, every user string escaped, nothing fetched."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from itertools import count
from typing import Any

import pyarrow as pa
import pytest

from sleeper.api.html_report import render_report
from sleeper.api.metadata import FILES_SCHEMA, job_runs_table, partitions_table
from sleeper.core.partition import Partition, partitions_from_split_points
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema.of(row_keys=[Field("name", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])
NASTY = "<script>alert('x')</script>&"


class _Elements(HTMLParser):
    """Every start tag of a page with its attributes (unescaped), and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.tags if name in attrs.get("class", "").split()]

    def ids(self) -> set[str]:
        return {attrs["id"] for _, attrs in self.tags if "id" in attrs}


def _parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


def _partitions() -> list[Partition]:
    ids = count()
    # split points holding markup: the leaves are [-inf, "<b>&"), ["<b>&", "m"), ["m", inf)
    return partitions_from_split_points(SCHEMA, ["<b>&", "m"], id_supplier=lambda: f"p'{next(ids)}<\">")


def _files(leaves: list[Partition]) -> pa.Table:
    rows: list[dict[str, object]] = [
        {"filename": f"file://{NASTY}-1.parquet", "partition_id": leaves[0].id, "number_of_rows": 10},
        {"filename": "file:///d/2.parquet", "partition_id": leaves[0].id, "number_of_rows": 20},
        {"filename": "file:///d/3.parquet", "partition_id": leaves[1].id, "number_of_rows": 90},
        {"filename": "file:///d/old.parquet", "partition_id": None, "number_of_rows": None},
    ]
    sizes = [1000, 2000, 6000, 500]
    return pa.Table.from_pylist(
        [{**row, "file_size_bytes": size} for row, size in zip(rows, sizes, strict=True)], schema=FILES_SCHEMA
    )


def _run(run_id: str, status: str, start: str | None, finish: str | None) -> dict[str, Any]:
    return {
        "runId": run_id,
        "taskId": "task-1",
        "status": status,
        "startTime": start,
        "finishTime": finish,
        "commitTime": finish,
        "durationSeconds": None,
        "rowsRead": None,
        "rowsWritten": None,
        "failureReasons": [NASTY] if status == "FAILED" else [],
    }


def _jobs(leaf: Partition) -> pa.Table:
    ingest = [
        {"jobId": NASTY, "jobRuns": [_run("r1", "FINISHED", "2026-01-01T10:00:00.000Z", "2026-01-01T10:00:05.000Z")]}
    ]
    compaction = [
        {
            "jobId": "compaction-1",
            "partitionId": leaf.id,
            "jobRuns": [
                _run("r2", "FAILED", "2026-01-01T10:00:06.000Z", "2026-01-01T10:00:07.000Z"),
                _run("r3", "IN_PROGRESS", "2026-01-01T10:00:08.000Z", None),
            ],
        }
    ]
    return job_runs_table(ingest, compaction)


def _page(*, jobs: pa.Table | None = None) -> tuple[str, list[Partition], pa.Table]:
    partitions = _partitions()
    leaves = [p for p in partitions if p.is_leaf]
    leaves.sort(key=lambda p: p.region.ranges["name"].min)
    files = _files(leaves)
    view = partitions_table(partitions, SCHEMA, files)
    page = render_report(
        NASTY,
        partitions=view,
        files=files,
        jobs=_jobs(leaves[0]) if jobs is None else jobs,
        row_keys=["name"],
    )
    return page, partitions, view


def should_draw_one_element_per_partition_leaf_and_job_run_under_stable_ids() -> None:
    # Given a table of 5 partitions (3 leaves) and 3 job runs
    page, partitions, view = _page()
    # When its report is parsed
    elements = _parse(page)
    # Then the charts are there under their ids, with one element per partition, leaf and job run
    assert {"summary", "partition-tree", "file-sizes", "job-timeline"} <= elements.ids()
    drawn = elements.with_class("partition")
    assert sorted(p["data-partition-id"] for p in drawn) == sorted(p.id for p in partitions)
    assert len(elements.with_class("leaf")) == 3
    bars = elements.with_class("leaf-bar")
    by_id = {row["partition_id"]: row for row in view.to_pylist()}
    assert [int(b["data-bytes"]) for b in bars] == [3000, 6000, 0]
    assert all(int(b["data-bytes"]) == by_id[b["data-partition-id"]]["bytes"] for b in bars)
    assert len(elements.with_class("file-segment")) == 3
    runs = elements.with_class("job-run")
    assert [(r["data-kind"], r["data-status"]) for r in runs] == [
        ("ingest", "FINISHED"),
        ("compaction", "FAILED"),
        ("compaction", "IN_PROGRESS"),
    ]
    assert "status-failed" in runs[1]["class"].split() and "kind-compaction" in runs[1]["class"].split()
    assert "open-ended" in runs[2]["class"].split()


def should_size_partitions_by_their_rows_and_label_leaves_with_their_ranges() -> None:
    # Given leaves of 30, 90 and 0 rows
    page, _, _ = _page()
    elements = _parse(page)
    # When the tree's leaves are measured (the first rectangle of each: a later one clips its labels)
    widths: dict[str, float] = {}
    leaf = None
    for tag, attrs in elements.tags:
        if tag == "g":
            leaf = attrs["data-partition-id"] if "leaf" in attrs.get("class", "").split() else None
        elif tag == "rect" and leaf is not None:
            widths.setdefault(leaf, float(attrs["width"]))
    rows = {p["data-partition-id"]: int(p["data-rows"]) for p in elements.with_class("leaf")}
    by_rows = {rows[leaf]: width for leaf, width in widths.items()}
    # Then each is as wide as its share of the rows, an empty one a sliver
    assert by_rows[90] / by_rows[30] == pytest.approx(3.0, rel=0.02)
    assert 0 < by_rows[0] < 5
    # And each leaf is labelled with its key range and its figures
    text = "".join(elements.text)
    assert 'name: [-∞, "<b>&")' in text and 'name: ["m", ∞)' in text
    assert "30 rows · 2 files · 2.9 KiB" in text
    assert "4 files, 9.3 KiB; 1 awaiting garbage collection" in text


def should_escape_every_user_string_and_fetch_nothing() -> None:
    # Given a table name, split points, partition ids, file names, job ids and failure reasons holding markup
    page, _, _ = _page()
    # Then none of it reaches the page as markup
    assert "<script" not in page and "<b>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;&amp;" in page
    assert "p&#x27;0&lt;&quot;&gt;" in page  # an id inside an attribute
    # And the page loads nothing: no script, no link, no external URL
    for fetching in ("<script", "<link", "<img", "<iframe", " src=", " href=", "@import", "http://", "https://"):
        assert fetching not in page, fetching


def should_say_when_no_job_has_run() -> None:
    # Given a table whose jobs were never tracked
    page, _, _ = _page(jobs=job_runs_table([], []))
    # Then the timeline says so and draws no run
    elements = _parse(page)
    assert "job-timeline" in elements.ids() and not elements.with_class("job-run")
    assert "No job runs are recorded for this table." in page


def should_draw_a_run_still_open_on_to_the_time_of_the_report() -> None:
    # Given a run in progress since 10:00:08, the last time its tracker holds, reported at 10:00:18
    partitions = _partitions()
    leaves = sorted((p for p in partitions if p.is_leaf), key=lambda p: p.region.ranges["name"].min)
    files = _files(leaves)
    page = render_report(
        "t",
        partitions=partitions_table(partitions, SCHEMA, files),
        files=files,
        jobs=_jobs(leaves[0]),
        row_keys=["name"],
        generated_at=datetime(2026, 1, 1, 10, 0, 18, tzinfo=UTC),
    )
    # When the bars of the timeline are measured
    widths: dict[str, float] = {}
    run = None
    for tag, attrs in _parse(page).tags:
        if tag == "g":
            run = attrs.get("data-run-id")
        elif tag == "rect" and run is not None:
            widths[run] = float(attrs["width"])
    # Then the open run is drawn from its start to the report's time: twice the 5 s of the first, which ran 10:00:00-05
    assert widths["r3"] == pytest.approx(2 * widths["r1"], rel=0.01)
