"""``sleeper table add-column`` and ``sleeper table truncate`` on a local instance: a column added reads as nulls for
the rows written before it, a refused column changes nothing, and a truncate empties the table keeping its partitions
(only once confirmed)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.cli.main import run
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "valueFields": [{"name": "value", "type": "StringType"}],
}


@pytest.fixture
def table(instance: Path, tmp_path: Path) -> Path:
    """A table ``nums`` with split point 50 and rows 0..99."""
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    splits = tmp_path / "splits.txt"
    splits.write_text("50\n")
    assert run(["table", "create", "nums", "--schema", str(schema), "--split-points", str(splits)]) == 0
    keys = list(range(100))
    LocalInstance(instance).table("nums").ingest(pa.table({"key": pa.array(keys, pa.int64()), "value": map(str, keys)}))
    return instance


def should_add_a_column_read_as_nulls_for_old_rows(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # When a column is added, as JSON output
    capsys.readouterr()
    assert run(["table", "add-column", "nums", "score", "double", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    # Then the saved schema has it, nullable, and the old rows read it as nulls while new rows carry values
    assert printed["schema"]["valueFields"][-1] == {"name": "score", "type": "DoubleType", "nullable": True}
    found = LocalInstance(table).table("nums")
    found.ingest(pa.table({"key": pa.array([500], pa.int64()), "value": ["new"], "score": [2.5]}))
    rows = found.scan().to_arrow()
    assert rows.column("score").to_pylist() == [None] * 100 + [2.5]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["key", "long"], "already has a row key field 'key'"),
        (["value", "string"], "already has a value field 'value'"),
        (["score", "decimal"], "unknown column type 'decimal'"),
    ],
)
def should_refuse_a_column_in_one_line_and_change_nothing(
    table: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = LocalInstance(table).table("nums").schema
    capsys.readouterr()
    assert run(["table", "add-column", "nums", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert LocalInstance(table).table("nums").schema == before


def should_truncate_only_once_confirmed_keeping_partitions(
    table: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    leaves = [p.id for p in LocalInstance(table).table("nums").leaf_partitions()]
    # When the truncate is not confirmed, nothing changes
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert run(["table", "truncate", "nums"]) == 1
    assert LocalInstance(table).table("nums").scan().to_arrow().num_rows == 100
    # When it is confirmed with --yes
    capsys.readouterr()
    assert run(["table", "truncate", "nums", "--yes", "--json"]) == 0
    # Then the table has no rows and the same leaves
    assert json.loads(capsys.readouterr().out) == {
        "tableName": "nums",
        "tableId": LocalInstance(table).table("nums").table_id,
        "leafPartitions": 2,
        "rows": 0,
    }
    found = LocalInstance(table).table("nums")
    assert found.scan().to_arrow().num_rows == 0
    assert [p.id for p in found.leaf_partitions()] == leaves
