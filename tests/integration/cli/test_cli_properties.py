"""``instance properties`` and ``table properties``: groups, unset, and what an edit of a property the port does not
use or that needs a deployment says."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sleeper.cli.main import run

pytestmark = pytest.mark.integration

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "StringType"}], "sortKeyFields": [], "valueFields": []}


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "things", "--schema", str(schema)]) == 0
    return directory


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def should_warn_on_stderr_when_a_property_not_used_is_set(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local instance
    capsys.readouterr()
    # When a property this port does not use and one only a deployment applies are set, with --json
    code = run(
        ["instance", "properties", "--set", "sleeper.logging.rust=debug", "--set", "sleeper.log.retention.days=7"]
        + ["--json"]
    )
    out, err = capsys.readouterr()
    # Then both are saved, and stderr says the first does nothing and the second needs sleeper deploy
    assert code == 0
    assert {c["property"] for c in json.loads(out)} == {"sleeper.logging.rust", "sleeper.log.retention.days"}
    assert err.splitlines() == [
        "warning: sleeper.logging.rust is not used by this port (no Rust library this port loads initialises Rust's "
        "env_logger, so RUST_LOG has no reader); it is saved but does nothing",
        "note: on AWS, sleeper.log.retention.days takes effect only when the instance is deployed (sleeper deploy)",
    ]


def should_show_one_group_with_the_values_in_effect(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local instance with one logging level set
    assert run(["instance", "properties", "--set", "sleeper.logging.level=DEBUG"]) == 0
    # When the logging group is shown
    rows = _json(capsys, ["instance", "properties", "--group", "Logging", "--json"])
    # Then every logging property is there, with the value in effect and whether it is set and used
    assert isinstance(rows, list)
    by_name = {r["property"]: r for r in rows}
    assert by_name["sleeper.logging.level"] == {
        "property": "sleeper.logging.level",
        "value": "DEBUG",
        "set": True,
        "used": True,
        "redeploy": False,
        "setByDeployment": False,
    }
    assert by_name["sleeper.logging.rust"]["used"] is False
    assert len(rows) == 7


def should_show_a_tables_group_with_defaults(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table
    # When its data storage group is shown
    rows = _json(capsys, ["table", "properties", "things", "--group", "data_storage", "--json"])
    # Then the GC delay is there with its default, not set on the table
    assert isinstance(rows, list)
    delay = next(r for r in rows if r["property"] == "sleeper.table.gc.delay.minutes")
    assert (delay["value"], delay["set"]) == ("20", False)


def should_refuse_an_unknown_group_naming_the_groups(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local instance
    capsys.readouterr()
    # When a group that does not exist is asked for
    code = run(["instance", "properties", "--group", "nope"])
    # Then one line names the groups there are
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert err.startswith("error: no instance property group 'nope': the groups are common, table_state, ingest")


def should_unset_a_table_property_so_it_takes_its_default_again(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table with its GC delay set
    assert run(["table", "properties", "things", "--set", "sleeper.table.gc.delay.minutes=45"]) == 0
    assert _json(capsys, ["table", "properties", "things", "--json"])["sleeper.table.gc.delay.minutes"] == "45"  # type: ignore[index]
    # When it is unset
    result = _json(capsys, ["table", "properties", "things", "--unset", "sleeper.table.gc.delay.minutes", "--json"])
    # Then it is saved unset and takes the instance default again
    assert result["unset"] == ["sleeper.table.gc.delay.minutes"]  # type: ignore[index]
    values = _json(capsys, ["table", "properties", "things", "--json"])
    assert values["sleeper.table.gc.delay.minutes"] == "20"  # type: ignore[index]
    saved = next((instance / "tables").glob("table-*.properties")).read_text()
    assert "sleeper.table.gc.delay.minutes" not in saved


def should_refuse_to_unset_the_table_name(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table
    capsys.readouterr()
    # When its name is unset
    code = run(["table", "properties", "things", "--unset", "sleeper.table.name"])
    # Then it is refused, pointing to a rename
    assert code == 1
    assert "rename the table instead" in capsys.readouterr().err


def should_create_a_table_from_the_splits_file_its_properties_name(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a splits file of base64 encoded strings
    splits = tmp_path / "splits.txt"
    splits.write_text("Zw==\nbQ==\n")  # g, m
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    # When a table is created with the file named by its properties
    created = _json(
        capsys,
        ["table", "create", "split", "--schema", str(schema), "-p", f"sleeper.table.splits.file={splits}"]
        + ["-p", "sleeper.table.splits.base64.encoded=true", "--json"],
    )
    # Then it starts with the partitions the split points make
    assert created["leafPartitions"] == 3  # type: ignore[index]


def should_refuse_split_points_given_twice_or_unreadable(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a splits file
    splits = tmp_path / "splits.txt"
    splits.write_text("m\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    capsys.readouterr()
    # When a table is given split points both ways, and then a splits file that does not exist
    both = run(
        ["table", "create", "a", "--schema", str(schema), "--split-points", str(splits)]
        + ["-p", f"sleeper.table.splits.file={splits}"]
    )
    both_err = capsys.readouterr().err
    missing = run(["table", "create", "b", "--schema", str(schema), "-p", f"sleeper.table.splits.file={tmp_path}/no"])
    missing_err = capsys.readouterr().err
    # Then each is refused in one line, and no table is made
    assert both == 1 and "give split points once" in both_err
    assert missing == 1 and "sleeper.table.splits.file: cannot read" in missing_err
    assert run(["table", "show", "a"]) == 1 and run(["table", "show", "b"]) == 1


def should_show_a_group_from_the_admin_menu(
    instance: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given answers choosing the instance properties of a group, the logging group, then exit
    from sleeper.cli.menu import ITEMS

    choice = next(i for i, item in enumerate(ITEMS, start=1) if item.label == "View instance properties by group")
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{choice}\nlogging\n0\n"))
    capsys.readouterr()
    # When the menu runs
    code = run(["admin"])
    # Then the group's properties are shown
    assert code == 0
    out = capsys.readouterr().out
    assert "Instance properties: Logging" in out and "sleeper.logging.rust" in out
