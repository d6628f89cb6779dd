"""Running operations now from the CLI: compaction, splitting, garbage collection, the ingest batcher."""

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
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "ops-test"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert (
        run(
            [
                "table",
                "create",
                "nums",
                "--schema",
                str(schema),
                "-p",
                "sleeper.table.partition.splitting.threshold=500",
            ]
        )
        == 0
    )
    return directory


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _ingest(instance: Path, start: int, count: int) -> None:
    keys = pa.array(range(start, start + count), pa.int64())
    LocalInstance(instance).table("nums").ingest(pa.table({"key": keys, "value": keys}))


def should_compact_every_file_now(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given three files on the root partition
    for start in (0, 1000, 2000):
        _ingest(instance, start, 1000)
    # When all files are compacted now
    result = _json(capsys, ["compact", "nums", "--all", "--json"])
    # Then one job ran, leaving one file with every row, and the job is reported finished
    assert result["jobsCreated"] == 1  # type: ignore[index]
    table = LocalInstance(instance).table("nums")
    assert len({r.filename for r in table.file_references()}) == 1
    assert table.query().num_rows == 3000
    jobs = _json(capsys, ["report", "compaction-jobs", "nums", "--json"])
    assert [j["status"] for j in jobs] == ["FINISHED"]  # type: ignore[index]


def should_split_a_partition_over_the_threshold_now(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given 1000 rows in a table whose threshold is 500
    _ingest(instance, 0, 1000)
    # When splitting runs now
    result = _json(capsys, ["split", "nums", "--json"])
    # Then the root was split into two leaves and every row can still be read
    assert result["leafPartitions"] == 2  # type: ignore[index]
    assert LocalInstance(instance).table("nums").query().num_rows == 1000


def should_keep_files_younger_than_the_gc_delay(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given files just replaced by a compaction
    _ingest(instance, 0, 10)
    _ingest(instance, 10, 10)
    assert run(["compact", "nums", "--all"]) == 0
    # When garbage collection runs now, with orphans as a dry run
    result = _json(capsys, ["gc", "nums", "--orphans", "--dry-run", "--json"])
    # Then nothing is deleted: the replaced files are younger than the delay, and no file is an old orphan
    assert result == {
        "deleted": [],
        "orphansDeleted": [],
        "orphansTooYoung": [],
        "unusedBodiesDeleted": [],
        "unusedBodiesTooYoung": [],
    }
    files = _json(capsys, ["report", "files", "nums", "--json"])
    assert len(files["filesAwaitingGarbageCollection"]) == 2  # type: ignore[index]


def should_batch_submitted_files_into_an_ingest_job(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table whose batcher makes a job from any one file, and a file sent to the batcher
    assert run(["table", "properties", "nums", "--set", "sleeper.table.ingest.batcher.job.min.size=1"]) == 0
    assert (
        run(["table", "properties", "nums", "--set", "sleeper.table.ingest.batcher.ingest.queue=standard_ingest"]) == 0
    )
    path = tmp_path / "rows.parquet"
    keys = pa.array(range(25), pa.int64())
    pq.write_table(pa.table({"key": keys, "value": keys}), path)
    assert run(["batcher", "submit", "nums", str(path)]) == 0
    pending = _json(capsys, ["report", "batcher", "--pending", "--json"])
    assert len(pending) == 1  # type: ignore[arg-type]
    # When the instance runs until idle
    assert run(["run", "--until-idle"]) == 0
    # Then the file was batched into a job and ingested
    assert LocalInstance(instance).table("nums").query().num_rows == 25
    assert _json(capsys, ["report", "batcher", "--pending", "--json"]) == []
