"""``sleeper delete TABLE --where`` and ``sleeper purge TABLE`` on a local instance: the matching rows are gone from
``sleeper query`` at once, a purge reports no delete left holding rows, and a delete with no or a bad filter is one
``error:`` line (no traceback) with nothing committed."""

from __future__ import annotations

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
    """A table ``nums`` with rows 0..99."""
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "nums", "--schema", str(schema)]) == 0
    keys = list(range(100))
    LocalInstance(instance).table("nums").ingest(pa.table({"key": pa.array(keys, pa.int64()), "value": map(str, keys)}))
    return instance


def should_delete_rows_and_purge_them(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run(["delete", "nums", "--where", "key >= 10 and value != '15'", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["transaction"] > 0
    keys = LocalInstance(table).table("nums").scan().to_arrow()["key"].to_pylist()
    assert keys == [*range(10), 15]
    assert run(["purge", "nums", "--json"]) == 0
    purged = json.loads(capsys.readouterr().out)
    assert purged["done"] is True and len(purged["jobs"]) == 1
    assert [d["filesWithRows"] for d in purged["pendingDeletes"]] == [0]
    assert run(["purge", "nums"]) == 0
    assert "No file a read plans holds a deleted row" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "use 'sleeper table truncate'"),
        (["--where", "nope > 1"], "bad filter at position 0: the table has no column 'nope'"),
    ],
)
def should_refuse_a_delete_in_one_line(
    table: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    capsys.readouterr()
    assert run(["delete", "nums", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert LocalInstance(table).table("nums").scan().count() == 100
