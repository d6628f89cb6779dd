"""The reliability battery's report (docs/reliability.md): a pytest plugin, loaded by ``tests/conftest.py``.

A battery test asks for the ``reliability`` fixture and records its figures, one call per battery row it covers::

    def should_survive_a_race(reliability: Reliability) -> None:
        ...
        reliability.record("A1", writers=8, commits_per_s=412.0, attempts_p99=4, rows_lost=0, rows_duplicated=0)

Each call appends one JSON object to ``test-reports/reliability.jsonl`` (the directory is made when missing; it is
not in git): the row id, the test's node id, the session it ran in, the time and the figures. The file keeps the lines
of earlier runs (several runs may share a working tree), so each line names its session; the summary printed at the
end of a run covers that run's lines only: one line per battery row (tests, the totals below, the highest commits/s
and attempts p99) and the totals over every row.

The totals are the figures every row must keep at zero: ``rows_lost``, ``rows_duplicated``,
``referenced_files_deleted`` and ``unhandled_exceptions``. A figure a row does not measure is simply left out.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

__all__ = ["NIGHTLY", "REPORT_PATH", "ROW_IDS", "TOTALS", "Reliability", "nightly", "percentiles"]

NIGHTLY = os.environ.get("SLEEPER_NIGHTLY", "") not in ("", "0", "false")
"""Whether the nightly profile runs (``SLEEPER_NIGHTLY=1``): the battery's full-size variants (64 writers, 5,000
transactions, 10,000 fuzzed messages, the long model run). CI runs the bounded variants only."""

nightly = pytest.mark.skipif(not NIGHTLY, reason="nightly profile: run with SLEEPER_NIGHTLY=1")
"""Marks a test (or a ``pytest.param``) to run only in the nightly profile."""

REPORT_PATH = Path(__file__).resolve().parent.parent / "test-reports" / "reliability.jsonl"
"""Where the lines go: ``test-reports/reliability.jsonl`` at the top of the repository."""

ROW_IDS = frozenset(
    [f"A{n}" for n in range(1, 8)]
    + [f"B{n}" for n in range(1, 6)]
    + [f"C{n}" for n in range(1, 9)]
    + [f"D{n}" for n in range(1, 6)]
    + ["E", "F"]
    + [f"G{n}" for n in range(1, 9)]
)
"""The battery's rows: 4(a) A1-A7, (b) B1-B5, (c) C1-C8, (d) D1-D5, (e) bad input E, (f) the model test F, (g) G1-G8."""

TOTALS = ("rows_lost", "rows_duplicated", "referenced_files_deleted", "unhandled_exceptions")
"""The figures summed over the run; each must be zero."""

_PEAKS = ("commits_per_s", "attempts_p99")
"""Figures whose highest value per row is shown."""

_SESSION_KEY = pytest.StashKey["_Session"]()
_ACTIVE: list[_Session] = []
"""The session of the run in progress (a list: pytest's own tests may nest runs)."""


@dataclass(slots=True)
class _Session:
    id: str
    path: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)


class Reliability:
    """Records a test's battery figures (the ``reliability`` fixture)."""

    def __init__(self, session: _Session, test: str) -> None:
        self._session = session
        self._test = test

    def record(self, row: str, **figures: Any) -> dict[str, Any]:
        """Appends one line for a battery row.

        Args:
            row: The row id, e.g. ``"A1"`` or ``"C4"`` (see :data:`ROW_IDS`).
            **figures: Its figures; the values must be JSON (numbers, strings, lists, dicts).

        Returns:
            The line written.

        Raises:
            ValueError: If the row is not a battery row, or a total is negative or not an integer.
            TypeError: If a figure cannot be written as JSON.
        """
        if row not in ROW_IDS:
            raise ValueError(f"{row!r} is not a battery row of docs/reliability.md ({', '.join(sorted(ROW_IDS))})")
        for name in TOTALS:
            value = figures.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        line = {
            "row": row,
            "test": self._test,
            "session": self._session.id,
            "time": datetime.now(tz=UTC).isoformat(timespec="seconds"),
            **figures,
        }
        text = json.dumps(line, sort_keys=False)
        self._session.path.parent.mkdir(parents=True, exist_ok=True)
        with self._session.path.open("a", encoding="utf-8") as out:
            out.write(text + "\n")
        self._session.lines.append(line)
        return line


def percentiles(values: Iterable[float], *quantiles: float) -> dict[str, float]:
    """Nearest-rank percentiles of some values, keyed ``p50``, ``p99``... plus ``max`` (all 0 when there are none).

    Args:
        values: The values (e.g. attempts per commit).
        *quantiles: Fractions in (0, 1]; 0.5 and 0.99 when none are given.
    """
    ordered = sorted(values)
    wanted = quantiles or (0.5, 0.99)
    result: dict[str, float] = {}
    for q in wanted:
        if not 0 < q <= 1:
            raise ValueError(f"a quantile must be in (0, 1], got {q}")
        key = f"p{round(q * 100):d}"
        result[key] = ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0
    result["max"] = ordered[-1] if ordered else 0
    return result


# --- the plugin -------------------------------------------------------------------------------------------------------
_WORKER_SESSION = "sleeper_reliability_session"
"""The key under which a run split over pytest-xdist workers gives each worker its session id."""


def pytest_configure(config: pytest.Config) -> None:
    path = Path(os.environ.get("SLEEPER_RELIABILITY_REPORT", str(REPORT_PATH)))
    worker = getattr(config, "workerinput", None)  # a pytest-xdist worker: the run's session is the controller's
    session_id = worker[_WORKER_SESSION] if worker is not None else uuid.uuid4().hex[:12]
    session = _Session(id=session_id, path=path)
    config.stash[_SESSION_KEY] = session
    _ACTIVE.append(session)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """A pytest-xdist worker records its lines under the controller's session, which summarises them."""
    node.workerinput[_WORKER_SESSION] = node.config.stash[_SESSION_KEY].id


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session in _ACTIVE:
        _ACTIVE.remove(session)


@pytest.fixture
def reliability(request: pytest.FixtureRequest) -> Reliability:
    """Records this test's battery figures to ``test-reports/reliability.jsonl`` (see :class:`Reliability`)."""
    return Reliability(request.config.stash[_SESSION_KEY], request.node.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and _ACTIVE:
        _ACTIVE[-1].failed.add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        return
    lines = session.lines or _lines_of(session)  # under pytest-xdist the workers wrote them
    if lines:
        for line in summary_lines(lines, session.failed, session.path):
            terminalreporter.write_line(line)


def _lines_of(session: _Session) -> list[dict[str, Any]]:
    """The session's lines in the report file (those its pytest-xdist workers wrote)."""
    if not session.path.exists():
        return []
    with session.path.open(encoding="utf-8") as written:
        parsed = (json.loads(text) for text in written if text.strip())
        return [line for line in parsed if line.get("session") == session.id]


def summary_lines(lines: Sequence[dict[str, Any]], failed: set[str], path: Path) -> list[str]:
    """The one-screen summary of a run's lines: a line per battery row, then the totals."""
    rows: dict[str, dict[str, Any]] = {}
    for line in lines:
        row = rows.setdefault(line["row"], {"tests": set(), "lines": 0, "failed": 0, **dict.fromkeys(TOTALS, 0)})
        row["tests"].add(line["test"])
        row["lines"] += 1
        for name in TOTALS:
            row[name] += int(line.get(name) or 0)
        for name in _PEAKS:
            if isinstance(line.get(name), int | float):
                row[name] = max(row.get(name, 0), line[name])
    for row in rows.values():
        row["failed"] = len(row["tests"] & failed)
    out = [f"reliability battery: {len(lines)} lines, {len(rows)} rows (this run's lines in {path})"]
    out.append(
        f"  {'row':<4} {'tests':>5} {'lost':>5} {'dup':>5} {'refdel':>6} {'unhandled':>9} {'commits/s':>10} "
        f"{'att.p99':>7}  failed"
    )
    for row_id in sorted(rows, key=_row_order):
        row = rows[row_id]
        commits = f"{row['commits_per_s']:.0f}" if "commits_per_s" in row else "-"
        attempts = f"{row['attempts_p99']:g}" if "attempts_p99" in row else "-"
        out.append(
            f"  {row_id:<4} {len(row['tests']):>5} {row['rows_lost']:>5} {row['rows_duplicated']:>5} "
            f"{row['referenced_files_deleted']:>6} {row['unhandled_exceptions']:>9} {commits:>10} {attempts:>7}  "
            f"{row['failed'] or ''}"
        )
    totals = {name: sum(row[name] for row in rows.values()) for name in TOTALS}
    verdict = "OK" if not any(totals.values()) and not any(row["failed"] for row in rows.values()) else "NOT OK"
    out.append(
        f"  total: lost={totals['rows_lost']} duplicated={totals['rows_duplicated']} "
        f"referenced_files_deleted={totals['referenced_files_deleted']} "
        f"unhandled={totals['unhandled_exceptions']} ({verdict})"
    )
    return out


def _row_order(row_id: str) -> tuple[str, int]:
    return row_id[0], int(row_id[1:] or 0)
