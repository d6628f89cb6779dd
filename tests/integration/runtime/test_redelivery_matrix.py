"""B1 redelivery matrix (docs/reliability.md): every message type delivered twice, three ways.

Each message is the one the system itself sent (an ingest job, the committer request an asynchronous ingest sent, a
compaction job, the batched compaction commit, a split job, the query and one of its sub-queries, a batcher
submission, a bulk import job, a bulk export and one of its leaf partition exports, and the scheduled per-table
messages: job creation, split finding, GC, snapshot, transaction deletion).
It is handled once as usual, then delivered again:

* **back to back**: handled again at once (SQS delivering a message twice, or a lost delete);
* **after the window**: handled again after the instance ran until idle (past FIFO's 5-minute deduplication window,
  so nothing collapses the duplicate);
* **to two workers at once**: two workers (threads, each with its own instance object on the same SQLite database)
  handle it at the same moment, instead of the single first delivery.

After the instance runs until idle, the table must hold exactly the acknowledged rows with I1-I7 holding
(``crash_harness.check_converged``: count and checksum, contiguous logs, references, tree, jobs, replay, orphans swept
only after their minimum age); a query's results must hold each row once; no redelivery may be reported as a failure
(spurious failures = 0) and nothing may be dead-lettered; an export's files must hold each row of the table once, one
file per leaf.

A bulk import job runs local Spark (PySpark), on a table that commits bulk import files at the end of the job (as the
ingest job's case does; the committer request carries the asynchronous commit). Its two workers at once are two
processes, since one process has one Spark session (a run stops it when done, under the other); starting two Spark
JVMs takes about a minute on a small machine, so that case runs in the nightly profile only (``SLEEPER_NIGHTLY=1``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_export.model import BulkExportQuery
from sleeper.bulk_import.entry import BulkImportJobFailedError
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.core import operations as ops
from sleeper.core.exceptions import SleeperError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.query import QueryState
from sleeper.query.results_reader import read_results_files
from sleeper.runtime.local.api import LocalApi, pause
from sleeper.runtime.local.handlers import BULK_IMPORT_QUEUE, default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.splitting.finder import run_find_partitions_to_split
from tests.integration.runtime.crash_harness import (
    REPOSITORY,
    SCHEMA,
    EarlierInstance,
    check_converged,
    dead_letters,
    restart_until_idle,
    rows,
)
from tests.model.invariants import Row, local_path, rows_of
from tests.reliability_report import NIGHTLY, Reliability

pytestmark = pytest.mark.integration

TABLE = "t"
HANDLERS = default_handlers()


@dataclass
class Case:
    """A message to deliver twice, on its instance, with the rows acknowledged to the table."""

    instance: LocalInstance
    queue: str
    body: str
    expected: Counter[Row]
    query: tuple[str, int, int] | None = None  # (query id, min key, max key)
    export: str | None = None  # the bulk export's id
    job_id: str | None = None  # a bulk import job's id, to find its runs in the ingest job tracker


def _instance(tmp_path: Path, properties: dict[str, str] | None = None) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table(TABLE, SCHEMA, split_points=[500], properties=properties or {})
    return instance


def _ingested(instance: LocalInstance, *batches: pa.Table) -> Counter[Row]:
    expected: Counter[Row] = Counter()
    for batch in batches:
        instance.table(TABLE).ingest(batch)
        expected.update(rows_of(batch))
    return expected


def _take(instance: LocalInstance, queue: str) -> str:
    """The one message on a queue, received and deleted (its first delivery is handled by the test)."""
    q = instance.queue(queue)
    (message,) = q.receive(1)
    q.delete(message.receipt_handle)
    return message.body


def _ingest_job(tmp_path: Path, instance: LocalInstance, data: pa.Table) -> str:
    source = tmp_path / f"in-{uuid.uuid4().hex[:6]}.parquet"
    pq.write_table(data, source)
    return IngestJob(id=f"job-{uuid.uuid4().hex[:6]}", files=(str(source),), table_name=TABLE).to_json()


# --- the message types ------------------------------------------------------------------------------------------------
def _ingest(tmp_path: Path) -> Case:
    instance = _instance(tmp_path, {"sleeper.table.ingest.job.files.commit.async": "false"})
    expected = _ingested(instance, rows(0, 300))
    body = _ingest_job(tmp_path, instance, rows(200, 500))
    expected = rows_of(pa.concat_tables([rows(0, 300), rows(200, 500)]))
    return Case(instance, ops.INGEST_JOB_Q, body, expected)


def _committer(tmp_path: Path) -> Case:
    instance = _instance(tmp_path, {"sleeper.table.ingest.job.files.commit.async": "true"})
    HANDLERS[ops.INGEST_JOB_Q](instance, _ingest_job(tmp_path, instance, rows(0, 400)))
    return Case(
        instance, ops.STATE_STORE_COMMITTER_Q, _take(instance, ops.STATE_STORE_COMMITTER_Q), (rows_of(rows(0, 400)))
    )


_COMPACT = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "2",
}


def _compaction_job(tmp_path: Path) -> Case:
    instance = _instance(tmp_path, {**_COMPACT, "sleeper.table.compaction.job.commit.async": "false"})
    expected = _ingested(instance, rows(0, 400), rows(300, 400))
    create_compaction_jobs(
        instance.table(TABLE), instance.queue(ops.COMPACTION_JOB_Q), instance.compaction_job_tracker, compact_all=True
    )
    q = instance.queue(ops.COMPACTION_JOB_Q)
    messages = q.receive(10)
    q.delete(messages[0].receipt_handle)
    for other in messages[1:]:
        q.change_visibility(other.receipt_handle, 0)  # the other leaf's job stays queued, for the run until idle
    bodies = [m.body for m in messages]
    return Case(instance, ops.COMPACTION_JOB_Q, bodies[0], expected)


def _compaction_commit(tmp_path: Path) -> Case:
    instance = _instance(
        tmp_path,
        {
            **_COMPACT,
            "sleeper.table.compaction.job.commit.async": "true",
            "sleeper.table.compaction.job.async.commit.batching": "true",
        },
    )
    expected = _ingested(instance, rows(0, 400), rows(300, 400))
    create_compaction_jobs(
        instance.table(TABLE), instance.queue(ops.COMPACTION_JOB_Q), instance.compaction_job_tracker, compact_all=True
    )
    HANDLERS[ops.COMPACTION_JOB_Q](instance, _take_first(instance, ops.COMPACTION_JOB_Q))
    return Case(instance, ops.COMPACTION_COMMIT_Q, _take(instance, ops.COMPACTION_COMMIT_Q), expected)


def _take_first(instance: LocalInstance, queue: str) -> str:
    q = instance.queue(queue)
    message = q.receive(1)[0]
    q.delete(message.receipt_handle)
    return message.body


def _split_job(tmp_path: Path) -> Case:
    instance = _instance(
        tmp_path,
        {
            "sleeper.table.partition.splitting.threshold": "100",
            "sleeper.table.partition.splitting.commit.async": "false",
        },
    )
    expected = _ingested(instance, rows(0, 400))
    run_find_partitions_to_split(instance, instance.table(TABLE).table_id)
    return Case(instance, ops.PARTITION_SPLITTING_JOB_Q, _take_first(instance, ops.PARTITION_SPLITTING_JOB_Q), expected)


def _query(tmp_path: Path) -> Case:
    instance = _instance(tmp_path)
    expected = _ingested(instance, rows(0, 700))
    query_id = f"q-{uuid.uuid4().hex[:8]}"
    region = {"key": {"min": 100, "minInclusive": True, "max": 650, "maxInclusive": False}}
    body = json.dumps({"queryId": query_id, "tableName": TABLE, "type": "Query", "regions": [region]})
    return Case(instance, ops.QUERY_Q, body, expected, query=(query_id, 100, 650))


def _sub_query(tmp_path: Path) -> Case:
    case = _query(tmp_path)
    HANDLERS[ops.QUERY_Q](case.instance, case.body)
    return Case(
        case.instance,
        ops.LEAF_PARTITION_QUERY_Q,
        _take_first(case.instance, ops.LEAF_PARTITION_QUERY_Q),
        case.expected,
        query=case.query,
    )


def _bulk_import(tmp_path: Path) -> Case:
    pytest.importorskip("pyspark")
    instance = _instance(
        tmp_path,
        {
            "sleeper.table.bulk.import.min.leaf.partitions": "2",
            "sleeper.table.bulk.import.job.files.commit.async": "false",
        },
    )
    expected = _ingested(instance, rows(0, 300))
    source = tmp_path / "bulk.parquet"
    pq.write_table(rows(200, 500), source)
    job = BulkImportJob(id=f"bulk-{uuid.uuid4().hex[:6]}", table_name=TABLE, files=(str(source),))
    LocalApi(instance).send_bulk_import_job(job)
    expected.update(rows_of(rows(200, 500)))
    return Case(instance, BULK_IMPORT_QUEUE, _take(instance, BULK_IMPORT_QUEUE), expected, job_id=job.id)


def _bulk_export(tmp_path: Path) -> Case:
    instance = _instance(tmp_path)
    expected = _ingested(instance, rows(0, 350), rows(300, 400))
    export_id = f"export-{uuid.uuid4().hex[:8]}"
    body = BulkExportQuery(export_id=export_id, table_name=TABLE).to_json()
    return Case(instance, ops.BULK_EXPORT_Q, body, expected, export=export_id)


def _leaf_partition_export(tmp_path: Path) -> Case:
    case = _bulk_export(tmp_path)
    HANDLERS[ops.BULK_EXPORT_Q](case.instance, case.body)
    body = _take_first(case.instance, ops.LEAF_PARTITION_BULK_EXPORT_Q)  # the other leaf's export stays queued
    return Case(case.instance, ops.LEAF_PARTITION_BULK_EXPORT_Q, body, case.expected, export=case.export)


def _batcher(tmp_path: Path) -> Case:
    instance = _instance(
        tmp_path,
        {
            "sleeper.table.ingest.job.files.commit.async": "false",
            "sleeper.table.ingest.batcher.job.min.files": "1",
            "sleeper.table.ingest.batcher.job.min.size": "1",
            "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
        },
    )
    source = tmp_path / "batched.parquet"
    pq.write_table(rows(0, 250), source)
    body = json.dumps({"tableName": TABLE, "files": [str(source)]})
    return Case(instance, ops.INGEST_BATCHER_SUBMIT_Q, body, (rows_of(rows(0, 250))))


def _per_table(
    queue: str, *, compacted: bool = False, properties: dict[str, str] | None = None
) -> Callable[[Path], Case]:
    def make(tmp_path: Path) -> Case:
        instance = _instance(
            tmp_path,
            {
                **(properties or {}),
                **_COMPACT,
                "sleeper.table.compaction.job.commit.async": "false",
                "sleeper.table.gc.commit.async": "false",
                "sleeper.table.partition.splitting.threshold": "300",
                "sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot": "1",
                "sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes": "1",
            },
        )
        expected = _ingested(instance, rows(0, 400), rows(300, 400))
        if compacted:  # compacted an hour ago: the inputs are old enough to collect
            earlier = EarlierInstance(instance.directory, timedelta(hours=1))
            pause(earlier)
            restart_until_idle(instance.directory, earlier)
            (instance.directory / "scheduler.paused").unlink()
        return Case(instance, queue, instance.table(TABLE).table_id, expected)

    return make


TYPES: dict[str, Callable[[Path], Case]] = {
    "ingest job": _ingest,
    "committer request": _committer,
    "compaction job": _compaction_job,
    "compaction commit batch": _compaction_commit,
    "split job": _split_job,
    "query": _query,
    "sub-query": _sub_query,
    "batcher submission": _batcher,
    "bulk import job": _bulk_import,
    "bulk export": _bulk_export,
    "leaf partition export": _leaf_partition_export,
    "compaction job creation": _per_table(
        ops.COMPACTION_JOB_CREATION_Q, properties={"sleeper.table.compaction.job.id.assignment.commit.async": "false"}
    ),
    "compaction job creation, assigned by the committer": _per_table(
        ops.COMPACTION_JOB_CREATION_Q, properties={"sleeper.table.compaction.job.id.assignment.commit.async": "true"}
    ),
    "split finding": _per_table(ops.FIND_PARTITIONS_TO_SPLIT_Q),
    "garbage collection": _per_table(ops.GC_JOB_Q, compacted=True),
    "snapshot creation": _per_table(ops.SNAPSHOT_CREATION_Q),
    "transaction deletion": _per_table(ops.TRANSACTION_DELETION_Q, compacted=True),
}
MODES = ("back to back", "after the window", "two workers at once")
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}
_LOST_RACE = (
    "the second delivery plans the same jobs before the first's assignment has landed: the committer refuses its "
    "assignment and the dispatcher dead-letters its pending batch, as Sleeper's does (nothing of it is sent)"
)
EXPECTED_DEAD_LETTERS: dict[tuple[str, str], tuple[dict[str, int], str]] = {
    ("compaction job creation, assigned by the committer", "back to back"): (
        {ops.PENDING_COMPACTION_JOB_BATCH_Q: 1},
        _LOST_RACE,
    ),
    ("compaction job creation, assigned by the committer", "two workers at once"): (
        {ops.PENDING_COMPACTION_JOB_BATCH_Q: 1},
        _LOST_RACE,
    ),
}
"""Dead letters a redelivery leaves by design, with the reason: none is a failure."""
SLOW = {"bulk import job"}
"""Types that take more than a few seconds (Spark starts), marked ``slow``."""
NIGHTLY_ONLY = {
    ("bulk import job", "two workers at once"): "two Spark JVMs in two processes take about a minute to start",
}


def _deliver(instance: LocalInstance, queue: str, body: str) -> str | None:
    """Handles a message as a worker does; returns the error's name if it failed (the worker would retry it)."""
    try:
        HANDLERS[queue](instance, body)
    except (SleeperError, BulkImportJobFailedError) as e:
        return type(e).__name__
    return None


_WORKER = """
import sys
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.tasks import local_task
directory, queue, body = sys.argv[1:]
instance = LocalInstance(directory)
with local_task(instance):
    default_handlers()[queue](instance, body)
"""
"""A worker process handling one message (as a ``sleeper run`` worker does); it exits non-zero if the handler raised."""


def _deliver_in_process(directory: Path, queue: str, body: str) -> str | None:
    """Handles a message in a worker process of its own; returns the end of its error output if it failed."""
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(directory), queue, body],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in TYPES])
def should_leave_the_table_as_one_delivery_does_when_a_message_comes_twice(
    tmp_path: Path, kind: str, mode: str, reliability: Reliability, request: pytest.FixtureRequest
) -> None:
    if (kind, mode) in KNOWN_DEFECTS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_DEFECTS[kind, mode], strict=True))
    if (kind, mode) in NIGHTLY_ONLY and not NIGHTLY:
        pytest.skip(f"nightly profile (SLEEPER_NIGHTLY=1): {NIGHTLY_ONLY[kind, mode]}")
    # Given a message the system sent, on its instance
    case = TYPES[kind](tmp_path)
    directory = case.instance.directory
    files_log_before = _entries(case.instance)
    failures: list[str] = []
    # When it is delivered twice, as the mode says
    if mode == "two workers at once":
        start = threading.Barrier(2)
        results: list[str | None] = []

        def worker() -> None:
            if case.queue == BULK_IMPORT_QUEUE:  # one Spark session per process: each worker is a process
                start.wait()
                results.append(_deliver_in_process(directory, case.queue, case.body))
                return
            own = LocalInstance(directory)
            start.wait()
            results.append(_deliver(own, case.queue, case.body))

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failures += [r for r in results if r is not None]
    else:
        failures += [f for f in [_deliver(case.instance, case.queue, case.body)] if f is not None]
        if mode == "after the window":
            restart_until_idle(directory)
        failures += [f for f in [_deliver(LocalInstance(directory), case.queue, case.body)] if f is not None]
    instance, summary = restart_until_idle(directory)
    # Then nothing failed or was dead-lettered, and the table (and a query's results) are as after one delivery
    dead = dead_letters(instance)
    actual = rows_of(instance.table(TABLE).query())
    lost, duplicated = sum((case.expected - actual).values()), sum((actual - case.expected).values())
    if (lost, duplicated) != (0, 0):
        reliability.record("B1", message=kind, mode=mode, rows_lost=lost, rows_duplicated=duplicated)
    converged = check_converged(instance, TABLE, case.expected)
    duplicated_results = 0
    if case.query is not None:
        query_id, low, high = case.query
        status = instance.query_tracker.status(query_id)
        assert status is not None and status.last_known_state is QueryState.COMPLETED
        results_rows = rows_of(
            read_results_files(instance.filesystem, str(local_path(instance.query_results_uri)), query_id, SCHEMA, None)
        )
        wanted = Counter({row: n for row, n in case.expected.items() if low <= row[0] < high})
        duplicated_results = sum((results_rows - wanted).values())
        assert results_rows == wanted, "the query's results are not those of one delivery"
    runs_failed = 0
    if case.job_id is not None:  # the job's runs: each delivery's is finished, the later one having added nothing
        job = instance.ingest_job_tracker.job(case.job_id)
        assert job is not None
        runs_failed = sum(run.status is IngestJobStatusType.FAILED for run in job.runs)
        assert job.status is IngestJobStatusType.FINISHED and len(job.runs) == 2
    export_files = 0
    if case.export is not None:
        exported, export_files = _exported(instance, case.export)
        duplicated_results = sum((exported - case.expected).values())
        status = instance.query_tracker.status(case.export)
        assert status is not None and status.last_known_state is QueryState.COMPLETED
        assert status.row_count == sum(case.expected.values())
        assert export_files == len(instance.table(TABLE).leaf_partitions()), "not one export file per leaf"
        assert exported == case.expected, "the export's files do not hold each row once"
    reliability.record(
        "B1",
        message=kind,
        mode=mode,
        spurious_failures=len(failures) + sum(summary.failed.values()) + runs_failed,
        failures=failures,
        dead_lettered=sum(dead.values()) - sum(EXPECTED_DEAD_LETTERS.get((kind, mode), ({}, ""))[0].values()),
        duplicated_results=duplicated_results,
        export_files=export_files,
        files_log_entries_added=len(_entries(instance)) - len(files_log_before),
        unhandled_exceptions=0,
        **converged.figures(),
    )
    assert failures == [] and summary.failed == {}, f"redelivery reported as a failure: {failures} {summary.failed}"
    assert runs_failed == 0, "a run of the bulk import job is tracked as failed"
    assert dead == EXPECTED_DEAD_LETTERS.get((kind, mode), ({}, ""))[0]


def _entries(instance: LocalInstance) -> list[int]:
    table_id = instance.table(TABLE).table_id
    log = instance.state_store_backend.transaction_log(table_id, LogType.FILES)
    return [e.transaction_number for e in log.read_transactions_after(0)]


def _exported(instance: LocalInstance, export_id: str) -> tuple[Counter[Row], int]:
    """The rows in an export's files, and how many files (of any kind) its directory holds."""
    directory = local_path(instance.bulk_export_uri) / instance.table(TABLE).table_id / export_id
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    exported: Counter[Row] = Counter()
    for path in files:
        exported.update(rows_of(pq.read_table(path)))
    return exported, len(files)
