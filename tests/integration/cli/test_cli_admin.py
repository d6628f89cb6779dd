"""Operator commands on a local instance: properties, pause/resume, reinitialise, split points, dead letters."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.cli.main import run
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "StringType"}],
}


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "admin-test"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "nums", "--schema", str(schema)]) == 0
    return directory


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _fill(instance: Path, count: int) -> None:
    table = LocalInstance(instance).table("nums")
    table.ingest(pa.table({"key": pa.array(range(count), pa.int64()), "value": [str(i) for i in range(count)]}))


def should_edit_instance_properties_with_a_diff(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an instance
    # When a property is set
    diff = _json(capsys, ["instance", "properties", "--set", "sleeper.gc.period.minutes=30", "--json"])
    # Then the diff shows it and the value is saved
    assert diff == [{"property": "sleeper.gc.period.minutes", "before": None, "after": "30"}]
    assert LocalInstance(instance).properties.get("sleeper.gc.period.minutes") == "30"


def should_not_save_a_dry_run(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an instance
    # When an edit is a dry run
    diff = _json(capsys, ["instance", "properties", "--set", "sleeper.gc.period.minutes=30", "--dry-run", "--json"])
    # Then the diff is shown and nothing is saved
    assert len(diff) == 1  # type: ignore[arg-type]
    assert LocalInstance(instance).properties.get("sleeper.gc.period.minutes") != "30"


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("sleeper.gc.period.minutes=soon", "sleeper.gc.period.minutes"),
        ("sleeper.id=other-id", "sleeper.id cannot be changed"),
        ("sleeper.ingest.job.queue.url=http://x", "set by the deployment"),
        ("sleeper.filesystem=s3://", "sleeper.filesystem must be file:// on a local instance"),
        ("sleeper.filesystem=s3a://", "keeps its data under its directory"),
    ],
)
def should_refuse_an_invalid_or_fixed_property_and_change_nothing(
    instance: Path, assignment: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the saved properties
    before = (instance / "instance.properties").read_text()
    # When a bad edit is made
    capsys.readouterr()
    code = run(["instance", "properties", "--set", assignment])
    # Then it fails naming the problem and the file is unchanged
    assert code == 1
    assert message in capsys.readouterr().err
    assert (instance / "instance.properties").read_text() == before


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def should_refuse_to_unset_the_filesystem_of_a_local_instance(
    instance: Path, capsys: pytest.CaptureFixture[str], dry_run: list[str]
) -> None:
    # Given the saved properties
    before = (instance / "instance.properties").read_text()
    # When the filesystem is unset, which would fall back to S3's s3a://
    capsys.readouterr()
    code = run(["instance", "properties", "--unset", "sleeper.filesystem", *dry_run])
    # Then it fails naming the problem, even as a dry run, and the file is unchanged
    assert code == 1
    assert "sleeper.filesystem must be file:// on a local instance" in capsys.readouterr().err
    assert (instance / "instance.properties").read_text() == before


def should_pause_and_resume_the_scheduler(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a paused system
    assert run(["pause"]) == 0
    inst = LocalInstance(instance)
    # When the scheduler runs
    seen: list[str] = []
    runner = LocalRunner(inst, {"GCJobQ.fifo": lambda _i, body: seen.append(body) or ""})
    runner.run_round(force=True)
    # Then nothing was triggered; pausing again is refused; after resuming it triggers
    assert seen == []
    capsys.readouterr()
    assert run(["pause"]) == 1
    assert "already paused" in capsys.readouterr().err
    assert run(["resume"]) == 0
    runner.run_round(force=True)
    assert seen == [inst.table("nums").table_id]
    assert run(["resume"]) == 1


def should_reinitialise_a_table_with_new_split_points(instance: Path, tmp_path: Path) -> None:
    # Given a table with rows
    _fill(instance, 1000)
    table = LocalInstance(instance).table("nums")
    data_files = list((instance / "data" / table.table_id / "data").rglob("*.parquet"))
    assert data_files
    splits = tmp_path / "splits.txt"
    splits.write_text("100\n500\n")
    # When it is reinitialised with split points
    assert run(["table", "reinit", "nums", "--split-points", str(splits), "--yes"]) == 0
    # Then it has no rows or data files, and 3 leaves
    table = LocalInstance(instance).table("nums")
    assert table.query().num_rows == 0
    assert not any(path.exists() for path in data_files)
    assert len(table.leaf_partitions()) == 3


def should_refuse_bad_split_points_before_deleting_anything(instance: Path, tmp_path: Path) -> None:
    # Given a table with rows and split points out of order
    _fill(instance, 100)
    splits = tmp_path / "splits.txt"
    splits.write_text("500\n100\n")
    # When it is reinitialised
    code = run(["table", "reinit", "nums", "--split-points", str(splits), "--yes"])
    # Then it is refused and the rows are still there
    assert code == 1
    assert LocalInstance(instance).table("nums").query().num_rows == 100


def should_estimate_split_points_from_sketches(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with keys 0..9999
    _fill(instance, 10_000)
    # When 4 partitions are estimated
    points = _json(capsys, ["table", "estimate-split-points", "nums", "-n", "4", "--json"])
    # Then the split points are close to the quartiles
    assert len(points) == 3  # type: ignore[arg-type]
    for point, quartile in zip(points, (2500, 5000, 7500), strict=True):  # type: ignore[call-overload]
        assert abs(int(point) - quartile) < 200


def _words_table(instance: Path, tmp_path: Path, keys: list[str]) -> None:
    schema = tmp_path / "words.json"
    schema.write_text(json.dumps({"rowKeyFields": [{"name": "key", "type": "StringType"}]}))
    assert run(["table", "create", "words", "--schema", str(schema)]) == 0
    LocalInstance(instance).table("words").ingest(pa.table({"key": keys}))


def should_refuse_to_write_a_split_point_holding_a_newline_without_base64(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table whose every key holds a line break
    _words_table(instance, tmp_path, [f"line\n{i:04d}" for i in range(1000)])
    out = tmp_path / "splits.txt"
    for argv in (["-o", str(out)], []):
        # When split points are written one per line, to a file or to the terminal
        capsys.readouterr()
        code = run(["table", "estimate-split-points", "words", "-n", "4", *argv])
        # Then it is refused, saying to use --base64, and no file is written
        err = capsys.readouterr().err.strip()
        assert code == 1
        assert "holds a line break" in err and "--base64" in err and len(err.splitlines()) == 1
        assert not out.exists()


@pytest.mark.parametrize(
    "keys",
    [
        [f"line\n{i:04d}" for i in range(1000)],
        [f"cr\r{i:04d}" for i in range(1000)],
        [f"{i:04d}\u2028sep" for i in range(1000)],
        [f"plain-{i:04d}" for i in range(1000)],
    ],
)
def should_write_split_points_base64_so_table_create_reads_them_back(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: list[str]
) -> None:
    # Given a table of string keys
    _words_table(instance, tmp_path, keys)
    expected = _json(capsys, ["table", "estimate-split-points", "words", "-n", "4", "--json"])
    # When its split points are written base64 encoded
    out = tmp_path / "splits.txt"
    assert run(["table", "estimate-split-points", "words", "-n", "4", "--base64", "-o", str(out)]) == 0
    # Then a table created from the file with --base64 has exactly those split points
    schema = tmp_path / "words.json"
    assert run(["table", "create", "copy", "--schema", str(schema), "--split-points", str(out), "--base64"]) == 0
    leaves = LocalInstance(instance).table("copy").leaf_partitions()
    region_mins = [leaf.region.range("key").min for leaf in leaves[1:]]  # type: ignore[union-attr]
    assert region_mins == expected
    assert len(region_mins) == 3


def should_take_every_table_offline(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given two online tables
    schema = tmp_path / "schema.json"
    assert run(["table", "create", "other", "--schema", str(schema)]) == 0
    # When every table is taken offline
    assert run(["table", "offline-all"]) == 0
    # Then the list shows both offline, with their rows
    tables = _json(capsys, ["table", "list", "--json"])
    assert sorted((t["tableName"], t["online"], t["rows"]) for t in tables) == [  # type: ignore[index]
        ("nums", False, 0),
        ("other", False, 0),
    ]


def should_retry_dead_letters_and_say_when_there_are_none(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an empty dead-letter queue
    capsys.readouterr()
    assert run(["dead-letters", "retry"]) == 0
    assert "No dead letters to retry" in capsys.readouterr().out
    # And then a message dead-lettered from the ingest queue
    inst = LocalInstance(instance)
    queue = inst.queue("IngestJobQ")
    queue.send("job")
    for _ in range(4):
        queue.receive(1, visibility_timeout_seconds=0)
    assert inst.dead_letter_queue("IngestJobQ").approximate_counts().visible == 1
    # When dead letters are retried
    assert run(["dead-letters", "retry"]) == 0
    # Then the message is back on its queue and the count is reported
    assert "IngestJobQ: 1 message moved back" in capsys.readouterr().out
    assert [m.body for m in queue.receive(1)] == ["job"]
    assert inst.dead_letter_queue("IngestJobQ").approximate_counts().visible == 0


def should_drive_the_admin_menu_from_standard_input(
    instance: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given answers: edit a table property, take the table offline, then a bad choice, then exit
    answers = "\n".join(["6", "nums", "sleeper.table.gc.delay.minutes", "45", "16", "nums", "99", "0"]) + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(answers))
    # When the menu runs
    code = run(["admin"])
    # Then both commands took effect and the bad choice was asked again
    assert code == 0
    table = LocalInstance(instance).table("nums")
    assert table.properties.get("sleeper.table.gc.delay.minutes") == "45"
    assert table.status.online is False
    assert "Please select one of the available options" in capsys.readouterr().out


def should_end_the_menu_at_the_end_of_input(instance: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no answers at all
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    # When the menu runs
    # Then it ends without error
    assert run(["admin"]) == 0
