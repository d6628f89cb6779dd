"""Iterators on a local instance, end to end: a user iterator outside the package at query time and persisted by
compaction, the security iterator for three readers through every query path, and failing closed."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.trackers import InMemoryQueryTracker
from sleeper.api.table import Table
from sleeper.athena.handlers import AthenaSettings, iterator_applying_connector
from sleeper.cli.main import run
from sleeper.core.exceptions import PropertyError, SleeperError
from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.query import QueryState
from sleeper.iterators.exceptions import IteratorLoadError
from sleeper.query.publishers import PublisherSettings, results_path, results_publisher
from sleeper.query.queued import handle_leaf_query_message, handle_query_message
from sleeper.runtime.local.instance import LocalInstance
from tests.integration.iterators.athena_requests import read_all_rows

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("count", PrimitiveType.LONG), Field("visibility", PrimitiveType.STRING, nullable=True)],
)
LABELS = ["public", "A", "B", "C", ""]
SECURITY = "sleeper.iterators.examples.SecurityFilteringIterator"
READERS = {"alice": "A", "bob": "A,B", "carol": "C"}


def _rows(start: int, n: int) -> pa.Table:
    keys = list(range(start, start + n))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "count": pa.array([k * 7 % 23 for k in keys], pa.int64()),
            "visibility": pa.array([None if k % 6 == 5 else LABELS[k % 5] for k in keys], pa.string()),
        }
    )


def _all_rows() -> pa.Table:
    return pa.concat_tables([_rows(i * 40, 40) for i in range(3)]).sort_by("key")


@pytest.fixture
def table(tmp_path: Path) -> Table[LocalInstance]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "events", SCHEMA, split_points=[60], properties={"sleeper.table.compaction.job.commit.async": "false"}
    )
    for i in range(3):
        table.ingest(_rows(i * 40, 40))
    return table


def _visible(rows: pa.Table, auths: str) -> list[int]:
    """The keys a reader with these authorisations may see: a pyarrow reference filter."""
    labels = rows.column("visibility")
    allowed = pa.array(["", *auths.split(",")], pa.string())
    return sorted(
        rows.filter(pc.or_kleene(pc.is_null(labels), pc.is_in(labels, value_set=allowed))).column("key").to_pylist()
    )


def _user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = tmp_path / "user_code"
    code.mkdir()
    (code / "user_iterators.py").write_text(
        textwrap.dedent(
            """
            import pyarrow.compute as pc

            class KeepCountsAtLeast:
                '''Keeps rows whose count is at least the config's number.'''

                def init(self, config, schema):
                    self.minimum = int(config)

                def required_value_fields(self):
                    return ["count"]

                def apply(self, batches):
                    for batch in batches:
                        yield batch.filter(pc.greater_equal(batch.column("count"), self.minimum))
            """
        )
    )
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.delitem(sys.modules, "user_iterators", raising=False)


def should_filter_with_a_user_iterator_at_query_time_and_persist_it_by_compaction(
    table: Table[LocalInstance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an iterator in a module outside the package, on the import path, set as the table's iterator
    _user_module(tmp_path, monkeypatch)
    everything = _all_rows()
    expected = sorted(everything.filter(pc.greater_equal(everything.column("count"), 10)).column("key").to_pylist())
    table = table.set_properties(
        {"sleeper.table.iterator.class.name": "user_iterators.KeepCountsAtLeast", "sleeper.table.iterator.config": "10"}
    )
    stored_before = sum(r.number_of_rows for r in table.file_references())
    # When queried before compaction, then the rows equal the reference filter (the files still hold every row)
    assert sorted(table.query().column("key").to_pylist()) == expected
    assert stored_before == 120
    # When the table is compacted
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    assert run(["compact", "events", "--all"]) == 0
    # Then the query gives the same rows, and the files now hold only them: the filter is persisted
    compacted = table.instance.table("events")
    assert sorted(compacted.query().column("key").to_pylist()) == expected
    assert sum(r.number_of_rows for r in compacted.file_references()) == len(expected)


@pytest.mark.parametrize(("reader", "auths"), list(READERS.items()))
def should_show_each_reader_exactly_their_rows_through_the_python_api(
    table: Table[LocalInstance], reader: str, auths: str
) -> None:
    rows = table.query(iterator=SECURITY, iterator_config=f"visibility,{auths}")
    assert rows.column("key").to_pylist() == _visible(_all_rows(), auths)


def should_apply_a_query_time_iterator_to_a_scan_direct_queued_and_as_of(table: Table[LocalInstance]) -> None:
    # Given the table's transaction number now, then more rows ingested after it
    before = table.state_store.last_transaction_numbers()[LogType.FILES]
    table.ingest(_rows(120, 40))
    config = "visibility,A,B"

    # When the security iterator is given to a direct scan, a queued scan and a scan of the earlier state
    direct = table.scan(iterator=SECURITY, iterator_config=config, filter="count >= 5")
    queued = table.scan(iterator=SECURITY, iterator_config=config, filter="count >= 5", via_queue=True)
    past = table.scan(iterator=SECURITY, iterator_config=config, as_of=before)

    # Then each returns exactly the rows the reader may see (the filter applied after the iterator), as a reference
    # filter over the rows written computes them
    everything = pa.concat_tables([_all_rows(), _rows(120, 40)])
    wanted = _visible(everything.filter(pc.greater_equal(everything.column("count"), 5)), "A,B")
    assert direct.to_arrow().column("key").to_pylist() == wanted
    assert queued.to_arrow().column("key").to_pylist() == wanted
    assert past.to_arrow().column("key").to_pylist() == _visible(_all_rows(), "A,B")
    assert "iterator=" in repr(direct)


def should_refuse_an_iterator_config_without_an_iterator(table: Table[LocalInstance]) -> None:
    with pytest.raises(SleeperError, match="iterator_config needs iterator"):
        table.scan(iterator_config="visibility,A")


@pytest.mark.parametrize(("reader", "auths"), list(READERS.items()))
def should_show_each_reader_exactly_their_rows_through_the_cli(
    table: Table[LocalInstance],
    reader: str,
    auths: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    for via_queue in ([], ["--via-queue"]):
        out = tmp_path / f"{reader}{len(via_queue)}.parquet"
        args = ["query", "events", "--iterator", SECURITY, "--iterator-config", f"visibility,{auths}", "-o", str(out)]
        assert run([*args, "--format", "parquet", *via_queue]) == 0
        import pyarrow.parquet as pq

        assert pq.read_table(out).column("key").to_pylist() == _visible(_all_rows(), auths)


def _queued(table: Table[LocalInstance], tmp_path: Path, query_id: str, processing: QueryProcessingConfig) -> pa.Table:
    instance = table.instance
    tracker = InMemoryQueryTracker()
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    query = Query(query_id=query_id, table_name="events", regions=(Region.whole(SCHEMA),), processing=processing)
    outcome = handle_query_message(
        QuerySerDe.for_schema(SCHEMA).to_json(query), tables=instance, leaf_queue=leaf_queue, tracker=tracker
    )
    results = (tmp_path / "results").as_uri()
    publish = results_publisher(PublisherSettings(results_uri=results))
    for message in leaf_queue.receive(10):
        handle_leaf_query_message(message.body, tables=instance, tracker=tracker, publish=publish)
    status = tracker.status(query_id)
    assert status is not None
    if status.last_known_state is not QueryState.COMPLETED:
        raise AssertionError(f"query {query_id} {status.last_known_state}: {status.error_message}")
    import pyarrow.parquet as pq

    parts = [pq.read_table(results_path(results, q).removeprefix("file://")) for q in outcome.sub_queries]
    return pa.concat_tables(parts).sort_by("key")


@pytest.mark.parametrize(("reader", "auths"), list(READERS.items()))
def should_show_each_reader_exactly_their_rows_through_the_query_queue(
    table: Table[LocalInstance], reader: str, auths: str, tmp_path: Path
) -> None:
    processing = QueryProcessingConfig(
        query_time_iterator_class_name=SECURITY, query_time_iterator_config=f"visibility,{auths}"
    )
    rows = _queued(table, tmp_path, f"q-{reader}", processing)
    assert rows.column("key").to_pylist() == _visible(_all_rows(), auths)


@pytest.mark.parametrize(("reader", "auths"), list(READERS.items()))
def should_show_each_readers_connector_exactly_their_rows_whatever_the_request_claims(
    table: Table[LocalInstance], reader: str, auths: str
) -> None:
    # Given an iterator-applying connector set up for one reader's authorisations (a fixed config: nothing in a
    # request can say who the caller is, see docs/usage/athena.md)
    settings = AthenaSettings(
        instance_id=str(table.instance.properties.get("sleeper.id")),
        query_time_iterator_class_name=SECURITY,
        query_time_iterator_config=f"visibility,{auths}",
        spill_bucket="spill",
    )
    connector = iterator_applying_connector(table.instance, settings)
    # When a request claiming every authorisation in its principal tags reads the table
    rows = read_all_rows(connector, table, principal_tags={"sleeper-auths": "A:B:C"})
    # Then it sees exactly the rows of the connector's authorisations
    assert sorted(rows.column("key").to_pylist()) == _visible(_all_rows(), auths)


@pytest.mark.parametrize("class_name", ["com.example.NoSuchIterator", "sleeper.iterators.examples.Missing"])
def should_refuse_an_unknown_iterator_at_create_and_set(tmp_path: Path, class_name: str) -> None:
    instance = LocalInstance.create(tmp_path / "instance")
    # When a table is created with it, it is refused in one line, and no table exists
    with pytest.raises(PropertyError, match=f"sleeper.table.iterator.class.name '{class_name}'"):
        instance.create_table("t", SCHEMA, properties={"sleeper.table.iterator.class.name": class_name})
    assert [t.table_name for t in instance.table_index.list_tables()] == []
    # And setting it on an existing table is refused, leaving the table as it was
    table = instance.create_table("t", SCHEMA)
    with pytest.raises(PropertyError, match="cannot import module|has no class"):
        table.set_properties({"sleeper.table.iterator.class.name": class_name})
    assert instance.table("t").properties.get("sleeper.table.iterator.class.name") is None
    # And a config the iterator refuses is refused too
    with pytest.raises(PropertyError, match="refused"):
        table.set_properties({"sleeper.table.iterator.class.name": SECURITY, "sleeper.table.iterator.config": "nope"})


def should_refuse_an_unknown_iterator_on_the_command_line_in_one_line(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    capsys.readouterr()
    code = run(["table", "properties", "events", "--set", "sleeper.table.iterator.class.name=com.example.Nope"])
    err = capsys.readouterr().err
    assert code != 0
    assert "cannot import module 'com.example'" in err
    assert "Traceback" not in err


def _force(table: Table[LocalInstance], class_name: str) -> None:
    """Puts an iterator into the table's properties file directly, past validation."""
    path = table.instance.directory / "tables" / f"table-{table.table_id}.properties"
    path.write_text(path.read_text() + f"\nsleeper.table.iterator.class.name={class_name}\n")


def should_fail_queries_with_no_rows_when_a_forced_in_iterator_cannot_load(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given an unknown iterator written straight into the table's properties
    _force(table, "com.example.SecurityFilter")
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    # When queried from the command line, directly and through the queue
    for via_queue in ([], ["--via-queue"]):
        capsys.readouterr()
        code = run(["query", "events", "--format", "json", *via_queue])
        captured = capsys.readouterr()
        # Then it exits non-zero with the reason, and prints no rows
        assert code != 0
        assert "com.example.SecurityFilter" in captured.err
        assert '"key"' not in captured.out
    # And the Python API raises before reading anything
    with pytest.raises(IteratorLoadError):
        table.instance.table("events").query()
    # And the query handler tracks the query FAILED without sending any sub-query
    tracker = InMemoryQueryTracker()
    leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
    query = Query(query_id="forced", table_name="events", regions=(Region.whole(SCHEMA),))
    outcome = handle_query_message(
        QuerySerDe.for_schema(SCHEMA).to_json(query), tables=table.instance, leaf_queue=leaf_queue, tracker=tracker
    )
    status = tracker.status("forced")
    assert status is not None and status.last_known_state is QueryState.FAILED
    assert "com.example.SecurityFilter" in (status.error_message or "")
    assert outcome.sub_queries == () and leaf_queue.receive(10) == []


def should_record_each_compaction_failure_dead_letter_the_job_and_commit_nothing_when_a_forced_in_iterator_cannot_load(
    table: Table[LocalInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an unknown iterator written straight into the table's properties
    _force(table, "com.example.SecurityFilter")
    files_before = sorted(r.filename for r in table.file_references())
    monkeypatch.setenv("SLEEPER_INSTANCE", str(table.instance.directory))
    # When the table is compacted (which fails, saying so) and the instance runs until idle
    assert run(["compact", "events", "--all"]) == 1
    assert run(["run", "--until-idle", "--poll", "0"]) == 0
    # Then each job was tried sleeper.compaction.job.max.retries times, each run failed with the reason, and the job
    # went to the dead-letter queue (as in Sleeper), not back to the job queue
    instance = table.instance
    retries = instance.properties.get_int("sleeper.compaction.job.max.retries")
    jobs = instance.compaction_job_tracker.jobs(table.table_id)
    assert jobs
    for job in jobs:
        assert len(job.runs) == retries
        for job_run in job.runs:
            assert job_run.status is CompactionJobStatusType.FAILED
            assert any("com.example.SecurityFilter" in reason for reason in job_run.failure_reasons)
    assert instance.queue("CompactionJobQ").receive(10) == []
    assert instance.dead_letter_queue("CompactionJobQ").approximate_counts().visible == len(jobs)
    # And nothing was committed: the table's files are those it had
    assert sorted(r.filename for r in instance.table("events").file_references()) == files_before


def should_give_the_same_rows_with_aggregators_as_with_the_aggregations_property(tmp_path: Path) -> None:
    schema = Schema.of(
        row_keys=[Field("id", PrimitiveType.STRING)],
        values=[Field("count", PrimitiveType.LONG), Field("last_seen", PrimitiveType.LONG)],
    )
    rows = pa.table(
        {
            "id": ["a", "b", "a", "c", "b", "a"],
            "count": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "last_seen": pa.array([10, 50, 30, 5, 40, 20], pa.int64()),
        }
    )
    instance = LocalInstance.create(tmp_path / "instance")
    by_iterator = instance.create_table(
        "by_iterator",
        schema,
        properties={
            "sleeper.table.iterator.class.name": "AGGREGATORS",
            "sleeper.table.iterator.config": ";,sum(count),max(last_seen)",
        },
    )
    by_property = instance.create_table(
        "by_property", schema, properties={"sleeper.table.aggregations": "sum(count),max(last_seen)"}
    )
    for t in (by_iterator, by_property):
        t.ingest(rows.slice(0, 3))
        t.ingest(rows.slice(3))
    assert (
        by_iterator.query().to_pylist()
        == by_property.query().to_pylist()
        == [
            {"id": "a", "count": 10, "last_seen": 30},
            {"id": "b", "count": 7, "last_seen": 50},
            {"id": "c", "count": 4, "last_seen": 5},
        ]
    )


def should_apply_the_table_iterator_at_ingest(tmp_path: Path) -> None:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.iterator.class.name": "sleeper.example.iterator.FixedAgeOffIterator",
            "sleeper.table.iterator.config": "count,10",
        },
    )
    result = table.ingest(_rows(0, 40))
    everything = _rows(0, 40)
    kept = everything.filter(pc.greater_equal(everything.column("count"), 10)).num_rows
    assert (result.rows_read, result.rows_written) == (40, kept)
    assert json.dumps(sum(r.number_of_rows for r in table.file_references())) == json.dumps(kept)
