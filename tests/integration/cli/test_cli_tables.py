"""The sleeper command on a local instance: tables, properties and reports; errors change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleeper.cli.main import run

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _state(instance: Path) -> dict[str, bytes]:
    """Every file of the instance with its content, to prove a failed command changed nothing."""
    return {
        str(p.relative_to(instance)): p.read_bytes()
        for p in sorted(instance.rglob("*"))
        if p.is_file() and not p.name.startswith("sleeper.db")
    }


def should_create_and_list_a_table_with_split_points(
    instance: Path, schema_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a split points file
    splits = tmp_path / "splits.txt"
    splits.write_text("g\nm\nt\n")
    # When a table is created
    assert run(["table", "create", "people", "--schema", str(schema_file), "--split-points", str(splits)]) == 0
    # Then it is listed, online, with 4 leaf partitions
    tables = _json(capsys, ["table", "list", "--json"])
    assert [(t["tableName"], t["online"]) for t in tables] == [("people", True)]  # type: ignore[union-attr,index]
    partitions = _json(capsys, ["report", "partitions", "people", "--json"])
    assert sum(1 for p in partitions if p["isLeafPartition"]) == 4  # type: ignore[union-attr,index]
    assert len(partitions) == 7  # type: ignore[arg-type]


def should_rename_take_offline_and_delete(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["table", "create", "t1", "--schema", str(schema_file)]) == 0
    assert run(["table", "rename", "t1", "t2"]) == 0
    assert run(["table", "offline", "t2"]) == 0
    tables = _json(capsys, ["table", "list", "--json"])
    assert [(t["tableName"], t["online"]) for t in tables] == [("t2", False)]  # type: ignore[union-attr,index]
    assert run(["table", "online", "t2"]) == 0
    assert run(["table", "delete", "t2", "--yes"]) == 0
    assert _json(capsys, ["table", "list", "--json"]) == []


def should_set_a_valid_property(instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["table", "create", "t", "--schema", str(schema_file)]) == 0
    assert run(["table", "properties", "t", "--set", "sleeper.table.compaction.files.batch.size=8"]) == 0
    values = _json(capsys, ["table", "properties", "t", "--json"])
    assert values["sleeper.table.compaction.files.batch.size"] == "8"  # type: ignore[index]
    # a table property not set falls back to its default
    assert values["sleeper.table.compaction.strategy.sizeratio.ratio"] == "3"  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["table", "properties", "t", "--set", "sleeper.table.compaction.files.batch.size=many"], "batch.size"),
        (["table", "properties", "t", "--set", "sleeper.table.no.such.property=1"], "sleeper.table.no.such.property"),
        (["table", "properties", "t", "--set", "sleeper.table.name=u"], "rename the table instead"),
        (["table", "properties", "t", "--set", "sleeper.table.online=false"], "put the table online or take it"),
        (["table", "properties", "nope", "--set", "sleeper.table.compaction.files.batch.size=3"], "nope"),
        (["table", "show", "nope"], "nope"),
        (["report", "files", "nope"], "nope"),
        (["table", "rename", "t", "t"], "t"),
        (["table", "delete", "nope", "--yes"], "nope"),
    ],
)
def should_reject_bad_input_with_one_line_error_and_change_nothing(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    # Given a table
    assert run(["table", "create", "t", "--schema", str(schema_file)]) == 0
    before = _state(instance)
    capsys.readouterr()
    # When a bad command runs
    code = run(argv)
    # Then it exits non-zero with one line naming the problem, and nothing changed
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1 and message in err
    assert _state(instance) == before


@pytest.mark.parametrize(
    ("prop", "message"),
    [
        ("sleeper.table.no.such.property=1", "unknown table property sleeper.table.no.such.property"),
        ("sleeper.gc.period.minutes=5", "unknown table property sleeper.gc.period.minutes"),
        ("sleeper.table.compaction.files.batch.size=many", "sleeper.table.compaction.files.batch.size"),
        ("sleeper.table.name=other", "sleeper.table.name cannot be given as a table property"),
        ("sleeper.table.id=abc", "sleeper.table.id cannot be given as a table property"),
        ("sleeper.table.schema={}", "sleeper.table.schema cannot be given as a table property"),
    ],
)
def should_refuse_a_table_created_with_a_property_that_properties_set_would_refuse(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str], prop: str, message: str
) -> None:
    # Given an instance with no tables
    before = _state(instance)
    capsys.readouterr()
    # When a table is created with a property that is unknown, invalid or set another way
    code = run(["table", "create", "t", "--schema", str(schema_file), "--property", prop])
    # Then it is refused in one line naming the property, and no table is made
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert len(err.splitlines()) == 1 and message in err
    assert _state(instance) == before
    assert _json(capsys, ["table", "list", "--json"]) == []


def should_create_a_table_with_valid_properties(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # When a table is created with a table property and offline
    prop = ["--property", "sleeper.table.compaction.files.batch.size=8", "-p", "sleeper.table.online=false"]
    assert run(["table", "create", "t", "--schema", str(schema_file), *prop]) == 0
    # Then both are saved, and the table is offline
    values = _json(capsys, ["table", "properties", "t", "--json"])
    assert values["sleeper.table.compaction.files.batch.size"] == "8"  # type: ignore[index]
    tables = _json(capsys, ["table", "list", "--json"])
    assert [(t["tableName"], t["online"]) for t in tables] == [("t", False)]  # type: ignore[union-attr,index]


def should_reject_a_bad_schema_naming_the_field(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rowKeyFields": [{"name": "key", "type": "FloatType"}]}))
    before = _state(instance)
    capsys.readouterr()
    assert run(["table", "create", "t", "--schema", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        "error: row key field 'key' is FloatType, a value type: row keys and sort keys must be IntType, LongType, "
        "StringType or ByteArrayType"
    ]
    assert _state(instance) == before


def should_refuse_a_second_table_of_the_same_name(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["table", "create", "t", "--schema", str(schema_file)]) == 0
    before = _state(instance)
    capsys.readouterr()
    assert run(["table", "create", "t", "--schema", str(schema_file)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert _state(instance) == before


def should_need_an_instance(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SLEEPER_INSTANCE", raising=False)
    assert run(["table", "list"]) == 1
    assert "no instance given" in capsys.readouterr().err


def should_report_files_after_adding_some(
    instance: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sleeper
    from sleeper.core.statestore.references import FileReference

    assert run(["table", "create", "t", "--schema", str(schema_file)]) == 0
    table = sleeper.connect(instance, create=True).table("t")
    table.state_store.add_files(
        [
            FileReference(
                filename=f"{table.data_prefix}/data/partition_root/a.parquet", partition_id="root", number_of_rows=10
            )
        ]
    )
    report = _json(capsys, ["report", "files", "t", "--json"])
    assert report["totalRows"] == 10  # type: ignore[index]
    assert run(["report", "files", "t", "--verbose"]) == 0
    assert "a.parquet" in capsys.readouterr().out


def should_report_a_usage_error_without_a_traceback(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local instance
    before = _state(instance)
    # When a command misses its argument, and another is given an unknown option
    missing = run(["table", "create"])
    missing_err = capsys.readouterr().err
    unknown = run(["table", "list", "--bogus"])
    unknown_err = capsys.readouterr().err
    # Then each exits with click's usage status, naming the problem, with no traceback, and nothing changed
    assert (missing, unknown) == (2, 2)
    assert "Missing argument 'name'" in missing_err
    assert "No such option: --bogus" in unknown_err
    assert "Traceback" not in missing_err + unknown_err
    assert _state(instance) == before
