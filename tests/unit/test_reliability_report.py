"""The reliability battery's report: its lines, its rules and its summary (tests/reliability_report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reliability_report import Reliability, _Session, percentiles, summary_lines


def _recorder(tmp_path: Path) -> tuple[Reliability, _Session]:
    session = _Session(id="s1", path=tmp_path / "reports" / "reliability.jsonl")
    return Reliability(session, "tests/x.py::t"), session


def should_append_one_json_line_per_record_creating_the_directory(tmp_path: Path) -> None:
    # Given a recorder whose report directory does not exist yet
    recorder, session = _recorder(tmp_path)
    # When a test records two rows
    recorder.record("A1", writers=8, commits_per_s=120.5, rows_lost=0)
    recorder.record("C4", rows_lost=0, referenced_files_deleted=0)
    # Then the file holds two lines naming the row, the test and the session, with the figures
    lines = [json.loads(t) for t in session.path.read_text().splitlines()]
    assert [(d["row"], d["test"], d["session"]) for d in lines] == [("A1", "tests/x.py::t", "s1")] + [
        ("C4", "tests/x.py::t", "s1")
    ]
    assert lines[0]["writers"] == 8 and lines[0]["commits_per_s"] == 120.5


def should_refuse_an_unknown_row_and_a_negative_total(tmp_path: Path) -> None:
    recorder, session = _recorder(tmp_path)
    with pytest.raises(ValueError, match="not a battery row"):
        recorder.record("Z9")
    with pytest.raises(ValueError, match="rows_lost must be a non-negative integer"):
        recorder.record("A1", rows_lost=-1)
    assert not session.path.exists()


def should_total_the_zero_figures_and_show_peaks_per_row(tmp_path: Path) -> None:
    # Given lines of two rows, one with a lost row, and a failed test
    lines = [
        {"row": "A1", "test": "t1", "commits_per_s": 100.0, "attempts_p99": 3, "rows_lost": 0},
        {"row": "A1", "test": "t2", "commits_per_s": 250.0, "attempts_p99": 7, "rows_lost": 2},
        {"row": "C1", "test": "t3", "rows_duplicated": 0, "unhandled_exceptions": 0},
    ]
    # When the summary is made
    out = summary_lines(lines, {"t3"}, tmp_path / "r.jsonl")
    # Then each row has a line with its peaks, and the totals count the lost rows and say NOT OK
    a1 = next(line for line in out if line.strip().startswith("A1"))
    assert "250" in a1 and " 7 " in a1 + " " and a1.split()[2] == "2"
    c1 = next(line for line in out if line.strip().startswith("C1"))
    assert c1.split()[-1] == "1"  # one failed test
    assert out[-1].strip() == "total: lost=2 duplicated=0 referenced_files_deleted=0 unhandled=0 (NOT OK)"


def should_give_nearest_rank_percentiles() -> None:
    assert percentiles(range(1, 101)) == {"p50": 50, "p99": 99, "max": 100}
    assert percentiles([], 0.5) == {"p50": 0, "max": 0}
    with pytest.raises(ValueError, match="quantile"):
        percentiles([1], 0)


def should_be_given_to_tests_as_a_fixture(reliability: Reliability) -> None:
    assert isinstance(reliability, Reliability)
