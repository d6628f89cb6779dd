"""Garbage collection: the delay, batches, re-runs after failures, the table prefix and the delay guard."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.properties.instance_query import QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS
from sleeper.core.properties.table import QUERY_PROCESSOR_CACHE_TIMEOUT
from sleeper.core.query import Query
from sleeper.core.statestore.transactions.files import DeleteFilesTransaction
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.gc import (
    GarbageCollectionFailedError,
    GcSettings,
    collect_garbage,
    file_outside_table,
    run_garbage_collection,
)
from sleeper.gc.ports import STATE_STORE_COMMITTER_QUEUE
from sleeper.io.filesystem import delete, filesystem_path
from sleeper.io.sketches import sketches_path
from sleeper.query.executor import plan_table_query
from tests.reliability_report import Reliability
from tests.unit.gc.gc_fixtures import FakeInstance, FakeTable, new_table

DELAY = timedelta(minutes=20)
SECOND = timedelta(seconds=1)


def _gc(table: FakeTable, **kwargs: object):
    return collect_garbage(table, now=table.clock.now, filesystem=table.filesystem, **kwargs)  # type: ignore[arg-type]


def _delete_commits(table: FakeTable) -> list[tuple[str, ...]]:
    entries = table.backend.transaction_log(table.table_id, LogType.FILES).entries()
    serde = table.state_store.serde
    out = []
    for entry in entries:
        if entry.transaction_type is TransactionType.DELETE_FILES:
            transaction = serde.from_json(entry.transaction_type, entry.body)
            assert isinstance(transaction, DeleteFilesTransaction)
            out.append(transaction.filenames)
    return out


def should_delete_a_compacted_file_only_once_unreferenced_for_longer_than_the_table_delay() -> None:
    # Given a and b are compacted into c at the start
    table = new_table()
    a, b = table.add_referenced("a"), table.add_referenced("b")
    c = table.compact([a, b], "c")

    # When
    table.clock.advance(DELAY)
    at_delay = _gc(table)
    table.clock.advance(SECOND)
    after_delay = _gc(table)

    # Then
    assert at_delay.deleted == ()
    assert set(after_delay.deleted) == {a, b}
    assert table.tracked() == {c}
    for gone in (a, b):
        assert not table.exists(gone)
        assert not table.exists(sketches_path(gone))
    assert table.exists(c)
    assert table.exists(sketches_path(c))


def should_never_delete_a_referenced_file() -> None:
    # Given
    table = new_table()
    kept = table.add_referenced("kept")

    # When
    table.clock.advance(timedelta(days=365))
    result = _gc(table)

    # Then
    assert result.deleted == ()
    assert table.exists(kept)
    assert table.tracked() == {kept}


def should_take_the_delay_from_the_table_properties(reliability: Reliability) -> None:
    # Given a shorter delay, made safe by a shorter query timeout
    table = new_table(
        properties={"sleeper.table.gc.delay.minutes": "3", "sleeper.table.query.processor.cache.timeout.seconds": "30"},
        instance_values={"sleeper.query.processor.timeout.seconds": "60"},
    )
    old = table.add_unreferenced(table.location("old"))
    unreferenced_at = table.clock.now

    # When
    table.clock.advance(timedelta(minutes=3) - SECOND)
    early = _gc(table)
    early_at = table.clock.now
    table.clock.advance(2 * SECOND)
    late = _gc(table)

    # Then
    reliability.record(
        "D2",
        case="unreferenced at t, GC at t+delay-1s and at t+delay+1s",
        delay_s=180,
        gc_at_s=[(early_at - unreferenced_at).total_seconds(), (table.clock.now - unreferenced_at).total_seconds()],
        early_deletions=len(early.deleted),
        deleted_after_delay=len(late.deleted),
        deletion_lag_s=(table.clock.now - unreferenced_at).total_seconds() - 180 if late.deleted else None,
        referenced_files_deleted=len(
            set(early.deleted + late.deleted) & {r.filename for r in table.state_store.file_references()}
        ),
    )
    assert early.deleted == ()
    assert late.deleted == (old,)


def should_collect_with_a_delay_shorter_than_the_query_cache_and_query_timeouts_and_warn_of_the_risk(
    reliability: Reliability, caplog: pytest.LogCaptureFixture
) -> None:
    # Given 10 minutes, shorter than Sleeper's 60 s cache timeout plus 900 s query timeout (Sleeper accepts it)
    table = new_table(properties={"sleeper.table.gc.delay.minutes": "10"})
    old = table.add_unreferenced(table.location("old"))
    table.clock.advance(timedelta(hours=1))

    # When
    with caplog.at_level(logging.WARNING, logger="sleeper.gc.collector"):
        result = _gc(table)

    # Then the file is collected as configured, and the run names the risk and the delay that removes it
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    reliability.record(
        "D3",
        case="gc delay 10 min <= query cache 60 s + query timeout 900 s: collected with a warning",
        config_rejected=False,
        warnings=len(warnings),
        files_deleted=int(not table.exists(old)),
    )
    assert result.deleted == (old,)
    assert not table.exists(old)
    assert len(warnings) == 1
    assert "sleeper.table.gc.delay.minutes" in warnings[0]
    assert "17" in warnings[0]


def should_commit_one_delete_per_batch_of_the_instance_batch_size() -> None:
    # Given
    table = new_table(instance_values={"sleeper.gc.batch.size": "2"})
    files = [table.add_unreferenced(table.location(f"f{i}")) for i in range(5)]
    table.clock.advance(DELAY + SECOND)

    # When
    result = _gc(table)

    # Then
    assert set(result.deleted) == set(files)
    assert result.batches == 3
    assert [len(batch) for batch in _delete_commits(table)] == [2, 2, 1]
    assert table.tracked() == set()


def should_start_no_batch_after_the_most_files_per_run_but_finish_the_one_crossing_it() -> None:
    # Given
    table = new_table(instance_values={"sleeper.gc.batch.size": "2", "sleeper.gc.files.maximum": "3"})
    files = [table.add_unreferenced(table.location(f"f{i}")) for i in range(5)]
    table.clock.advance(DELAY + SECOND)

    # When
    result = _gc(table)

    # Then
    assert len(result.deleted) == 4
    assert table.tracked() == set(files) - set(result.deleted)
    assert all(table.exists(f) for f in table.tracked())


def should_commit_files_deleted_by_an_earlier_run_that_failed_before_its_commit() -> None:
    # Given a run deleted a file and its sidecar and then crashed before committing DELETE_FILES
    table = new_table()
    crashed = table.add_unreferenced(table.location("crashed"))
    other = table.add_unreferenced(table.location("other"))
    for location in (crashed, sketches_path(crashed)):
        delete(table.filesystem, filesystem_path(location))
    table.clock.advance(DELAY + SECOND)

    # When
    result = _gc(table)

    # Then
    assert set(result.deleted) == {crashed, other}
    assert result.problems == []
    assert table.tracked() == set()


def should_report_a_failed_commit_and_commit_the_files_on_the_next_run() -> None:
    # Given the DELETE_FILES commit fails on every attempt of the first run
    table = new_table()
    f = table.add_unreferenced(table.location("f"))
    table.clock.advance(DELAY + SECOND)
    table.backend.transaction_log(table.table_id, LogType.FILES).fail_next_add(times=10)

    # When
    first = _gc(table)
    second = _gc(table)

    # Then
    assert first.deleted == ()
    assert [p.filename for p in first.uncommitted] == [f]
    assert not table.exists(f)
    assert second.deleted == (f,)
    assert table.tracked() == set()


@pytest.mark.parametrize(
    "filename",
    [
        "s3a://data-bucket/other-table/data/partition_root/x.parquet",
        "s3a://other-bucket/table-1/data/partition_root/x.parquet",
        "s3a://data-bucket/table-10/data/partition_root/x.parquet",
        "s3a://data-bucket/table-1/../other-table/data/x.parquet",
        "s3a://data-bucket/table-1/%2e%2e/other-table/x.parquet",
        "file:///data-bucket/table-1/data/partition_root/x.parquet",
    ],
)
def should_refuse_and_keep_a_file_outside_the_table_prefix(filename: str, reliability: Reliability) -> None:
    # Given the state store tracks a file that is not the table's
    table = new_table()
    table.add_unreferenced(filename)
    inside = table.add_unreferenced(table.location("inside"))
    table.clock.advance(DELAY + SECOND)

    # When
    result = _gc(table)

    # Then
    reliability.record(
        "D4",
        case="GC side: a tracked file outside the table prefix",
        file=filename,
        refused_by_gc=[p.filename for p in result.refused].count(filename),
        deleted_outside_table=int(filename in result.deleted or not table.exists(filename)),
    )
    assert result.deleted == (inside,)
    assert [p.filename for p in result.refused] == [filename]
    assert table.exists(filename)
    assert table.tracked() == {filename}
    with pytest.raises(GarbageCollectionFailedError, match="not collected"):
        result.raise_if_failed()


@pytest.mark.parametrize(
    ("filename", "prefix"),
    [
        ("s3://data-bucket/t/data/partition_root/x.parquet", "s3a://data-bucket/t"),
        ("/work/instance/data/t/data/partition_root/x.parquet", "file:///work/instance/data/t"),
        ("file:///work/instance/data/t/data/partition_root/x.parquet", "file:///work/instance/data/t/"),
    ],
)
def should_accept_the_same_location_named_with_equivalent_schemes(filename: str, prefix: str) -> None:
    # When
    reason = file_outside_table(filename, prefix)

    # Then
    assert reason is None


def should_send_deletes_to_the_committer_when_commits_are_asynchronous() -> None:
    # Given
    table = new_table(properties={"sleeper.table.gc.commit.async": "true"})
    f = table.add_unreferenced(table.location("f"))
    table.clock.advance(DELAY + SECOND)
    instance = FakeInstance(tables={table.table_id: table})

    # When
    result = run_garbage_collection(instance, table.table_id, now=table.clock.now, filesystem=table.filesystem)

    # Then the file is gone, and stays tracked until the committer applies the request
    assert result.deleted == (f,)
    assert not table.exists(f)
    assert table.tracked() == {f}
    [message] = instance.queue(STATE_STORE_COMMITTER_QUEUE).receive(10)
    assert message.group_id == table.table_id
    transaction = StateStoreCommitRequest.from_json(message.body).transaction()
    assert transaction == DeleteFilesTransaction(filenames=(f,))


def should_raise_after_committing_the_rest_when_a_message_run_refuses_files() -> None:
    # Given
    table = new_table()
    outside = table.add_unreferenced("s3a://data-bucket/other-table/data/partition_root/x.parquet")
    inside = table.add_unreferenced(table.location("inside"))
    table.clock.advance(DELAY + SECOND)
    instance = FakeInstance(tables={table.table_id: table})

    # When / Then
    with pytest.raises(GarbageCollectionFailedError, match="other-table"):
        run_garbage_collection(instance, table.table_id, now=table.clock.now, filesystem=table.filesystem)
    assert table.tracked() == {outside}
    assert not table.exists(inside)


def should_read_settings_from_table_and_instance_properties() -> None:
    # Given
    table = new_table(
        properties={"sleeper.table.gc.delay.minutes": "45", "sleeper.table.gc.commit.async": "true"},
        instance_values={"sleeper.gc.batch.size": "7", "sleeper.gc.files.maximum": "70"},
    )

    # When
    settings = GcSettings.of(table)

    # Then
    assert settings == GcSettings(delay=timedelta(minutes=45), batch_size=7, max_files=70, async_commit=True)


def should_keep_every_file_a_query_planned_before_a_compaction_reads_until_the_query_bound(
    reliability: Reliability,
) -> None:
    # Given a table of two files, and a query planned against it at t (the table's defaults: a 20 minute delay, a
    # 60 s query cache and a 900 s query timeout)
    table = new_table()
    a, b = table.add_referenced("a"), table.add_referenced("b")
    planned_at = table.clock.now
    root = table.state_store.partition_tree().root
    plan = plan_table_query(
        Query(query_id="q1", table_name="t", regions=(root.region,)), table.state_store, table_id=table.table_id
    )
    planned = sorted({f for leaf in plan for f in leaf.files})
    bound = timedelta(
        seconds=table.properties.get_int(QUERY_PROCESSOR_CACHE_TIMEOUT)
        + table.properties.instance_properties.get_int(QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS)
    )

    # When compaction replaces them at t, GC runs every 30 s, and the query reads its planned files at each t+x < bound
    table.compact([a, b], "c")
    moments = [timedelta(seconds=s) for s in range(30, int(bound.total_seconds()), 30)] + [bound - SECOND]
    reads = failures = 0
    deleted: list[str] = []
    for x in moments:
        table.clock.now = planned_at + x
        deleted += _gc(table).deleted
        reads += len(planned)
        failures += sum(not table.exists(f) for f in planned)
    table.clock.advance(DELAY)
    after_delay = _gc(table).deleted

    # Then no read failed below the bound, and the files went once the delay had passed
    reliability.record(
        "D3",
        case="query planned at t, compaction and GC every 30 s, reads at t+x for x below cache + query timeout",
        bound_s=bound.total_seconds(),
        gc_runs=len(moments),
        reads=reads,
        query_failures=failures,
        deleted_below_bound=len(deleted),
        deleted_after_delay=len(after_delay),
    )
    assert planned == [a, b]
    assert failures == 0
    assert deleted == []
    assert set(after_delay) == {a, b}
