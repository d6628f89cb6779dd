"""Conventions every ``sleeper`` command keeps: one wording per error, one line on stderr with no traceback, exit code
1 or 2, nothing changed on disk; ``--version``; ``--json`` on the commands that create or change something."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "things", "--schema", str(schema)]) == 0
    return directory


def _snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under a directory with its content (the SQLite database included)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *, code: int = 1) -> str:
    capsys.readouterr()
    assert run(argv) == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


def should_say_a_table_is_not_found_in_one_wording_everywhere(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance with no table named nope, and a file to ingest
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"key": ["a"], "value": pa.array([1], pa.int64())}), path)

    # When a command looks the table up, and when an ingest job names it
    shown = _one_line_error(capsys, ["table", "show", "nope"])
    ingested = _one_line_error(capsys, ["ingest", "nope", str(path)])

    # Then both say it in the same words
    assert shown == "error: Table not found with name 'nope'"
    assert ingested.endswith("rejected: Table not found with name 'nope'")
