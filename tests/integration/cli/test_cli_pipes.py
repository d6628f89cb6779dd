"""The sleeper command in pipelines: ``-`` reads standard input where a file is expected (and is refused where it
cannot), counts are said in the right number, and shell completion works."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run
from sleeper.core.words import counted

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def should_read_the_schema_from_standard_input(
    instance: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the schema on standard input
    _stdin(monkeypatch, json.dumps(SCHEMA).encode())
    # When a table is created with --schema -
    created = _json(capsys, ["table", "create", "t", "--schema", "-", "--json"])
    # Then it has that schema
    assert created["leafPartitions"] == 1  # type: ignore[index]
    shown = _json(capsys, ["table", "show", "t", "--json"])
    assert shown["schema"]["rowKeyFields"] == SCHEMA["rowKeyFields"]  # type: ignore[index]


def should_read_split_points_from_standard_input(
    instance: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a schema file and split points on standard input
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    _stdin(monkeypatch, b"g\nm\n")
    # When a table is created with --split-points -
    created = _json(capsys, ["table", "create", "t", "--schema", str(schema), "--split-points", "-", "--json"])
    # Then it has three leaves
    assert created["leafPartitions"] == 3  # type: ignore[index]
    # And reinit reads them from standard input too
    _stdin(monkeypatch, b"m\n")
    reinit = _json(capsys, ["table", "reinit", "t", "--split-points", "-", "--yes", "--json"])
    assert reinit["leafPartitions"] == 2  # type: ignore[index]


def should_read_a_parquet_schema_from_standard_input(
    instance: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"key": ["a"], "value": pa.array([1], pa.int64())}), buffer)
    _stdin(monkeypatch, buffer.getvalue())
    assert run(["table", "create", "t", "--from-parquet", "-", "--row-key", "key"]) == 0
    shown = _json(capsys, ["table", "show", "t", "--json"])
    assert [f["name"] for f in shown["schema"]["valueFields"]] == ["value"]  # type: ignore[index]


def should_read_standard_input_once(
    instance: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, json.dumps(SCHEMA).encode())
    capsys.readouterr()
    assert run(["table", "create", "t", "--schema", "-", "--split-points", "-"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("error: standard input can be read once: --schema - already reads it") and "Traceback" not in err
    )
    assert _json(capsys, ["table", "list", "--json"]) == []


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["ingest", "t", "-"], "a path to ingest"),
        (["bulk-import", "t", "-"], "a path to bulk import"),
        (["batcher", "submit", "t", "-"], "a path sent to the batcher"),
        (["export", "t", "-"], "the export directory"),
    ],
)
def should_refuse_standard_input_where_it_cannot_be_a_file(
    instance: Path, capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    capsys.readouterr()
    assert run(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {named} cannot be - (standard input)") and len(err.splitlines()) == 1


def should_write_split_points_to_standard_output_with_dash(
    instance: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table holding rows
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    rows = tmp_path / "rows.parquet"
    keys = [f"k{i:03}" for i in range(100)]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(100), pa.int64())}), rows)
    assert run(["table", "create", "t", "--schema", str(schema)]) == 0
    assert run(["ingest", "t", str(rows)]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    # When split points are estimated with -o -
    assert run(["table", "estimate-split-points", "t", "-n", "2", "-o", "-"]) == 0
    # Then they go to standard output, and no file named - is written
    assert capsys.readouterr().out.strip().startswith("k0") and not (tmp_path / "-").exists()


def should_say_counts_in_the_right_number(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert [counted(0, "row"), counted(1, "leaf partition"), counted(2, "leaf partition")] == [
        "0 rows",
        "1 leaf partition",
        "2 leaf partitions",
    ]
    assert counted(1234, "query", "queries") == "1,234 queries"
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    capsys.readouterr()
    assert run(["table", "create", "t", "--schema", str(schema)]) == 0
    assert "with 1 leaf partition\n" in capsys.readouterr().out
    assert run(["report", "files", "t"]) == 0
    assert "There is 1 leaf partition and 0 non-leaf partitions" in capsys.readouterr().out


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "_SLEEPER_COMPLETE": "complete_bash"}
    env.update(COMP_WORDS=words, COMP_CWORD=str(cword))
    done = subprocess.run(
        [sys.executable, "-c", "from sleeper.cli.main import main; main()"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    return done.stdout.split()


def should_complete_commands_options_and_choices_in_the_shell() -> None:
    assert _complete("sleeper rep", 1) == ["report"]
    assert "compaction-jobs" in _complete("sleeper report ", 2)
    assert _complete("sleeper report status --format ", 4) == ["table", "json", "tsv"]
    shown = subprocess.run(
        [sys.executable, "-c", "from sleeper.cli.main import main; main()", "--show-completion", "bash"],
        # typer's switch for tests: the shell is named rather than detected from the processes above this one
        env={**os.environ, "PYTHONPATH": str(ROOT), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert shown.returncode == 0, shown.stderr
    script = shown.stdout
    assert (
        "_SLEEPER_COMPLETE=complete_bash" in script and "complete -o default -F _sleeper_completion sleeper" in script
    )


def _table_with_two_files(instance: Path, tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "t", "--schema", str(schema)]) == 0
    for number in range(2):
        rows = tmp_path / f"rows{number}.parquet"
        pq.write_table(pa.table({"key": [f"k{number}"], "value": pa.array([number], pa.int64())}), rows)
        assert run(["ingest", "t", str(rows)]) == 0


def should_show_progress_on_a_terminal_only(
    instance: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.console import Console

    from sleeper.cli import common

    # Given a table of two files
    _table_with_two_files(instance, tmp_path)
    capsys.readouterr()
    # When it is compacted with standard error not a terminal
    assert run(["compact", "t", "--all"]) == 0
    # Then nothing but the result is printed: no progress on standard error
    said = capsys.readouterr()
    assert said.err == "" and "Compacting" not in said.out
    # And when standard error is a terminal, the work and the time elapsed are shown there while it runs
    terminal = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=terminal, force_terminal=True, width=100))
    assert run(["gc", "t"]) == 0
    assert "Collecting the garbage of table t" in terminal.getvalue() and "0:00:0" in terminal.getvalue()
