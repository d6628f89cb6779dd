"""``sleeper upsert TABLE PATHS...`` on a local instance: the rows of Parquet files replace the rows of their keys on a
table with ``sleeper.table.upsert``, and a table without it is refused in one ``error:`` line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "valueFields": [{"name": "value", "type": "StringType"}],
}


def _parquet(path: Path, keys: list[int], value: str) -> str:
    pq.write_table(pa.table({"key": pa.array(keys, pa.int64()), "value": [value] * len(keys)}), path)
    return str(path)


def should_upsert_parquet_files_and_refuse_a_table_without_the_setting(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "kept", "--schema", str(schema), "--property", "sleeper.table.upsert=true"]) == 0
    assert run(["table", "create", "plain", "--schema", str(schema)]) == 0
    first = _parquet(tmp_path / "first.parquet", [1, 2, 3], "a")
    second = _parquet(tmp_path / "second.parquet", [2, 4], "b")
    capsys.readouterr()

    assert run(["upsert", "kept", first]) == 0
    assert "Upserted 1 path into table kept" in capsys.readouterr().out
    assert run(["upsert", "kept", second, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["transactions"]) == 1
    rows = LocalInstance(instance).table("kept").scan().to_arrow().to_pylist()
    assert rows == [
        {"key": 1, "value": "a"},
        {"key": 2, "value": "b"},
        {"key": 3, "value": "a"},
        {"key": 4, "value": "b"},
    ]

    assert run(["upsert", "plain", first]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "sleeper.table.upsert=true" in err and "Traceback" not in err
    assert LocalInstance(instance).table("plain").scan().count() == 0
