"""The harness of the kill-and-restart battery (docs/reliability.md: B2 and C1-C8) on the local runtime.

A worker is a real process: ``sleeper -i DIR run --until-idle`` (or another ``sleeper`` command) started with
``SLEEPER_CRASH_AT`` naming one crash point, so it ends with exit code 137 there, running no cleanup, as ``kill -9``
would. The restart runs the same handlers as a new local task of the instance in this process: it finds the killed
task gone (its ``flock`` was dropped by the kernel), records its runs failed and releases its messages, then runs
until idle. :func:`check_converged` then checks the invariants I1-I7 of docs/reliability.md against the rows the
test acknowledged, and returns the figures the test reports.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import subprocess
import sys
import traceback
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import sleeper
from sleeper.api.table import Table
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.table import TableStatus
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.gc.orphans import DEFAULT_ORPHAN_MIN_AGE, sweep_orphans
from sleeper.runtime.faults_env import CRASH_AT_VARIABLE
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner, RoundSummary
from sleeper.runtime.local.tasks import local_task
from sleeper.statestore.snapshots import filesystem_path
from sleeper.statestore.store import StateStore
from tests.model.invariants import (
    Row,
    check_log_numbers,
    check_references,
    check_replay_from_snapshots,
    check_tree,
    checksum,
    describe_difference,
    local_path,
    rows_of,
)

if TYPE_CHECKING:
    from sleeper.runtime.aws.instance import AwsInstance

__all__ = [
    "REPOSITORY",
    "SCHEMA",
    "Converged",
    "EarlierInstance",
    "check_converged",
    "dead_letters",
    "restart_until_idle",
    "rows",
    "run_sleeper",
    "where",
]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
REPOSITORY = Path(sleeper.__file__).resolve().parent.parent
_ENTRY = (
    "import sys\n"
    "from sleeper.runtime.faults_env import arm_crash_points_from_environment\n"
    "arm_crash_points_from_environment()\n"
    "from sleeper.cli.main import main\n"
    "main()\n"
)
"""A ``sleeper`` command that arms ``SLEEPER_CRASH_AT`` whatever the command (``sleeper run`` arms it itself)."""


def rows(start: int, count: int) -> pa.Table:
    """``count`` rows with keys from ``start``, each value derived from its key."""
    keys = pa.array(range(start, start + count), pa.int64())
    return pa.table({"key": keys, "value": pa.array([k * 7 % 101 for k in range(start, start + count)], pa.int64())})


def run_sleeper(directory: Path, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``sleeper -i DIR ARGS`` in a new process, with a crash point armed to end it when reached."""
    environment = {**os.environ}
    environment.pop(CRASH_AT_VARIABLE, None)
    if crash_at is not None:
        environment[CRASH_AT_VARIABLE] = crash_at
    return subprocess.run(
        [sys.executable, "-c", _ENTRY, "-i", str(directory), *args],
        env=environment,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def restart_until_idle(directory: Path, instance: LocalInstance | None = None) -> tuple[LocalInstance, RoundSummary]:
    """Opens the instance afresh (unless given) and runs it until idle as a new local task (as ``sleeper run
    --until-idle`` does)."""
    instance = instance if instance is not None else LocalInstance(directory)
    with local_task(instance):
        summary = LocalRunner(instance, default_handlers()).run_until_idle(poll_seconds=0.05)
    return instance, summary


class EarlierInstance(LocalInstance):
    """A local instance whose state stores record their transactions ``behind`` in the past (everything else is the
    real thing): work committed through it looks old enough to a garbage collector running now."""

    def __init__(self, directory: Path, behind: timedelta) -> None:
        super().__init__(directory)
        self.behind = behind

    def _table(self, status: TableStatus) -> Table[LocalInstance]:
        table = super()._table(status)
        store = StateStore(
            schema=table.schema,
            table_id=table.table_id,
            backend=self.state_store_backend,
            filesystem=self.filesystem,
            snapshot_base_path=str(self.directory / "data" / status.table_id),
            settings=table.state_store.settings,
            clock=lambda: datetime.now(tz=UTC) - self.behind,
            data_prefix=table.data_prefix,
        )
        return dataclasses.replace(table, state_store=store)


def where(error: BaseException) -> str:
    """Where an error was raised: ``path:line in function`` of its traceback's last frame (a racing reader's
    failure names its place, even an ``assert`` without a message)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "no traceback"
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def dead_letters(instance: LocalInstance) -> dict[str, int]:
    """The messages in each dead-letter queue of the instance (only those holding some)."""
    counts = {name: instance.dead_letter_queue(name).approximate_counts().visible for name in default_handlers()}
    return {name: n for name, n in counts.items() if n}


def lost_race_batches(instance: LocalInstance | AwsInstance) -> int:
    """How many pending compaction job batches were dead-lettered, checking that each is a batch that lost a race
    (Sleeper's design when job creation assigns input files through the committer: a creator that ran before
    another's assignment landed planned the same files, the committer refused its assignment, and the dispatcher
    dead-lettered its batch): none of its jobs was ever sent or tracked, and its batch file is still there. Works on
    the local instance and on an AWS one (the batch files under the data root, local or S3).

    Raises:
        AssertionError: If a dead-lettered batch had a job tracked, or its batch file is gone.
    """
    from sleeper.core.jobs.compaction import CompactionJobBatch, CompactionJobDispatchRequest
    from sleeper.core.operations import PENDING_COMPACTION_JOB_BATCH_Q
    from sleeper.core.paths import join_under
    from sleeper.io.exceptions import MissingFileError
    from sleeper.io.filesystem import read_bytes, resolve

    queue = instance.dead_letter_queue(PENDING_COMPACTION_JOB_BATCH_Q)
    received = []
    while batch := queue.receive(10):
        received.extend(batch)
    try:
        for message in received:
            request = CompactionJobDispatchRequest.from_json(message.body)
            location = join_under(instance.data_root, *request.batch_key.split("/"))
            try:
                text = read_bytes(*resolve(location, instance.filesystem_options)).decode("utf-8")
            except MissingFileError:
                raise AssertionError(f"dead-lettered pending batch {request.batch_key} has no batch file") from None
            for job in CompactionJobBatch.from_json(text).jobs:
                status = instance.compaction_job_tracker.job(job.job_id)
                assert status is None, f"job {job.job_id} of dead-lettered batch {request.batch_key} was sent"
    finally:
        for message in received:
            queue.change_visibility(message.receipt_handle, 0)
    return len(received)


@dataclass(frozen=True, slots=True)
class Converged:
    """What :func:`check_converged` measured (figures for the report)."""

    rows: int
    rows_lost: int
    rows_duplicated: int
    orphans: int
    orphans_swept_early: int
    orphans_swept: int
    snapshots_replayed: int
    snapshot_files_unrecorded: int
    transactions: dict[str, int]

    def figures(self) -> dict[str, object]:
        """The figures as the report records them."""
        return {
            "rows": self.rows,
            "rows_lost": self.rows_lost,
            "rows_duplicated": self.rows_duplicated,
            "referenced_files_deleted": 0,
            "orphans_left_by_crash": self.orphans,
            "orphans_swept_before_min_age": self.orphans_swept_early,
            "orphans_swept_after_min_age": self.orphans_swept,
            "snapshots_replayed": self.snapshots_replayed,
            "snapshot_files_unrecorded": self.snapshot_files_unrecorded,
            "transactions": self.transactions,
        }


def check_converged(instance: LocalInstance, table_name: str, expected: Counter[Row]) -> Converged:
    """Checks I1-I7 on a table after a restart, with ``expected`` the rows acknowledged to it; sweeps its orphans.

    I1 a full query holds exactly the expected rows (count and checksum); I2 each log is numbered contiguously from
    its first retained entry; I3 every referenced file exists under the table's prefix, once per partition; I4 the
    leaves cover the key space; I5 no reference is left assigned to a job, every compaction job whose output the table
    tracks is FINISHED in the tracker and every run that failed has a reason; I6 every retained snapshot plus the log
    tail equals the full state; I7 the untracked files (orphans of the crash) survive a sweep just before the minimum
    age and are all gone after one just past it, with the rows unchanged.
    """
    table = instance.table(table_name)
    actual = rows_of(table.query())
    lost = sum((expected - actual).values())
    duplicated = sum((actual - expected).values())
    assert checksum(actual) == checksum(expected), f"I1 {describe_difference(actual, expected)}"
    backend = instance.state_store_backend
    store = table.state_store
    store.refresh()
    files, partitions = store.files_state(), store.partitions_state()
    deleted_up_to = {}
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        first = next(iter(backend.transaction_log(table.table_id, log_type).read_transactions_after(0)), None)
        deleted_up_to[log_type] = 0 if first is None else first.transaction_number - 1
    last = check_log_numbers(backend, table.table_id, deleted_up_to)
    check_references(files, partitions, table.data_prefix)
    check_tree(SCHEMA, partitions.partitions())
    assigned = [r.filename for r in files.references() if r.job_id is not None]
    assert assigned == [], f"I5 references still assigned to jobs after running until idle: {assigned}"
    check_compaction_jobs_settled(instance.compaction_job_tracker, table.table_id, files)
    snapshot_store = store.snapshot_store
    assert snapshot_store is not None
    replayed = check_replay_from_snapshots(
        backend=backend,
        snapshots=snapshot_store,
        schema=SCHEMA,
        table_id=table.table_id,
        expected_files=files,
        expected_partitions=partitions,
        deleted_up_to=deleted_up_to,
        clock=lambda: datetime.now(tz=UTC),
    )
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        latest = snapshot_store.latest(log_type)
        if latest is not None:
            assert Path(filesystem_path(latest.path)).is_file(), f"I6 the latest {log_type.value} snapshot is missing"
    recorded = {Path(filesystem_path(m.path)) for log in LogType for m in snapshot_store.snapshots(log)}
    unrecorded_snapshots = set(Path(snapshot_store.directory).glob("*.arrow")) - recorded
    orphans = _untracked(table.data_prefix, {local_path(f.filename) for f in files.files()})
    early = swept = 0
    if orphans:
        ages = [datetime.fromtimestamp(p.stat().st_mtime, tz=UTC) for p in orphans]
        oldest, youngest = min(ages), max(ages)
        # Just before the oldest orphan reaches its minimum age nothing may go; just after the youngest, all of them
        early = len(sweep_orphans(table, now=oldest + DEFAULT_ORPHAN_MIN_AGE - timedelta(seconds=1)).deleted)
        assert early == 0, "I7 orphans were swept before their minimum age"
        swept = len(sweep_orphans(table, now=youngest + DEFAULT_ORPHAN_MIN_AGE + timedelta(seconds=1)).deleted)
        left = _untracked(table.data_prefix, {local_path(f.filename) for f in files.files()})
        assert left == set(), f"I7 orphans left after the sweep: {left}"
        assert rows_of(instance.table(table_name).query()) == expected, "I7 the sweep changed the rows"
    return Converged(
        rows=sum(actual.values()),
        rows_lost=lost,
        rows_duplicated=duplicated,
        orphans=len(orphans),
        orphans_swept_early=early,
        orphans_swept=swept,
        snapshots_replayed=replayed,
        snapshot_files_unrecorded=len(unrecorded_snapshots),
        transactions={log.value: number for log, number in last.items()},
    )


def _untracked(data_prefix: str, tracked: set[Path]) -> set[Path]:
    """Data files and sidecars under the table's ``data/`` directory whose data file the state store does not track."""
    root = local_path(data_prefix) / "data"
    return {
        p for p in root.rglob("*") if p.suffix in (".parquet", ".sketches") and p.with_suffix(".parquet") not in tracked
    }


def check_compaction_jobs_settled(tracker: Any, table_id: str, files: FilesState) -> None:
    """I5 in the compaction job tracker: every failed run has a reason, and each job whose output is tracked (it
    landed) is FINISHED."""
    tracked_stems = {posixpath.splitext(posixpath.basename(f.filename))[0] for f in files.files()}
    for status in tracker.jobs(table_id):
        for run in status.runs:
            if run.status is CompactionJobStatusType.FAILED:
                assert run.failure_reasons, f"I5 a run of compaction job {status.job_id} failed with no reason"
        if status.job_id in tracked_stems:
            assert status.status is CompactionJobStatusType.FINISHED, (
                f"I5 compaction job {status.job_id} landed but the tracker says {status.status.value}"
            )
