"""A local instance given ids that could be used to write outside their place (path traversal through a query id, a
sub-query id or a job id) rejects them when the message is read, records the rejection, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.api.table import Table
from sleeper.cli.main import run
from sleeper.core.paths import SAFE_ID_RULE
from sleeper.core.schema import Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.query import QueryState
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest.job_runner import IngestJobRunner
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, QUERY_QUEUE, handle_query_message
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = pytest.mark.integration

SCHEMA_JSON = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}],
    "valueFields": [{"name": "value", "type": "StringType", "nullable": True}],
}
OTHER_QUERY = "someone-elses-query"


def _query(query_id: str) -> str:
    region = {
        "key": {"min": "", "minInclusive": True, "max": None, "maxInclusive": False},
        "stringsBase64Encoded": False,
    }
    return json.dumps({"tableName": "t", "queryId": query_id, "type": "Query", "regions": [region]})


@pytest.fixture
def table(tmp_path: Path) -> Table[LocalInstance]:
    """A table of two rows whose instance has already answered another user's query."""
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", Schema.from_dict(SCHEMA_JSON))
    table.ingest(pa.table({"key": ["a", "b"], "value": ["1", "2"]}))
    _run_queries(instance, [_query(OTHER_QUERY)])
    assert _results(instance, OTHER_QUERY) != []
    return table


def _run_queries(instance: LocalInstance, bodies: list[str]) -> None:
    for body in bodies:
        instance.queue(QUERY_QUEUE).send(body)
    runner = LocalRunner(instance, default_handlers())
    runner.drain(QUERY_QUEUE)
    runner.drain(LEAF_PARTITION_QUERY_QUEUE)


def _results(instance: LocalInstance, query_id: str) -> list[str]:
    return sorted(p.name for p in (instance.directory / "query-results" / f"query-{query_id}").glob("*.parquet"))


def _parquet_files(root: Path) -> set[Path]:
    return set(root.rglob("*.parquet"))


@pytest.mark.parametrize("query_id", ["/../../escaped-from-query-results", f"/../query-{OTHER_QUERY}", "../x"])
def should_track_a_query_whose_id_could_escape_the_results_dir_as_failed_writing_nothing(
    table: Table[LocalInstance], tmp_path: Path, query_id: str
) -> None:
    # Given the Parquet files anywhere under the test's directory, and the other query's results
    instance = table.instance
    before = _parquet_files(tmp_path)
    other_results = _results(instance, OTHER_QUERY)
    # When a query with an id holding '..' is sent to the query queue and the handlers run
    _run_queries(instance, [_query(query_id)])
    # Then no Parquet file was written anywhere, the other query's results are unchanged
    assert _parquet_files(tmp_path) == before
    assert _results(instance, OTHER_QUERY) == other_results
    # And the query tracker records the query FAILED, naming the field and the rule
    tracked = instance.query_tracker.status(query_id)
    assert tracked is not None
    assert tracked.last_known_state is QueryState.FAILED
    assert "$.queryId" in (tracked.error_message or "")
    assert SAFE_ID_RULE in (tracked.error_message or "")
    assert instance.queue(LEAF_PARTITION_QUERY_QUEUE).receive(10) == []


@pytest.mark.parametrize(
    ("field", "value"), [("queryId", f"../query-{OTHER_QUERY}"), ("subQueryId", f"../query-{OTHER_QUERY}/injected")]
)
def should_refuse_a_leaf_query_whose_ids_could_escape_the_results_dir(
    table: Table[LocalInstance], tmp_path: Path, field: str, value: str
) -> None:
    # Given a sub-query as the query handler makes it, with one of its ids replaced
    instance = table.instance
    leaf_queue = InMemoryQueues().queue(LEAF_PARTITION_QUERY_QUEUE)
    handle_query_message(_query("mine"), tables=instance, leaf_queue=leaf_queue, tracker=instance.query_tracker)
    message = json.loads(leaf_queue.receive(1)[0].body)
    message[field] = value
    before = _parquet_files(tmp_path)
    # When it is sent to the leaf partition query queue and the leaf handler runs
    instance.queue(LEAF_PARTITION_QUERY_QUEUE).send(json.dumps(message))
    summary = LocalRunner(instance, default_handlers()).drain(LEAF_PARTITION_QUERY_QUEUE)
    # Then the handler refused it (the message goes back to the queue, then to its dead-letter queue), writing nothing
    assert summary.failed == {LEAF_PARTITION_QUERY_QUEUE: 1}
    assert _parquet_files(tmp_path) == before
    assert instance.query_tracker.status(value) is None


def should_reject_an_ingest_job_whose_id_could_collide_tracking_it_under_a_new_id(table: Table[LocalInstance]) -> None:
    # Given an ingest job message with an id holding '|' (it would key another job's tracker records) and '..'
    instance = table.instance
    body = json.dumps({"id": "../job|1", "tableName": "t", "files": [str(instance.directory / "x.parquet")]})
    # When it is run from the queue
    outcome = IngestJobRunner(instance).run_message(body)
    # Then it is rejected, tracked under a new id with the message and a reason naming the rule
    assert outcome.outcome is JobOutcome.REJECTED
    assert outcome.job_id != "../job|1"
    status = instance.ingest_job_tracker.job(outcome.job_id)
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert status.latest_run.updates[0].json_message == body  # type: ignore[union-attr]
    assert SAFE_ID_RULE in outcome.reasons[0]
    assert instance.ingest_job_tracker.job("../job|1") is None


def should_refuse_an_unsafe_job_id_on_the_command_line(
    table: Table[LocalInstance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Parquet file to ingest
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"key": ["c"], "value": ["3"]}), source)
    files_before = {r.filename for r in table.file_references()}
    capsys.readouterr()
    # When it is ingested with a job id holding '..'
    code = run(["ingest", "t", str(source), "--job-id", "../../x"])
    # Then the command fails with the rule, and nothing is ingested
    assert code != 0
    assert SAFE_ID_RULE.split(" (")[0] in " ".join(capsys.readouterr().err.split())
    assert {r.filename for r in table.file_references()} == files_before
