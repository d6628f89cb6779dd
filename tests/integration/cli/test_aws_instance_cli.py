"""The ``sleeper`` command on an instance on AWS (``--instance aws:ID``): an instance provisioned on this process's moto
server (with the EventBridge rules its stacks create), reached through ``AWS_ENDPOINT_URL``, found by its id alone
(the account from STS, as moto reports it)."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws import sqs_queue
from sleeper.adapters.aws.clients import events_client, s3_client
from sleeper.adapters.aws.event_rules import EventBridgeRules
from sleeper.adapters.aws.properties import S3PropertiesStore
from sleeper.adapters.aws.resources import create_bucket
from sleeper.cli.main import run
from sleeper.core.naming import bulk_export_bucket_name
from sleeper.core.operations import (
    BULK_EXPORT_Q,
    COMPACTION_JOB_CREATION_Q,
    FIND_PARTITIONS_TO_SPLIT_Q,
    GC_JOB_Q,
    INGEST_JOB_Q,
    LEAF_PARTITION_BULK_EXPORT_Q,
    LEAF_PARTITION_QUERY_Q,
    QUERY_Q,
    QUERY_RESULTS_Q,
    STATE_STORE_COMMITTER_Q,
)
from sleeper.core.properties import INSTANCE_PROPERTIES_KEY
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.emulator.provision import provision_instance
from sleeper.io.filesystem import resolve
from sleeper.query.queued import handle_query_message
from sleeper.runtime.aws.api import scheduled_rule_names
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.router import Disposition, dispatch
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "StringType"}],
}
QUEUES = (
    INGEST_JOB_Q,
    QUERY_Q,
    LEAF_PARTITION_QUERY_Q,
    COMPACTION_JOB_CREATION_Q,
    FIND_PARTITIONS_TO_SPLIT_Q,
    GC_JOB_Q,
    STATE_STORE_COMMITTER_Q,
    QUERY_RESULTS_Q,
    BULK_EXPORT_Q,
    LEAF_PARTITION_BULK_EXPORT_Q,
)


@pytest.fixture(scope="module")
def instance() -> AwsInstance:
    """An instance as a deployment leaves it: resources (with the bulk export bucket the bulk export stack adds),
    properties, one table, its scheduled rules enabled."""
    settings = aws_settings()
    instance_id = new_instance_id()
    export_bucket = bulk_export_bucket_name(instance_id, "123456789012")
    create_bucket(s3_client(settings), export_bucket, settings.region)
    config = provision_instance(
        settings, instance_id, queues=QUEUES, properties={cdk.BULK_EXPORT_S3_BUCKET.name: export_bucket}
    )
    aws = AwsInstance(config, table_cache_seconds=0)
    aws.create_table("nums", Schema.from_dict(SCHEMA))
    events = events_client(settings)
    for rule in scheduled_rule_names(aws.instance_id):
        events.put_rule(Name=rule, ScheduleExpression="rate(1 minute)", State="ENABLED")
    return aws


@pytest.fixture(autouse=True)
def aws_environment(instance: AwsInstance, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("CONFIG_BUCKET", "SLEEPER_INSTANCE_ID", "SLEEPER_ACCOUNT", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("SLEEPER_INSTANCE", f"aws:{instance.instance_id}")
    yield
    instance.reload()


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert run(argv) == 1
    return " ".join(capsys.readouterr().err.split())


def _take_all(queue: Queue) -> list[tuple[str, str | None]]:
    """Every visible message of a queue as (body, message group), deleting them."""
    taken = []
    while batch := queue.receive(10):
        for message in batch:
            taken.append((message.body, message.group_id))
            queue.delete(message.receipt_handle)
    return taken


def _config_object(instance: AwsInstance) -> bytes:
    s3 = s3_client(aws_settings())
    return s3.get_object(Bucket=instance.config.config_bucket, Key=INSTANCE_PROPERTIES_KEY)["Body"].read()


def should_save_a_valid_property_edit_to_the_config_bucket_with_a_diff(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance on AWS
    # When a property is set through the CLI
    diff = _json(capsys, ["instance", "properties", "--set", "sleeper.gc.period.minutes=30", "--json"])
    # Then the diff is shown and the config bucket holds the new value
    assert diff == [{"property": "sleeper.gc.period.minutes", "before": None, "after": "30"}]
    saved = S3PropertiesStore(s3_client(aws_settings()), instance.config.config_bucket).load_instance()
    assert saved["sleeper.gc.period.minutes"] == "30"
    assert _json(capsys, ["instance", "show", "--json"])["sleeper.gc.period.minutes"] == "30"  # type: ignore[index]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("sleeper.gc.period.minutes=soon", "sleeper.gc.period.minutes"),
        ("sleeper.ingest.job.queue.url=http://elsewhere", "set by the deployment"),
    ],
)
def should_refuse_an_invalid_or_deployment_only_property_and_change_nothing(
    instance: AwsInstance, assignment: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the config bucket's properties
    before = _config_object(instance)
    # When a bad edit is made
    error = _fails(capsys, ["instance", "properties", "--set", assignment])
    # Then it is refused, saying why, and the config bucket is unchanged
    assert message in error
    assert _config_object(instance) == before


def should_create_list_and_take_a_table_offline_and_online(
    instance: AwsInstance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a schema file
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    # When a table is created, then taken offline
    assert run(["table", "create", "words", "--schema", str(schema)]) == 0
    listed = _json(capsys, ["table", "list", "--json"])
    assert run(["table", "offline", "words"]) == 0
    offline = _json(capsys, ["table", "list", "--json"])
    assert run(["table", "online", "words"]) == 0
    # Then the table index on AWS shows it online, offline, and online again
    assert {"tableName": "words", "online": True, "rows": 0}.items() <= _by_name(listed)["words"].items()
    assert _by_name(offline)["words"]["online"] is False
    assert instance.table("words").status.online is True
    assert instance.table("words").properties.get("sleeper.table.online") == "true"


def _by_name(listed: object) -> dict[str, dict[str, object]]:
    assert isinstance(listed, list)
    return {str(t["tableName"]): t for t in listed}


def should_send_an_ingest_job_naming_s3_files_as_they_are(instance: AwsInstance) -> None:
    # Given an instance on AWS
    # When S3 files are ingested through the CLI
    assert run(["ingest", "nums", "s3a://bucket/dir/file.parquet", "--job-id", "job-1"]) == 0
    # Then the job naming them is on the ingest job queue for the ingest tasks
    [(body, _)] = _take_all(instance.queue(INGEST_JOB_Q))
    assert json.loads(body) == {"id": "job-1", "files": ["s3a://bucket/dir/file.parquet"], "tableName": "nums"}


def should_stage_local_files_and_send_a_job_naming_the_staged_file(
    instance: AwsInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a directory of Parquet files on this machine, named relative to the working directory
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parquet-files").mkdir()
    rows = pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": ["a", "b", "c"]})
    pq.write_table(rows, tmp_path / "parquet-files" / "rows.parquet")
    # When they are ingested through the CLI, as the README does locally
    assert run(["ingest", "nums", "./parquet-files/", "--job-id", "local-1"]) == 0
    # Then the job names one file staged in the data bucket, holding the rows, as Table.ingest sends
    [(body, _)] = _take_all(instance.queue(INGEST_JOB_Q))
    job = json.loads(body)
    assert job["id"] == "local-1" and job["tableName"] == "nums"
    [staged] = job["files"]
    assert staged.startswith(tuple(f"{scheme}://{instance.data_bucket}/for_ingest/" for scheme in ("s3", "s3a")))
    key = staged.split(f"{instance.data_bucket}/", 1)[1]
    body_bytes = s3_client(aws_settings()).get_object(Bucket=instance.data_bucket, Key=key)["Body"].read()
    assert pq.read_table(io.BytesIO(body_bytes)).sort_by("key").to_pylist() == rows.to_pylist()


def should_refuse_a_local_path_that_names_nothing_and_send_no_job(
    instance: AwsInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a working directory without the path
    monkeypatch.chdir(tmp_path)
    # When it is ingested
    err = _fails(capsys, ["ingest", "nums", "bucket/dir/file.parquet", "--job-id", "job-2"])
    # Then the command fails naming it, and nothing is sent
    assert "bucket/dir/file.parquet" in err
    assert _take_all(instance.queue(INGEST_JOB_Q)) == []


@pytest.mark.parametrize(
    ("command", "queue"),
    [(["compact"], COMPACTION_JOB_CREATION_Q), (["split"], FIND_PARTITIONS_TO_SPLIT_Q), (["gc"], GC_JOB_Q)],
)
def should_send_the_table_to_the_queue_its_scheduled_rule_sends_to(
    instance: AwsInstance, command: list[str], queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table
    table_id = instance.table("nums").table_id
    # When its operation is run now
    report = _json(capsys, [*command, "nums", "--json"])
    # Then one message naming the table is on the FIFO queue, grouped by table, as the scheduled trigger sends
    assert _take_all(instance.queue(queue)) == [(table_id, table_id)]
    assert report == {
        "tableName": "nums",
        "tableId": table_id,
        "queue": f"sleeper-{instance.instance_id}-{queue}",
        "messageId": report["messageId"],  # type: ignore[index]
    }


def should_pause_and_resume_by_disabling_and_enabling_the_rules(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the instance's scheduled rules, enabled
    rules = EventBridgeRules(events_client(aws_settings()))
    names = scheduled_rule_names(instance.instance_id)
    # When it is paused, paused again, resumed and resumed again
    assert run(["pause"]) == 0
    paused = {rules.state(name) for name in names}
    second_pause = _fails(capsys, ["pause"])
    assert run(["resume"]) == 0
    resumed = {rules.state(name) for name in names}
    second_resume = _fails(capsys, ["resume"])
    # Then the rules were disabled then enabled, and the repeats say why they changed nothing
    assert paused == {"DISABLED"}
    assert resumed == {"ENABLED"}
    assert "already paused" in second_pause
    assert "not paused" in second_resume


def should_move_dead_letters_back_and_report_how_many(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A redrive long-polls each dead-letter queue for a second before it finds it empty (SQS's short poll may miss
    # messages); moto's short poll never does, so the retries here do not wait a second per queue.
    monkeypatch.setattr(sqs_queue, "_REDRIVE_WAIT_SECONDS", 0)
    # Given empty dead-letter queues
    capsys.readouterr()
    assert run(["dead-letters", "retry"]) == 0
    empty = capsys.readouterr().out
    # When two messages are dead-lettered from the ingest job queue and retried
    for body in ("a", "b"):
        instance.dead_letter_queue(INGEST_JOB_Q).send(body)
    assert run(["dead-letters", "retry"]) == 0
    retried = capsys.readouterr().out
    # Then the empty retry says so, and the messages are back on their queue with the count reported
    assert "No dead letters to retry" in empty
    assert f"{INGEST_JOB_Q}: 2 messages moved back" in retried
    assert sorted(body for body, _ in _take_all(instance.queue(INGEST_JOB_Q))) == ["a", "b"]
    assert instance.dead_letter_queue(INGEST_JOB_Q).approximate_counts().visible == 0


def should_send_a_query_to_the_query_queue_and_report_it_from_the_tracker(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a query sent through the CLI (the table is empty: the query needs no sub-query)
    capsys.readouterr()
    assert run(["query", "nums", "--exact", "key=5", "--via-queue", "--wait", "0"]) == 0
    sent = " ".join(capsys.readouterr().err.split())  # a notice: on standard error, where no data goes
    [(body, _)] = _take_all(instance.queue(QUERY_Q))
    query_id = json.loads(body)["queryId"]
    assert f"Sent query {query_id} to the query queue" in sent
    # When the query function handles it, as deployed
    handle_query_message(
        body, tables=instance, leaf_queue=instance.queue(LEAF_PARTITION_QUERY_Q), tracker=instance.query_tracker
    )
    _take_all(instance.queue(LEAF_PARTITION_QUERY_Q))
    # Then the CLI reports the query's row from the tracker
    rows = _json(capsys, ["report", "query", query_id, "--json"])
    assert isinstance(rows, list)
    assert rows[0]["queryId"] == query_id
    assert rows[0]["subQueryId"] == "-"
    assert rows[0]["lastKnownState"] == "COMPLETED"


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["run", "--until-idle"], "run works only on a local instance"),
        (["bulk-import", "nums", "bucket/file.parquet"], "bulk-import with Spark local[*]"),
        (["instance", "create"], "works only on a local instance"),
        (["demo"], "demo works only on a local instance"),
        (["gc", "nums", "--orphans"], "gc --orphans works only on a local instance"),
    ],
)
def should_refuse_commands_that_only_work_locally(
    argv: list[str], what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance on AWS
    # When a local-only command is given it
    error = _fails(capsys, argv)
    # Then it is refused, saying so
    assert what in error


def _run_one_ingest_job_later(instance: AwsInstance) -> threading.Thread:
    """An ingest task of the instance, in a thread: it runs the next job sent to the ingest job queue; then, as the
    state store committer Lambda would, it applies the commit request the job sent (tables commit asynchronously by
    default)."""
    from sleeper.ingest.job_runner import IngestJobRunner, run_ingest_queue
    from sleeper.statestore.committer import handle_commit_request

    def task() -> None:
        aws = AwsInstance(instance.config, table_cache_seconds=0)
        runner = IngestJobRunner(aws, options=aws.filesystem_options)
        summary = run_ingest_queue(aws, runner=runner, until_idle=False, wait_seconds=1, max_jobs=1)
        if any(o.result is not None and o.result.commit_sent for o in summary.outcomes):
            committer = aws.queue(STATE_STORE_COMMITTER_Q)
            for message in committer.receive(10, wait_seconds=1):
                handle_commit_request(aws, message.body)
                committer.delete(message.receipt_handle)

    thread = threading.Thread(target=task, daemon=True)
    thread.start()
    return thread


def should_wait_for_an_ingest_job_sent_on_aws_until_the_tracker_has_it_finished(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Parquet file in the data bucket, and an ingest task that will run the next job
    body = io.BytesIO()
    pq.write_table(pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": ["a", "b", "c"]}), body)
    s3_client(aws_settings()).put_object(Bucket=instance.data_bucket, Key="in/rows.parquet", Body=body.getvalue())
    task = _run_one_ingest_job_later(instance)

    # When the file is ingested with --wait
    done = _json(
        capsys,
        ["ingest", "nums", f"s3a://{instance.data_bucket}/in/rows.parquet", "--job-id", "wait-1", "--wait", "--json"],
    )
    task.join(timeout=60)

    # Then the command returns once the job finished, with the tracker's row counts
    assert done == {"jobId": "wait-1", "tableName": "nums", "status": "FINISHED", "rowsRead": 3, "rowsWritten": 3}


def should_fail_waiting_for_an_ingest_job_that_was_rejected(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an ingest task that will run the next job
    task = _run_one_ingest_job_later(instance)

    # When a file that does not exist is ingested with --wait
    capsys.readouterr()
    code = run(["ingest", "nums", f"s3a://{instance.data_bucket}/in/missing.parquet", "--job-id", "wait-2", "--wait"])
    task.join(timeout=60)

    # Then the command fails in one line with the tracker's reason
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: ingest job wait-2 rejected:") and "missing.parquet" in err


LEAF_SPLITS = [500, 1000, 1500]
LEAF_ROWS = 2000


@pytest.fixture(scope="module")
def four_leaves(instance: AwsInstance) -> str:
    """A table of 2,000 rows over four leaves, written to the data bucket and committed directly."""
    table = instance.create_table("four-leaves", Schema.from_dict(SCHEMA), split_points=LEAF_SPLITS)
    keys = pa.array(range(LEAF_ROWS), pa.int64())
    table.ingest(pa.table({"key": keys, "value": [f"v{k}" for k in range(LEAF_ROWS)]}), direct=True)
    return table.name


def _run_deployed_functions_later(instance: AwsInstance, first: str, fan_out: str) -> Callable[[], dict[str, int]]:
    """What the deployed functions do with the next message sent to ``first``, in a thread: its feature entry (the one
    the Lambda or container consuming the queue runs, resolved through the router) handles it, then every message it
    fanned out to ``fan_out`` is handled the same way. Returns a join that re-raises a failure in the thread and gives
    how many messages of each queue were handled."""
    handled = {first: 0, fan_out: 0}
    errors: list[BaseException] = []

    def task() -> None:
        try:
            aws = AwsInstance(instance.config, table_cache_seconds=0)
            deadline = time.monotonic() + 60
            batch = aws.queue(first).receive(1, wait_seconds=1)
            while not batch and time.monotonic() < deadline:
                batch = aws.queue(first).receive(1, wait_seconds=1)
            for name in (first, fan_out):
                queue = aws.queue(name)
                while batch:
                    for message in batch:
                        settled = dispatch(aws, name, message.body)
                        assert settled.disposition is Disposition.DONE, settled.line
                        queue.delete(message.receipt_handle)
                        handled[name] += 1
                    batch = queue.receive(10)
                batch = aws.queue(fan_out).receive(10)
        except BaseException as e:  # handed to the test by join
            errors.append(e)

    thread = threading.Thread(target=task, daemon=True)
    thread.start()

    def join() -> dict[str, int]:
        thread.join(timeout=120)
        assert not thread.is_alive(), "the deployed functions did not finish"
        if errors:
            raise errors[0]
        return handled

    return join


@pytest.mark.parametrize("results", ["s3", "sqs"])
def should_wait_for_a_queued_query_on_aws_and_print_the_rows_of_a_direct_query(
    instance: AwsInstance, four_leaves: str, results: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table of four leaves, and the query functions that will run the next query sent
    functions = _run_deployed_functions_later(instance, QUERY_Q, LEAF_PARTITION_QUERY_Q)
    # When a range over the four leaves is queried through the query queue, the CLI waiting for the results
    capsys.readouterr()
    code = run(
        ["query", four_leaves, "--range", "key=[100,1900)", "--via-queue", "--results", results, "--wait", "90"]
        + ["--format", "json"]
    )
    handled = functions()
    out = capsys.readouterr().out
    # Then the query was planned into one sub-query per leaf, all run while the CLI waited
    assert code == 0
    assert handled == {QUERY_Q: 1, LEAF_PARTITION_QUERY_Q: 4}
    # And the CLI printed the rows of a direct query, in key order
    printed = json.loads(out)["rows"]
    direct = [r for r in instance.table(four_leaves).query().to_pylist() if 100 <= r["key"] < 1900]
    assert len(direct) == 1800
    assert printed == direct
    # And SQS results were taken off the results queue
    if results == "sqs":
        assert instance.queue(QUERY_RESULTS_Q).receive(10) == []


def should_wait_for_a_bulk_export_on_aws_and_report_one_file_per_leaf_with_the_tables_rows(
    instance: AwsInstance, four_leaves: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table of four leaves, and the planner Lambda and export tasks that will run the next export sent
    functions = _run_deployed_functions_later(instance, BULK_EXPORT_Q, LEAF_PARTITION_BULK_EXPORT_Q)
    # When it is exported through the CLI, which waits for the export
    capsys.readouterr()
    code = run(["export", four_leaves, "--export-id", "cli-export", "--timeout", "90", "--json"])
    handled = functions()
    report = json.loads(capsys.readouterr().out)
    # Then the planner split it into one leaf export per leaf, all run while the CLI waited
    assert code == 0
    assert handled == {BULK_EXPORT_Q: 1, LEAF_PARTITION_BULK_EXPORT_Q: 4}
    # And the CLI reports the export completed with every row, in one file per leaf under the table's export
    table = instance.table(four_leaves)
    assert (report["exportId"], report["tableId"], report["state"], report["rows"]) == (
        "cli-export",
        table.table_id,
        "COMPLETED",
        LEAF_ROWS,
    )
    prefix = f"s3://{instance.properties.get(cdk.BULK_EXPORT_S3_BUCKET)}/{table.table_id}/cli-export/"
    assert len(report["files"]) == 4 and all(f.startswith(prefix) for f in report["files"])
    # And those files hold, sorted, the rows of a direct query of the table
    parts = []
    for uri in report["files"]:
        filesystem, path = resolve(uri, instance.filesystem_options)
        part = pq.read_table(path, filesystem=filesystem)
        assert part["key"].to_pylist() == sorted(part["key"].to_pylist())
        parts.append(part)
    exported = pa.concat_tables(sorted(parts, key=lambda p: p["key"][0].as_py()))
    assert exported.to_pylist() == table.query().to_pylist()
