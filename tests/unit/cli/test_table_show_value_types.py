"""``sleeper table show`` marks a table whose value fields use types Sleeper does not have, and only such a table."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
from rich.console import Console

from sleeper.cli.render import summary_panel, table_summary
from sleeper.core.schema import Schema
from sleeper.runtime.local.instance import LocalInstance


def _shown(summary: dict[str, object]) -> str:
    console = Console(width=200, file=io.StringIO())
    console.print(summary_panel(summary))
    return console.file.getvalue()  # type: ignore[attr-defined]


def should_mark_only_a_table_with_value_types_beyond_sleepers(tmp_path: Path) -> None:
    # Given a table with a timestamp value field and one of Sleeper's types only
    instance = LocalInstance.create(tmp_path / "instance")
    arrow = pa.schema([pa.field("key", pa.int64(), nullable=False), pa.field("at", pa.timestamp("us"))])
    marked = instance.create_table("marked", Schema.from_arrow(arrow, row_keys=["key"]))
    plain = instance.create_table("plain", Schema.from_arrow(arrow.remove(1), row_keys=["key"]))
    # When each is shown
    marked_summary, plain_summary = table_summary(marked), table_summary(plain)
    # Then only the first is marked, in JSON and in the panel
    assert marked_summary["portOnlyTypes"] is True
    assert "portOnlyTypes" not in plain_summary
    assert "readable by this port only" in _shown(marked_summary)
    assert "readable by this port only" not in _shown(plain_summary)
