"""The sleeper command's data path on a local instance: ingest files as jobs, query, report jobs, the demo."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run
from sleeper.core.exceptions import RangeError
from sleeper.runtime.local.instance import LocalInstance

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
    splits = tmp_path / "splits.txt"
    splits.write_text("k-3\nk-6\n")
    assert run(["table", "create", "things", "--schema", str(schema), "--split-points", str(splits)]) == 0
    return directory


def _parquet(path: Path, count: int, *, start: int = 0) -> Path:
    keys = [f"k-{i:04d}" for i in range(start, start + count)]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(start, start + count), pa.int64())}), path)
    return path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def should_ingest_files_as_a_tracked_job_and_query_them(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two Parquet files in a directory
    inputs = tmp_path / "in"
    inputs.mkdir()
    _parquet(inputs / "a.parquet", 500)
    _parquet(inputs / "b.parquet", 500, start=500)
    # When the directory is ingested as a job
    assert run(["ingest", "things", str(inputs), "--job-id", "job-1"]) == 0
    # Then every row can be queried, by exact key and by range
    everything = _json(capsys, ["query", "things", "--format", "json"])
    assert everything["count"] == 1000  # type: ignore[index]
    exact = _json(capsys, ["query", "things", "--exact", "key=k-0042", "--format", "json"])
    assert exact["rows"] == [{"key": "k-0042", "value": 42}]  # type: ignore[index]
    ranged = _json(capsys, ["query", "things", "--range", "key=[k-0100,k-0200)", "--format", "json"])
    assert [r["value"] for r in ranged["rows"]] == list(range(100, 200))  # type: ignore[index]
    # And the tracker reports the job finished with its row counts
    jobs = _json(capsys, ["report", "ingest-jobs", "things", "--json"])
    assert [(j["jobId"], j["status"], j["rowsRead"]) for j in jobs] == [("job-1", "FINISHED", 1000)]  # type: ignore[index]


def should_add_rows_once_when_the_same_job_runs_twice(instance: Path, tmp_path: Path) -> None:
    # Given a job that ran once
    path = _parquet(tmp_path / "a.parquet", 300)
    assert run(["ingest", "things", str(path), "--job-id", "again"]) == 0
    # When it runs again with the same id
    assert run(["ingest", "things", str(path), "--job-id", "again"]) == 0
    # Then the table holds its rows once
    table = LocalInstance(instance).table("things")
    assert table.query().num_rows == 300


def should_refuse_a_job_id_reused_for_another_file_directly_and_through_the_queue(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job that ingested one file
    first = _parquet(tmp_path / "a.parquet", 300)
    other = _parquet(tmp_path / "b7.parquet", 200, start=300)
    assert run(["ingest", "things", str(first), "--job-id", "same"]) == 0
    # When another file is ingested under the same job id
    capsys.readouterr()
    code = run(["ingest", "things", str(other), "--job-id", "same"])
    # Then it fails, naming the job id and what to do, and says nothing was done
    output = capsys.readouterr()
    assert code == 1
    assert "'same'" in output.err and "new job id" in output.err
    assert "already done" not in output.out
    # And through the ingest job queue too
    assert run(["ingest", "things", str(other), "--job-id", "same", "--job-queue"]) == 0
    assert run(["run", "--until-idle"]) == 0
    # And the table holds the first file's rows only
    assert LocalInstance(instance).table("things").query().num_rows == 300
    # And the tracker shows the run that wrote the data, and the latest run rejected with the reason
    (job,) = _json(capsys, ["report", "ingest-jobs", "things", "--json"])  # type: ignore[misc]
    assert (job["status"], job["runs"], job["rowsWritten"], job["latestRunStatus"]) == ("FINISHED", 3, 300, "REJECTED")
    assert len(job["reasons"]) == 1 and "'same'" in job["reasons"][0]
    # And the same file again is still a retry that adds nothing
    capsys.readouterr()
    assert run(["ingest", "things", str(first), "--job-id", "same"]) == 0
    assert "already done: nothing added" in capsys.readouterr().out
    assert LocalInstance(instance).table("things").query().num_rows == 300


def should_reject_a_file_of_another_schema_and_record_why(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a file whose value column is text
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"key": ["a"], "value": ["not a number"]}), path)
    # When it is ingested
    capsys.readouterr()
    code = run(["ingest", "things", str(path), "--job-id", "bad-job"])
    # Then the command fails naming the column, nothing is added, and the tracker holds the rejection
    assert code == 1
    assert "'value'" in capsys.readouterr().err
    assert LocalInstance(instance).table("things").file_references() == []
    rejected = _json(capsys, ["report", "ingest-jobs", "--json"])
    assert [(j["jobId"], j["status"]) for j in rejected] == [("bad-job", "REJECTED")]  # type: ignore[index]


def should_queue_a_job_without_running_it(instance: Path, tmp_path: Path) -> None:
    # Given a file
    path = _parquet(tmp_path / "a.parquet", 10)
    # When it is sent to the ingest queue
    assert run(["ingest", "things", str(path), "--queue", "--job-id", "queued"]) == 0
    # Then the queue holds the job and the table is still empty
    inst = LocalInstance(instance)
    messages = inst.queue("IngestJobQ").receive(10)
    assert [json.loads(m.body)["id"] for m in messages] == ["queued"]
    assert inst.table("things").file_references() == []


def should_refuse_a_key_of_the_wrong_type(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with an integer row key
    schema = tmp_path / "ints.json"
    schema.write_text(json.dumps({**SCHEMA, "rowKeyFields": [{"name": "id", "type": "LongType"}]}))
    assert run(["table", "create", "ints", "--schema", str(schema)]) == 0
    # When it is queried with a key that is not a number
    capsys.readouterr()
    code = run(["query", "ints", "--exact", "id=abc"])
    # Then the error names the field and its type
    assert code == 1
    assert "row key id is LongType" in capsys.readouterr().err


def should_run_a_small_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an empty directory
    directory = tmp_path / "demo"
    # When the demo runs with few rows
    assert run(["demo", str(directory), "--rows", "20000", "--batches", "5"]) == 0
    # Then the instance holds one table with every generated row, compacted and split beyond its 4 first leaves
    inst = LocalInstance(directory)
    tables = inst.table_index.list_tables()
    assert len(tables) == 1
    table = inst.table(tables[0].table_name)
    assert table.query().num_rows == 20000
    assert len(table.leaf_partitions()) > 4
    assert inst.compaction_job_tracker.jobs(table.table_id)
    assert "round 1" in capsys.readouterr().out


def should_run_queued_jobs_until_idle(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a job sent to the ingest queue
    path = _parquet(tmp_path / "a.parquet", 40)
    assert run(["ingest", "things", str(path), "--queue"]) == 0
    # When the instance runs until idle
    capsys.readouterr()
    assert run(["run", "--until-idle"]) == 0
    # Then the job ran and the run says so
    assert "IngestJobQ 1" in capsys.readouterr().out
    assert LocalInstance(instance).table("things").query().num_rows == 40


def should_report_the_instance_status_with_tables_jobs_and_queues(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one finished job, one rejected job and one queued job
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 30)), "--job-id", "ok"]) == 0
    (tmp_path / "no-parquet").mkdir()  # a directory holding no .parquet file: the job is rejected
    assert run(["ingest", "things", str(tmp_path / "no-parquet"), "--job-id", "bad"]) == 1
    assert run(["ingest", "things", str(tmp_path / "a.parquet"), "--queue"]) == 0
    # When the status is reported
    report = _json(capsys, ["report", "status", "--json"])
    # Then it shows the table's rows, the jobs by status, and the queued message
    assert [(t["tableName"], t["rows"]) for t in report["tables"]] == [("things", 30)]  # type: ignore[index]
    assert report["ingestJobs"] == {"FINISHED": 1, "REJECTED": 1}  # type: ignore[index]
    queues = {q["queue"]: q["visible"] for q in report["queues"]}  # type: ignore[index]
    assert queues["IngestJobQ"] == 1
    # And the rich rendering prints too
    assert run(["report", "status"]) == 0
    assert "things" in capsys.readouterr().out


def should_report_dead_letters_and_leave_them_in_place(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a message that was received more often than its queue allows
    inst = LocalInstance(instance)
    queue = inst.queue("IngestJobQ")
    queue.send("poison")
    for _ in range(4):
        for message in queue.receive(1, visibility_timeout_seconds=0):
            assert message.body == "poison"
    # When dead letters are reported twice
    first = _json(capsys, ["report", "dead-letters", "--json"])
    second = _json(capsys, ["report", "dead-letters", "--json"])
    # Then the message is shown on the ingest queue's dead-letter queue both times
    assert first == second
    assert [(d["queue"], d["messages"], d["sample"]) for d in first] == [("IngestJobQ", 1, ["poison"])]  # type: ignore[index]


def should_report_empty_compaction_jobs_and_tasks(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with no compaction yet
    # When compaction jobs and tasks are reported
    jobs = _json(capsys, ["report", "compaction-jobs", "things", "--json"])
    tasks = _json(capsys, ["report", "tasks", "compaction", "--json"])
    # Then both are empty, and an unknown task kind is refused
    assert jobs == []
    assert tasks == []
    assert run(["report", "tasks", "bulk"]) == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("key=[k-0010,k-0013)", ["k-0010", "k-0011", "k-0012"]),
        ("key=(k-0010,k-0013]", ["k-0011", "k-0012", "k-0013"]),
        ("key=[k-0010,k-0013]", ["k-0010", "k-0011", "k-0012", "k-0013"]),
        ("key=(k-0010,k-0013)", ["k-0011", "k-0012"]),
        ("key=[,k-0002)", ["k-0000", "k-0001"]),
        ("key=(k-0997,)", ["k-0998", "k-0999"]),
    ],
)
def should_query_ranges_with_each_inclusiveness(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, expected: list[str]
) -> None:
    # Given 1000 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 1000))]) == 0
    # When a range is queried
    result = _json(capsys, ["query", "things", "--range", spec, "--format", "json"])
    # Then exactly the rows inside its bounds come back
    assert [r["key"] for r in result["rows"]] == expected  # type: ignore[index]


def should_only_send_a_queued_query_with_wait_zero_and_run_it_with_a_wait(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 50 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 50))]) == 0
    capsys.readouterr()
    # When a query is sent through the queue with --wait 0
    assert run(["query", "things", "--range", "key=[k-0010,k-0020)", "--via-queue", "--wait", "0"]) == 0
    # Then it is only sent: no rows on stdout, and stderr says how to follow it and shows the tracker
    sent = capsys.readouterr()
    assert sent.out == ""
    assert "Sent query" in sent.err and "sleeper report query" in sent.err and "COMPLETED" in sent.err
    # And with a wait the same query returns its rows, the tracker shown on stderr
    waited = _json(capsys, ["query", "things", "--range", "key=[k-0010,k-0020)", "--via-queue", "--format", "json"])
    assert [r["value"] for r in waited["rows"]] == list(range(10, 20))  # type: ignore[index]


@pytest.mark.parametrize("output_format", ["csv", "parquet", "json"])
def should_write_query_results_to_a_file(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], output_format: str
) -> None:
    # Given 50 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 50))]) == 0
    # When every row is written to a file
    out = tmp_path / f"out.{output_format}"
    assert run(["query", "things", "--format", output_format, "--output", str(out)]) == 0
    # Then the file holds the 50 rows
    if output_format == "csv":
        import pyarrow.csv as pacsv

        assert pacsv.read_csv(out).num_rows == 50
    elif output_format == "parquet":
        assert pq.read_table(out).num_rows == 50
    else:
        assert json.loads(out.read_text())["count"] == 50


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--range", "key=k-1,k-2"], "must look like field=[min,max)"),
        (["--range", "value=[1,2)"], "'value' is not a row key field"),
        (["--format", "xml"], "--format must be one of"),
        (["--format", "parquet"], "--format parquet needs --output FILE"),
        (["--range", "key=[k-9,k-1)"], "min 'k-9' is greater than max 'k-1'"),
        (["--range", "key=(k-9,k-1]"], "min 'k-9' is greater than max 'k-1'"),
        (["--exact", "key=a,key=b"], "names row key key twice"),
        (["--exact", "key=a,other=b"], "'other' is not a row key field"),
        (["--exact", "key=a,b"], "write a value holding a comma in double quotes"),
        (["--range", "key=[a,,b)"], "write a bound holding a comma in double quotes"),
        (["--range", 'key=["a,b)'], "does not start with a whole JSON string"),
        (["--limit", "0"], "--limit must be a positive number of rows"),
        (["--limit", "-1"], "--limit must be a positive number of rows"),
    ],
)
def should_refuse_bad_query_arguments(
    instance: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    # Given a table
    # When it is queried with a bad argument
    capsys.readouterr()
    code = run(["query", "things", *argv])
    # Then the error names the problem, in one line with no traceback
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def should_query_values_holding_commas_written_in_double_quotes(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given rows whose keys hold commas
    keys = ["a,1", "a,2", "a,3", "b"]
    path = tmp_path / "commas.parquet"
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(4), pa.int64())}), path)
    assert run(["ingest", "things", str(path)]) == 0
    # When they are queried with quoted values
    exact = _json(capsys, ["query", "things", "--exact", 'key="a,2"', "--format", "json"])
    ranged = _json(capsys, ["query", "things", "--range", 'key=["a,1","a,3"]', "--format", "json"])
    # Then the comma is part of the value
    assert [r["key"] for r in exact["rows"]] == ["a,2"]  # type: ignore[index]
    assert [r["key"] for r in ranged["rows"]] == ["a,1", "a,2", "a,3"]  # type: ignore[index]


def should_offer_exact_and_range_queries_from_python(instance: Path, tmp_path: Path) -> None:
    # Given 100 rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 100))]) == 0
    table = LocalInstance(instance).table("things")
    # When they are queried by exact key and by range
    # Then the rows match
    assert table.exact(key="k-0007").column("value").to_pylist() == [7]
    assert table.range("k-0090", "k-0093").column("value").to_pylist() == [90, 91, 92]
    assert table.range("k-0090", "k-0093", min_inclusive=False, max_inclusive=True).column("value").to_pylist() == [
        91,
        92,
        93,
    ]


def should_refuse_an_inverted_range_from_python(instance: Path, tmp_path: Path) -> None:
    # Given a table with rows
    assert run(["ingest", "things", str(_parquet(tmp_path / "a.parquet", 100))]) == 0
    table = LocalInstance(instance).table("things")
    # When a range is asked for whose minimum is above its maximum
    # Then it is refused with a typed error rather than answered with no rows
    with pytest.raises(RangeError, match="min 'k-0093' is greater than max 'k-0090'"):
        table.range("k-0093", "k-0090")
