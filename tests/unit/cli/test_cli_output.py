"""What the CLI prints for programs and pipes: tab-separated values kept whole, consoles that never cut when piped,
the format chosen from --format and --json."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from sleeper.cli.common import PipeConsole, chosen_format, write_tsv
from sleeper.core.exceptions import SleeperError


def should_write_every_value_whole_on_one_line() -> None:
    out = io.StringIO()
    write_tsv(
        [{"a": "x\ty", "b": None}, {"b": True, "c": ["p", 1], "a": "line\nbreak\\"}],
        out,
    )
    assert out.getvalue().splitlines() == [
        "a\tb\tc",
        "x\\ty\t\t",
        'line\\nbreak\\\\\ttrue\t["p",1]',
    ]


@pytest.mark.parametrize("columns", [None, "80"])
def should_print_a_wide_table_whole_when_not_a_terminal(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a console writing to a pipe, with or without a terminal's COLUMNS in the environment
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    console = PipeConsole(file=out)
    table = Table(title="jobs")
    for column in ("Job", "Partition", "State"):
        table.add_column(column)
    table.add_row("j" * 70, "p" * 70, "FINISHED")
    console.print(table)
    text = out.getvalue()
    assert "j" * 70 in text and "p" * 70 in text and "State" in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) > 150


def should_keep_a_terminal_to_its_width() -> None:
    out = io.StringIO()
    console = PipeConsole(file=out, force_terminal=True, no_color=True, width=60, highlight=False)
    console.print("word " * 30)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and max(len(line) for line in lines) <= 60


def should_choose_the_format_from_format_and_json() -> None:
    assert [chosen_format(None, False), chosen_format("tsv", False), chosen_format(None, True)] == [
        "table",
        "tsv",
        "json",
    ]
    assert chosen_format("json", True) == "json"
    with pytest.raises(SleeperError, match="--json and --format tsv disagree"):
        chosen_format("tsv", True)
