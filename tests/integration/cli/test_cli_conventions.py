"""Conventions every ``sleeper`` command keeps: one wording per error, one line on stderr with no traceback, exit code
1 or 2, nothing changed on disk; ``--version``; ``--json`` on the commands that create or change something."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "things", "--schema", str(schema)]) == 0
    return directory


def _snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under a directory with its content (the SQLite database included)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *, code: int = 1) -> str:
    capsys.readouterr()
    assert run(argv) == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


def should_say_a_table_is_not_found_in_one_wording_everywhere(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance with no table named nope, and a file to ingest
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"key": ["a"], "value": pa.array([1], pa.int64())}), path)

    # When a command looks the table up, and when an ingest job names it
    shown = _one_line_error(capsys, ["table", "show", "nope"])
    ingested = _one_line_error(capsys, ["ingest", "nope", str(path)])

    # Then both say it in the same words
    assert shown == "error: Table not found with name 'nope'"
    assert ingested.endswith("rejected: Table not found with name 'nope'")


def _parquet(path: Path, count: int) -> Path:
    keys = [f"k-{i:04d}" for i in range(count)]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(count), pa.int64())}), path)
    return path


def _json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def should_print_the_installed_distribution_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    # When asked for the version, with no instance given
    capsys.readouterr()
    assert run(["--version"]) == 0

    # Then the distribution's name and version are printed
    assert capsys.readouterr().out == f"sleeper-lsm {version('sleeper-lsm')}\n"


def should_refuse_to_create_an_instance_on_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a path that is a file
    path = tmp_path / "a-file"
    path.write_text("mine")
    monkeypatch.setenv("SLEEPER_INSTANCE", str(path))

    # When an instance is created there
    err = _one_line_error(capsys, ["instance", "create"])

    # Then it is refused in one line, and the file is untouched
    assert err == f"error: cannot create an instance in {path}: it is a file, not a directory"
    assert path.read_text() == "mine" and sorted(tmp_path.iterdir()) == [path]


def should_print_the_ids_of_what_is_created_or_changed_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance directory to create
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    splits = tmp_path / "splits.txt"
    splits.write_text("k-0005\n")

    # When every command that creates or changes something is run with --json
    created = _json_out(capsys, ["instance", "create", "--id", "json-instance", "--json"])
    table = _json_out(
        capsys, ["table", "create", "things", "--schema", str(schema), "--split-points", str(splits), "--json"]
    )
    ingested = _json_out(
        capsys, ["ingest", "things", str(_parquet(tmp_path / "a.parquet", 10)), "--job-id", "j1", "--json"]
    )
    sent = _json_out(
        capsys, ["ingest", "things", str(tmp_path / "a.parquet"), "--job-id", "j2", "--job-queue", "--json"]
    )
    props = _json_out(
        capsys, ["table", "properties", "things", "--set", "sleeper.table.compaction.files.batch.size=7", "--json"]
    )
    offline = _json_out(capsys, ["table", "offline", "things", "--json"])
    online = _json_out(capsys, ["table", "online", "things", "--json"])
    renamed = _json_out(capsys, ["table", "rename", "things", "stuff", "--json"])
    paused = _json_out(capsys, ["pause", "--json"])
    resumed = _json_out(capsys, ["resume", "--json"])
    reinit = _json_out(capsys, ["table", "reinit", "stuff", "--yes", "--json"])
    all_offline = _json_out(capsys, ["table", "offline-all", "--json"])
    retried = _json_out(capsys, ["dead-letters", "retry", "--json"])
    deleted = _json_out(capsys, ["table", "delete", "stuff", "--yes", "--json"])

    # Then each prints the ids of what it made or changed
    assert created == {"instanceId": "json-instance", "directory": str(directory.resolve())}
    table_id = table["tableId"]  # type: ignore[index]
    assert table == {"tableName": "things", "tableId": table_id, "leafPartitions": 2}
    assert ingested["jobId"] == "j1" and ingested["rowsWritten"] == 10 and ingested["files"]  # type: ignore[index]
    assert sent == {"jobId": "j2", "tableName": "things", "sentTo": "IngestJobQ", "status": "SENT"}
    assert props == {
        "tableName": "things",
        "tableId": table_id,
        "set": {"sleeper.table.compaction.files.batch.size": "7"},
    }
    assert offline == {"tableName": "things", "tableId": table_id, "online": False}
    assert online == {"tableName": "things", "tableId": table_id, "online": True}
    assert renamed == {"tableId": table_id, "oldName": "things", "tableName": "stuff"}
    assert paused == {"instance": str(directory), "paused": True} and resumed["paused"] is False  # type: ignore[index]
    assert reinit == {"tableName": "stuff", "tableId": table_id, "leafPartitions": 2, "files": 0}
    assert all_offline == [{"tableName": "stuff", "tableId": table_id, "online": False}]
    assert retried == {}
    assert deleted == {"tableName": "stuff", "tableId": table_id, "deleted": True}


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "things", "--format", "csv", "--output", "{tmp}/missing/rows.csv"],
        ["query", "things", "--format", "parquet", "--output", "{tmp}/missing/rows.parquet"],
        ["table", "estimate-split-points", "things", "--output", "{tmp}/missing/splits.txt"],
        ["table", "create", "other", "--schema", "{tmp}/missing/schema.json"],
        ["table", "create", "other", "--from-parquet", "{tmp}/missing.parquet", "--row-key", "key"],
    ],
)
def should_refuse_a_path_that_cannot_be_used_in_one_line_changing_nothing(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # Given an instance with rows, and a path into a directory that does not exist
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 20))]) == 0
    before = _snapshot(tmp_path)

    # When a command is given that path
    err = _one_line_error(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])

    # Then it says what is wrong with the path, and nothing changed
    assert "missing" in err
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("output_format", ["table", "json", "ndjson", "csv", "parquet"])
def should_return_at_most_limit_rows_in_every_format(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], output_format: str
) -> None:
    # Given 100 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 100))]) == 0

    # When they are queried with --limit 3
    out_file = tmp_path / "rows.parquet"
    argv = ["query", "things", "--format", output_format, "--limit", "3"]
    capsys.readouterr()
    assert run(argv + (["--output", str(out_file)] if output_format == "parquet" else [])) == 0
    out = capsys.readouterr().out

    # Then the first 3 rows in key order come back, whatever the format
    first = ["k-0000", "k-0001", "k-0002"]
    if output_format == "table":
        assert "3 rows" in out and "k-0002" in out and "k-0003" not in out
    elif output_format == "json":
        assert [r["key"] for r in json.loads(out)["rows"]] == first and json.loads(out)["count"] == 3
    elif output_format == "ndjson":
        assert [json.loads(line)["key"] for line in out.splitlines()] == first
    elif output_format == "csv":
        assert out.splitlines() == ['"key","value"', '"k-0000",0', '"k-0001",1', '"k-0002",2']
    else:
        assert pq.read_table(out_file).column("key").to_pylist() == first
        assert out.strip() == f"3 rows written to {out_file}"


def should_show_the_first_rows_and_count_every_row_as_a_table_without_a_limit(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 100 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 100))]) == 0

    # When they are queried as a table with no limit
    capsys.readouterr()
    assert run(["query", "things"]) == 0
    out = capsys.readouterr().out

    # Then 20 rows are shown and every row is counted
    assert "100 rows (first 20)" in " ".join(out.split()) and "k-0019" in out and "k-0020" not in out


@pytest.mark.parametrize("output_format", ["table", "json", "ndjson", "csv"])
def should_say_0_rows_when_nothing_matches(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], output_format: str
) -> None:
    # Given rows, none of them with key zzz
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 10))]) == 0

    # When key zzz is queried
    capsys.readouterr()
    assert run(["query", "things", "--exact", "key=zzz", "--format", output_format]) == 0
    captured = capsys.readouterr()

    # Then the command says 0 rows (on stderr when stdout carries the data, which stays valid)
    if output_format == "table":
        assert captured.out.strip() == "0 rows"
        return
    assert captured.err.strip() == "0 rows"
    if output_format == "json":
        assert json.loads(captured.out) == {"rows": [], "count": 0}
    elif output_format == "ndjson":
        assert captured.out == ""
    else:
        assert captured.out.splitlines() == ['"key","value"']


def should_stream_ndjson_a_row_a_line(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given 1000 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 1000))]) == 0

    # When they are written as NDJSON to a file
    out_file = tmp_path / "rows.ndjson"
    assert run(["query", "things", "--format", "ndjson", "--output", str(out_file)]) == 0

    # Then each line is one row, in key order
    lines = out_file.read_text().splitlines()
    assert [json.loads(line)["value"] for line in lines] == list(range(1000))


def should_write_byte_arrays_as_base64_in_csv_and_refuse_nested_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table with a byte array row key, a string and a list value, made from a Parquet file's columns
    monkeypatch.setenv("SLEEPER_INSTANCE", str(tmp_path / "instance"))
    assert run(["instance", "create"]) == 0
    path = tmp_path / "rows.parquet"
    rows = {
        "id": pa.array([b"\x00\xff", b"\x01"], pa.binary()),
        "name": ["a", "b"],
        "tags": pa.array([["x"], []], pa.list_(pa.string())),
    }
    pq.write_table(pa.table(rows), path)
    assert run(["table", "create", "bytes", "--from-parquet", str(path), "--row-key", "id"]) == 0
    assert run(["ingest", "bytes", str(path)]) == 0

    # When it is written as CSV, with and without the list column
    capsys.readouterr()
    assert run(["query", "bytes", "--format", "csv"]) == 1
    refused = capsys.readouterr().err
    assert run(["query", "bytes", "--format", "csv", "--fields", "name"]) == 0
    written = capsys.readouterr().out

    # Then the list column is refused in one line naming the formats that hold it, and byte arrays are base64
    assert refused.startswith("error: --format csv cannot hold the column tags (list<")
    assert "use --format json, ndjson or parquet" in refused and len(refused.strip().splitlines()) == 1
    assert written.splitlines() == ['"id","name"', '"AP8=","a"', '"AQ==","b"']


_WITHOUT = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None  # as if not installed: importing it raises ModuleNotFoundError\n"
    "from sleeper.cli.main import run\n"
    "sys.exit(run(sys.argv[2:]))\n"
)


def _without(modules: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs the CLI in a new process in which the modules cannot be imported."""
    env = {k: v for k, v in os.environ.items() if k != "SLEEPER_INSTANCE"}
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, modules, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("modules", "argv", "expected"),
    [
        (
            "boto3,botocore",
            ["--instance", "aws:demo", "table", "list"],
            ("error: an instance on AWS (aws:demo) needs the aws extra (", "pip install 'sleeper-lsm[aws]'"),
        ),
        (
            "boto3,botocore,moto",
            ["aws-local", "up", "--port", "1"],
            ("error: sleeper aws-local needs the aws-local extra (", "pip install 'sleeper-lsm[aws-local]'"),
        ),
    ],
)
def should_name_the_extra_to_install_when_an_optional_dependency_is_missing(
    tmp_path: Path, modules: str, argv: list[str], expected: tuple[str, str]
) -> None:
    # Given an installation without the modules
    # When a command needing them runs
    done = _without(modules, argv, tmp_path)

    # Then it exits 1 with one line naming the extra, and writes nothing
    assert (done.returncode, done.stdout, len(done.stderr.strip().splitlines())) == (1, "", 1)
    assert done.stderr.startswith(expected[0]) and done.stderr.strip().endswith(expected[1])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def should_report_a_bulk_import_that_committed_its_rows_as_a_success(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspark")
    # Given a Parquet file of 50 rows, for a table that needs no more leaf partitions for a bulk import
    path = _parquet(tmp_path / "a.parquet", 50)
    assert run(["table", "properties", "things", "--set", "sleeper.table.bulk.import.min.leaf.partitions=1"]) == 0

    # When it is bulk imported with Spark from the command line, and again as JSON under another job id
    capsys.readouterr()
    assert run(["bulk-import", "things", str(path), "--job-id", "bulk-1"]) == 0
    said = capsys.readouterr()
    again = _json_out(capsys, ["bulk-import", "things", str(path), "--job-id", "bulk-2", "--json"])

    # Then it exits 0 saying what it wrote (it crashed formatting its timings after committing), and the rows are there
    assert "Traceback" not in said.err and "Bulk import job bulk-1: 50 rows in 1 file" in " ".join(said.out.split())
    assert again["jobId"] == "bulk-2" and again["rowsWritten"] == 50 and again["status"] == "FINISHED"  # type: ignore[index]
    assert _json_out(capsys, ["query", "things", "--format", "json", "--limit", "1"])["count"] == 1  # type: ignore[index]


def should_accept_the_integer_columns_the_python_api_accepts_and_refuse_a_value_that_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleeper.runtime.local.instance import LocalInstance

    # Given a table with an IntType row key, and files holding that key as int64 (as pandas writes integers)
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create"]) == 0
    schema = tmp_path / "schema.json"
    int_key = {"rowKeyFields": [{"name": "k", "type": "IntType"}], "sortKeyFields": [], "valueFields": []}
    schema.write_text(json.dumps(int_key))
    assert run(["table", "create", "ints", "--schema", str(schema)]) == 0
    fits = tmp_path / "fits.parquet"
    pq.write_table(pa.table({"k": pa.array([3, 1, 2], pa.int64())}), fits)
    too_big = tmp_path / "too-big.parquet"
    pq.write_table(pa.table({"k": pa.array([4, 2**40], pa.int64())}), too_big)

    # When the files are ingested from the command line, and the same rows from Python
    assert run(["ingest", "ints", str(fits)]) == 0
    err = _one_line_error(capsys, ["ingest", "ints", str(too_big)])
    table = LocalInstance(directory).table("ints")
    table.ingest(pa.table({"k": pa.array([5], pa.int64())}))

    # Then the values that fit are ingested by both (the CLI rejected the file before), and the one that does not
    # fit fails the job naming it, adding nothing
    assert table.query().column("k").to_pylist() == [1, 2, 3, 5]
    assert "column 'k'" in err and "1099511627776" in err and "Traceback" not in err


def should_name_a_missing_local_file_to_ingest_in_one_line_changing_nothing(
    instance: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table with rows, and a working directory with no file missing.parquet
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 10))]) == 0
    monkeypatch.chdir(tmp_path)
    before = _snapshot(instance)

    # When that file is ingested by a path relative to the working directory
    err = _one_line_error(capsys, ["-i", str(instance), "ingest", "things", "./missing.parquet"])

    # Then the one line names the file, and the instance (its table's files and rows) is unchanged
    assert err.startswith("error: no file or directory ./missing.parquet") and str(tmp_path / "missing.parquet") in err
    assert _snapshot(instance) == before
    assert _json_out(capsys, ["query", "things", "--format", "json"])["count"] == 10  # type: ignore[index]


def should_not_create_an_instance_when_connecting_to_a_mistyped_directory(tmp_path: Path) -> None:
    import sleeper
    from sleeper.runtime.local.instance import InstanceNotFoundError

    # Given a directory that holds no instance (a typo of one that does)
    assert run(["-i", str(tmp_path / "instance"), "instance", "create"]) == 0
    typo = tmp_path / "typo"

    # When Python connects to it
    with pytest.raises(InstanceNotFoundError, match="no Sleeper instance in .*typo; create one with"):
        sleeper.connect(typo)

    # Then it is refused, and no directory was created
    assert not typo.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["instance"]
