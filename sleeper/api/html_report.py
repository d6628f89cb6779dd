"""A table as one self-contained HTML page (``sleeper report html T -o report.html``): the partition tree sized by
rows, the file sizes of each leaf, and the timeline of its ingest and compaction job runs.

The page fetches nothing: its style is inline CSS, its charts inline SVG drawn here, and it holds no script. It is
built from the table's metadata views (``table.inspect.partitions()``, ``files()`` and ``jobs()``), so
:func:`render_report` is a pure function of three Arrow tables and can be called on views read earlier::

    from sleeper.api.html_report import render_html_report

    Path("report.html").write_text(render_html_report(instance.table("t")), encoding="utf-8")

Every text taken from the table (its name, partition ids, keys, file names, job ids, failure reasons) is escaped.
The elements carry stable ids and classes: ``#summary``; ``#partition-tree`` holding one ``.partition`` per partition
(``.leaf`` on leaves); ``#file-sizes`` holding one ``.leaf-bar`` per leaf partition, made of one ``.file-segment``
per file referenced on it; ``#job-timeline`` holding one ``.job-run`` per run of a job, with ``.kind-<kind>`` and
``.status-<status>``. Each carries its figures as ``data-`` attributes (``data-partition-id``, ``data-rows``,
``data-files``, ``data-bytes``, ``data-job-id``, ``data-kind``, ``data-status``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper.core import counted

if TYPE_CHECKING:
    from sleeper.api.table import Table

__all__ = ["render_html_report", "render_report"]

WIDTH = 1200
"""The width of every chart, in SVG user units (the charts scale to the page)."""

_LEVEL_HEIGHT = 46
_MIN_PARTITION_WIDTH = 3.0
_LABELLED_WIDTH = 30.0
_THIN_WIDTH = 6.0
_BAR_HEIGHT = 22.0
_LABELLED_LANE = 12.0
_MANY = 120
_LABEL_WIDTH = 320
_LABEL_CHARS = 44
_KIND_COLOURS = {"ingest": "#4c78a8", "compaction": "#e8871a"}
_OTHER_KIND_COLOUR = "#8c6bb1"


def render_html_report(table: Table[Any], *, generated_at: datetime | None = None) -> str:
    """The HTML page of a table, from its metadata views read now (see the module's description); ``generated_at``,
    when given, is printed as the time of the report."""
    metadata = table.inspect
    return render_report(
        table.name,
        partitions=metadata.partitions(),
        files=metadata.files(),
        jobs=metadata.jobs(),
        row_keys=table.schema.row_key_names,
        generated_at=generated_at,
    )


def render_report(
    name: str,
    *,
    partitions: pa.Table,
    files: pa.Table,
    jobs: pa.Table,
    row_keys: Sequence[str],
    generated_at: datetime | None = None,
) -> str:
    """The HTML page of a table named ``name`` from its views: ``partitions`` as ``inspect.partitions()`` (with its
    ``files``, ``rows`` and ``bytes`` columns), ``files`` as ``inspect.files()``, ``jobs`` as ``inspect.jobs()``;
    ``row_keys`` names the row key fields, whose ``<key>_min`` and ``<key>_max`` columns give each partition's
    range."""
    tree = _Tree.of(partitions, row_keys)
    referenced = files.filter(files["partition_id"].is_valid())
    runs = jobs.to_pylist()
    title = f"Sleeper table {name}"
    stamp = "" if generated_at is None else f" <span class='muted'>generated {_time_text(generated_at)}</span>"
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n",
            f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
            f"<h1>{escape(title)}{stamp}</h1>\n",
            _summary(tree, files, referenced, runs, row_keys),
            _partition_section(tree),
            _file_sizes_section(tree, referenced),
            _timeline_section(runs, generated_at),
            "</body>\n</html>\n",
        ]
    )


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;margin:24px auto;max-width:1240px;
padding:0 12px}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 6px}
.muted{color:#777;font-size:13px;font-weight:normal}
#summary{border-collapse:collapse}#summary th,#summary td{text-align:left;padding:2px 14px 2px 0}
#summary th{font-weight:600}
svg{display:block;width:100%;height:auto;font-size:11px}
svg text{fill:#222}
.partition rect{stroke:#fff;stroke-width:1}
.partition:not(.leaf) rect{fill:#d9dde3}
.partition.thin rect{stroke:none}
.partition .counts{fill:#444}
.leaf-bar .file-segment{stroke:#fff;stroke-width:.5}
.leaf-bar .file-segment:nth-child(odd){fill:#4c78a8}.leaf-bar .file-segment:nth-child(even){fill:#72a1cf}
.leaf-bar .track{fill:#f1f3f5}
.axis line{stroke:#ccc}.axis text{fill:#666}
.job-run rect{stroke-width:1.5;fill:#8c6bb1;stroke:#8c6bb1}
.job-run.kind-ingest rect{fill:#4c78a8;stroke:#4c78a8}.job-run.kind-compaction rect{fill:#e8871a;stroke:#e8871a}
.job-run.status-in-progress rect,.job-run.status-accepted rect,.job-run.status-uncommitted rect{fill-opacity:.35;
stroke-dasharray:3 2}
.job-run.status-failed rect,.job-run.status-rejected rect{fill:#d62728}
.legend{margin:4px 0 8px;font-size:13px}.legend span{margin-right:16px;white-space:nowrap}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:baseline;border:1.5px solid}
.empty{color:#777;font-style:italic}
"""


# --- the partition tree ---------------------------------------------------------------------------------------


@dataclass
class _Partition:
    index: int
    id: str
    children: list[str]
    leaf: bool
    rows: int
    files: int
    bytes: int
    range: str
    subtree_rows: int = 0
    depth: int = 0
    x: float = 0.0
    width: float = 0.0


@dataclass
class _Tree:
    by_id: dict[str, _Partition]
    roots: list[str]
    depth: int = 0
    leaves: list[_Partition] = field(default_factory=list)

    @classmethod
    def of(cls, partitions: pa.Table, row_keys: Sequence[str]) -> _Tree:
        """The partitions laid out as an icicle: each one under its parent, as wide as its share of its parent's
        rows (with a sliver for an empty one), the root as wide as the chart."""
        key_types = {key: partitions.schema.field(f"{key}_min").type for key in row_keys}
        by_id: dict[str, _Partition] = {}
        parents: dict[str, str | None] = {}
        for index, row in enumerate(partitions.to_pylist()):
            by_id[row["partition_id"]] = _Partition(
                index=index,
                id=row["partition_id"],
                children=list(row["child_ids"] or []),
                leaf=bool(row["is_leaf"]),
                rows=int(row.get("rows") or 0),
                files=int(row.get("files") or 0),
                bytes=int(row.get("bytes") or 0),
                range=_range_text(row, row_keys, key_types),
            )
            parents[row["partition_id"]] = row["parent_id"]
        roots = [i for i, parent in parents.items() if parent is None or parent not in by_id]
        tree = cls(by_id, roots)
        for root in roots:
            tree._sum(root)
        tree._lay_out(roots, 0.0, float(WIDTH), 0)
        return tree

    def _sum(self, partition_id: str) -> int:
        partition = self.by_id[partition_id]
        partition.subtree_rows = partition.rows + sum(self._sum(c) for c in partition.children if c in self.by_id)
        return partition.subtree_rows

    def _lay_out(self, ids: list[str], x: float, width: float, depth: int) -> None:
        present = [self.by_id[i] for i in ids if i in self.by_id]
        for partition, (left, share) in zip(present, _shares([p.subtree_rows for p in present], x, width), strict=True):
            partition.x, partition.width, partition.depth = left, share, depth
            self.depth = max(self.depth, depth)
            if partition.leaf or not partition.children:
                self.leaves.append(partition)
            else:
                self._lay_out(partition.children, left, share, depth + 1)

    def ordered(self) -> list[_Partition]:
        return sorted(self.by_id.values(), key=lambda p: (p.depth, p.x))


def _shares(weights: list[int], x: float, width: float) -> list[tuple[float, float]]:
    """Where each of some neighbours starts and how wide it is: shares of ``width`` by weight, each at least a sliver
    (equal shares when every weight is 0)."""
    if not weights:
        return []
    sliver = min(_MIN_PARTITION_WIDTH, width / len(weights))
    spare = width - sliver * len(weights)
    total = sum(weights)
    out = []
    for weight in weights:
        share = sliver + (spare * weight / total if total else spare / len(weights))
        out.append((x, share))
        x += share
    return out


def _partition_section(tree: _Tree) -> str:
    height = (tree.depth + 1) * _LEVEL_HEIGHT
    most = max((leaf.rows for leaf in tree.leaves), default=0)
    parts = []
    for p in tree.ordered():
        y = p.depth * _LEVEL_HEIGHT
        clip = f"clip-partition-{p.index}"
        kind = "partition leaf" if p.leaf else "partition"
        counts = counted(p.subtree_rows, "row")
        if p.leaf:
            counts += f" · {counted(p.files, 'file')} · {_bytes_text(p.bytes)}"
        elif p.files:
            counts += f" · {counted(p.files, 'file')} here"
        tip = [f"partition {p.id}", p.range, counted(p.rows, "row") + " referenced here"]
        if not p.leaf:
            tip.append(f"{counted(p.subtree_rows, 'row')} here and below")
        tip += [counted(p.files, "file"), _bytes_text(p.bytes)]
        style = f" style='fill:{_leaf_fill(p.rows, most)}'" if p.leaf else ""
        labels = ""
        if p.width >= _LABELLED_WIDTH:  # narrower ones show their figures on hover only
            labels = (
                f"<clipPath id='{clip}'><rect x='{p.x:.2f}' y='{y}' width='{p.width - 4:.2f}' "
                f"height='{_LEVEL_HEIGHT}'/></clipPath>"
                f"<text clip-path='url(#{clip})' x='{p.x + 4:.2f}' y='{y + 17}'>{escape(_short(p.range))}</text>"
                f"<text class='counts' clip-path='url(#{clip})' x='{p.x + 4:.2f}' y='{y + 34}'>{escape(counts)}</text>"
            )
        thin = " thin" if p.width < _THIN_WIDTH else ""
        parts.append(
            f"<g class='{kind}{thin}' id='partition-{p.index}' data-partition-id='{escape(p.id)}' "
            f"data-rows='{p.rows}' data-files='{p.files}' data-bytes='{p.bytes}'>"
            f"<title>{escape(chr(10).join(tip))}</title>"
            f"<rect x='{p.x:.2f}' y='{y}' width='{p.width:.2f}' height='{_LEVEL_HEIGHT - 2}'{style}/>{labels}</g>"
        )
    return (
        "<h2>Partitions</h2>\n<p class='muted'>Each partition is as wide as its share of its parent's rows (those "
        "referenced on it and below it); leaves are darker the more rows they hold.</p>\n"
        f"<svg id='partition-tree' viewBox='0 0 {WIDTH} {height}' role='img' "
        f"aria-label='partition tree'>{''.join(parts)}</svg>\n"
    )


def _lane_height(lanes: int, height: float) -> float:
    """How tall each of a chart's lanes is: ``height`` for up to a hundred and twenty, thinner beyond (at least 3), so
    that a chart of thousands stays a few screens tall; lanes under 12 go unlabelled."""
    return height if lanes <= _MANY else max(3.0, height * _MANY / lanes)


def _leaf_fill(rows: int, most: int) -> str:
    """Light blue for an empty leaf, darker the nearer its rows are to the fullest leaf's ``most``."""
    lightness = 92 - (30 * rows / most if most else 0)
    return f"hsl(210,55%,{lightness:.0f}%)"


# --- file sizes per leaf ----------------------------------------------------------------------------------------


def _file_sizes_section(tree: _Tree, referenced: pa.Table) -> str:
    sizes: dict[str, list[tuple[str, int | None]]] = {}
    for partition_id, filename, size in zip(
        referenced["partition_id"].to_pylist(),
        referenced["filename"].to_pylist(),
        referenced["file_size_bytes"].to_pylist(),
        strict=True,
    ):
        sizes.setdefault(partition_id, []).append((filename, size))
    most = max((leaf.bytes for leaf in tree.leaves), default=0)
    bar_width = WIDTH - _LABEL_WIDTH - 230
    scale = bar_width / most if most else 0.0
    lane = _lane_height(len(tree.leaves), _BAR_HEIGHT)
    pad, text_y = lane * 0.14, lane / 2 + 4
    rows = []
    for n, leaf in enumerate(tree.leaves):
        y = n * lane
        x = float(_LABEL_WIDTH)
        segments = []
        for filename, size in sizes.get(leaf.id, []):
            width = (size or 0) * scale
            segments.append(
                f"<rect class='file-segment' x='{x:.2f}' y='{y + pad:.1f}' width='{width:.2f}' "
                f"height='{lane - 2 * pad:.1f}'><title>{escape(filename)}: {escape(_bytes_text(size))}</title></rect>"
            )
            x += width
        figures = f"{_bytes_text(leaf.bytes)} · {counted(leaf.files, 'file')} · {counted(leaf.rows, 'row')}"
        labels = ""
        if lane >= _LABELLED_LANE:
            labels = (
                f"<text x='{_LABEL_WIDTH - 8}' y='{y + text_y:.1f}' text-anchor='end'>"
                f"{escape(_short(leaf.range))}</text>"
                f"<text x='{_LABEL_WIDTH + bar_width + 8}' y='{y + text_y:.1f}'>{escape(figures)}</text>"
            )
        rows.append(
            f"<g class='leaf-bar' id='leaf-bar-{leaf.index}' data-partition-id='{escape(leaf.id)}' "
            f"data-bytes='{leaf.bytes}' data-files='{leaf.files}' data-rows='{leaf.rows}'>"
            f"<title>{escape(chr(10).join([f'partition {leaf.id}', leaf.range, figures]))}</title>"
            f"<rect class='track' x='{_LABEL_WIDTH}' y='{y + pad:.1f}' width='{bar_width}' "
            f"height='{lane - 2 * pad:.1f}'/>{''.join(segments)}{labels}</g>"
        )
    height = max(len(tree.leaves), 1) * lane
    return (
        "<h2>File sizes per leaf partition</h2>\n<p class='muted'>One bar per leaf, its length the bytes of the files "
        "referenced on it, one segment per file (a file referenced on several leaves counts on each).</p>\n"
        f"<svg id='file-sizes' viewBox='0 0 {WIDTH} {height}' role='img' aria-label='file sizes per leaf'>"
        f"{''.join(rows)}</svg>\n"
    )


# --- the job timeline -----------------------------------------------------------------------------------------


_PLOT_LEFT = 300
_PLOT_RIGHT = WIDTH - 20
_AXIS_HEIGHT = 24
_TICK_STEPS = (
    *(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0),
    *(60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0),
)


def _timeline_section(runs: list[dict[str, Any]], now: datetime | None) -> str:
    heading = (
        "<h2>Job runs</h2>\n<p class='muted'>One bar per run of an ingest or compaction job, from its start to its "
        "finish (to its commit, or the end of the chart, while it has none), coloured by kind; pale and dashed while "
        "in progress or awaiting commit, red when failed.</p>\n"
    )
    if not runs:
        return heading + "<div id='job-timeline'><p class='empty'>No job runs are recorded for this table.</p></div>\n"
    spans = [_span(run) for run in runs]
    times = [t for start, end in spans for t in (start, end) if t is not None]
    first = min(times, default=0.0)
    last = max(times, default=first)
    if any(end is None for _, end in spans):  # a run still open runs on to now, or past the last time seen
        last = max(last, now.timestamp()) if now is not None else last + max((last - first) * 0.1, 1.0)
    last = max(last, first + 0.001)
    order = sorted(range(len(runs)), key=lambda i: (spans[i][0] is None, spans[i][0] or 0.0, i))
    lane = _lane_height(len(runs), 18.0)
    x_of = _scale(first, last)
    bars = []
    for n, i in enumerate(order):
        run, (start, end) = runs[i], spans[i]
        kind, status = str(run["kind"]), str(run["status"] or "unknown")
        classes = f"job-run kind-{_css_name(kind)} status-{_css_name(status)}"
        if start is None:
            left, right, classes = float(_PLOT_LEFT), float(_PLOT_LEFT) + 2, classes + " no-times"
        else:
            left = x_of(start)
            right = x_of(end) if end is not None else float(_PLOT_RIGHT)
            classes += "" if run["finish_time"] else " open-ended"
        y = _AXIS_HEIGHT + n * lane
        label = ""
        if lane >= _LABELLED_LANE:
            name = _short(f"{kind} {run['job_id']}")
            label = f"<text x='{_PLOT_LEFT - 8}' y='{y + lane - 5:.1f}' text-anchor='end'>{escape(name)}</text>"
        job_id, run_id = escape(str(run["job_id"])), escape(str(run["run_id"]))
        bars.append(
            f"<g class='{classes}' data-job-id='{job_id}' data-run-id='{run_id}' data-kind='{escape(kind)}' "
            f"data-status='{escape(status)}'><title>{escape(_run_tip(run))}</title>{label}"
            f"<rect x='{left:.2f}' y='{y + 1:.1f}' width='{max(right - left, 2.0):.2f}' "
            f"height='{max(lane - 2, 1):.1f}'/></g>"
        )
    height = _AXIS_HEIGHT + len(runs) * lane + 4
    return (
        heading
        + _legend(runs)
        + f"<svg id='job-timeline' viewBox='0 0 {WIDTH} {height:.0f}' role='img' aria-label='job run timeline'>"
        + _axis(first, last, height)
        + "".join(bars)
        + "</svg>\n"
    )


def _span(run: dict[str, Any]) -> tuple[float | None, float | None]:
    """A run's start and end in seconds since the epoch: started at its start (else its finish or commit), ended at
    its finish, else its commit, else unknown."""
    start, finish, commit = (_seconds(run[k]) for k in ("start_time", "finish_time", "commit_time"))
    end = finish if finish is not None else commit
    begin = start if start is not None else end
    return begin, end


def _seconds(value: object) -> float | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _scale(first: float, last: float) -> Any:
    width = _PLOT_RIGHT - _PLOT_LEFT

    def x_of(t: float) -> float:
        return _PLOT_LEFT + width * (t - first) / (last - first)

    return x_of


def _axis(first: float, last: float, height: float) -> str:
    span = last - first
    step = next((s for s in _TICK_STEPS if span / s <= 8), 86400.0 * math.ceil(span / 86400.0 / 8))
    x_of = _scale(first, last)
    ticks = []
    t = math.ceil(first / step) * step
    while t <= last + 1e-9:
        x = x_of(t)
        ticks.append(
            f"<line x1='{x:.2f}' x2='{x:.2f}' y1='{_AXIS_HEIGHT - 4}' y2='{height:.0f}'/>"
            f"<text x='{x:.2f}' y='{_AXIS_HEIGHT - 8}' text-anchor='{_anchor(x)}'>{_tick_text(t, step)}</text>"
        )
        t += step
    start = datetime.fromtimestamp(first, UTC)
    caption = f"<text x='{_PLOT_LEFT - 8}' y='{_AXIS_HEIGHT - 8}' text-anchor='end'>{_time_text(start)}</text>"
    return f"<g class='axis'>{caption}{''.join(ticks)}</g>"


def _anchor(x: float) -> str:
    """How a tick's label sits on it: centred, but inside the plot at either end."""
    return "start" if x < _PLOT_LEFT + 30 else "end" if x > _PLOT_RIGHT - 30 else "middle"


def _tick_text(t: float, step: float) -> str:
    when = datetime.fromtimestamp(t, UTC)
    if step < 1:
        return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    if step >= 86400:
        return when.strftime("%Y-%m-%d")
    return when.strftime("%H:%M:%S")


def _legend(runs: list[dict[str, Any]]) -> str:
    seen = sorted({(str(r["kind"]), str(r["status"] or "unknown")) for r in runs})
    items = []
    for kind, status in seen:
        colour = _KIND_COLOURS.get(kind, _OTHER_KIND_COLOUR)
        fill = "#d62728" if status in ("FAILED", "REJECTED") else colour
        pale = status in ("IN_PROGRESS", "ACCEPTED", "UNCOMMITTED")
        style = f"background:{fill};border-color:{colour}" + (";opacity:.45;border-style:dashed" if pale else "")
        items.append(f"<span><i style='{style}'></i>{escape(kind)} {escape(status.lower().replace('_', ' '))}</span>")
    return f"<div class='legend' id='job-legend'>{''.join(items)}</div>\n"


def _run_tip(run: dict[str, Any]) -> str:
    lines = [f"{run['kind']} job {run['job_id']}", f"run {run['run_id']} on task {run['task_id']}"]
    lines.append(f"status {run['status']}")
    if run.get("partition_id"):
        lines.append(f"partition {run['partition_id']}")
    for key in ("start_time", "finish_time", "commit_time"):
        if run.get(key):
            lines.append(f"{key.replace('_time', '')}: {run[key]}")
    if run.get("duration_seconds") is not None:
        lines.append(f"{run['duration_seconds']} s")
    if run.get("rows_read") is not None:
        lines.append(f"{counted(run['rows_read'], 'row')} read, {counted(run['rows_written'] or 0, 'row')} written")
    lines.extend(f"failed: {reason}" for reason in run.get("failure_reasons") or [])
    return "\n".join(lines)


# --- summary and text ---------------------------------------------------------------------------------------------


def _summary(
    tree: _Tree, files: pa.Table, referenced: pa.Table, runs: list[dict[str, Any]], row_keys: Sequence[str]
) -> str:
    filenames = set(files["filename"].to_pylist())
    unreferenced = len(filenames - set(referenced["filename"].to_pylist()))
    sizes = dict(zip(files["filename"].to_pylist(), files["file_size_bytes"].to_pylist(), strict=True))
    total_bytes = sum(size or 0 for name, size in sizes.items())
    leaf_rows = sum(leaf.rows for leaf in tree.leaves)
    all_rows = sum(p.rows for p in tree.by_id.values())
    kinds: dict[str, int] = {}
    for run in runs:
        kinds[str(run["kind"])] = kinds.get(str(run["kind"]), 0) + 1
    items = [
        ("row keys", ", ".join(row_keys)),
        (
            "partitions",
            f"{counted(len(tree.by_id), 'partition')}: {counted(len(tree.leaves), 'leaf', 'leaves')}, "
            f"{counted(len(tree.by_id) - len(tree.leaves), 'non-leaf partition')}",
        ),
        ("rows", f"{counted(all_rows, 'row')} referenced, {leaf_rows:,} on leaves"),
        (
            "files",
            f"{counted(len(filenames), 'file')}, {_bytes_text(total_bytes)}; "
            f"{unreferenced:,} awaiting garbage collection",
        ),
        (
            "job runs",
            ", ".join(f"{counted(n, kind + ' run')}" for kind, n in sorted(kinds.items())) or "none",
        ),
    ]
    cells = "".join(f"<tr><th>{escape(label)}</th><td>{escape(value)}</td></tr>" for label, value in items)
    return f"<table id='summary'>{cells}</table>\n"


def _range_text(row: dict[str, Any], row_keys: Sequence[str], key_types: dict[str, pa.DataType]) -> str:
    """A partition's region: ``key: [min, max)`` per row key field, ``-∞`` for a minimum that is the key type's
    least value and ``∞`` for no maximum."""
    parts = []
    for key in row_keys:
        low, high = row.get(f"{key}_min"), row.get(f"{key}_max")
        low_text = "-∞" if _is_least(low, key_types[key]) else _key_text(low)
        high_text = "∞" if high is None else _key_text(high)
        parts.append(f"{key}: [{low_text}, {high_text})")
    return "; ".join(parts)


def _is_least(value: object, key_type: pa.DataType) -> bool:
    if value is None or value in ("", b""):
        return True
    if pa.types.is_int32(key_type):
        return value == -(2**31)
    if pa.types.is_int64(key_type):
        return value == -(2**63)
    return False


def _key_text(value: object) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _css_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _bytes_text(size: int | None) -> str:
    """A size for people: ``512 B``, ``12.3 KiB``, ``4.0 MiB``; ``unknown`` for a file that was not found."""
    if size is None:
        return "unknown size"
    if size < 1024:
        return counted(size, "byte")
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{value:.1f} TiB"


def _time_text(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
