"""Reports at the depth of Sleeper's: every run of a job with its times, rows and rates; one job in
detail; the jobs of a period; the files report's summary, statistics, verbose listing, GC cap and CSV."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sleeper.cli import common
from sleeper.cli.main import run
from sleeper.core.statestore.references import FileReference
from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
)
from sleeper.core.trackers.ingest import IngestJobFinished, IngestJobStarted, IngestJobValidated
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "LongType"}], "sortKeyFields": [], "valueFields": []}
T0 = datetime.now(tz=UTC).replace(microsecond=0) - timedelta(hours=3)


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalInstance:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "t", "--schema", str(schema)]) == 0
    return LocalInstance(directory)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _compaction_job_run_twice(instance: LocalInstance, job_id: str = "job-1", start: float = 0) -> str:
    """A compaction job whose first run failed and whose second ran 4 s, wrote 1000 rows and was committed 2 s
    later."""
    table_id = instance.table("t").table_id
    tracker = instance.compaction_job_tracker
    common = {"job_id": job_id, "table_id": table_id}
    tracker.record(CompactionJobCreated(**common, update_time=_at(start), partition_id="root", input_files_count=3))
    tracker.record(CompactionJobStarted(**common, update_time=_at(start + 1), job_run_id="r1", task_id="task-a"))
    tracker.record(
        CompactionJobFailed(**common, update_time=_at(start + 2), job_run_id="r1", task_id="task-a", reasons=("boom",))
    )
    tracker.record(CompactionJobStarted(**common, update_time=_at(start + 10), job_run_id="r2", task_id="task-b"))
    tracker.record(
        CompactionJobFinished(
            **common, update_time=_at(start + 14), job_run_id="r2", task_id="task-b", rows_read=1200, rows_written=1000
        )
    )
    tracker.record(CompactionJobCommitted(**common, update_time=_at(start + 16), job_run_id="r2", task_id="task-b"))
    return table_id


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def should_show_every_run_of_a_compaction_job_run_twice(
    instance: LocalInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a compaction job whose first run failed and whose second finished and was committed
    _compaction_job_run_twice(instance)
    # When the job is reported by id
    (job,) = _json(capsys, ["report", "compaction-jobs", "t", "--job", "job-1", "--json"])  # type: ignore[misc]
    # Then both runs are there, latest first, with their times, rows and rates
    second, first = job["jobRuns"]
    assert (job["status"], job["runs"], job["inputFiles"]) == ("FINISHED", 2, 3)
    assert second["status"] == "FINISHED" and second["taskId"] == "task-b"
    assert (second["durationSeconds"], second["finishToCommitSeconds"]) == (4.0, 2.0)
    assert (second["rowsRead"], second["rowsWritten"]) == (1200, 1000)
    assert (second["rowsReadPerSecond"], second["rowsWrittenPerSecond"]) == (300.0, 250.0)
    assert second["commitTime"] is not None and second["commitTime"].endswith("Z")
    assert first["status"] == "FAILED" and first["failureReasons"] == ["boom"] and first["rowsWritten"] is None


def should_print_a_compaction_job_in_detail(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a compaction job run twice
    _compaction_job_run_twice(instance)
    capsys.readouterr()
    # When it is reported by id as text
    assert run(["report", "compaction-jobs", "t", "--job", "job-1"]) == 0
    out = capsys.readouterr().out
    # Then each run is printed in full: its task, times, rows, rates, and the failure's reason
    assert "Details for job job-1:" in out
    assert "Run r2 on task task-b: FINISHED" in out and "Run r1 on task task-a: FAILED" in out
    assert "State store commit time:" in out and "Delay between finish and commit (s): 2.00" in out
    assert "Write rate (rows per second): 250.00" in out
    assert "- boom" in out


def should_show_one_row_per_run_and_a_summary(
    instance: LocalInstance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a compaction job run twice, and a terminal wide enough for the table
    _compaction_job_run_twice(instance)
    monkeypatch.setattr(common.console, "width", 200)
    capsys.readouterr()
    # When the table's compaction jobs are reported
    assert run(["report", "compaction-jobs", "t"]) == 0
    out = capsys.readouterr().out
    # Then the summary counts the job as finished with more than one run, and each run has its row
    assert "Jobs finished successfully with more than one run: 1" in out
    assert "Average rate, rows written per second: 250.00" in out
    assert "Delay between finish and commit: min 2.0 s, mean 2.0 s, max 2.0 s" in out
    assert out.count("job-1") == 2


def should_report_the_jobs_of_a_period(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given one job three hours ago and one an hour ago
    _compaction_job_run_twice(instance, "old-job", start=0)
    _compaction_job_run_twice(instance, "new-job", start=2 * 3600)
    # When the jobs of the last 90 minutes, and of a range ending 2 hours ago, are reported
    recent = _json(capsys, ["report", "compaction-jobs", "t", "--since", "90m", "--json"])
    until = (T0 + timedelta(minutes=30)).isoformat()
    earlier = _json(capsys, ["report", "compaction-jobs", "t", "--until", until, "--json"])
    # Then each holds the job of its period
    assert [j["jobId"] for j in recent] == ["new-job"]  # type: ignore[union-attr]
    assert [j["jobId"] for j in earlier] == ["old-job"]  # type: ignore[union-attr]


def should_refuse_a_time_that_is_not_one(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local instance
    capsys.readouterr()
    # When a period is given a bad time, and an empty one
    bad = run(["report", "compaction-jobs", "t", "--since", "yesterday"])
    bad_err = capsys.readouterr().err
    empty = run(["report", "compaction-jobs", "t", "--since", "1h", "--until", "2h"])
    empty_err = capsys.readouterr().err
    # Then each is one line naming the problem
    assert bad == 1 and "'yesterday' is not a time" in bad_err
    assert empty == 1 and "--since" in empty_err and "is after --until" in empty_err


def should_say_a_job_id_is_not_known(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a job of the table
    _compaction_job_run_twice(instance)
    capsys.readouterr()
    # When an unknown id is asked for alone, then with a known one
    alone = run(["report", "compaction-jobs", "t", "--job", "nope"])
    alone_err = capsys.readouterr().err
    both = _json(capsys, ["report", "compaction-jobs", "t", "--job", "nope,job-1", "--json"])
    # Then alone it fails naming it; with a known one, the known one is reported
    assert alone == 1 and "no compaction job of table t with id 'nope'" in alone_err
    assert [j["jobId"] for j in both] == ["job-1"]  # type: ignore[union-attr]


def should_show_every_run_of_an_ingest_job(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an ingest job run twice, each run validated, started and finished
    table_id = instance.table("t").table_id
    tracker = instance.ingest_job_tracker
    for run_id, start in (("r1", 0), ("r2", 100)):
        common = {"job_id": "ing-1", "table_id": table_id, "job_run_id": run_id}
        tracker.record(IngestJobValidated(**common, update_time=_at(start), file_count=1))
        tracker.record(IngestJobStarted(**common, update_time=_at(start + 1), file_count=1, start_of_run=False))
        tracker.record(
            IngestJobFinished(**common, update_time=_at(start + 5), rows_read=50, rows_written=50, files_written=1)
        )
    # When it is reported by id
    (job,) = _json(capsys, ["report", "ingest-jobs", "t", "--job", "ing-1", "--json"])  # type: ignore[misc]
    # Then both runs are there with their times and rates, each committed when it finished
    assert [r["runId"] for r in job["jobRuns"]] == ["r2", "r1"]
    assert all(r["durationSeconds"] == 5.0 and r["rowsWrittenPerSecond"] == 10.0 for r in job["jobRuns"])
    assert all(r["commitTime"] == r["finishTime"] for r in job["jobRuns"])


def _files(instance: LocalInstance) -> None:
    table = instance.table("t")
    prefix = table.data_prefix
    table.state_store.add_files(
        [
            FileReference(filename=f"{prefix}/data/partition_root/a.parquet", partition_id="root", number_of_rows=10),
            FileReference(filename=f"{prefix}/data/partition_root/b.parquet", partition_id="root", number_of_rows=30),
        ]
    )


def should_summarise_the_files_with_statistics(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with two files on its one partition
    _files(instance)
    # When the files are reported
    report = _json(capsys, ["report", "files", "t", "--json"])
    capsys.readouterr()
    assert run(["report", "files", "t"]) == 0
    text = capsys.readouterr().out
    # Then the summary counts them and the references per partition, and the text lists no file unless verbose
    summary = report["summary"]  # type: ignore[index]
    assert (summary["leafPartitions"], summary["files"], summary["references"], summary["rows"]) == (1, 2, 2, 40)
    assert summary["referencesInLeafPartitions"] == {
        "min": 2,
        "max": 2,
        "mean": 2.0,
        "median": 2.0,
        "percentile90": 2.0,
        "percentile99": 2.0,
        "total": 2,
    }
    assert summary["percentageOfRowsInLeafPartitions"] == 100.0
    assert "Number of file references in leaf partitions: min = 2, max = 2" in text
    assert "a.parquet" not in text
    assert run(["report", "files", "t", "--verbose"]) == 0
    assert "a.parquet, 1 reference total" in capsys.readouterr().out


def should_cap_the_files_awaiting_gc_and_write_csv(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table whose two files were replaced by a third (so two await garbage collection)
    _files(instance)
    table = instance.table("t")
    store = table.state_store
    from sleeper.core.statestore.transactions.files import (
        AssignJobIdRequest,
        AssignJobIdsTransaction,
        ReplaceFileReferencesRequest,
        ReplaceFileReferencesTransaction,
    )

    names = tuple(r.filename for r in table.file_references())
    store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="j", partition_id="root", filenames=names),))
    )
    output = FileReference(
        filename=f"{table.data_prefix}/data/partition_root/c.parquet", partition_id="root", number_of_rows=40
    )
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id="j", input_files=names, new_reference=output),)
        )
    )
    # When the files are reported with at most one file awaiting GC, and as CSV
    report = _json(capsys, ["report", "files", "t", "--max-gc-files", "1", "--json"])
    capsys.readouterr()
    assert run(["report", "files", "t", "--max-gc-files", "1"]) == 0
    text = capsys.readouterr().out
    assert run(["report", "files", "t", "--format", "csv"]) == 0
    header, values = capsys.readouterr().out.splitlines()
    # Then one is listed, the count says there are more, and the CSV has Sleeper's columns
    assert len(report["filesAwaitingGarbageCollection"]) == 1  # type: ignore[index]
    assert report["summary"]["moreThanMax"] is True  # type: ignore[index]
    assert "Number of files with no references, which will be garbage collected: >1" in text
    row = dict(zip(header.split(","), values.split(","), strict=True))
    assert (row["totalRows"], row["leafPartitions"], row["references"], row["moreThanMax"]) == ("40", "1", "1", "false")
    assert row["nonLeafPartitionMin"] == "null"


# --- piped output and --format ------------------------------------------------------------------------------------

LONG_JOB = "compaction-job-with-an-id-long-enough-to-push-the-table-past-eighty-columns"


def should_keep_every_column_and_character_when_piped(
    instance: LocalInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a compaction job with a long id, reported to a pipe (not a terminal, no width set)
    _compaction_job_run_twice(instance, job_id=LONG_JOB)
    capsys.readouterr()
    # When the jobs and the history are reported
    assert run(["report", "compaction-jobs", "t"]) == 0
    jobs = capsys.readouterr().out
    assert run(["report", "history", "t"]) == 0
    history = capsys.readouterr().out
    # Then nothing is cut: every column, the whole id on one line, no ellipsis
    for column in ("Job", "Partition", "State", "Task", "Rows written", "Reasons"):
        assert column in jobs
    assert jobs.count(LONG_JOB) == 2 and "…" not in jobs
    assert "partitions" in history and "INITIALISE" in history and "…" not in history


def should_print_every_report_as_tsv(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a compaction job run twice
    _compaction_job_run_twice(instance, job_id=LONG_JOB)
    capsys.readouterr()
    # When reports are printed as TSV
    assert run(["report", "compaction-jobs", "t", "--format", "tsv"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    # Then a header line, then one line per run with raw values, every line as many fields as the header
    columns = header.split("\t")
    assert "jobId" in columns and "runStatus" in columns and "runRowsWritten" in columns
    assert len(lines) == 2 and all(len(line.split("\t")) == len(columns) for line in lines)
    assert {dict(zip(columns, line.split("\t"), strict=True))["runStatus"] for line in lines} == {"FINISHED", "FAILED"}
    for argv in (
        ["report", "history", "t"],
        ["report", "partitions", "t"],
        ["report", "ingest-jobs", "t"],
        ["report", "tasks", "compaction"],
        ["report", "dead-letters"],
        ["report", "query"],
        ["report", "batcher"],
        ["report", "files", "t"],
        ["table", "list"],
    ):
        assert run([*argv, "--format", "tsv"]) == 0, argv
        out = capsys.readouterr().out
        assert out.endswith("\n") and "│" not in out, argv
    assert run(["report", "status", "--format", "tsv"]) == 0
    status = capsys.readouterr().out
    assert status.startswith("# tables\ntableName\t") and "\n# queues\nqueue\t" in status


def should_refuse_json_with_another_format(instance: LocalInstance, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run(["report", "partitions", "t", "--json", "--format", "tsv"]) == 1
    assert "--json and --format tsv disagree" in capsys.readouterr().err
