"""Kill-and-restart of the local runtime at named crash points (docs/reliability.md: B2 and C1, C2, C5); every
crash point of 4(c) is killed in ``test_crash_points.py``.

``sleeper run --until-idle`` is started as a real process with ``SLEEPER_CRASH_AT`` set, so it ends with exit code 137
(no cleanup, as ``kill -9``) in the middle of a job. The restart runs the same handlers in this process, with the
queues' clock moved past the visibility timeout so that the killed worker's messages are delivered again. Every test
checks invariants I1 (rows), I3 (references) and I7 (orphans) of docs/reliability.md, and records its figures
with the ``reliability`` fixture (``tests/reliability_report.py``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.adapters.local.queue import SqliteQueues
from sleeper.api.table import Table
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.core import faults
from sleeper.core.faults import KILLED_EXIT_CODE, CrashPointReached
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.gc.collector import run_garbage_collection
from sleeper.gc.orphans import DEFAULT_ORPHAN_MIN_AGE, sweep_orphans
from sleeper.runtime.faults_env import CRASH_AT_VARIABLE
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import Handler, LocalRunner
from sleeper.runtime.local.tasks import local_task
from tests.reliability_report import Reliability

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
REPOSITORY = Path(sleeper.__file__).resolve().parent.parent
VISIBILITY_PASSED = 1000.0
"""Seconds the restarted runtime's queue clock is ahead: past the 900 s visibility timeout of every queue."""


@pytest.fixture(autouse=True)
def _disarmed() -> Iterator[None]:
    faults.disarm_all()
    yield
    faults.disarm_all()


# --- helpers ----------------------------------------------------------------------------------------------------------
def _rows(start: int, count: int) -> pa.Table:
    keys = pa.array(range(start, start + count), pa.int64())
    return pa.table({"key": keys, "value": pa.array([k * 7 % 101 for k in range(start, start + count)], pa.int64())})


def _fingerprint(rows: pa.Table) -> tuple[int, str]:
    """Row count and SHA-256 of the sorted rows (docs/reliability.md I1, for small tables)."""
    ordered = sorted(zip(rows.column("key").to_pylist(), rows.column("value").to_pylist(), strict=True))
    return len(ordered), hashlib.sha256(repr(ordered).encode()).hexdigest()


def _path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)


def _data_files(table: Table[LocalInstance]) -> set[Path]:
    """Every data file and sidecar under the table's data prefix."""
    return {p for p in _path(table.data_prefix).rglob("*") if p.suffix in (".parquet", ".sketches")}


def _tracked_files(table: Table[LocalInstance]) -> set[Path]:
    """The data files the state store tracks (referenced or awaiting GC), with their sidecars."""
    table.state_store.refresh()
    paths = {_path(f.filename) for f in table.state_store.files()}
    return paths | {p.with_suffix(".sketches") for p in paths}


def _references(table: Table[LocalInstance]) -> list[tuple[str, str, str | None]]:
    table.state_store.refresh()
    return sorted((r.filename, r.partition_id, r.job_id) for r in table.state_store.file_references())


def _check_references(table: Table[LocalInstance]) -> None:
    """docs/reliability.md I3: each referenced file exists under the table's prefix; no file referenced twice in a
    partition."""
    references = _references(table)
    prefix = _path(table.data_prefix)
    twice = [key for key, count in Counter((name, partition) for name, partition, _ in references).items() if count > 1]
    assert twice == []
    for name, _, _ in references:
        path = _path(name)
        assert path.is_file(), f"referenced file {name} is missing"
        assert prefix in path.parents


def _restarted(directory: Path) -> LocalInstance:
    """The instance opened afresh, as a restarted runtime does, with the queue clock past every visibility timeout."""
    instance = LocalInstance(directory)
    instance.__dict__["queues"] = SqliteQueues(instance.database, clock=lambda: time.time() + VISIBILITY_PASSED)
    return instance


def _counting(handlers: dict[str, Handler], deliveries: Counter[str]) -> dict[str, Handler]:
    def wrap(queue: str, handler: Handler) -> Handler:
        def counted(instance: LocalInstance, body: str) -> str:
            deliveries[queue] += 1
            return handler(instance, body)

        return counted

    return {queue: wrap(queue, handler) for queue, handler in handlers.items()}


def _run_killed(directory: Path, crash_at: str) -> subprocess.CompletedProcess[str]:
    """Runs ``sleeper -i DIR run --until-idle`` in a new process with a crash point armed to end it."""
    environment = {**os.environ, CRASH_AT_VARIABLE: crash_at}
    command = [sys.executable, "-c", "from sleeper.cli.main import main; main()"]
    return subprocess.run(
        [*command, "-i", str(directory), "run", "--until-idle"],
        env=environment,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _listed(path: str) -> Path:
    """A path as the orphan sweeper reports it (a filesystem path, maybe without its leading slash)."""
    return _path(path) if path.startswith("file:") else Path("/" + path.lstrip("/"))


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


# --- B2 / C1: kill -9 mid-job, restart --------------------------------------------------------------------------------
def should_converge_after_an_ingest_worker_and_a_compaction_worker_are_killed_mid_job(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a table of two leaves holding two committed files, compaction jobs over them queued, and an ingest job
    directory = tmp_path / "instance"
    instance = LocalInstance.create(directory)
    table = instance.create_table("t", SCHEMA, split_points=[500])
    table.ingest(_rows(0, 400))
    table.ingest(_rows(300, 400))
    created = create_compaction_jobs(
        table, instance.queue("CompactionJobQ"), instance.compaction_job_tracker, compact_all=True
    )
    source = tmp_path / "input" / "rows.parquet"
    source.parent.mkdir()
    pq.write_table(_rows(650, 500), source)
    instance.queue("IngestJobQ").send(IngestJob(id="ingest-1", files=(str(source),), table_name="t").to_json())
    expected = _fingerprint(pa.concat_tables([_rows(0, 400), _rows(300, 400), _rows(650, 500)]))
    references_before = _references(table)
    files_before = _data_files(table)

    # When the runtime is killed after the ingest job wrote its files, before it committed them
    killed_ingest = _run_killed(directory, "ingest.after_files_written")
    # Then it died there: the table is unchanged and the files it wrote are orphans
    assert killed_ingest.returncode == KILLED_EXIT_CODE, killed_ingest.stderr
    assert _references(table) == references_before
    ingest_orphans = _data_files(table) - files_before
    assert {p.suffix for p in ingest_orphans} == {".parquet", ".sketches"}

    # When it is started again and killed after a compaction wrote its output
    killed_compaction = _run_killed(directory, "compaction.after_output_written")
    # Then it died there, having first found the killed runtime gone and run its ingest job again at once (rather than
    # after the message's visibility timeout): the ingest's rows are committed, the compaction's are not
    assert killed_compaction.returncode == KILLED_EXIT_CODE, killed_compaction.stderr
    references_after_ingest = _references(table)
    assert set(references_before) < set(references_after_ingest)
    assert _fingerprint(table.query()) == expected
    outputs = {_path(job.output_file) for job in created.jobs}
    written_outputs = outputs & _data_files(table)
    assert len(created.jobs) == 2
    assert len(written_outputs) == 1

    # When the runtime restarts after the visibility timeout and runs until idle, as a local task as 'sleeper run' does
    restarted = _restarted(directory)
    deliveries: Counter[str] = Counter()
    with local_task(restarted):
        summary = LocalRunner(restarted, _counting(default_handlers(), deliveries)).run_until_idle()
    table = restarted.table("t")

    # Then it converged: the same rows, no file referenced twice, every referenced file there, every job done once
    assert _fingerprint(table.query()) == expected
    _check_references(table)
    assert all(r[2] is None for r in _references(table))  # no reference left assigned to a job
    assert outputs <= {_path(r[0]) for r in _references(table)}
    assert summary.failed == {} and summary.idle
    # the killed compaction job was delivered once more, and the other compaction job once (the ingest job was done)
    assert (deliveries["IngestJobQ"], deliveries["CompactionJobQ"]) == (0, 2)
    ingest_status = restarted.ingest_job_tracker.job("ingest-1")
    assert ingest_status is not None
    ingest_runs = [run.status for run in ingest_status.runs]
    assert ingest_runs == [IngestJobStatusType.FINISHED, IngestJobStatusType.FAILED]
    compaction_runs: list[list[CompactionJobStatusType]] = []
    for job in created.jobs:
        status = restarted.compaction_job_tracker.job(job.job_id)
        assert status is not None
        assert status.status is CompactionJobStatusType.FINISHED
        compaction_runs.append([run.status for run in status.runs])
    # the killed ingest run is recorded failed, naming its task, once the runtime is next started, and the killed
    # compaction run stays uncommitted (it wrote its output, never committed it; it is not left in progress):
    # deliveries to converge stay within maxReceiveCount (3)
    assert sorted(compaction_runs, key=len) == [
        [CompactionJobStatusType.FINISHED],
        [CompactionJobStatusType.FINISHED, CompactionJobStatusType.UNCOMMITTED],
    ]
    killed_ingest_run = ingest_status.runs[1]
    assert killed_ingest_run.task_id is not None and killed_ingest_run.task_id in killed_ingest_run.failure_reasons[0]
    assert not ingest_status.is_unfinished
    for queue in ("IngestJobQ", "CompactionJobQ"):
        assert restarted.dead_letter_queue(queue).approximate_counts().visible == 0
    # and the only untracked files left are the killed ingest's (the compaction rewrote its output under the same name)
    assert _data_files(table) - _tracked_files(table) == ingest_orphans

    # When orphans are swept once just before the youngest is old enough
    youngest = max(_mtime(p) for p in ingest_orphans)
    early = sweep_orphans(table, now=youngest + DEFAULT_ORPHAN_MIN_AGE - timedelta(seconds=1))
    # Then nothing was deleted: the youngest orphans were kept as too young
    assert early.deleted == ()
    assert {p for p in ingest_orphans if _mtime(p) == youngest} <= {_listed(p) for p in early.young}
    # When they are swept once all are old enough
    late = sweep_orphans(table, now=youngest + DEFAULT_ORPHAN_MIN_AGE + timedelta(seconds=1))
    # Then exactly the killed ingest's files were deleted, and the rows are unchanged
    assert {_listed(p) for p in late.deleted} == ingest_orphans
    assert _data_files(table) == _tracked_files(table) & _data_files(table)
    assert _fingerprint(table.query()) == expected
    _check_references(table)
    reliability.record(
        "B2",
        case="B2/C1 kill -9 ingest and compaction workers, restart",
        rows=expected[0],
        rows_lost=0,
        rows_duplicated=0,
        referenced_files_deleted=0,
        unhandled_exceptions=0,
        exit_codes=[killed_ingest.returncode, killed_compaction.returncode],
        deliveries_to_converge={
            "ingest_job": len(ingest_runs),
            "killed_compaction_job": max(map(len, compaction_runs)),
        },
        max_receive_count=3,
        killed_runs_recorded_failed={"ingest": ingest_runs.count(IngestJobStatusType.FAILED)},
        killed_runs_left_uncommitted={
            "compaction": sum(runs.count(CompactionJobStatusType.UNCOMMITTED) for runs in compaction_runs)
        },
        ingest_job_reported_unfinished=ingest_status.is_unfinished,
        orphans_left=len(ingest_orphans),
        orphans_swept_early=len(early.deleted),
        orphans_swept_late=len(late.deleted),
        duplicate_references=0,
    )


# --- C2: crash after the compaction commit, before the message delete -------------------------------------------------
COMMIT_MODES = {
    "sync": {"sleeper.table.compaction.job.commit.async": "false"},
    "async-batched": {
        "sleeper.table.compaction.job.commit.async": "true",
        "sleeper.table.compaction.job.async.commit.batching": "true",
    },
    "async-committer": {
        "sleeper.table.compaction.job.commit.async": "true",
        "sleeper.table.compaction.job.async.commit.batching": "false",
    },
}
COMMIT_QUEUES = ("StateStoreCommitterQ.fifo", "CompactionCommitQ")


def _table_with_compaction_job(
    directory: Path, properties: dict[str, str]
) -> tuple[LocalInstance, Table[LocalInstance], str]:
    instance = LocalInstance.create(directory)
    table = instance.create_table("t", SCHEMA, properties=properties)
    table.ingest(_rows(0, 300))
    table.ingest(_rows(200, 300))
    created = create_compaction_jobs(
        table, instance.queue("CompactionJobQ"), instance.compaction_job_tracker, compact_all=True
    )
    (job,) = created.jobs
    return instance, table, job.job_id


@pytest.mark.parametrize("mode", list(COMMIT_MODES))
def should_redeliver_a_compaction_job_committed_before_its_worker_crashed_as_a_no_op(
    tmp_path: Path, mode: str, reliability: Reliability
) -> None:
    # Given a queued compaction job, and its worker crashing after the commit, before the message is deleted
    directory = tmp_path / "instance"
    instance, table, job_id = _table_with_compaction_job(directory, COMMIT_MODES[mode])
    expected = _fingerprint(table.query())
    runner = LocalRunner(instance, default_handlers())
    faults.arm("compaction.after_commit")
    # When the worker runs the job
    with pytest.raises(CrashPointReached):
        runner.drain("CompactionJobQ")
    faults.disarm_all()
    # and the committer, which did not crash, applies any commit request it was sent
    for queue in COMMIT_QUEUES:
        runner.drain(queue)
    table.state_store.refresh()
    committed = _references(table)
    transactions = table.state_store.last_transaction_numbers()
    (output,) = {_path(name) for name, _, _ in committed}
    written = (output.stat().st_mtime_ns, output.read_bytes())
    # Then the job is committed, and its message still in flight
    assert output.stem == job_id
    assert instance.queue("CompactionJobQ").approximate_counts().in_flight == 1

    # When the runtime restarts after the visibility timeout and the job is delivered again
    restarted = _restarted(directory)
    deliveries: Counter[str] = Counter()
    summary = LocalRunner(restarted, _counting(default_handlers(), deliveries)).run_until_idle()
    table = restarted.table("t")
    # Then the redelivery changed nothing: same references, no new transaction, the output not rewritten
    assert deliveries["CompactionJobQ"] == 1
    assert summary.failed == {}
    assert _references(table) == committed
    assert table.state_store.last_transaction_numbers() == transactions
    assert (output.stat().st_mtime_ns, output.read_bytes()) == written
    assert _fingerprint(table.query()) == expected
    _check_references(table)
    # and the tracker shows one run, committed, and no failure
    status = restarted.compaction_job_tracker.job(job_id)
    assert status is not None
    assert [run.status for run in status.runs] == [CompactionJobStatusType.FINISHED]
    assert restarted.queue("CompactionJobQ").approximate_counts().in_flight == 0
    reliability.record(
        "C2",
        case=f"C2 crash after compaction commit ({mode})",
        rows_lost=0,
        rows_duplicated=0,
        deliveries_to_converge=1 + deliveries["CompactionJobQ"],
        runs_tracked=len(status.runs),
        transactions_added_by_redelivery=0,
        output_rewritten=False,
    )


# --- C5: GC crash after the deletes, before DELETE_FILES --------------------------------------------------------------
@pytest.mark.parametrize("async_commit", [True, False], ids=["async", "sync"])
def should_finish_a_garbage_collection_that_crashed_between_its_deletes_and_its_commit(
    tmp_path: Path, async_commit: bool, reliability: Reliability
) -> None:
    # Given a compacted table whose two input files have had no references for longer than the GC delay
    directory = tmp_path / "instance"
    instance, table, _ = _table_with_compaction_job(
        directory, {"sleeper.table.gc.commit.async": str(async_commit).lower()}
    )
    runner = LocalRunner(instance, default_handlers())
    runner.drain("CompactionJobQ")
    for queue in COMMIT_QUEUES:
        runner.drain(queue)
    expected = _fingerprint(table.query())
    table.state_store.refresh()
    unreferenced = {_path(f.filename) for f in table.state_store.files() if not f.references}
    assert len(unreferenced) == 2
    later = datetime.now(tz=UTC) + timedelta(days=1)
    # When the collector crashes after deleting them, before recording the deletes
    with pytest.raises(CrashPointReached), faults.armed("gc.after_delete"):
        run_garbage_collection(instance, table.table_id, now=later)
    # Then they are gone but still tracked, and every referenced file is still there
    assert not any(p.exists() or p.with_suffix(".sketches").exists() for p in unreferenced)
    assert {_path(f.filename) for f in table.files() if not f.references} == unreferenced
    _check_references(table)
    # When the collector runs again (and the committer applies what it was sent)
    result = run_garbage_collection(instance, table.table_id, now=later)
    committer = runner.drain("StateStoreCommitterQ.fifo")
    # Then it tolerated the missing files and recorded their deletion; nothing referenced was touched
    assert {_path(name) for name in result.deleted} == unreferenced
    assert result.problems == []
    assert committer.failed == {}
    table.state_store.refresh()
    assert all(f.references for f in table.state_store.files())
    _check_references(table)
    assert _data_files(table) == _tracked_files(table) & _data_files(table)
    assert _fingerprint(table.query()) == expected
    reliability.record(
        "C5",
        case=f"C5 GC crash after delete ({'async' if async_commit else 'sync'} commit)",
        rows_lost=0,
        files_deleted_before_crash=len(unreferenced),
        files_recorded_on_rerun=len(result.deleted),
        referenced_files_deleted=0,
        rerun_problems=len(result.problems),
    )


def should_leave_the_table_as_one_run_would_when_a_job_is_redelivered_before_its_batched_commit_lands(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a queued compaction job with batched asynchronous commits, and its worker crashing after sending the commit
    directory = tmp_path / "instance"
    instance, table, job_id = _table_with_compaction_job(directory, COMMIT_MODES["async-batched"])
    expected = _fingerprint(table.query())
    transactions_before = table.state_store.last_transaction_numbers()
    with pytest.raises(CrashPointReached), faults.armed("compaction.after_commit"):
        LocalRunner(instance, default_handlers()).drain("CompactionJobQ")
    # When the runtime restarts and the job is delivered again before the commit request is applied
    restarted = _restarted(directory)
    deliveries: Counter[str] = Counter()
    summary = LocalRunner(restarted, _counting(default_handlers(), deliveries)).run_until_idle()
    table = restarted.table("t")
    # Then the table is as one run leaves it: the output alone referenced, one more transaction, the same rows
    assert summary.failed == {}
    assert [(_path(name).stem, partition, job) for name, partition, job in _references(table)] == [
        (job_id, "root", None)
    ]
    transactions = table.state_store.last_transaction_numbers()
    assert {log: transactions[log] - transactions_before[log] for log in transactions} == {
        log: int(log.value == "files") for log in transactions
    }
    assert _fingerprint(table.query()) == expected
    _check_references(table)
    # and the tracker shows one committed run; the duplicate run is not reported as failed
    status = restarted.compaction_job_tracker.job(job_id)
    assert status is not None
    runs = [run.status for run in status.runs]
    assert status.status is CompactionJobStatusType.FINISHED
    assert runs.count(CompactionJobStatusType.FINISHED) == 1
    assert CompactionJobStatusType.FAILED not in runs
    reliability.record(
        "C2",
        case="C2 crash after batched compaction commit sent, redelivered before it lands",
        rows_lost=0,
        rows_duplicated=0,
        deliveries_to_converge=1 + deliveries["CompactionJobQ"],
        runs_tracked=len(runs),
        duplicate_runs_uncommitted=runs.count(CompactionJobStatusType.UNCOMMITTED),
        spurious_failures=0,
        output_rewritten=len(runs) > 1,
    )
