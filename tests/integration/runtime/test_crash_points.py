"""kill -9 at every named crash point of docs/reliability.md (C1-C8), on the local runtime, then a restart.

Each case sets up a local instance with queued work that reaches one crash point, runs ``sleeper run --until-idle``
(for C7, ``sleeper table reinit``) as a real process with that point armed, so the process ends there with exit
code 137 as if killed with ``kill -9``, then restarts the instance and runs it until idle
(``tests/integration/runtime/crash_harness.py``). The table must then hold exactly the rows acknowledged to it (count
and checksum), with I1-I7 holding and the crash's orphans swept only after their minimum age. The scheduler is paused
where a scheduled operation would reach the point first, so the point is reached by the work named.

Which point serves which row of 4(c):

======  ======================================================================================================
C1      ``ingest.after_files_written``, ``compaction.after_output_written``
C2      ``compaction.after_commit``, ``committer.after_commit``, ``worker.before_message_delete``
C3      ``statestore.after_log_put`` (an ingest's ADD_FILES; a compaction's REPLACE_FILE_REFERENCES)
C4      ``snapshot.after_upload``, ``snapshot.after_metadata``
C5      ``gc.after_delete``
C6      ``statestore.after_snapshot_load``
C7      ``statestore.after_body_put`` (an INITIALISE_PARTITIONS body over 200 KiB)
C8      ``compaction.after_output_written`` with the job delivered twice, then again after GC removed its inputs
======  ======================================================================================================
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.core import faults
from sleeper.core.faults import CRASH_POINTS, KILLED_EXIT_CODE
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.operations import COMPACTION_JOB_Q, GC_JOB_Q, INGEST_JOB_Q
from sleeper.core.operations import STATE_STORE_COMMITTER_Q as COMMITTER_Q
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.gc.collector import run_garbage_collection
from sleeper.gc.orphans import DEFAULT_BODY_MIN_AGE, sweep_orphans
from sleeper.runtime.local.api import pause, resume, retry_dead_letters
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.upkeep import create_snapshot
from tests.integration.runtime.crash_harness import (
    SCHEMA,
    EarlierInstance,
    check_converged,
    dead_letters,
    restart_until_idle,
    rows,
    run_sleeper,
)
from tests.model.invariants import Row, local_path, rows_of
from tests.reliability_report import Reliability

pytestmark = pytest.mark.integration

TABLE = "t"
SYNC = {
    "sleeper.table.statestore.commit.async.enabled": "false",
    "sleeper.table.compaction.job.commit.async": "false",
    "sleeper.table.gc.commit.async": "false",
}
ASYNC = {
    "sleeper.table.statestore.commit.async.enabled": "true",
    "sleeper.table.ingest.job.files.commit.async": "true",
}
COMPACT_PAIRS = {
    "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "2",
}
GC_DELAY = {"sleeper.table.gc.delay.minutes": "20"}
LONG_AGO = timedelta(hours=1)
"""How far in the past a set-up's compaction commits are recorded, so their inputs are old enough to collect."""


@dataclass
class Setup:
    """A case's instance, the rows acknowledged to its table (committed, or in a queued job) and those committed."""

    directory: Path
    instance: LocalInstance
    table: Table[LocalInstance]
    expected: Counter[Row] = field(default_factory=Counter)
    committed: Counter[Row] = field(default_factory=Counter)
    jobs: list[str] = field(default_factory=list)

    def ingest_now(self, data: pa.Table) -> None:
        self.table.ingest(data)
        self.expected.update(rows_of(data))
        self.committed.update(rows_of(data))

    def queue_ingest_job(self, data: pa.Table) -> None:
        source = self.directory.parent / "input" / f"job-{len(self.jobs)}.parquet"
        source.parent.mkdir(exist_ok=True)
        pq.write_table(data, source)
        job_id = f"ingest-{len(self.jobs)}"
        self.instance.queue(INGEST_JOB_Q).send(IngestJob(id=job_id, files=(str(source),), table_name=TABLE).to_json())
        self.jobs.append(job_id)
        self.expected.update(rows_of(data))

    def queue_compaction_jobs(self, copies: int = 1) -> list[str]:
        """Creates compaction jobs over every file (inputs assigned, jobs queued); each job is queued ``copies`` times
        (an at-least-once queue delivering it again). Returns the jobs' messages, one per job."""
        queue = self.instance.queue(COMPACTION_JOB_Q)
        created = create_compaction_jobs(self.table, queue, self.instance.compaction_job_tracker, compact_all=True)
        bodies = [job.to_json() for job in created.jobs]
        for body in bodies * (copies - 1):
            queue.send(body)
        return bodies

    def queue_gc(self) -> None:
        self.instance.queue(GC_JOB_Q).send(self.table.table_id, group_id=self.table.table_id, dedup_id=str(time.time()))


def _setup(tmp_path: Path, properties: dict[str, str], *, split_points: list[int] | None = None) -> Setup:
    directory = tmp_path / "instance"
    instance = LocalInstance.create(directory)
    table = instance.create_table(TABLE, SCHEMA, split_points=split_points, properties=properties)
    return Setup(directory, instance, table)


# --- the cases --------------------------------------------------------------------------------------------------------
def _ingest_job(properties: dict[str, str]) -> Callable[[Path], Setup]:
    def setup(tmp_path: Path) -> Setup:
        s = _setup(tmp_path, properties, split_points=[500])
        s.ingest_now(rows(0, 300))
        s.queue_ingest_job(rows(200, 600))
        pause(s.instance)
        return s

    return setup


def _compaction_job(properties: dict[str, str], copies: int = 1) -> Callable[[Path], Setup]:
    def setup(tmp_path: Path) -> Setup:
        s = _setup(tmp_path, {**properties, **COMPACT_PAIRS}, split_points=[500])
        s.ingest_now(rows(0, 400))
        s.ingest_now(rows(300, 400))
        s.queue_compaction_jobs(copies)
        pause(s.instance)
        return s

    return setup


def _snapshot_due(tmp_path: Path) -> Setup:
    s = _setup(tmp_path, {**SYNC, **COMPACT_PAIRS}, split_points=[500])
    s.ingest_now(rows(0, 400))
    s.ingest_now(rows(300, 400))
    return s  # not paused: the run creates compaction jobs, compacts and snapshots the table


def _gc_due(tmp_path: Path) -> Setup:
    s = _setup(tmp_path, {**SYNC, **COMPACT_PAIRS, **GC_DELAY}, split_points=[500])
    s.ingest_now(rows(0, 400))
    s.ingest_now(rows(300, 400))
    s.queue_compaction_jobs()
    pause(s.instance)
    # compacted as if an hour ago: the inputs have had no references for longer than the GC delay
    _, summary = restart_until_idle(s.directory, EarlierInstance(s.directory, LONG_AGO))
    assert summary.failed == {}
    s.queue_gc()
    return s


def _snapshot_then_ingest(tmp_path: Path) -> Setup:
    s = _ingest_job(SYNC)(tmp_path)
    assert create_snapshot(s.table.state_store).created
    return s


CASES: dict[str, tuple[str, str, Callable[[Path], Setup], bool | None]] = {
    "C1-ingest": ("C1", "ingest.after_files_written", _ingest_job(SYNC), False),
    "C1-compaction": ("C1", "compaction.after_output_written", _compaction_job(SYNC), None),
    "C2-compaction": ("C2", "compaction.after_commit", _compaction_job(SYNC), None),
    "C2-committer": ("C2", "committer.after_commit", _ingest_job(ASYNC), True),
    "C2-ingest-message": ("C2", "worker.before_message_delete", _ingest_job(SYNC), True),
    "C3-ingest": ("C3", "statestore.after_log_put", _ingest_job(SYNC), True),
    "C3-compaction": ("C3", "statestore.after_log_put", _compaction_job(SYNC), None),
    "C4-upload": ("C4", "snapshot.after_upload", _snapshot_due, None),
    "C4-metadata": ("C4", "snapshot.after_metadata", _snapshot_due, None),
    "C5": ("C5", "gc.after_delete", _gc_due, None),
    "C6": ("C6", "statestore.after_snapshot_load", _snapshot_then_ingest, False),
}


@pytest.mark.parametrize("case", list(CASES))
def should_converge_to_the_acknowledged_rows_after_a_kill_at_each_crash_point(
    tmp_path: Path, case: str, reliability: Reliability
) -> None:
    row, point, setup, landed = CASES[case]
    assert point in CRASH_POINTS
    # Given an instance with work queued that reaches the crash point
    s = setup(tmp_path)
    started = time.perf_counter()
    # When 'sleeper run --until-idle' is killed there
    killed = run_sleeper(s.directory, "run", "--until-idle", crash_at=point)
    # Then it died at the point
    assert killed.returncode == KILLED_EXIT_CODE, killed.stderr[-2000:]
    # and the queued ingest had committed its rows before the kill, or not, as the point says
    if landed is not None:
        after_kill = rows_of(LocalInstance(s.directory).table(TABLE).query())
        assert after_kill == (s.expected if landed else s.committed)
    # When the instance restarts and runs until idle
    if (s.directory / "scheduler.paused").exists():
        resume(s.instance)
    instance, summary = restart_until_idle(s.directory)
    # Then it is idle, with nothing dead-lettered, except the committer's request: its queue gives one receive (as
    # Sleeper's), so a committer killed after applying a request dead-letters it, and the tracker shows the ingest job
    # uncommitted until the operator moves it back ('sleeper dead-letters retry'), when it is applied as a no-op
    assert summary.pending == {}
    dead = dead_letters(instance)
    if case == "C2-committer":
        assert dead == {COMMITTER_Q: 1}
        retry_dead_letters(instance, [COMMITTER_Q])
        instance, summary = restart_until_idle(s.directory)
    assert dead_letters(instance) == {}
    # and the table holds exactly the acknowledged rows with every invariant holding
    converged = check_converged(instance, TABLE, s.expected)
    for job_id in s.jobs:
        status = instance.ingest_job_tracker.job(job_id)
        assert status is not None and not status.is_unfinished, f"ingest job {job_id} left unfinished"
    reliability.record(
        row,
        case=case,
        crash_point=point,
        exit_code=killed.returncode,
        restart_handler_failures=sum(summary.failed.values()),
        dead_lettered=sum(dead.values()),
        unhandled_exceptions=0,
        seconds=round(time.perf_counter() - started, 2),
        **converged.figures(),
    )


# --- C7: a large body stored, then killed before the log entry --------------------------------------------------------
SPLITS_OVER_200_KIB = 700
"""Split points whose INITIALISE_PARTITIONS body is over 200 KiB (1,401 partitions), so it goes to the body store."""


def should_store_a_large_body_once_when_its_writer_is_killed_before_the_log_entry(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a table with rows, and split points for a reinit whose partitions transaction is over 200 KiB
    s = _setup(tmp_path, SYNC)
    s.ingest_now(rows(0, 100))
    splits = tmp_path / "splits.txt"
    splits.write_text("".join(f"{n * 10}\n" for n in range(SPLITS_OVER_200_KIB)))
    bodies = local_path(s.table.data_prefix) / "statestore" / "transactions"
    transactions_before = s.table.state_store.last_transaction_numbers()
    # When 'sleeper table reinit' is killed after storing the body, before the log entry
    killed = run_sleeper(
        s.directory,
        "table",
        "reinit",
        TABLE,
        "--split-points",
        str(splits),
        "-y",
        crash_at=("statestore.after_body_put"),
    )
    # Then it died there: the body is stored, the table unchanged
    assert killed.returncode == KILLED_EXIT_CODE, killed.stderr[-2000:]
    stored = sorted(bodies.glob("*.json"))
    assert len(stored) == 1 and stored[0].stat().st_size >= 200 * 1024
    body_bytes = stored[0].stat().st_size
    table = s.instance.table(TABLE)
    assert table.state_store.last_transaction_numbers() == transactions_before
    assert rows_of(table.query()) == s.expected
    # When the reinit is run again, then rows are ingested and the instance runs until idle
    retried = run_sleeper(s.directory, "table", "reinit", TABLE, "--split-points", str(splits), "-y")
    assert retried.returncode == 0, retried.stderr[-2000:]
    s.expected.clear()
    s.instance.table(TABLE).ingest(rows(5, 50))
    s.expected.update(rows_of(rows(5, 50)))
    instance, summary = restart_until_idle(s.directory)
    # Then the partitions were initialised once, from one stored body; the killed attempt's body is left unused
    table = instance.table(TABLE)
    assert len(table.leaf_partitions()) == SPLITS_OVER_200_KIB + 1
    entries = list(
        instance.state_store_backend.transaction_log(table.table_id, LogType.PARTITIONS).read_transactions_after(0)
    )
    used = [e.body_key for e in entries if e.body_key is not None]
    assert len(used) == 1
    all_bodies = sorted(p.name for p in bodies.glob("*.json"))
    unused = [name for name in all_bodies if not any(key.endswith(name) for key in used)]
    assert unused == [stored[0].name]
    converged = check_converged(instance, TABLE, s.expected)
    # When the orphan sweeper runs now, and again after the bodies' minimum age
    early = sweep_orphans(table)
    late = sweep_orphans(table, now=datetime.now(tz=UTC) + DEFAULT_BODY_MIN_AGE + timedelta(minutes=1))
    # Then the unused body is kept while young and swept after; the used one stays and the table still reads it
    assert [k.rsplit("/", 1)[1] for k in early.bodies_young] == unused and early.bodies_deleted == ()
    assert [k.rsplit("/", 1)[1] for k in late.bodies_deleted] == unused
    assert sorted(p.name for p in bodies.glob("*.json")) == [k.rsplit("/", 1)[1] for k in used]
    assert len(LocalInstance(s.directory).table(TABLE).leaf_partitions()) == SPLITS_OVER_200_KIB + 1
    reliability.record(
        "C7",
        case="C7-partitions-body",
        crash_point="statestore.after_body_put",
        exit_code=killed.returncode,
        body_bytes=body_bytes,
        bodies_referenced=len(used),
        unused_bodies_left=len(unused),
        unused_bodies_swept_before_min_age=len(early.bodies_deleted),
        unused_bodies_swept=len(late.bodies_deleted),
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- C8: redelivery after GC removed an input -------------------------------------------------------------------------
def should_refuse_a_compaction_job_delivered_again_after_gc_removed_its_inputs(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a compaction job delivered twice, its first worker killed after writing its output
    s = _setup(tmp_path, {**SYNC, **COMPACT_PAIRS}, split_points=[500])
    s.ingest_now(rows(0, 400))
    s.ingest_now(rows(300, 400))
    job_message = s.queue_compaction_jobs(copies=2)[0]
    pause(s.instance)
    job_id = json.loads(job_message)["jobId"]
    inputs = json.loads(job_message)["inputFiles"]
    killed = run_sleeper(s.directory, "run", "--until-idle", crash_at="compaction.after_output_written")
    assert killed.returncode == KILLED_EXIT_CODE, killed.stderr[-2000:]
    # When the instance restarts and runs until idle (one copy commits), and a day later the GC removes the inputs
    resume(s.instance)
    instance, summary = restart_until_idle(s.directory)
    assert summary.failed == {}
    table = instance.table(TABLE)
    collected = run_garbage_collection(instance, table.table_id, now=datetime.now(tz=UTC) + timedelta(days=1))
    assert set(inputs) <= set(collected.deleted)
    assert not any(local_path(name).exists() for name in inputs)
    outputs = [local_path(f.filename) for f in instance.table(TABLE).state_store.files()]
    written = [(p.stat().st_mtime_ns, p.read_bytes()) for p in outputs]
    transactions = instance.table(TABLE).state_store.last_transaction_numbers()
    # When the job is delivered once more
    instance.queue(COMPACTION_JOB_Q).send(job_message)
    instance, summary = restart_until_idle(s.directory)
    # Then the message is finished with, nothing is committed, the output is not rewritten, the job is still finished
    assert summary.pending == {}
    assert instance.table(TABLE).state_store.last_transaction_numbers() == transactions
    assert [(p.stat().st_mtime_ns, p.read_bytes()) for p in outputs] == written
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    assert dead_letters(instance) == {}
    converged = check_converged(instance, TABLE, s.expected)
    reliability.record(
        "C8",
        case="C8-redelivered-after-gc",
        crash_point="compaction.after_output_written",
        exit_code=killed.returncode,
        runs=[r.status.value for r in status.runs],
        late_delivery_failures=sum(summary.failed.values()),
        output_rewritten=False,
        unhandled_exceptions=0,
        **converged.figures(),
    )


# --- A2 / C3: a commit whose outcome is unknown keeps its files -------------------------------------------------------
def _timed_out(name: str) -> None:
    raise TimeoutError(f"no reply after the log put ({name})")


def should_keep_the_files_of_an_ingest_whose_commit_outcome_is_unknown(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a table with rows, and an ingest whose ADD_FILES lands but whose writer then gets an error (not a
    # refusal: the outcome is unknown to it, as after a timeout)
    s = _setup(tmp_path, SYNC)
    s.ingest_now(rows(0, 100))
    with pytest.raises(TimeoutError), faults.armed("statestore.after_log_put", _timed_out, times=1):
        s.table.ingest(rows(100, 50), job_id="unknown-outcome")
    s.expected.update(rows_of(rows(100, 50)))
    # When the job is run again, as a redelivered message is
    again = LocalInstance(s.directory).table(TABLE)
    result = again.ingest(rows(100, 50), job_id="unknown-outcome")
    # Then the files of the landed commit were kept (every referenced file exists), and the rows are there once
    assert result.already_added
    converged = check_converged(LocalInstance(s.directory), TABLE, s.expected)
    reliability.record(
        "A2",
        case="ingest commit outcome unknown (local)",
        unhandled_exceptions=0,
        wrongly_reported_failures=0,
        **converged.figures(),
    )
