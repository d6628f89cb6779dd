"""Queries through the query queue: planning and fan-out, sub-queries with published results, the query tracker."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.trackers import InMemoryQueryTracker
from sleeper.api.table import Table
from sleeper.cli.main import run
from sleeper.core.query import Query, QuerySerDe
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.query.publishers import PublisherSettings, results_path, results_publisher
from sleeper.query.queued import handle_leaf_query_message, handle_query_message
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


@pytest.fixture
def table(tmp_path: Path) -> Table[LocalInstance]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=[100, 200])
    table.ingest(pa.table({"key": pa.array(range(300), pa.int64()), "value": [str(i) for i in range(300)]}))
    return table


def _query_json(query_id: str, low: int, high: int) -> str:
    region = Region.of([Range(field=SCHEMA.field("key"), min=low, max=high)])
    return QuerySerDe.for_schema(SCHEMA).to_json(Query(query_id=query_id, table_name="t", regions=(region,)))


def should_fan_out_one_sub_query_per_leaf_and_publish_every_row_once(
    table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a query over a range crossing both split points
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    tracker = InMemoryQueryTracker()
    instance = table.instance
    # When the query handler runs, then the leaf handler runs each sub-query
    outcome = handle_query_message(_query_json("q1", 50, 250), tables=instance, leaf_queue=leaf_queue, tracker=tracker)
    results = (tmp_path / "results").as_uri()
    publish = results_publisher(PublisherSettings(results_uri=results))
    messages = leaf_queue.receive(10)
    counts = [handle_leaf_query_message(m.body, tables=instance, tracker=tracker, publish=publish) for m in messages]
    # Then 3 sub-queries were sent and their result files hold keys 50..249 once
    assert len(outcome.sub_queries) == 3
    assert sum(counts) == 200
    keys = sorted(
        k
        for q in outcome.sub_queries
        for k in pq.read_table(results_path(results, q).removeprefix("file://")).column("key").to_pylist()
    )
    assert keys == list(range(50, 250))
    # And the tracker rolled the sub-queries up into a completed query with the row count
    parent = tracker.status("q1")
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 200)


def should_complete_a_query_with_no_leaves_to_read_with_zero_rows(tmp_path: Path) -> None:
    # Given an empty table
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table("t", SCHEMA)
    tracker = InMemoryQueryTracker()
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    # When a query is handled
    outcome = handle_query_message(_query_json("q2", 0, 10), tables=instance, leaf_queue=leaf_queue, tracker=tracker)
    # Then no sub-query is sent and the query is completed with 0 rows
    assert outcome.sub_queries == ()
    parent = tracker.status("q2")
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 0)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (json.dumps({"queryId": "bad-1", "tableName": "nope", "type": "Query", "regions": []}), "nope"),
        (json.dumps({"queryId": "bad-2", "tableName": "t", "type": "Query", "regions": [{"key": "x"}]}), "regions"),
        (
            json.dumps(
                {"queryId": "bad-3", "tableName": "t", "type": "Query", "regions": [{"key": {"min": 9, "max": 1}}]}
            ),
            "$.regions[0].key: range of row key 'key': min 9 is greater than max 1",
        ),
    ],
)
def should_track_an_invalid_query_as_failed_with_the_reason(table: Table[LocalInstance], body: str, error: str) -> None:
    # Given an invalid query
    tracker = InMemoryQueryTracker()
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    # When it is handled
    outcome = handle_query_message(body, tables=table.instance, leaf_queue=leaf_queue, tracker=tracker)
    # Then it is tracked FAILED with a reason naming the problem, and nothing is sent
    query_id = json.loads(body)["queryId"]
    tracked = tracker.status(query_id)
    assert tracked is not None
    assert tracked.last_known_state is QueryState.FAILED
    assert error in (tracked.error_message or "")
    assert outcome.sub_queries == ()
    assert leaf_queue.receive(10) == []


def should_query_through_the_queue_from_the_command_line(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the table's instance
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    # When a range is queried through the query queue
    capsys.readouterr()
    assert run(["query", "t", "--range", "key=[95,105)", "--via-queue", "--format", "json"]) == 0
    out = capsys.readouterr().out
    # Then the rows come back in key order, and the tracker shows the query completed
    payload = json.loads(out)
    assert [r["key"] for r in payload["rows"]] == list(range(95, 105))
    tracked = json.loads(_report(capsys))
    parents = [r for r in tracked if r["subQueryId"] == "-"]
    assert [(p["lastKnownState"], p["rowCount"]) for p in parents] == [("COMPLETED", 10)]


@pytest.mark.parametrize("results", ["s3", "sqs"])
def should_write_only_the_rows_to_stdout_and_the_tracker_to_stderr(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], results: str
) -> None:
    # Given the table's instance
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    # When a range is queried through the query queue as CSV, as 'sleeper query ... --format csv > f' does
    capsys.readouterr()
    argv = ["query", "t", "--range", "key=[98,102)", "--via-queue", "--results", results, "--format", "csv"]
    assert run(argv) == 0
    captured = capsys.readouterr()
    # Then stdout is exactly the rows' CSV, and the tracker's table went to stderr
    assert captured.out.splitlines() == ['"key","value"', '98,"98"', '99,"99"', '100,"100"', '101,"101"']
    assert "COMPLETED" in captured.err


def should_exit_non_zero_with_the_reason_when_the_tracker_records_the_query_failed(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table whose data files have gone
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    for filename in {r.filename for r in table.file_references()}:
        Path(filename.removeprefix("file://")).unlink()
    # When a range across two leaves is queried through the query queue
    capsys.readouterr()
    code = run(["query", "t", "--range", "key=[95,105)", "--via-queue", "--format", "json"])
    # Then the command fails, naming the query and why, as the tracker records it
    err = capsys.readouterr().err
    tracked = json.loads(_report(capsys))
    parents = [r for r in tracked if r["subQueryId"] == "-"]
    assert [p["lastKnownState"] for p in parents] == ["FAILED"]
    assert code == 1
    assert f"query {parents[0]['queryId']} FAILED" in err
    assert all(r["errors"] in err for r in tracked if r["errors"])


def _report(capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert run(["report", "query", "--json"]) == 0
    return capsys.readouterr().out


def should_query_through_the_queue_with_results_on_the_results_queue(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the table's instance
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    # When a range across two leaves is queried with its results on the results queue
    capsys.readouterr()
    assert run(["query", "t", "--range", "key=[95,105)", "--via-queue", "--results", "sqs", "--format", "json"]) == 0
    out = capsys.readouterr().out
    # Then the rows collected from the queue come back in key order, and the queue is left empty
    payload = json.loads(out)
    assert [r["key"] for r in payload["rows"]] == list(range(95, 105))
    assert table.instance.query_results_queue.receive(10) == []


def should_refuse_an_unknown_results_destination_on_the_command_line(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    capsys.readouterr()
    assert run(["query", "t", "--via-queue", "--results", "ftp"]) == 1
    assert "--results must be one of s3, sqs, got 'ftp'" in capsys.readouterr().err


def should_report_only_the_queries_in_a_state(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one completed query and one failed query in the tracker
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    assert run(["query", "t", "--range", "key=[95,105)", "--via-queue"]) == 0
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    bad = json.dumps({"queryId": "bad", "tableName": "nope", "type": "Query", "regions": []})
    handle_query_message(bad, tables=table.instance, leaf_queue=leaf_queue, tracker=table.instance.query_tracker)
    # When the report is filtered by state
    capsys.readouterr()
    assert run(["report", "query", "--state", "failed", "--json"]) == 0
    failed = json.loads(capsys.readouterr().out)
    assert run(["report", "query", "--state", "COMPLETED", "--json"]) == 0
    completed = json.loads(capsys.readouterr().out)
    # Then each shows only its rows
    assert [(r["queryId"], r["lastKnownState"]) for r in failed] == [("bad", "FAILED")]
    assert {r["lastKnownState"] for r in completed} == {"COMPLETED"} and len(completed) == 3
    assert run(["report", "query", "--state", "lost"]) == 1


def _sqs_event(*messages: tuple[str, str]) -> dict[str, object]:
    """An SQS event as Lambda gives it, of (message id, body) pairs."""
    return {
        "Records": [
            {"messageId": message_id, "receiptHandle": f"r-{n}", "body": body, "eventSource": "aws:sqs"}
            for n, (message_id, body) in enumerate(messages)
        ]
    }


def _through_the_query_lambdas(instance: LocalInstance, message_id: str, body: str) -> list[str]:
    """Delivers a query message to the query Lambda handler, then its sub-queries to the leaf one; returns the
    sub-query messages delivered."""
    from sleeper.lambdas import _common, sqs

    _common.use_instance(instance)  # type: ignore[arg-type]
    try:
        assert sqs.query(_sqs_event((message_id, body))) == {"batchItemFailures": []}
        leaf_queue = instance.queue("LeafPartitionQueryQueue")
        sent = []
        while messages := leaf_queue.receive(10):
            for m in messages:
                assert sqs.leaf_partition_query(_sqs_event((m.message_id, m.body))) == {"batchItemFailures": []}
                leaf_queue.delete(m.receipt_handle)
                sent.append(m.body)
        return sent
    finally:
        _common.use_instance(None)


def _result_keys(instance: LocalInstance, query_id: str) -> list[int]:
    from sleeper.query.results_reader import read_results_files

    results = str(Path(instance.query_results_uri.removeprefix("file://")))
    return sorted(read_results_files(instance.filesystem, results, query_id, SCHEMA, None).column("key").to_pylist())


def should_run_a_second_query_message_under_a_reused_id_and_a_redelivered_one_once(table: Table[LocalInstance]) -> None:
    # Given a query answered through the query queue's Lambda handlers
    instance = table.instance
    assert len(_through_the_query_lambdas(instance, "m-1", _query_json("reused", 50, 150))) == 2
    assert _result_keys(instance, "reused") == list(range(50, 150))
    # When the same message is delivered again, then Sleeper's client sends another query under the same id
    redelivered = _through_the_query_lambdas(instance, "m-1", _query_json("reused", 50, 150))
    assert redelivered == []
    second = _through_the_query_lambdas(instance, "m-2", _query_json("reused", 250, 260))
    # Then the redelivery ran nothing, and the second query ran and its results are its own rows only
    assert len(second) == 1
    assert _result_keys(instance, "reused") == list(range(250, 260))
    status = instance.query_tracker.status("reused")
    assert status is not None and status.last_known_state is QueryState.COMPLETED


def should_not_run_a_finished_sub_query_delivered_again(table: Table[LocalInstance], tmp_path: Path) -> None:
    # Given a query whose sub-query ran and published its rows
    instance = table.instance
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    tracker = InMemoryQueryTracker()
    handle_query_message(
        _query_json("q3", 0, 10), tables=instance, leaf_queue=leaf_queue, tracker=tracker, delivery_id="m-1"
    )
    (message,) = leaf_queue.receive(10)
    published: list[str] = []
    publish = results_publisher(PublisherSettings(results_uri=(tmp_path / "results").as_uri()))

    def counting(leaf_query, table, batches):  # type: ignore[no-untyped-def]
        published.append(leaf_query.sub_query_id)
        return publish(leaf_query, table, batches)

    assert handle_leaf_query_message(message.body, tables=instance, tracker=tracker, publish=counting) == 10
    # When the sub-query's message is delivered again
    again = handle_leaf_query_message(message.body, tables=instance, tracker=tracker, publish=counting)
    # Then it is not run or published again, and the tracker still holds the one run's rows
    assert again == 0 and len(published) == 1
    parent = tracker.status("q3")
    assert parent is not None and (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 10)


def should_fail_a_reused_query_id_whose_earlier_results_cannot_be_deleted(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sleeper.query.queued as queued

    # Given a query answered through the query queue, whose results the query function may not delete (on AWS, a
    # role without s3:DeleteObject on the results bucket)
    instance = table.instance
    _through_the_query_lambdas(instance, "m-1", _query_json("kept", 50, 150))

    def denied(*_args: object) -> int:
        raise OSError("AWS Error ACCESS_DENIED during DeleteObject operation")

    monkeypatch.setattr(queued, "clear_results", denied)
    # When another message sends a query under the same id
    sent = _through_the_query_lambdas(instance, "m-2", _query_json("kept", 250, 260))
    # Then it is tracked FAILED saying why and what to do, nothing runs, and the earlier results are not mixed in
    assert sent == []
    status = instance.query_tracker.status("kept")
    assert status is not None and status.last_known_state is QueryState.FAILED
    assert "used before" in (status.error_message or "") and "new id" in (status.error_message or "")
