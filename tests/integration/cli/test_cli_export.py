"""``sleeper export TABLE DIR`` on a local instance: one sorted file per leaf, every row once; the same export id
again adds no file; a missing DIR or an unknown table is one line, not a traceback."""

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
    assert run(["instance", "create", "--id", "export-test"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    splits = tmp_path / "splits.txt"
    splits.write_text("k-0300\nk-0600\n")
    assert run(["table", "create", "things", "--schema", str(schema), "--split-points", str(splits)]) == 0
    data = tmp_path / "data.parquet"
    keys = [f"k-{i:04d}" for i in reversed(range(900))]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(900), pa.int64())}), data)
    assert run(["ingest", "things", str(data)]) == 0
    return directory


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert run(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result, dict)
    return result


def should_export_a_table_to_a_directory(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    result = _json(capsys, ["export", "things", str(out), "--export-id", "e1", "--json"])
    files = result["files"]
    assert isinstance(files, list) and len(files) == 3
    assert result["rows"] == 900 and result["state"] == "COMPLETED"
    rows = pa.concat_tables([pq.read_table(f) for f in files])
    assert rows["key"].to_pylist() == [f"k-{i:04d}" for i in range(900)]
    assert all(Path(f).parent == out / str(result["tableId"]) / "e1" for f in files)
    # The same export id again adds nothing
    again = _json(capsys, ["export", "things", str(out), "--export-id", "e1", "--json"])
    assert again["state"] == "ALREADY_FINISHED"
    assert len(list((out / str(result["tableId"]) / "e1").glob("*.parquet"))) == 3


def should_refuse_an_export_without_a_directory_in_one_line(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run(["export", "things"]) != 0
    err = capsys.readouterr().err
    assert "sleeper export TABLE DIR" in err and "Traceback" not in err


def should_refuse_an_unknown_table_in_one_line(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run(["export", "nope", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err
