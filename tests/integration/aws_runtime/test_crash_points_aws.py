"""Crash points of docs/reliability.md on the AWS runtime (DynamoDB, S3 and SQS on moto), by an injected failure.

The point is armed to raise ``CrashPointReached`` in this process (a ``BaseException``, so no handler records it as an
error and recovers): the worker unwinds as if it had died there, and the test then does what a restarted worker
does. The local runtime's kill -9 of each point is in ``tests/integration/runtime/test_crash_points.py``.

The workers are the AWS runtime's own: the ingest and compaction ECS tasks (``sleeper.runtime.aws.containers``, run
in this process; a restarted task is a new ``AwsInstance``, as a new container builds) and the Lambda handlers
(``lambdas``, given the SQS event Lambda would send; a redelivery is the same event again, as Lambda sends it once
the dead invocation's messages become visible). A task that dies receives its message with a visibility timeout of 0,
so the message is visible again at once, as it would be once the dead task's visibility ran out.

Which point serves which row of 4(c):

======  ======================================================================================================
C1      ``ingest.after_files_written`` (ingest task), ``compaction.after_output_written`` (compaction task)
C2      ``compaction.after_commit`` (compaction task), ``committer.after_commit`` (state store committer Lambda)
C3      ``statestore.after_log_put`` (an ingest's ADD_FILES)
C4      ``snapshot.after_upload``, ``snapshot.after_metadata``
C5      ``gc.after_delete`` (garbage collector Lambda)
C6      ``statestore.after_snapshot_load``, with the log truncated behind a newer snapshot at that moment
C7      ``statestore.after_body_put`` (an INITIALISE_PARTITIONS body over 200 KiB)
C8      ``compaction.after_output_written`` with the job delivered twice, then again after GC removed its inputs
======  ======================================================================================================

``worker.before_message_delete`` is not reached here: only the local runner calls it. On AWS the message of a Lambda
is deleted by Lambda after the handler returns, and an ECS task's by the task loop straight after the job's outcome;
``compaction.after_commit`` and ``committer.after_commit`` are the last points before those deletes.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.maintenance import reinitialise_table
from sleeper.api.table import Table
from sleeper.compaction.task import TaskSettings
from sleeper.core import faults
from sleeper.core.faults import CrashPointReached
from sleeper.core.operations import COMPACTION_JOB_Q, INGEST_JOB_Q, PENDING_COMPACTION_JOB_BATCH_Q
from sleeper.core.operations import STATE_STORE_COMMITTER_Q as COMMITTER_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.trackers.compaction import CompactionJobCommitted, CompactionJobStatusType
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.emulator.provision import provision_instance
from sleeper.gc.collector import run_garbage_collection
from sleeper.gc.orphans import DEFAULT_BODY_MIN_AGE, DEFAULT_ORPHAN_MIN_AGE, sweep_orphans
from sleeper.ingest.task import ingest_task_settings, run_ingest_task
from sleeper.io.filesystem import exists, list_files
from sleeper.lambdas import sqs
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers import compaction as compaction_container
from sleeper.runtime.aws.containers import ingest as ingest_container
from sleeper.runtime.aws.containers import task_workspace
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.snapshots import filesystem_path
from sleeper.statestore.upkeep import create_snapshot, delete_old_transactions
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
from tests.integration.aws_runtime.conftest import (
    QUEUES,
    create_compaction_jobs_through_handlers,
    drain_event,
)
from tests.integration.aws_runtime.converged import (
    check_converged_on_aws,
    gc_lambda,
    restarted_instance,
    untracked_files,
)
from tests.integration.aws_runtime.direct_commits import compact_one_file_long_ago
from tests.model.invariants import Row, check_replay_from_snapshots, rows_of
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
SPLITS_OVER_200_KIB = 700
SYNC = {
    "sleeper.table.ingest.job.files.commit.async": "false",
    "sleeper.table.compaction.job.commit.async": "false",
    "sleeper.table.gc.commit.async": "false",
}
"""Ingest, compaction and GC commit in the worker itself (not through the committer, except where a test says so)."""
COMPACT_PAIRS = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "2",
}
QUICK_TASK = TaskSettings(wait_seconds=0, max_idle_seconds=0, delay_before_retry_seconds=0)
"""A compaction task that stops at the first empty receive."""
DYING_TASK = dataclasses.replace(QUICK_TASK, visibility_timeout_seconds=0)
"""A compaction task about to die: the message it takes is visible again at once, as after its visibility ran out."""


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """The package's instance (``conftest.py``), with the compaction job queue and the pending batch queue as well."""
    queues = (*QUEUES, COMPACTION_JOB_Q, PENDING_COMPACTION_JOB_BATCH_Q)
    config = provision_instance(aws_settings(), new_instance_id(), queues=queues)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        use_instance(None)
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


@pytest.fixture(autouse=True)
def _disarmed() -> object:
    faults.disarm_all()
    yield
    faults.disarm_all()


def _rows(start: int, count: int) -> pa.Table:
    keys = list(range(start, start + count))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([k % 13 for k in keys], pa.int64())})


def _table(instance: AwsInstance, properties: dict[str, str] | None = None) -> Table[AwsInstance]:
    return instance.create_table(
        f"crash-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[50], properties=properties or {}
    )


def _bodies(instance: AwsInstance, table: Table[AwsInstance]) -> list[str]:
    prefix = f"{instance.data_bucket}/{table.table_id}/statestore/transactions"
    return sorted(f.path for f in list_files(instance.filesystem, prefix))


def should_apply_an_ingest_once_when_it_crashed_after_its_log_put_and_is_run_again(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and an ingest that crashes after its ADD_FILES entry was put in DynamoDB
    table = _table(instance)
    table.ingest(_rows(0, 100), job_id="first", direct=True)
    with pytest.raises(CrashPointReached), faults.armed("statestore.after_log_put", times=1):
        table.ingest(_rows(100, 80), job_id="crashed", direct=True)
    # When the job is run again (the redelivered message), by a new table object as a restarted worker has
    again = instance.table(table.name)
    again.ingest(_rows(100, 80), job_id="crashed", direct=True)
    # Then its rows are there once, and the log holds one ADD_FILES for it
    expected = rows_of(_rows(0, 180))
    actual = rows_of(again.query())
    assert actual == expected
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0)
    )
    assert [e.transaction_number for e in entries] == list(range(1, len(entries) + 1))
    assert sum('"crashed"' in (e.body or "") for e in entries) == 1
    reliability.record(
        "C3",
        case="C3-ingest-dynamodb",
        crash_point="statestore.after_log_put",
        rows=sum(actual.values()),
        rows_lost=sum((expected - actual).values()),
        rows_duplicated=sum((actual - expected).values()),
        add_files_entries_for_job=1,
        unhandled_exceptions=0,
    )


def should_store_a_large_body_in_s3_once_when_its_writer_crashed_before_the_log_entry(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and a reinit with a partitions body over 200 KiB, crashing after the body's S3 put
    table = _table(instance)
    table.ingest(_rows(0, 100), direct=True)
    splits = [n * 10 for n in range(SPLITS_OVER_200_KIB)]
    transactions = table.state_store.last_transaction_numbers()
    with pytest.raises(CrashPointReached), faults.armed("statestore.after_body_put", times=1):
        reinitialise_table(table, splits)
    # Then the body is in S3 and the table unchanged
    (orphan,) = _bodies(instance, table)
    again = instance.table(table.name)
    assert again.state_store.last_transaction_numbers() == transactions
    assert rows_of(again.query()) == rows_of(_rows(0, 100))
    # When the reinit is run again
    reinitialise_table(again, splits)
    # Then the partitions log points at one body; the crashed attempt's body is unused
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.PARTITIONS).read_transactions_after(0)
    )
    used = {e.body_key for e in entries if e.body_key is not None}
    assert len(used) == 1
    bodies = _bodies(instance, table)
    unused = [b for b in bodies if not any(b.endswith(key) for key in used)]
    assert unused == [orphan]
    final = instance.table(table.name)
    assert len(final.leaf_partitions()) == SPLITS_OVER_200_KIB + 1
    assert rows_of(final.query()) == {}
    # When the orphan sweeper runs now, and again after the bodies' minimum age
    options = instance.filesystem_options
    early = sweep_orphans(final, options=options)
    late = sweep_orphans(final, options=options, now=datetime.now(tz=UTC) + DEFAULT_BODY_MIN_AGE + timedelta(minutes=1))
    # Then the unused body is kept while young and swept after; the used one stays and the table still reads it
    assert len(early.bodies_young) == 1 and orphan.endswith(early.bodies_young[0]) and early.bodies_deleted == ()
    assert len(late.bodies_deleted) == 1 and orphan.endswith(late.bodies_deleted[0])
    assert [b for b in _bodies(instance, table) if any(b.endswith(key) for key in used)] == _bodies(instance, table)
    assert len(instance.table(table.name).leaf_partitions()) == SPLITS_OVER_200_KIB + 1
    reliability.record(
        "C7",
        case="C7-partitions-body-s3",
        crash_point="statestore.after_body_put",
        bodies_referenced=len(used),
        unused_bodies_left=len(unused),
        unused_bodies_swept_before_min_age=len(early.bodies_deleted),
        unused_bodies_swept=len(late.bodies_deleted),
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )


@pytest.mark.parametrize("point", ["snapshot.after_upload", "snapshot.after_metadata"])
def should_keep_the_latest_snapshot_live_and_moving_forward_when_a_creator_crashes(
    instance: AwsInstance, point: str, reliability: Reliability
) -> None:
    # Given a table with a snapshot at its first transactions, and more transactions since
    table = _table(instance)
    table.ingest(_rows(0, 40), direct=True)
    first = create_snapshot(instance.table(table.name).state_store).created
    table.ingest(_rows(40, 40), direct=True)
    table.ingest(_rows(80, 40), direct=True)
    store = instance.table(table.name).state_store
    snapshots = store.snapshot_store
    assert snapshots is not None
    before = {log: snapshots.latest(log) for log in LogType}
    # When the snapshot creator crashes at the point
    with pytest.raises(CrashPointReached), faults.armed(point, times=1):
        create_snapshot(instance.table(table.name).state_store)
    # Then the latest snapshot is the earlier one, or (after its metadata) the new one; its file is there
    for log in LogType:
        latest = snapshots.latest(log)
        assert latest is not None
        assert latest.transaction_number >= before[log].transaction_number  # type: ignore[union-attr]
        with instance.filesystem.open_input_stream(filesystem_path(latest.path)):
            pass
    # When the creator runs again
    create_snapshot(instance.table(table.name).state_store)
    # Then the latest pointer moved forward to the head, and every snapshot plus the log tail equals the full replay
    store = instance.table(table.name).state_store
    store.refresh()
    heads = store.last_transaction_numbers()
    for log in LogType:
        latest = snapshots.latest(log)
        assert latest is not None and latest.transaction_number == heads[log]
    replayed = check_replay_from_snapshots(
        backend=instance.state_store_backend,
        snapshots=snapshots,
        schema=SCHEMA,
        table_id=table.table_id,
        expected_files=store.files_state(),
        expected_partitions=store.partitions_state(),
        deleted_up_to={},
        clock=lambda: datetime.now(tz=UTC) + timedelta(seconds=0),
    )
    assert rows_of(instance.table(table.name).query()) == rows_of(_rows(0, 120))
    reliability.record(
        "C4",
        case=f"C4-{point}-dynamodb",
        crash_point=point,
        first_snapshots=len(first),
        snapshots_replayed=replayed,
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )


# --- the workers, as a restart runs them --------------------------------------------------------------------------
def _ingest_job(instance: AwsInstance, table: Table[AwsInstance], data: pa.Table) -> tuple[str, str]:
    """An ingest job of the rows, its file uploaded beside the table: (job id, message body)."""
    source = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(data, source, filesystem=instance.filesystem)
    job_id = str(uuid.uuid4())
    return job_id, json.dumps({"id": job_id, "tableName": table.name, "files": [source]})


def _dying_ingest_task(instance: AwsInstance, point: str) -> None:
    """Runs the ingest task with a crash point armed; it dies there, its message visible again at once."""
    settings = dataclasses.replace(
        ingest_task_settings(instance.properties, wait_seconds=0), visibility_timeout_seconds=0
    )
    with pytest.raises(CrashPointReached), faults.armed(point, times=1), task_workspace() as workspace:
        run_ingest_task(instance, workspace, settings)


def _dying_compaction_task(instance: AwsInstance, point: str) -> None:
    """Runs the compaction task with a crash point armed; it dies there, its message visible again at once."""
    with pytest.raises(CrashPointReached), faults.armed(point, times=1):
        compaction_container.run_task(instance, settings=DYING_TASK)


def _created_compaction_job(instance: AwsInstance, table: Table[AwsInstance]) -> str:
    """Runs compaction job creation for the table (its Lambda, then the committer's and the dispatcher's for its
    pending batch) and takes the one job sent: the message body."""
    (body,) = create_compaction_jobs_through_handlers(instance, table.table_id)
    return body


def _two_files_to_compact(instance: AwsInstance) -> tuple[Table[AwsInstance], Counter[Row]]:
    """A table whose left leaf holds two files (keys 0-19 and 10-29): one compaction job of both."""
    table = _table(instance, {**SYNC, **COMPACT_PAIRS})
    table.ingest(_rows(0, 20), direct=True)
    table.ingest(_rows(10, 20), direct=True)
    return table, rows_of(_rows(0, 20)) + rows_of(_rows(10, 20))


def _left_on(instance: AwsInstance, logical_name: str) -> int:
    """Messages of a queue not deleted: visible or in flight."""
    counts = instance.queue(logical_name).approximate_counts()
    return counts.visible + counts.in_flight


# --- C1: files written, not committed -----------------------------------------------------------------------------
def should_commit_an_ingest_once_and_sweep_its_orphans_late_when_it_crashed_after_writing_its_files(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and an ingest job of rows on both leaves
    table = _table(instance, SYNC)
    table.ingest(_rows(0, 30), direct=True)
    job_id, body = _ingest_job(instance, table, _rows(30, 40))
    instance.queue(INGEST_JOB_Q).send(body)
    transactions = table.state_store.last_transaction_numbers()
    # When the ingest task dies after writing the job's data files, before ADD_FILES
    _dying_ingest_task(instance, "ingest.after_files_written")
    # Then the table is unchanged, and the files written (a data file and its sketches) are untracked
    after_crash = restarted_instance(instance).table(table.name)
    assert after_crash.state_store.last_transaction_numbers() == transactions
    assert rows_of(after_crash.query()) == rows_of(_rows(0, 30))
    written = untracked_files(instance, after_crash, after_crash.state_store.files_state())
    assert sorted(posixpath.splitext(path)[1] for path in written) == [".parquet", ".sketches"]
    # When the job's message is delivered to a new task
    summary = ingest_container.run_task(restarted_instance(instance), wait_seconds=0)
    # Then the job finished once, its rows are there once, and the crashed run's files are the only orphans
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert _left_on(instance, INGEST_JOB_Q) == 0
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0)
    )
    assert sum(job_id in (e.body or "") for e in entries) == 1
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None
    finished = [run for run in status.runs if run.status is IngestJobStatusType.FINISHED]
    assert [run.rows_written for run in finished] == [40]
    converged = check_converged_on_aws(
        instance, table.name, rows_of(_rows(0, 70)), schema=SCHEMA, restart=True, run_gc_lambda=True
    )
    assert converged.orphans == len(written)
    reliability.record(
        "C1",
        case="C1-ingest-aws",
        crash_point="ingest.after_files_written",
        deliveries=2,
        tracker_runs=[run.status.value for run in status.runs],
        unhandled_exceptions=0,
        **converged.figures(),
    )


def should_commit_a_compaction_once_and_keep_its_output_while_its_job_can_commit_when_it_crashed_after_writing_it(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table of two files on one leaf, and a compaction job of both on the queue
    table, expected = _two_files_to_compact(instance)
    job = json.loads(_created_compaction_job(instance, table))
    instance.queue(COMPACTION_JOB_Q).send(json.dumps(job))
    files_before = sorted(table.state_store.files_state().files(), key=lambda f: f.filename)
    # When the compaction task dies after writing the job's output, before the commit
    _dying_compaction_task(instance, "compaction.after_output_written")
    # Then the table is unchanged, and the output is in S3, untracked
    after_crash = restarted_instance(instance).table(table.name)
    files_now = sorted(after_crash.state_store.files_state().files(), key=lambda f: f.filename)
    assert [(f.filename, f.references) for f in files_now] == [(f.filename, f.references) for f in files_before]
    untracked = untracked_files(instance, after_crash, after_crash.state_store.files_state())
    output = job["outputFile"].removeprefix("s3a://")
    assert output in untracked
    # and the sweep keeps it even past the minimum age, since its job holds its inputs and may still commit
    kept = sweep_orphans(
        after_crash,
        now=max(untracked.values()) + DEFAULT_ORPHAN_MIN_AGE + timedelta(days=1),
        options=instance.filesystem_options,
    )
    assert kept.deleted == ()
    assert output in {p.removeprefix("s3a://") for p in kept.in_flight}
    # When the job's message is delivered to a new task
    summary = compaction_container.run_task(restarted_instance(instance), settings=QUICK_TASK)
    # Then it committed once: one output with every row, the tracker finished with one commit
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert _left_on(instance, COMPACTION_JOB_Q) == 0
    assert [f.filename for f in restarted_instance(instance).table(table.name).file_references()] == [job["outputFile"]]
    status = instance.compaction_job_tracker.job(job["jobId"])
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    commits = [u for run in status.runs for u in run.updates if isinstance(u, CompactionJobCommitted)]
    assert len(commits) == 1
    converged = check_converged_on_aws(instance, table.name, expected, schema=SCHEMA, restart=True, run_gc_lambda=True)
    reliability.record(
        "C1",
        case="C1-compaction-aws",
        crash_point="compaction.after_output_written",
        deliveries=2,
        output_kept_while_job_can_commit=True,
        tracker_runs=[run.status.value for run in status.runs],
        tracker_commits=len(commits),
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- C2: committed, message not deleted ---------------------------------------------------------------------------
def should_treat_a_compaction_delivered_again_after_its_commit_landed_as_already_committed(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table of two files on one leaf, and a compaction job of both on the queue
    table, expected = _two_files_to_compact(instance)
    job = json.loads(_created_compaction_job(instance, table))
    instance.queue(COMPACTION_JOB_Q).send(json.dumps(job))
    # When the compaction task dies after the commit, before the message is deleted
    _dying_compaction_task(instance, "compaction.after_commit")
    # Then the commit landed
    after_crash = restarted_instance(instance).table(table.name)
    assert [f.filename for f in after_crash.file_references()] == [job["outputFile"]]
    transactions = after_crash.state_store.last_transaction_numbers()
    # When the message is delivered to a new task
    summary = compaction_container.run_task(restarted_instance(instance), settings=QUICK_TASK)
    # Then it is a no-op: nothing committed, the message deleted, the tracker shows one commit and no failure
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.ALREADY_COMMITTED]
    assert restarted_instance(instance).table(table.name).state_store.last_transaction_numbers() == transactions
    assert _left_on(instance, COMPACTION_JOB_Q) == 0
    status = instance.compaction_job_tracker.job(job["jobId"])
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    commits = [u for run in status.runs for u in run.updates if isinstance(u, CompactionJobCommitted)]
    assert len(commits) == 1
    assert not any(run.status is CompactionJobStatusType.FAILED for run in status.runs)
    converged = check_converged_on_aws(instance, table.name, expected, schema=SCHEMA, restart=True, run_gc_lambda=True)
    reliability.record(
        "C2",
        case="C2-compaction-aws",
        crash_point="compaction.after_commit",
        deliveries=2,
        redelivery_outcome=summary.outcomes[0].outcome.value,
        tracker_commits=len(commits),
        spurious_failures=0,
        unhandled_exceptions=0,
        **converged.figures(),
    )


def should_apply_a_commit_request_once_when_the_committer_crashed_after_applying_it(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with rows, and an ingest job whose files are committed through the state store committer
    table = _table(instance, {"sleeper.table.ingest.job.files.commit.async": "true"})
    table.ingest(_rows(0, 30), direct=True)
    job_id, body = _ingest_job(instance, table, _rows(30, 40))
    instance.queue(INGEST_JOB_Q).send(body)
    summary = ingest_container.run_task(instance, wait_seconds=0)
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    event = drain_event(instance, COMMITTER_Q)
    assert len(event["Records"]) == 1  # type: ignore[arg-type]
    # When the committer Lambda dies after applying the request, before recording it and returning
    with pytest.raises(CrashPointReached), faults.armed("committer.after_commit", times=1):
        sqs.statestore_committer(event)
    # Then the rows landed, but the tracker does not show the job's files added yet
    assert rows_of(restarted_instance(instance).table(table.name).query()) == rows_of(_rows(0, 70))
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.UNCOMMITTED
    transactions = restarted_instance(instance).table(table.name).state_store.last_transaction_numbers()
    # When Lambda delivers the request again
    assert sqs.statestore_committer(event) == {"batchItemFailures": []}
    # Then nothing more is committed, and the tracker shows the job finished once
    assert restarted_instance(instance).table(table.name).state_store.last_transaction_numbers() == transactions
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0)
    )
    add_files = [e for e in entries if e.transaction_type is TransactionType.ADD_FILES and job_id in (e.body or "")]
    assert len(add_files) == 1
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert sum(run.status is IngestJobStatusType.FINISHED for run in status.runs) == 1
    converged = check_converged_on_aws(
        instance, table.name, rows_of(_rows(0, 70)), schema=SCHEMA, restart=True, run_gc_lambda=True
    )
    reliability.record(
        "C2",
        case="C2-committer-aws",
        crash_point="committer.after_commit",
        deliveries=2,
        add_files_entries_for_job=len(add_files),
        tracker_runs=[run.status.value for run in status.runs],
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- C5: GC deleted, DELETE_FILES not committed -------------------------------------------------------------------
def should_tolerate_the_missing_object_when_gc_is_run_again_after_crashing_between_delete_and_commit(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table whose file was replaced by a compaction a day ago, so the old file is due for collection
    table = _table(instance, SYNC)
    table.ingest(_rows(0, 30), direct=True)
    old, new = compact_one_file_long_ago(instance, table)
    fs = instance.filesystem
    # When the GC Lambda dies after deleting the old file, before DELETE_FILES
    with pytest.raises(CrashPointReached), faults.armed("gc.after_delete", times=1):
        gc_lambda(table)
    # Then the old file is gone from S3 but still in the table's files, unreferenced; the output is kept
    assert not exists(fs, old.removeprefix("s3a://"))
    assert exists(fs, new.removeprefix("s3a://"))
    after_crash = restarted_instance(instance).table(table.name)
    assert sorted(f.filename for f in after_crash.files()) == sorted([old, new])
    # When the GC message is delivered again
    assert gc_lambda(table) == {"batchItemFailures": []}
    # Then the missing object is tolerated: DELETE_FILES committed, the output and the rows unchanged
    after = restarted_instance(instance).table(table.name)
    assert [f.filename for f in after.files()] == [new]
    assert exists(fs, new.removeprefix("s3a://"))
    converged = check_converged_on_aws(
        instance, table.name, rows_of(_rows(0, 30)), schema=SCHEMA, restart=True, run_gc_lambda=True
    )
    reliability.record(
        "C5",
        case="C5-gc-aws",
        crash_point="gc.after_delete",
        deliveries=2,
        rerun_failures=0,
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- C6: the log truncated while a reader is on an old snapshot ---------------------------------------------------
def should_bring_a_reader_on_an_old_snapshot_to_the_head_when_the_log_is_truncated_meanwhile(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a table with a snapshot at its first ingest and two ingests since, whose logs are truncated right behind
    # the latest snapshot
    table = _table(instance, {"sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot": "1"})
    table.ingest(_rows(0, 20), direct=True)
    old = create_snapshot(table.state_store).created
    assert old
    table.ingest(_rows(20, 20), direct=True)
    table.ingest(_rows(40, 20), direct=True)
    truncated: dict[LogType, int] = {}
    reader_loads: list[str] = []
    meanwhile = {"busy": False}

    def truncate_behind_a_new_snapshot(name: str) -> None:
        if meanwhile["busy"]:
            return  # a snapshot load by the writer below, not by the reader
        reader_loads.append(name)
        if len(reader_loads) > 1:
            return
        # meanwhile: another ingest, a new snapshot, the log truncated up to it, and one more ingest after it
        meanwhile["busy"] = True
        try:
            table.ingest(_rows(60, 20), direct=True)
            assert create_snapshot(table.state_store).created
            deleted = delete_old_transactions(table.state_store, now=datetime.now(tz=UTC) + timedelta(days=1))
            truncated.update(deleted.deleted_up_to)
            table.ingest(_rows(80, 20), direct=True)
        finally:
            meanwhile["busy"] = False

    # When a new reader loads the old snapshot of the files log, and the log is truncated just then
    reader = restarted_instance(instance).table(table.name).state_store
    with faults.armed("statestore.after_snapshot_load", truncate_behind_a_new_snapshot):
        files = reader.files_state()
    # Then the log was truncated past the old snapshot, so the reader found a gap after it and loaded the new one
    (old_files,) = [m for m in old if m.log_type is LogType.FILES]
    assert truncated[LogType.FILES] > old_files.transaction_number + 1
    assert len(reader_loads) == 2
    # and it reached the head, with every file of the five ingests
    table.state_store.refresh()
    heads = table.state_store.last_transaction_numbers()
    assert reader.last_transaction_numbers()[LogType.FILES] == heads[LogType.FILES]
    assert files == table.state_store.files_state()
    assert sum(r.number_of_rows for r in files.references()) == 100
    converged = check_converged_on_aws(
        instance, table.name, rows_of(_rows(0, 100)), schema=SCHEMA, restart=True, run_gc_lambda=True
    )
    reliability.record(
        "C6",
        case="C6-truncated-behind-reader-aws",
        crash_point="statestore.after_snapshot_load",
        reader_snapshot=old_files.transaction_number,
        reader_snapshot_loads=len(reader_loads),
        truncated_up_to=truncated[LogType.FILES],
        head=heads[LogType.FILES],
        reader_reached_head=True,
        states_with_gaps=0,
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- C8: redelivery after GC removed the inputs -------------------------------------------------------------------
def should_refuse_a_compaction_job_delivered_again_after_gc_removed_its_inputs(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given a compaction job delivered twice, the task taking the first copy dying after writing its output
    table, expected = _two_files_to_compact(instance)
    body = _created_compaction_job(instance, table)
    job = json.loads(body)
    queue = instance.queue(COMPACTION_JOB_Q)
    queue.send(body)
    queue.send(body)
    _dying_compaction_task(instance, "compaction.after_output_written")
    # When a new task takes both copies (one commits), and a day later the GC removes the inputs
    summary = compaction_container.run_task(restarted_instance(instance), settings=QUICK_TASK)
    assert sorted(o.outcome.value for o in summary.outcomes) == ["ALREADY_COMMITTED", "FINISHED"]
    restarted = restarted_instance(instance)
    collected = run_garbage_collection(
        restarted, table.table_id, now=datetime.now(tz=UTC) + timedelta(days=1), options=restarted.filesystem_options
    )
    assert set(job["inputFiles"]) <= set(collected.deleted)
    assert not any(exists(instance.filesystem, name.removeprefix("s3a://")) for name in job["inputFiles"])
    output = job["outputFile"].removeprefix("s3a://")
    written = instance.filesystem.get_file_info(output).mtime
    transactions = restarted_instance(instance).table(table.name).state_store.last_transaction_numbers()
    # When the job is delivered once more
    queue.send(body)
    late = compaction_container.run_task(restarted_instance(instance), settings=QUICK_TASK)
    # Then the message is finished with: nothing committed, the output not rewritten, the job still finished
    assert [o.outcome for o in late.outcomes] == [JobOutcome.ALREADY_COMMITTED]
    assert _left_on(instance, COMPACTION_JOB_Q) == 0
    assert restarted_instance(instance).table(table.name).state_store.last_transaction_numbers() == transactions
    assert instance.filesystem.get_file_info(output).mtime == written
    status = instance.compaction_job_tracker.job(job["jobId"])
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    converged = check_converged_on_aws(instance, table.name, expected, schema=SCHEMA, restart=True, run_gc_lambda=True)
    reliability.record(
        "C8",
        case="C8-redelivered-after-gc-aws",
        crash_point="compaction.after_output_written",
        late_delivery_outcome=late.outcomes[0].outcome.value,
        late_delivery_reason="; ".join(late.outcomes[0].reasons),
        tracker_runs=[run.status.value for run in status.runs],
        output_rewritten=False,
        unhandled_exceptions=0,
        **converged.figures(),
    )
