"""Model-based long test (docs/reliability.md): random operation sequences on a real local table, checked against a
plain multiset of rows, with the invariants I1-I7 checked after every step.

The system under test is a local instance in a temporary directory, driven through the same functions its workers
run: standard ingest, compaction job creation, the compaction job handler, the partition split finder and splitter,
the state store committer, garbage collection and the orphan sweeper, snapshot creation and log truncation. Time is a
model clock shared by the state store (times of log entries), the queues (visibility timeouts) and the garbage
collector, so "wait 21 minutes" is one step and no test sleeps. A restart opens a new instance object on the same
directory: every cached state is dropped and rebuilt from the latest snapshot plus the log tail.

Faults: an ingest, a compaction run or a garbage collection can crash at a named crash point (a message stays in flight
and comes back after its visibility timeout, as from a killed worker); a compaction job can be handled twice back to
back; any message handled before (compaction job, split job, committer request, compaction commit batch) or any ingest
can be delivered again later; and ``table reinit`` (keeping the partitions or with new split points) can run on its own
or in the middle of an ingest or a compaction run, after it wrote its files and before it commits. An ingest racing a
reinit with new split points must fail (the partitions it named are gone); one racing a reinit that keeps the partitions
lands after it. Row deletes by key range (``Table.delete``) and their purge (``Table.purge``) are operations too, with
their own invariant D1 (a read loses no row, resurrects no deleted row, duplicates none), checked by every full query.
The table is of one of three kinds, drawn per example: a plain table (about half the examples), or an upsert table
(``sleeper.table.upsert``) keeping one row per key, the last written, either by commit order (no sort key:
``Table.ingest`` and ``Table.upsert`` commit UPSERT_FILES, hiding the older rows of their keys) or by the greatest sort
key (``value`` is the sort key: the rule applies at every read and compaction). On an upsert table every operation above
runs as on a plain one (ingests crash, are redelivered and race reinits; compactions, splits, GC and purges run beside
them), ``Table.upsert`` is one more operation, and invariant U1 holds after every step: a full query returns one row per
key, the last written (0 lost, 0 resurrected, 0 duplicated). A delete or an upsert is also read as of the transaction
before it, which must give the rows before it. Table deletion does not fit the model's single table: it has its own
regression tests (tests/integration/runtime/test_table_boundaries.py). Defects the model found have regression tests at
the end of this module. ``settle`` waits an hour and runs every worker, then checks that no file leaked.

Besides I1-I7 after every step (see ``invariants.py``), a handler error other than those in ``EXPECTED_FAILURES`` fails
the run as a spurious failure (docs/reliability.md B1), and the garbage collector may only delete files that had no
reference for longer than the GC delay (I7).

Any named crash point the code reaches in process (``CRASH_POINTS_IN_PROCESS``) can also be armed before an ingest,
a compaction run, a drain of the commit queues, a snapshot or a garbage collection (``crash_in_operation``): the
operation stops there as if killed. Whether the crashed ingest's ADD_FILES landed is then read from the state store (the
caller cannot know, as after a timeout); a compaction commit that landed before its tracker update is recorded when its
message comes back, so until the next ``settle`` its job may be committed while the tracker shows it unfinished.

Runs: ``SLEEPER_MODEL_EXAMPLES`` (default 50) and ``SLEEPER_MODEL_STEPS`` (default 30) set the size; CI runs the
defaults, derandomized. The nightly profile is one command, ``SLEEPER_NIGHTLY=1 pytest tests/model -k
random_operation --hypothesis-seed=$RANDOM`` (5,000 examples of 100 steps, random, the seed reported; the variables
above still override it); it writes a progress line every 50 examples to ``test-reports/model-progress.log``.
Figures go to ``test-reports/reliability.jsonl`` (row F): examples, steps, hits per rule, outcomes, failures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sleeper.adapters.local.queue import SqliteQueues
from sleeper.api.maintenance import reinitialise_table
from sleeper.api.table import Table
from sleeper.api.upserts import UpsertNotEnabledError
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.datafusion_engine import datafusion_merge
from sleeper.core import faults
from sleeper.core.faults import CrashPointReached
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import PartitionNotFoundError, TableDeletedError
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.table import TableStatus
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.gc.collector import collect_garbage
from sleeper.gc.orphans import sweep_deleted_tables, sweep_orphans
from sleeper.io.key_ranges import KeyBounds
from sleeper.io.parquet import SortedFileWriter
from sleeper.runtime.local.api import retry_dead_letters
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.splitting.finder import run_find_partitions_to_split
from sleeper.statestore.committer import committer_sender
from sleeper.statestore.exceptions import TransactionLogGapError
from sleeper.statestore.history import StateNotReadableError
from sleeper.statestore.store import StateStore
from sleeper.statestore.upkeep import create_snapshot, delete_old_transactions
from tests.model.invariants import (
    CreatedJob,
    Row,
    check_content,
    check_deletes,
    check_jobs,
    check_log_numbers,
    check_one_row_per_key,
    check_references,
    check_replay_from_snapshots,
    check_tree,
    local_path,
    rows_of,
    unreferenced_since,
)
from tests.reliability_report import NIGHTLY, REPORT_PATH, Reliability

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema.of(row_keys=[KEY], values=[Field("value", PrimitiveType.LONG)])
SORTED_SCHEMA = Schema.of(row_keys=[KEY], sort_keys=[Field("value", PrimitiveType.LONG)])
"""The schema of an upsert table by sort key: of a key's rows, the one with the greatest ``value`` is the last
written."""
PLAIN, BY_COMMIT, BY_SORT_KEY = "plain", "upsert-by-commit", "upsert-by-sort-key"
KINDS = st.sampled_from([PLAIN, BY_COMMIT, BY_SORT_KEY])
"""The kinds of table (Hypothesis draws the first most often: a plain table in about half the examples)."""
TABLE = "model"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SPLIT_THRESHOLD = 30
GC_DELAY = timedelta(minutes=20)
ORPHAN_MIN_AGE = timedelta(minutes=30)

COMPACTION_JOBS = "CompactionJobQ"
SPLIT_JOBS = "PartitionSplittingJobQueue"
COMMITTER = "StateStoreCommitterQ.fifo"
COMPACTION_COMMITS = "CompactionCommitQ"
HANDLERS = default_handlers()
EXPECTED_FAILURES = {(SPLIT_JOBS, "UntrackedFileError"), (SPLIT_JOBS, "MissingSketchesError")}
"""Handler errors the model expects: a split job naming files that were compacted and garbage collected since the
finder sent it (it is retried, then dead-lettered, as in Sleeper)."""
EXAMPLES = int(os.environ.get("SLEEPER_MODEL_EXAMPLES", "5000" if NIGHTLY else "50"))
STEPS = int(os.environ.get("SLEEPER_MODEL_STEPS", "100" if NIGHTLY else "30"))
RANDOM = os.environ.get("SLEEPER_MODEL_RANDOM", "1" if NIGHTLY else "") not in ("", "0", "false")
PROGRESS = REPORT_PATH.parent / "model-progress.log"
PROGRESS_EVERY = 50
CRASH_POINTS_IN_PROCESS = (
    "ingest.after_input_sorted",
    "ingest.after_files_written",
    "compaction.after_output_written",
    "compaction.after_commit",
    "gc.after_delete",
    "statestore.after_log_put",
    "statestore.after_snapshot_load",
    "snapshot.after_upload",
    "snapshot.after_metadata",
    "committer.after_commit",
)
"""The crash points an operation of the model can reach in this process (the others need a large body or the local
runner's worker loop; the kill-and-restart battery reaches them)."""
CRASHABLE_OPERATIONS = ("ingest", "compaction", "commit", "snapshot", "gc")

STATS: Counter[str] = Counter()
"""Hits per rule and outcome over the whole run, for the report."""

# Keys: mostly a small range (duplicate keys, splittable medians), sometimes anywhere in the long range, edges included.
KEYS = st.one_of(
    st.integers(-40, 40),
    st.integers(-40, 40),
    st.integers(-40, 40),
    st.sampled_from([LONG_MIN, LONG_MIN + 1, -1, 0, 1, LONG_MAX - 1, LONG_MAX]),
    st.integers(LONG_MIN, LONG_MAX),
)
ROWS = st.integers(1, 50).flatmap(lambda n: st.lists(st.tuples(KEYS, st.integers(-3, 3)), min_size=n, max_size=n))
COMPACTION_FAULTS = st.sampled_from(
    ["none", "none", "none", "duplicate", "compaction.after_output_written", "compaction.after_commit"]
)
REINIT_SPLITS = st.none() | st.lists(st.integers(-40, 40), min_size=1, max_size=2, unique=True).map(sorted)
"""A reinit's split points: None keeps the partitions; split points make a new tree (every partition id new)."""


class ModelClock:
    """The model's time: starts at the real time now (so file modification times are comparable) and moves only when
    a rule advances it."""

    def __init__(self) -> None:
        self.now = datetime.now(tz=UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def seconds(self) -> float:
        """The time in epoch seconds, for the queues."""
        return self.now.timestamp()

    def advance(self, delta: timedelta) -> None:
        """Moves time forward."""
        self.now += delta


class ClockedInstance(LocalInstance):
    """A local instance whose state stores and queues read the model clock (everything else is the real thing)."""

    def __init__(self, directory: Path, clock: ModelClock) -> None:
        super().__init__(directory)
        self.clock = clock

    @cached_property
    def queues(self) -> SqliteQueues:
        """The instance's queues, on the model clock."""
        return SqliteQueues(self.database, clock=self.clock.seconds)

    def _table(self, status: TableStatus) -> Table[LocalInstance]:
        table = super()._table(status)
        store = StateStore(
            schema=table.schema,
            table_id=table.table_id,
            backend=self.state_store_backend,
            filesystem=self.filesystem,
            snapshot_base_path=str(self.directory / "data" / status.table_id),
            settings=table.state_store.settings,
            clock=self.clock,
            data_prefix=table.data_prefix,
        )
        return dataclasses.replace(table, state_store=store)


@dataclass(frozen=True, slots=True)
class IngestRecord:
    """An ingest the model made (committed or crashed), to deliver again."""

    job_id: str
    rows: tuple[Row, ...]


def _arrow(rows: tuple[Row, ...]) -> pa.Table:
    return pa.table(
        {"key": pa.array([k for k, _ in rows], pa.int64()), "value": pa.array([v for _, v in rows], pa.int64())}
    )


class TableMachine(RuleBasedStateMachine):
    """One table of a local instance against a multiset of rows."""

    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.directory = Path(tempfile.mkdtemp(prefix="sleeper-model-"))
        self.clock = ModelClock()
        self.model: Counter[Row] = Counter()
        self.deleted: Counter[Row] = Counter()
        """Rows a row delete removed or an upsert by commit order replaced (the model no longer holds them), for D1's
        count of resurrected rows."""
        self.kind = PLAIN
        self.schema = SCHEMA
        self.ready = False
        self.ingests: list[IngestRecord] = []
        self.committed_ingests: set[str] = set()
        self.delivered: list[tuple[str, str]] = []
        self.jobs: dict[str, CreatedJob] = {}
        self.landed: set[str] = set()
        self.deleted_up_to: dict[LogType, int] = {}
        self.partition_count = 0
        self.unsettled_jobs: set[str] = set()
        """Compaction jobs whose commit may have landed in a crash before the tracker heard of it (until settled)."""
        self.untrackable_jobs: set[str] = set()
        """Jobs whose commit landed in a crash before the tracker heard, and whose output left the table (a reinit, or
        compacted again and collected) before their message came back: the run that comes back finds neither its
        inputs nor its output, so nothing can tell it the commit landed, and the tracker keeps it uncommitted (as
        Sleeper's tracker keeps every commit whose update a crash lost). Exempt from I5's FINISHED check for good."""
        if STATS["examples"] % PROGRESS_EVERY == 0:
            _progress()

    # --- set-up ------------------------------------------------------------------------------------------------
    @initialize(
        async_commits=st.booleans(),
        batched=st.booleans(),
        engine=st.sampled_from(["DATAFUSION", "ARROW"]),
        split_point=st.none() | st.integers(-40, 40),
        seed=st.lists(ROWS, max_size=3),
        kind=KINDS,
    )
    def create_table(
        self,
        async_commits: bool,
        batched: bool,
        engine: str,
        split_point: int | None,
        seed: list[list[Row]],
        kind: str = PLAIN,
    ) -> None:
        STATS[f"config:async={async_commits},batched={batched},engine={engine}"] += 1
        STATS[f"config:kind={kind}"] += 1
        self.kind = kind
        self.schema = SORTED_SCHEMA if kind == BY_SORT_KEY else SCHEMA
        LocalInstance.create(self.directory / "instance")
        self.instance = ClockedInstance(self.directory / "instance", self.clock)
        self.table = self.instance.create_table(
            TABLE,
            self.schema,
            split_points=None if split_point is None else [split_point],
            properties={
                "sleeper.table.partition.splitting.threshold": str(SPLIT_THRESHOLD),
                "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
                "sleeper.table.compaction.files.batch.size": "3",
                "sleeper.table.statestore.commit.async.enabled": str(async_commits).lower(),
                "sleeper.table.compaction.job.commit.async": str(async_commits).lower(),
                "sleeper.table.compaction.job.async.commit.batching": str(batched).lower(),
                "sleeper.table.partition.splitting.commit.async": str(async_commits).lower(),
                "sleeper.table.gc.commit.async": str(async_commits).lower(),
                "sleeper.table.gc.delay.minutes": str(int(GC_DELAY.total_seconds() // 60)),
                "sleeper.table.data.engine": engine,
                "sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot": "3",
                "sleeper.table.statestore.transactionlog.snapshot.load.min.transactions.ahead": "3",
                **({} if kind == PLAIN else {"sleeper.table.upsert": "true"}),
            },
        )
        self.shadow = StateStore(
            schema=self.schema,
            table_id=self.table.table_id,
            backend=self.instance.state_store_backend,
            clock=self.clock,
        )
        self.stale_reader = self._fresh_table().state_store
        self.ready = True
        self.partition_count = len(self.table.partitions())
        for rows in seed:
            self._ingest(rows, crash=False)

    def teardown(self) -> None:
        faults.disarm_all()
        shutil.rmtree(self.directory, ignore_errors=True)

    # --- helpers -----------------------------------------------------------------------------------------------
    def _fresh_table(self) -> Table[LocalInstance]:
        return self.instance.table(TABLE)

    def _waiting(self, queue_name: str) -> bool:
        """Whether a queue has a message visible now (rules that take one run only then)."""
        return self.ready and self.instance.queue(queue_name).approximate_counts().visible > 0

    def _handle(self, queue_name: str, body: str) -> None:
        line = HANDLERS[queue_name](self.instance, body)
        if queue_name == SPLIT_JOBS:
            STATS[f"outcome:split job {line.rpartition(': ')[2].split(' ')[0]}"] += 1
        elif queue_name == COMPACTION_JOBS:
            STATS[f"outcome:compaction job {line.split(' ')[3].rstrip(':')}"] += 1

    def _deliver(
        self,
        queue_name: str,
        *,
        crash_at: str | None = None,
        twice: bool = False,
        act_at: tuple[str, Callable[[str], None]] | None = None,
    ) -> str | None:
        """Receives one message and handles it as a queue worker would; returns its body (None if none was visible).

        A crash leaves the message in flight (it comes back after its visibility timeout); an error too, as in the
        local runner. Success deletes it. ``act_at`` runs an action at a crash point instead (another process acting
        while the handler is there).
        """
        queue = self.instance.queue(queue_name)
        messages = queue.receive(1)
        if not messages:
            STATS[f"empty:{queue_name}"] += 1
            return None
        message = messages[0]
        if crash_at is not None:
            faults.arm(crash_at, times=1)
        if act_at is not None:
            faults.arm(act_at[0], act_at[1], times=1)
        try:
            self._handle(queue_name, message.body)
            if twice:
                STATS["outcome:handled twice"] += 1
                self._handle(queue_name, message.body)
        except CrashPointReached as crash:
            STATS[f"outcome:crash at {crash.name}"] += 1
            return message.body
        except Exception as e:  # noqa: BLE001 - recorded as the runner logs it; the message comes back
            self._failed(queue_name, e)
            return message.body
        finally:
            faults.disarm_all()
        queue.delete(message.receipt_handle)
        self.delivered.append((queue_name, message.body))
        return message.body

    def _failed(self, queue_name: str, error: Exception) -> None:
        """Records a handler error; one the model cannot explain is a spurious failure (docs/reliability.md B1)."""
        key = f"{queue_name}: {type(error).__name__}"
        STATS[f"failure:{key}"] += 1
        assert (queue_name.removeprefix("redelivered "), type(error).__name__) in EXPECTED_FAILURES, (
            f"spurious failure of {queue_name}: {type(error).__name__}: {error}"
        )

    def _drain_commits(self) -> None:
        for queue_name in (COMPACTION_COMMITS, COMMITTER):
            while self._deliver(queue_name) is not None:
                pass

    def _landed(self, rows: tuple[Row, ...] | list[Row]) -> None:
        """Applies a committed write to the model: its rows are stored; on an upsert table by commit order each key's
        last row in the data replaces the key's stored rows (which count as deleted for D1)."""
        if self.kind != BY_COMMIT:
            self.model.update(rows)
            return
        last = dict(rows)
        replaced = Counter({row: n for row, n in self.model.items() if row[0] in last})
        self.model -= replaced
        self.deleted.update(replaced)
        self.model.update(last.items())
        STATS["outcome:rows replaced by an upsert"] += sum(replaced.values())

    def _visible(self) -> Counter[Row]:
        """The rows a read returns: the stored ones, or on an upsert table by sort key the one with the greatest sort
        key of each key (by commit order the model stores one row per key already)."""
        if self.kind != BY_SORT_KEY:
            return self.model
        last: dict[int, int] = {}
        for key, value in self.model:
            last[key] = max(value, last.get(key, value))
        return Counter(last.items())

    def _gone(self) -> Counter[Row]:
        """Rows written that a read must not return: deleted, replaced, or older versions of a key by sort key."""
        return self.deleted + (self.model - self._visible())

    def _check_past(self, number: int, before: Counter[Row], what: str) -> None:
        """Reads the table as of the transaction before a write and checks it gives the rows before the write (while
        the table keeps that state readable)."""
        try:
            past = rows_of(self._fresh_table().scan(as_of=number - 1).to_arrow())
        except StateNotReadableError:
            STATS["outcome:past state no longer readable"] += 1
            return
        check_content(past, before, f"time travel to before the {what} at {number}")
        STATS[f"outcome:time travel before {what} checked"] += 1

    def _landed_in_crash(self, record: IngestRecord, files_before: int) -> bool:
        """Whether a crashed ingest committed before the crash: from its job id in the log, or on an upsert table by
        commit order (whose writes carry no job id) from a files transaction after those before it (only it wrote)."""
        store = self._fresh_table().state_store
        if self.kind == BY_COMMIT:
            return store.last_transaction_numbers()[LogType.FILES] > files_before
        return store.job_already_added(record.job_id, None)

    # --- rules -------------------------------------------------------------------------------------------------
    def _ingest(self, rows: list[Row], *, crash: bool) -> None:
        record = IngestRecord(job_id=f"ingest-{len(self.ingests)}", rows=tuple(rows))
        self.ingests.append(record)
        if crash:
            faults.arm("ingest.after_files_written", times=1)
        try:
            self.table.ingest(_arrow(record.rows), job_id=record.job_id)
        except CrashPointReached:
            STATS["outcome:ingest crashed after files written"] += 1
            return
        finally:
            faults.disarm_all()
        self._landed(record.rows)
        self.committed_ingests.add(record.job_id)

    @rule(rows=ROWS, crash=st.integers(0, 5).map(lambda n: n == 0))
    def ingest(self, rows: list[Row], crash: bool) -> None:
        STATS["rule:ingest"] += 1
        self._ingest(rows, crash=crash)

    @rule(rows=ROWS)
    def ingest_more(self, rows: list[Row]) -> None:
        """Ingest again (a second rule, so that Hypothesis's swarm testing rarely switches ingest off entirely)."""
        STATS["rule:ingest_more"] += 1
        self._ingest(rows, crash=False)

    @precondition(lambda self: self.ingests)
    @rule(pick=st.integers(0, 1000))
    def redeliver_ingest(self, pick: int) -> None:
        STATS["rule:redeliver_ingest"] += 1
        record = self.ingests[pick % len(self.ingests)]
        self._fresh_table().ingest(_arrow(record.rows), job_id=record.job_id)
        if self.kind == BY_COMMIT:
            # an upsert carries no job id: delivered again, it writes its rows again, replacing later ones of its keys
            STATS["outcome:upsert delivered again"] += 1
            self._landed(record.rows)
            self.committed_ingests.add(record.job_id)
        elif record.job_id not in self.committed_ingests:
            STATS["outcome:crashed ingest completed by redelivery"] += 1
            self._landed(record.rows)
            self.committed_ingests.add(record.job_id)
        else:
            STATS["outcome:ingest redelivery was a no-op"] += 1

    def _reinit(self, split_points: list[int] | None) -> None:
        reinitialise_table(self._fresh_table(), split_points)
        self.model.clear()
        STATS["outcome:table reinitialised" + (" with new partitions" if split_points is not None else "")] += 1

    @rule(split_points=REINIT_SPLITS)
    def reinit(self, split_points: list[int] | None) -> None:
        """``table reinit``: every file cleared and deleted; with split points, new partitions."""
        STATS["rule:reinit"] += 1
        self._reinit(split_points)

    @rule(rows=ROWS, split_points=REINIT_SPLITS)
    def ingest_racing_reinit(self, rows: list[Row], split_points: list[int] | None) -> None:
        """An ingest that wrote its files before a reinit and commits after it: it fails if the reinit replaced the
        partitions (no row is acknowledged that a query cannot return), else its rows land after the reinit."""
        STATS["rule:ingest_racing_reinit"] += 1
        record = IngestRecord(job_id=f"ingest-{len(self.ingests)}", rows=tuple(rows))
        self.ingests.append(record)
        faults.arm("ingest.after_files_written", lambda _: self._reinit(split_points), times=1)
        try:
            self.table.ingest(_arrow(record.rows), job_id=record.job_id)
        except PartitionNotFoundError:
            assert split_points is not None, "an ingest racing a reinit that kept the partitions was refused"
            STATS["outcome:ingest racing reinit refused"] += 1
            return
        finally:
            faults.disarm_all()
        assert split_points is None, "an ingest naming partitions a reinit replaced was committed"
        STATS["outcome:ingest racing reinit landed after it"] += 1
        self._landed(record.rows)
        self.committed_ingests.add(record.job_id)

    @rule(rows=ROWS)
    def ingest_racing_delete_of_another_table(self, rows: list[Row]) -> None:
        """Another table of the instance is deleted while an ingest into it is between writing its files and
        committing: the ingest fails (nothing acknowledged into a log nobody reads), the deleted table's leftovers are
        swept, and this table is untouched (the invariants after the step)."""
        STATS["rule:ingest_racing_delete_of_another_table"] += 1
        name = f"doomed-{len(self.ingests)}"
        doomed = self.instance.create_table(name, SCHEMA)
        faults.arm("ingest.after_files_written", lambda _: self.instance.delete_table(name), times=1)
        try:
            doomed.ingest(_arrow(tuple(rows)), job_id=f"doomed-{name}")
        except TableDeletedError:
            STATS["outcome:ingest racing table delete refused"] += 1
        else:
            raise AssertionError("an ingest into a table deleted before its commit reported success")
        finally:
            faults.disarm_all()
        assert name not in {t.table_name for t in self.instance.tables()}
        swept = sweep_deleted_tables(
            self.instance.data_root,
            self.instance.state_store_backend.is_deleted,
            live_table_ids=[t.table_id for t in self.instance.tables()],
            now=datetime.now(tz=UTC) + timedelta(days=2),  # past the minimum age of leftovers
        )
        left = list((local_path(self.instance.data_root) / doomed.table_id).rglob("*.parquet"))
        assert not left, f"files of the deleted table {name} left after the sweep: {left}"
        STATS["outcome:deleted table leftovers swept"] += len(swept.deleted)

    @rule(split_points=REINIT_SPLITS)
    def compaction_racing_reinit(self, split_points: list[int] | None) -> None:
        """A compaction run that wrote its output before a reinit and commits after it (its inputs are gone)."""
        STATS["rule:compaction_racing_reinit"] += 1
        if not self._waiting(COMPACTION_JOBS):
            self.create_compaction_jobs(compact_all=True)
        self._deliver(COMPACTION_JOBS, act_at=("compaction.after_output_written", lambda _: self._reinit(split_points)))
        self._drain_commits()

    @rule(compact_all=st.booleans())
    def create_compaction_jobs(self, compact_all: bool) -> None:
        STATS["rule:create_compaction_jobs"] += 1
        result = create_compaction_jobs(
            self._fresh_table(),
            self.instance.queue(COMPACTION_JOBS),
            self.instance.compaction_job_tracker,
            compact_all=compact_all,
        )
        STATS["outcome:compaction jobs created"] += result.jobs_created
        STATS["outcome:references pre-split"] += result.references_pre_split
        for job in result.jobs:
            self.jobs[job.job_id] = CreatedJob(
                job_id=job.job_id,
                partition_id=job.partition_id,
                input_files=frozenset(job.input_files),
                output_file=job.output_file,
            )

    @rule(fault=COMPACTION_FAULTS, commit_now=st.integers(0, 3).map(lambda n: n == 0))
    def run_compaction_job(self, fault: str, commit_now: bool) -> None:
        STATS["rule:run_compaction_job"] += 1
        crash_at = fault if fault.startswith("compaction.") else None
        if not self._waiting(COMPACTION_JOBS):
            self.create_compaction_jobs(compact_all=True)
        self._deliver(COMPACTION_JOBS, crash_at=crash_at, twice=fault == "duplicate")
        if commit_now:
            self._drain_commits()

    @rule()
    def commit(self) -> None:
        STATS["rule:commit"] += 1
        self._drain_commits()

    @rule()
    def find_partitions_to_split(self) -> None:
        STATS["rule:find_partitions_to_split"] += 1
        STATS["outcome:split jobs sent"] += len(run_find_partitions_to_split(self.instance, self.table.table_id))

    @rule()
    def split_partition(self) -> None:
        STATS["rule:split_partition"] += 1
        if not self._waiting(SPLIT_JOBS):
            self.find_partitions_to_split()
        self._deliver(SPLIT_JOBS)

    @rule(compact_all=st.booleans())
    def compact_everything_now(self, compact_all: bool) -> None:
        """Creates jobs, runs every queued job and applies the commits (a shortcut to deeper states)."""
        STATS["rule:compact_everything_now"] += 1
        self.create_compaction_jobs(compact_all)
        while self._deliver(COMPACTION_JOBS) is not None:
            pass
        self._drain_commits()

    @rule()
    def split_everything_now(self) -> None:
        """Finds leaves to split, runs every queued split job and applies the commits."""
        STATS["rule:split_everything_now"] += 1
        self.find_partitions_to_split()
        while self._deliver(SPLIT_JOBS) is not None:
            pass
        self._drain_commits()

    @rule(point=st.sampled_from(CRASH_POINTS_IN_PROCESS), operation=st.sampled_from(CRASHABLE_OPERATIONS))
    def crash_in_operation(self, point: str, operation: str) -> None:
        """Runs an operation with a named crash point armed: if the operation reaches it, it stops there as if killed
        (its message, if any, stays in flight and comes back after its visibility timeout)."""
        STATS["rule:crash_in_operation"] += 1
        if operation == "ingest":
            record = IngestRecord(job_id=f"ingest-{len(self.ingests)}", rows=tuple((n, 0) for n in range(-5, 5)))
            self.ingests.append(record)
            files_before = self._fresh_table().state_store.last_transaction_numbers()[LogType.FILES]
        crashes_before = _crashes_counted()
        faults.arm(point, times=1)
        try:
            if operation == "ingest":
                self.table.ingest(_arrow(record.rows), job_id=record.job_id)
            elif operation == "compaction":
                if not self._waiting(COMPACTION_JOBS):
                    self.create_compaction_jobs(compact_all=True)
                self._deliver(COMPACTION_JOBS)
            elif operation == "commit":
                self._drain_commits()
            elif operation == "snapshot":
                create_snapshot(self._fresh_table().state_store)
            else:
                self.clock.advance(GC_DELAY + timedelta(minutes=1))
                collect_garbage(
                    self._fresh_table(), now=self.clock(), send_commit=committer_sender(self.instance.queue(COMMITTER))
                )
            crashed = False
        except CrashPointReached:
            crashed = True
        finally:
            faults.disarm_all()
        if operation == "ingest":
            if not crashed:
                self._landed(record.rows)
                self.committed_ingests.add(record.job_id)
            elif self._landed_in_crash(record, files_before):
                # the crash came after its ADD_FILES (UPSERT_FILES) landed: its caller cannot know, the log does
                STATS["outcome:crashed ingest had landed"] += 1
                self._landed(record.rows)
                self.committed_ingests.add(record.job_id)
        if not crashed and _crashes_counted() > crashes_before:
            crashed = True  # a delivery caught it, as a worker's death leaves the message in flight, and counted it
        elif crashed:
            STATS[f"outcome:crash at {point} in {operation}"] += 1
        else:
            STATS["outcome:crash point not reached"] += 1
        if crashed or operation in ("compaction", "commit"):
            # _deliver catches a crash itself: any compaction commit may have landed before its tracker update
            self.unsettled_jobs.update(self.jobs)
        if crashed and operation == "compaction":
            self._learn_stranded_jobs()

    def _learn_stranded_jobs(self) -> None:
        """Job creation killed after ASSIGN_JOB_IDS landed and before it sent the jobs leaves their inputs assigned to
        jobs no queue holds (as in Sleeper): they are never run, so those files are never compacted again. The model
        learns such jobs from the state so the other invariants still hold, and counts them."""
        stranded: dict[str, list[str]] = {}
        partitions: dict[str, str] = {}
        for reference in self._fresh_table().state_store.files_state().references():
            if reference.job_id is not None and reference.job_id not in self.jobs:
                stranded.setdefault(reference.job_id, []).append(reference.filename)
                partitions[reference.job_id] = reference.partition_id
        prefix = self.table.data_prefix.rstrip("/")
        for job_id, inputs in stranded.items():
            output = f"{prefix}/data/partition_{partitions[job_id]}/{job_id}.parquet"
            self.jobs[job_id] = CreatedJob(
                job_id=job_id, partition_id=partitions[job_id], input_files=frozenset(inputs), output_file=output
            )
            STATS["outcome:job stranded by a crash between assignment and sending"] += 1

    @precondition(lambda self: self.delivered)
    @rule(pick=st.integers(0, 1000))
    def redeliver_message(self, pick: int) -> None:
        STATS["rule:redeliver_message"] += 1
        queue_name, body = self.delivered[pick % len(self.delivered)]
        STATS[f"outcome:redelivered {queue_name}"] += 1
        try:
            self._handle(queue_name, body)
        except Exception as e:  # noqa: BLE001 - recorded; checked at the end of the run
            self._failed(f"redelivered {queue_name}", e)
        self._drain_commits()

    @rule(minutes=st.sampled_from([0, 5, 16, 21, 45]), crash=st.integers(0, 4).map(lambda n: n == 0))
    def garbage_collect(self, minutes: int, crash: bool) -> None:
        """Collects garbage ``minutes`` later (crashing after the deletes and before DELETE_FILES if ``crash``),
        applies the commits, then sweeps orphans."""
        STATS["rule:garbage_collect"] += 1
        self.clock.advance(timedelta(minutes=minutes))
        table = self._fresh_table()
        state = table.state_store.files_state()
        before = unreferenced_since(state)
        present = {f.filename for f in state.files() if local_path(f.filename).exists()}
        now = self.clock()
        if crash:
            faults.arm("gc.after_delete", times=1)
        try:
            result = collect_garbage(table, now=now, send_commit=committer_sender(self.instance.queue(COMMITTER)))
        except CrashPointReached:
            STATS["outcome:gc crashed after deletes"] += 1
            result = None
        finally:
            faults.disarm_all()
        gone = {name for name in present if not local_path(name).exists()}
        for filename in gone:
            # I7: only files unreferenced for longer than the delay are deleted
            assert filename in before, f"I7 GC deleted {filename}, which had references"
            since = before[filename]
            assert since is not None and since < now - GC_DELAY, f"I7 GC deleted {filename} too early ({since})"
        if result is None:
            return
        assert not result.problems, f"GC problems: {result.problems}"
        assert set(result.deleted) <= set(before), "I7 GC reported deleting files that had references"
        STATS["outcome:files garbage collected"] += len(result.deleted)
        self._drain_commits()
        swept = sweep_orphans(table, min_age=ORPHAN_MIN_AGE, now=now)
        state = self._fresh_table().state_store.files_state()
        tracked = {local_path(f.filename) for f in state.files()}
        holding = {r.job_id for r in state.references() if r.job_id is not None}
        for path in swept.deleted:
            data_file = Path("/" + path.lstrip("/")).with_suffix(".parquet")
            assert data_file not in tracked, f"I7 the orphan sweeper deleted tracked file {path}"
            assert data_file.stem not in holding, f"I7 the orphan sweeper deleted in-flight output {path}"
        STATS["outcome:orphans swept"] += len(swept.deleted)

    @rule()
    def snapshot(self) -> None:
        STATS["rule:snapshot"] += 1
        STATS["outcome:snapshots created"] += len(create_snapshot(self._fresh_table().state_store).created)

    @rule()
    def settle(self) -> None:
        """Snapshots, waits an hour and lets every worker run, then checks nothing leaked (I7): every data file or
        sidecar on disk belongs to a tracked file or to the output of a job that still holds its inputs (it may yet
        commit); then deletes the log entries far enough behind the snapshot."""
        STATS["rule:settle"] += 1
        # the scheduled upkeep runs too: a snapshot now, and an hour later the log entries far enough behind it go
        STATS["outcome:snapshots created"] += len(create_snapshot(self._fresh_table().state_store).created)
        self.clock.advance(timedelta(hours=1))  # past visibility timeouts, the GC delay and the orphan minimum age
        for queue_name in (SPLIT_JOBS, COMPACTION_JOBS):
            while self._deliver(queue_name) is not None:
                pass
        self._drain_commits()
        # A committer request whose worker crashed after applying it is dead-lettered when it comes back (its queue
        # gives one receive, as Sleeper's), and its job stays unfinished in the tracker until the operator moves it
        # back ('sleeper dead-letters retry'), when it applies as a no-op and the tracker hears (see the C2 kill test)
        redriven = retry_dead_letters(self.instance, [COMMITTER]).get(COMMITTER, 0)
        if redriven:
            STATS["outcome:committer requests dead-lettered after a crash, retried by the operator"] += redriven
            self._drain_commits()
        table = self._fresh_table()
        collected = collect_garbage(
            table, now=self.clock(), send_commit=committer_sender(self.instance.queue(COMMITTER))
        )
        assert not collected.problems, f"GC problems: {collected.problems}"
        STATS["outcome:files garbage collected"] += len(collected.deleted)
        self._drain_commits()
        STATS["outcome:orphans swept"] += len(sweep_orphans(table, min_age=ORPHAN_MIN_AGE, now=self.clock()).deleted)
        state = self._fresh_table().state_store.files_state()
        allowed = {local_path(f.filename) for f in state.files()}
        holding = {r.job_id for r in state.references() if r.job_id is not None}
        allowed.update(local_path(job.output_file) for job in self.jobs.values() if job.job_id in holding)
        on_disk = list((local_path(self.table.data_prefix) / "data").rglob("*.*"))
        leaked = [p for p in on_disk if p.with_suffix(".parquet") not in allowed]
        assert not leaked, f"I7 files leaked after settling: {leaked}"
        STATS["outcome:settled with no leaks"] += 1
        self._keep_untrackable(state)
        self.unsettled_jobs.clear()  # every message came back and was handled again
        self._delete_old_transactions()

    def _keep_untrackable(self, files: FilesState) -> None:
        """Moves to ``untrackable_jobs`` the unsettled jobs whose output landed, is no longer in the table and whose
        commit the tracker never heard of (see ``untrackable_jobs``); a landed output still in the table must have had
        its commit recorded when the job's message came back, and I5 goes on checking it."""
        tracker = self.instance.compaction_job_tracker
        for job_id in self.unsettled_jobs - self.untrackable_jobs:
            job = self.jobs.get(job_id)
            if job is None or job.output_file not in self.landed or job.output_file in files:
                continue
            status = tracker.job(job_id)
            if status is None or not any(run.commit_time is not None for run in status.runs):
                self.untrackable_jobs.add(job_id)
                STATS["outcome:landed commit the tracker could not learn (output gone before redelivery)"] += 1

    @rule(minutes=st.sampled_from([0, 3]), snapshot_first=st.booleans())
    def truncate_log(self, minutes: int, snapshot_first: bool) -> None:
        """Deletes old log entries ``minutes`` later (a snapshot must be 2 minutes old), maybe snapshotting first."""
        STATS["rule:truncate_log"] += 1
        if snapshot_first:
            self.snapshot()
        self.clock.advance(timedelta(minutes=minutes))
        self._delete_old_transactions()

    def _delete_old_transactions(self) -> None:
        result = delete_old_transactions(self._fresh_table().state_store)
        for log_type, up_to in result.deleted_up_to.items():
            self.deleted_up_to[log_type] = max(self.deleted_up_to.get(log_type, 0), up_to)
        STATS["outcome:log entries deleted"] += sum(result.entries_deleted.values())

    @rule()
    def restart(self) -> None:
        STATS["rule:restart"] += 1
        self.instance = ClockedInstance(self.directory / "instance", self.clock)
        self.table = self.instance.table(TABLE)

    @rule()
    def catch_up_stale_reader(self) -> None:
        """A reader that last looked many steps ago (before log truncations, docs/reliability.md C6) reads again: it
        reaches the head through the latest snapshot, or fails retryably; it never builds a state with gaps."""
        STATS["rule:catch_up_stale_reader"] += 1
        self.shadow.refresh()
        try:
            files = self.stale_reader.files_state()
            partitions = self.stale_reader.partitions_state()
        except TransactionLogGapError:
            STATS["outcome:stale reader failed retryably"] += 1
            self.stale_reader = self._fresh_table().state_store
            return
        assert files == self.shadow.files_state(), "C6 the stale reader's files differ from the full replay"
        assert partitions == self.shadow.partitions_state(), "C6 the stale reader's partitions differ"
        STATS["outcome:stale reader caught up"] += 1

    @rule(bounds=st.tuples(KEYS, KEYS))
    def delete_rows(self, bounds: tuple[int, int]) -> None:
        """Deletes a key range: the rows committed before it leave the model; later ingests are kept."""
        STATS["rule:delete_rows"] += 1
        low, high = sorted(bounds)
        before = Counter(self._visible())
        number = self._fresh_table().delete(f"key >= {low} and key < {high}")
        removed = Counter({row: n for row, n in self.model.items() if low <= row[0] < high})
        self.model -= removed
        self.deleted.update(removed)
        STATS["outcome:rows deleted"] += sum(removed.values())
        self._check_past(number, before, "delete")

    @rule(rows=ROWS)
    def upsert(self, rows: list[Row]) -> None:
        """``Table.upsert``: on an upsert table the rows replace their keys' rows (by commit order, or by sort key where
        greater); on a plain table it is refused and writes nothing."""
        STATS["rule:upsert"] += 1
        before = Counter(self._visible())
        try:
            numbers = self._fresh_table().upsert(_arrow(tuple(rows)))
        except UpsertNotEnabledError:
            assert self.kind == PLAIN, f"Table.upsert refused on an {self.kind} table"
            STATS["outcome:upsert refused on a plain table"] += 1
            return
        assert self.kind != PLAIN, "Table.upsert wrote to a plain table"
        self._landed(rows)
        STATS[f"outcome:upsert on {self.kind}"] += 1
        self._check_past(numbers[0], before, "upsert")

    @rule()
    def purge(self) -> None:
        """Compacts every file holding deleted rows now (in process, committing synchronously)."""
        STATS["rule:purge"] += 1
        result = self._fresh_table().purge()
        STATS["outcome:purge jobs run"] += len(result.jobs)
        if result.done:
            STATS["outcome:purge done"] += 1

    @rule(bounds=st.tuples(KEYS, KEYS))
    def query(self, bounds: tuple[int, int]) -> None:
        STATS["rule:query"] += 1
        low, high = sorted(bounds)
        region = Region.of([Range(field=KEY, min=low, max=high)])
        result = self._fresh_table().query(regions=[region])
        expected = Counter({row: n for row, n in self._visible().items() if low <= row[0] < high})
        check_content(rows_of(result), expected, f"query [{low}, {high})")

    # --- invariants ----------------------------------------------------------------------------------------------
    @invariant()
    def invariants_hold(self) -> None:
        if not self.ready:
            return
        STATS["steps checked"] += 1
        backend = self.instance.state_store_backend
        table_id = self.table.table_id
        # I1: a full query of the long-lived table (cached state brought up to date) equals the model; D1 the same
        # read against the deletes: 0 lost, 0 resurrected, 0 duplicated
        result = self.table.query()
        full = rows_of(result)
        visible = self._visible()
        for name, count in check_deletes(full, visible, self._gone(), "full query").items():
            STATS[f"deletes:{name}"] += count
        if self.kind != PLAIN:
            # U1: one row per key, the last written
            STATS["upserts:duplicated keys"] += check_one_row_per_key(result.column("key").to_pylist(), "full query")
            STATS["upserts:steps checked"] += 1
        check_content(full, visible, "full query")
        # I2: log numbers contiguous after the deleted entries
        last = check_log_numbers(backend, table_id, self.deleted_up_to)
        # I6: the full replay (kept up to date step by step), the long-lived table's state (cache + snapshots +
        # tail), a newly opened table's state (latest snapshot + tail), and every retained snapshot plus its tail agree
        self.shadow.refresh()
        assert self.shadow.last_transaction_numbers() == last, "I2/I6 the replay did not reach the end of the logs"
        files = self.shadow.files_state()
        partitions = self.shadow.partitions_state()
        if not self.deleted_up_to:
            replay = StateStore(schema=self.schema, table_id=table_id, backend=backend, clock=self.clock)
            assert replay.files_state() == files, "I6 a full replay from transaction 1 differs"
            assert replay.partitions_state() == partitions, "I6 a full replay from transaction 1 differs"
        for name, store in (("long-lived", self.table.state_store), ("reopened", self._fresh_table().state_store)):
            assert store.files_state() == files, f"I6 the {name} table's files differ from the full replay"
            assert store.partitions_state() == partitions, f"I6 the {name} table's partitions differ"
        snapshot_store = self.table.state_store.snapshot_store
        assert snapshot_store is not None
        STATS["snapshots replayed"] += check_replay_from_snapshots(
            backend=backend,
            snapshots=snapshot_store,
            schema=self.schema,
            table_id=table_id,
            expected_files=files,
            expected_partitions=partitions,
            deleted_up_to=self.deleted_up_to,
            clock=self.clock,
            every=False,
        )
        # I3: references; I4: tree; I5: jobs
        check_references(files, partitions, self.table.data_prefix)
        check_tree(self.schema, partitions.partitions())
        check_jobs(
            files,
            self.jobs,
            self.landed,
            self.instance.compaction_job_tracker,
            table_id,
            unsettled=self.unsettled_jobs | self.untrackable_jobs,
        )
        STATS["outcome:partitions split"] += (len(partitions) - self.partition_count) // 2
        self.partition_count = len(partitions)


def _run_settings() -> settings:
    return settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        derandomize=not RANDOM,
        database=None if not RANDOM else settings.default.database,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


def _crashes_counted() -> int:
    return sum(n for key, n in STATS.items() if key.startswith("outcome:crash at"))


def _progress() -> None:
    """Appends a progress line (examples and steps so far), so a long nightly run can be followed."""
    PROGRESS.parent.mkdir(parents=True, exist_ok=True)
    steps = sum(v for k, v in STATS.items() if k.startswith("rule:"))
    with PROGRESS.open("a", encoding="utf-8") as out:
        out.write(
            json.dumps(
                {
                    "time": datetime.now(tz=UTC).isoformat(timespec="seconds"),
                    "examples": STATS["examples"],
                    "steps": steps,
                }
            )
            + "\n"
        )


def _run_guaranteed_sequence(kind: str) -> None:
    """One fixed sequence run after the random ones, on each kind of table: three ingests (past the split threshold), a
    compaction of everything, a split, a row delete, an ingest after it of keys some rows hold, an upsert, a purge,
    settling (GC past its delay) and log truncation, with the invariants checked after each step as in the random
    runs. Which states the derandomized runs reach depends on what ran before them in the process, so this sequence
    makes sure a finished compaction, a split, garbage collection, log deletion, a purged delete and an upsert
    replacing stored rows are exercised in every run."""
    machine = TableMachine()
    try:
        machine.create_table(async_commits=True, batched=False, engine="ARROW", split_point=None, seed=[], kind=kind)
        steps = [
            *(lambda i=i: machine.ingest(rows=[(i * 20 + n, n) for n in range(15)], crash=False) for i in range(3)),
            lambda: machine.compact_everything_now(compact_all=True),
            machine.split_everything_now,
            lambda: machine.delete_rows(bounds=(10, 35)),
            lambda: machine.ingest(rows=[(n, 9) for n in range(5, 40, 5)], crash=False),
            lambda: machine.upsert(rows=[(n, 7) for n in range(0, 60, 6)]),
            machine.purge,
            machine.settle,
            lambda: machine.truncate_log(minutes=3, snapshot_first=True),
        ]
        for step in steps:
            step()
            machine.invariants_hold()
    finally:
        machine.teardown()


def should_keep_every_invariant_under_random_operation_sequences(
    request: pytest.FixtureRequest, reliability: Reliability
) -> None:
    # Given a fresh tally of rule hits
    STATS.clear()
    started = datetime.now(tz=UTC)
    failure: BaseException | None = None
    # When Hypothesis runs random sequences of operations against the model
    try:
        run_state_machine_as_test(TableMachine, settings=_run_settings())
        for kind in (PLAIN, BY_COMMIT, BY_SORT_KEY):
            _run_guaranteed_sequence(kind)
    except BaseException as e:
        failure = e
        raise
    finally:
        rules = {k.removeprefix("rule:"): v for k, v in sorted(STATS.items()) if k.startswith("rule:")}
        steps = sum(rules.values())
        reliability.record(
            "F",
            **{
                "case": "4(f) model-based long test",
                "seconds": round((datetime.now(tz=UTC) - started).total_seconds(), 1),
                "examples": STATS["examples"],
                "steps": steps,
                "max_examples": EXAMPLES,
                "step_count": STEPS,
                "derandomized": not RANDOM,
                "seed": request.config.getoption("hypothesis_seed", None),
                "rule_hits": rules,
                "rule_share_min": round(min(rules.values()) / steps, 4) if steps else 0,
                "outcomes": {k: v for k, v in sorted(STATS.items()) if not k.startswith("rule:")},
                "failures": 0 if failure is None else 1,
                "unhandled_exceptions": 0 if failure is None else 1,
                # each step checked I1 (rows), I3 (references) and I7: a run that ended without failure lost none
                **({"rows_lost": 0, "rows_duplicated": 0, "referenced_files_deleted": 0} if failure is None else {}),
            },
        )
    # Then every rule ran, and the run reached the interesting states
    assert all(rules.get(name, 0) > 0 for name in _RULES), f"rules never run: {set(_RULES) - set(rules)}"
    for outcome in (
        "compaction job finished",
        "partitions split",
        "files garbage collected",
        "log entries deleted",
        f"upsert on {BY_COMMIT}",
        f"upsert on {BY_SORT_KEY}",
        "rows replaced by an upsert",
        "time travel before upsert checked",
    ):
        assert STATS[f"outcome:{outcome}"] > 0, f"no {outcome} in the whole run"


_RULES: tuple[str, ...] = tuple(
    name
    for name, value in vars(TableMachine).items()
    if callable(value) and not name.startswith("_") and name not in ("create_table", "teardown", "invariants_hold")
)


# --- regressions found by the model ---------------------------------------------------------------------------------
ROWS_IN_SMALL_FILE = 40
"""Rows in the one file of the small-file split regression (a stride sample of it would hold two keys)."""


def should_split_a_leaf_over_the_threshold_whose_file_is_small(tmp_path: Path) -> None:
    # Given a root-only table splitting at 30 rows, and one ingested file of 40 distinct keys
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.partition.splitting.threshold": "30",
            "sleeper.table.partition.splitting.commit.async": "false",
        },
    )
    table.ingest(_arrow(tuple((key, 0) for key in range(ROWS_IN_SMALL_FILE))))
    # When the finder runs and its split job is handled
    assert len(run_find_partitions_to_split(instance, table.table_id)) == 1
    (message,) = instance.queue(SPLIT_JOBS).receive(1)
    outcome = HANDLERS[SPLIT_JOBS](instance, message.body)
    # Then the root is split in two
    assert len(instance.table("t").leaf_partitions()) == 2, outcome


def should_keep_a_landed_compaction_job_finished_when_its_committer_message_is_delivered_again(tmp_path: Path) -> None:
    # Given a table whose compaction commits go to the state store committer, with one compaction job committed
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.compaction.job.commit.async": "true",
            "sleeper.table.compaction.job.async.commit.batching": "false",
        },
    )
    table.ingest(_arrow(((1, 1), (2, 2))))
    table.ingest(_arrow(((3, 3),)))
    (job,) = create_compaction_jobs(
        table, instance.queue(COMPACTION_JOBS), instance.compaction_job_tracker, compact_all=True
    ).jobs
    (job_message,) = instance.queue(COMPACTION_JOBS).receive(1)
    HANDLERS[COMPACTION_JOBS](instance, job_message.body)
    (commit_message,) = instance.queue(COMMITTER).receive(1)
    HANDLERS[COMMITTER](instance, commit_message.body)
    assert job.output_file in instance.table("t").state_store.files_state()
    # When the committer's message is delivered again
    HANDLERS[COMMITTER](instance, commit_message.body)
    # Then the tracker still shows the job finished
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None
    assert status.status is CompactionJobStatusType.FINISHED, [run.failure_reasons for run in status.runs]


def should_keep_a_landed_compaction_job_finished_when_its_batched_commit_comes_back_after_gc(tmp_path: Path) -> None:
    # Given a table with batched compaction commits, whose first job's output was compacted again and collected
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.compaction.job.commit.async": "true",
            "sleeper.table.compaction.job.async.commit.batching": "true",
            "sleeper.table.gc.commit.async": "false",
        },
    )
    table.ingest(_arrow(((1, 1), (2, 2))))
    table.ingest(_arrow(((3, 3),)))
    commits: list[str] = []
    first_job = None
    for _ in range(2):
        (job,) = create_compaction_jobs(
            table, instance.queue(COMPACTION_JOBS), instance.compaction_job_tracker, compact_all=True
        ).jobs
        first_job = first_job or job
        (job_message,) = instance.queue(COMPACTION_JOBS).receive(1)
        HANDLERS[COMPACTION_JOBS](instance, job_message.body)
        (commit_message,) = instance.queue(COMPACTION_COMMITS).receive(1)
        HANDLERS[COMPACTION_COMMITS](instance, commit_message.body)
        commits.append(commit_message.body)
    assert first_job is not None
    collect_garbage(instance.table("t"), now=datetime.now(tz=UTC) + timedelta(days=1))
    assert first_job.output_file not in instance.table("t").state_store.files_state()
    # When the first job's commit message is delivered again
    HANDLERS[COMPACTION_COMMITS](instance, commits[0])
    # Then the tracker still shows the first job finished
    status = instance.compaction_job_tracker.job(first_job.job_id)
    assert status is not None
    assert status.status is CompactionJobStatusType.FINISHED, [run.failure_reasons for run in status.runs]


def should_merge_two_one_row_files_within_a_region_with_datafusion(tmp_path: Path) -> None:
    # Given two one-row sorted files
    files = []
    for name, key in (("a", -40), ("b", -34)):
        path = str(tmp_path / f"{name}.parquet")
        with SortedFileWriter(path, SCHEMA) as writer:
            writer.write(_arrow(((key, 0),)))
        files.append(path)
    # When DataFusion merges them within the keys below -33
    region = [KeyBounds(field="key", min=LONG_MIN, max=-33)]
    merged = pa.Table.from_batches(list(datafusion_merge(files, SCHEMA, region, batch_rows=1024)))
    # Then both rows come back in order
    assert merged.column("key").to_pylist() == [-40, -34]


@pytest.mark.parametrize("path", ["committer", "synchronous"])
def should_record_a_compaction_committed_when_its_message_comes_back_after_a_crash_after_the_commit(
    tmp_path: Path, path: str
) -> None:
    # Given a compaction job whose commit lands (through the committer, or in the job's own run) just before its
    # worker is killed, so the tracker never hears of it
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.compaction.job.commit.async": str(path == "committer").lower(),
            "sleeper.table.compaction.job.async.commit.batching": "false",
        },
    )
    table.ingest(_arrow(((1, 1), (2, 2))))
    table.ingest(_arrow(((3, 3),)))
    (job,) = create_compaction_jobs(
        table, instance.queue(COMPACTION_JOBS), instance.compaction_job_tracker, compact_all=True
    ).jobs
    (job_message,) = instance.queue(COMPACTION_JOBS).receive(1)
    queue, body = COMPACTION_JOBS, job_message.body
    if path == "committer":
        HANDLERS[COMPACTION_JOBS](instance, body)
        (commit_message,) = instance.queue(COMMITTER).receive(1)
        queue, body = COMMITTER, commit_message.body
    with pytest.raises(CrashPointReached), faults.armed("statestore.after_log_put", times=1):
        HANDLERS[queue](instance, body)
    assert job.output_file in instance.table("t").state_store.files_state()
    # When its message comes back
    HANDLERS[queue](instance, body)
    # Then the tracker shows the job finished, with one committed run
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None
    assert status.status is CompactionJobStatusType.FINISHED, [(r.status, r.failure_reasons) for r in status.runs]
    assert [r.commit_time is not None for r in status.runs].count(True) == 1
