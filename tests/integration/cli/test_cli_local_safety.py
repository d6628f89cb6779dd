"""The sleeper command on a local instance when something outside it goes wrong: the database locked by another
process, a corrupt input file; and the instance's files kept private to its owner."""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.local import sqlite as local_sqlite
from sleeper.cli.main import run

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[3]

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


def _parquet(path: Path, count: int) -> Path:
    keys = [f"k-{i:04d}" for i in range(count)]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(count), pa.int64())}), path)
    return path


@contextmanager
def write_locked(database: Path) -> Iterator[None]:
    """Holds the database's write lock from another connection, as a busy ``sleeper run`` process would."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE IF NOT EXISTS other_process (x)")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def should_print_one_line_when_another_process_holds_the_database_past_the_busy_timeout(
    instance: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a short busy timeout and another process holding the instance database's write lock
    monkeypatch.setattr(local_sqlite, "BUSY_TIMEOUT_MS", 200)
    path = _parquet(tmp_path / "a.parquet", 10)
    database = instance / "sleeper.db"
    capsys.readouterr()
    with write_locked(database), caplog.at_level(logging.DEBUG):
        # When a command that writes runs
        code = run(["ingest", "things", str(path), "--job-id", "job-1"])
        err = capsys.readouterr().err
        # And a command that only reads runs
        listed = run(["table", "list", "--json"])
    # Then the write fails with one line naming the database, that another process holds it, and what to do
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(database) in lines[0]
    assert "locked by another sleeper process" in lines[0]
    assert "try again" in lines[0]
    assert "Traceback" not in err
    assert [r for r in caplog.records if r.exc_info] == []
    # And the read works while the lock is held
    assert listed == 0
    assert [t["tableName"] for t in json.loads(capsys.readouterr().out)] == ["things"]
    # And once the lock is released the same command works
    assert run(["ingest", "things", str(path), "--job-id", "job-1"]) == 0


def _sleeper(instance: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Runs the sleeper command in its own process, as a user does, so stderr holds whatever it prints or logs."""
    env = {**os.environ, "SLEEPER_INSTANCE": str(instance), "PYTHONPATH": str(REPOSITORY)}
    return subprocess.run(
        [sys.executable, "-c", "from sleeper.cli.main import main; main()", *argv],
        env=env,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=False,
    )


def _corrupt_a_page(path: Path, column: str) -> None:
    """Flips bytes inside the first data page of a column, leaving the footer (and so the schema) readable."""
    metadata = pq.ParquetFile(path).metadata
    chunk = next(
        metadata.row_group(0).column(i)
        for i in range(metadata.num_columns)
        if metadata.row_group(0).column(i).path_in_schema == column
    )
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = bytearray(path.read_bytes())
    for offset in range(start + 40, start + 48):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def should_fail_an_ingest_of_a_corrupt_file_naming_the_file_without_a_traceback(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a good file and a Parquet file with a corrupt page in its value column
    good = _parquet(tmp_path / "good.parquet", 500)
    bad = _parquet(tmp_path / "bad.parquet", 2000)
    _corrupt_a_page(bad, "value")
    assert pq.ParquetFile(bad).schema_arrow.names == ["key", "value"]
    # When both are ingested as one job
    result = _sleeper(instance, "ingest", "things", str(good), str(bad), "--job-id", "corrupt-job")
    # Then the command fails with a reason naming the file and the column, and no traceback
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert str(bad) in result.stderr
    assert "'value'" in result.stderr
    # And the tracker records the job failed with that reason
    capsys.readouterr()
    assert run(["report", "ingest-jobs", "things", "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)
    assert [(j["jobId"], j["status"]) for j in jobs] == [("corrupt-job", "FAILED")]
    assert str(bad) in json.dumps(jobs[0])
    # And nothing was committed, not even the good file's rows
    capsys.readouterr()
    assert run(["query", "things", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 0


@pytest.fixture
def shared_parent() -> Iterator[Path]:
    """A directory every user may enter, as a home or project directory often is (pytest's own is private), with the
    usual umask."""
    parent = Path(tempfile.mkdtemp(prefix="sleeper-private-test-"))
    parent.chmod(0o755)
    umask = os.umask(0o022)
    try:
        yield parent
    finally:
        os.umask(umask)
        shutil.rmtree(parent)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _readable_by(user: str, paths: list[Path]) -> list[str]:
    """The paths another user can read (run as that user; needs root)."""
    probe = 'for f in "$@"; do cat "$f" > /dev/null 2>&1 && echo "$f"; done; exit 0'
    result = subprocess.run(
        ["sh", "-c", probe, "sh", *map(str, paths)], user=user, cwd="/", capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def should_keep_every_file_of_the_instance_private_to_its_owner(
    shared_parent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance created in a directory others may enter, under the usual umask
    directory = shared_parent / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "private-instance"]) == 0
    # When a table is created, a file ingested and queried through the query queue (which writes query results)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "things", "--schema", str(schema)]) == 0
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 100)), "--job-id", "job-1"]) == 0
    assert run(["query", "things", "--via-queue", "--format", "json"]) == 0
    capsys.readouterr()
    # Then the instance directory is its owner's alone
    assert _mode(directory) == 0o700
    assert directory.stat().st_uid == os.getuid()
    # And every file the instance wrote lies under it: the database and its WAL, properties, data, sketches, results
    written = [p for p in directory.rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert {"sleeper.db", "sleeper.db-wal", "instance.properties"} <= names
    assert any(n.endswith(".parquet") for n in names) and any(n.endswith(".sketches") for n in names)
    assert any("query-results" in p.parts for p in written)
    # And another user can read none of them, though it can read a file beside the instance
    if os.geteuid() != 0 or "nobody" not in {u.pw_name for u in pwd.getpwall()}:
        return
    beside = shared_parent / "readme.txt"
    beside.write_text("shared")
    beside.chmod(0o644)
    assert _readable_by("nobody", [beside, *written]) == [str(beside)]


def should_make_an_existing_instance_private_when_it_is_opened(
    instance: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Given an instance whose directory others may read, as instances made before were
    instance.chmod(0o755)
    # When a command opens it
    with caplog.at_level(logging.WARNING):
        assert run(["table", "list", "--json"]) == 0
    # Then its directory is made its owner's alone, with one notice saying so
    assert _mode(instance) == 0o700
    notices = [r.getMessage() for r in caplog.records if str(instance) in r.getMessage()]
    assert len(notices) == 1
    assert "755 -> 700" in notices[0]
    # And opening it again changes nothing and says nothing
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert run(["table", "list", "--json"]) == 0
    assert [r for r in caplog.records if str(instance) in r.getMessage()] == []


def should_write_instance_files_for_their_owner_alone_from_the_sleeper_command(shared_parent: Path) -> None:
    # Given the usual umask (022), when the sleeper command itself creates an instance and a table
    directory = shared_parent / "instance"
    schema = shared_parent / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    command = [sys.executable, "-c", "from sleeper.cli.main import main; main()", "--instance", str(directory)]
    for args in (["instance", "create", "--id", "umask-instance"], ["table", "create", "t", "--schema", str(schema)]):
        result = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
    # Then every file it wrote is 0600 and every directory 0700: nothing is readable by group or others
    written = [directory, *directory.rglob("*")]
    assert any(p.name == "sleeper.db" for p in written)
    shared = {str(p): oct(_mode(p)) for p in written if _mode(p) & 0o077}
    assert shared == {}
