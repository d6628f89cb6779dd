"""A file named twice in one ingest is refused on every local ingest path, before anything is written: the same path
twice, in two spellings (``./x`` and ``x``, a path and its ``file://`` URI), or a directory and a file inside it
(``Table.ingest``, the ingest job runner and queue, the CLI directly and through the queue, the ingest batcher).
Without the check its rows were added twice."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest import run_ingest_queue
from sleeper.ingest.exceptions import IngestError
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = sleeper.Schema.of(
    row_keys=[sleeper.Field("key", sleeper.PrimitiveType.LONG)],
    values=[sleeper.Field("value", sleeper.PrimitiveType.LONG)],
)
SCHEMA_JSON = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


def _write(path: Path, start: int, count: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = pa.array(range(start, start + count), pa.int64())
    pq.write_table(pa.table({"key": keys, "value": keys}), path)
    return path


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalInstance:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    instance = LocalInstance.create(directory)
    instance.create_table("t", SCHEMA)
    return instance


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``in/x.parquet`` (1,000 rows) and ``in/dir/a.parquet`` (500 rows); the working directory is ``in``."""
    _write(tmp_path / "in" / "x.parquet", 0, 1000)
    _write(tmp_path / "in" / "dir" / "a.parquet", 1000, 500)
    monkeypatch.chdir(tmp_path / "in")
    return tmp_path / "in"


def _duplicates(files: Path) -> dict[str, list[str]]:
    return {
        "the same path twice": [str(files / "x.parquet"), str(files / "x.parquet")],
        "a path and its file:// URI": [str(files / "x.parquet"), f"file://{files}/x.parquet"],
        "a directory and a file inside it": [f"{files}/dir/", str(files / "dir" / "a.parquet")],
    }


def should_refuse_table_ingest_of_a_file_named_twice(instance: LocalInstance, files: Path) -> None:
    # Given each way of naming one file twice, relative paths among them
    cases = {**_duplicates(files), "relative ./x and x": ["./x.parquet", "x.parquet"]}
    for what, paths in cases.items():
        # When the paths are ingested from Python
        with pytest.raises(IngestError, match="is named more than once") as raised:
            instance.table("t").ingest(paths)
        # Then the error names the file and what to do, and nothing was added
        assert "name each file or directory once" in str(raised.value), what
    assert instance.table("t").file_references() == []


def should_reject_a_queued_ingest_job_naming_a_file_twice(instance: LocalInstance, files: Path) -> None:
    # Given a job on the ingest job queue for each way of naming one file twice
    queue = instance.queue("IngestJobQ")
    for index, paths in enumerate(_duplicates(files).values()):
        queue.send(json.dumps({"id": f"job-{index}", "tableName": "t", "files": paths}))

    # When the queue is run
    summary = run_ingest_queue(instance)

    # Then each job is rejected in the tracker, naming the file, and the table holds no rows
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.REJECTED] * 3
    for index in range(3):
        status = instance.ingest_job_tracker.job(f"job-{index}")
        assert status is not None and status.status is IngestJobStatusType.REJECTED
        (reason,) = status.latest_run.failure_reasons
        assert "is named more than once" in reason and "name each file or directory once" in reason
    assert instance.table("t").file_references() == []
    assert queue.approximate_counts().visible == 0


def should_refuse_a_cli_ingest_naming_a_file_twice_directly_and_through_the_queue(
    instance: LocalInstance, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleeper.cli.main import run

    # When the same file is ingested under two spellings from the command line
    capsys.readouterr()
    code = run(["ingest", "t", "x.parquet", "./x.parquet", "--job-id", "direct"])
    # Then the command fails naming the file, and nothing is added
    err = capsys.readouterr().err
    assert code == 1
    assert "error:" in err and "x.parquet is named more than once" in err
    assert instance.table("t").file_references() == []
    # And a directory with a file inside it, through the queue, is rejected in the tracker
    assert run(["ingest", "t", "dir", "dir/a.parquet", "--job-id", "queued", "--job-queue"]) == 0
    assert run(["run", "--until-idle"]) == 0
    status = instance.ingest_job_tracker.job("queued")
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert "a.parquet is named more than once" in status.latest_run.failure_reasons[0]
    assert instance.table("t").file_references() == []


def should_refuse_a_batcher_submission_naming_a_file_twice(
    instance: LocalInstance, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleeper.cli.main import run

    # When a directory and a file inside it are sent to the ingest batcher
    capsys.readouterr()
    code = run(["batcher", "submit", "t", "dir", "dir/a.parquet"])
    # Then the command fails naming the file, and no file is tracked
    err = capsys.readouterr().err
    assert code == 1
    assert "a.parquet is named more than once" in err
    assert instance.batcher_store.all_files_newest_first() == []


def should_still_ingest_distinct_files_and_directories(instance: LocalInstance, files: Path) -> None:
    # Given / When two distinct paths are ingested
    instance.table("t").ingest(["x.parquet", "dir"])
    # Then each file's rows are added once
    assert instance.table("t").query().num_rows == 1500
