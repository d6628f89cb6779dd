"""A3 mixed race (docs/reliability.md) on the emulated AWS instance: the local runtime's test
(``tests/integration/runtime/test_mixed_race.py``) with the table's logs, data, queues and trackers on moto, and the
work done by the emulator's pump as AWS would do it.

A table of 4 leaves splits at 60 rows and compacts pairs of files. Two ingesters ingest small batches (each row's key
unique, so a row's presence is exact) by ``Table.ingest``, alternately the two ways a client of an AWS instance has:
an ingest job (the rows uploaded under ``for_ingest/``, the job sent to the ingest queue, run by an ingest task whose
commit goes through the state store committer, and the client waiting for the ingest job tracker to record it
finished), and ``direct=True`` (written and committed to the log in the client's process, racing the committer).
Meanwhile two pumps work: one fires the scheduled rules (ingest and compaction task creation, compaction job creation,
partition splitting, GC, snapshot creation and deletion, transaction deletion; every 1-3 s, splitting every 10 s,
:data:`PERIODS`), delivers every queue to its function, follows the files log's stream and runs the ECS tasks started
(ingest and compaction) as local processes; the other delivers every queue too, as concurrent invocations of the
functions would. A reader queries the whole table from start to drained (at least 20 times, more often early,
``checkpoint_pause``): a query must return every row acknowledged before it started, and may only
return rows whose ingest was sent by the time it finished (a job's rows are committed before its client sees the
tracker say so, so rows seen before they were acknowledged are counted, not refused). Then the first pump fires every
rule and runs until idle, again until a cycle commits nothing, and the table must hold exactly the acknowledged rows,
with I1-I7 holding and no message dead-lettered but pending compaction job batches that lost a creation race (as
Sleeper's dispatcher dead-letters them; none of their jobs may have been sent).

The emulator runs one function body at a time in its process (``sleeper.emulator.functions``: the process has one
environment); the task processes, the direct ingests and the reader run alongside. moto is made atomic where
DynamoDB and SQS are (``moto_atomic.py``, ``atomic_moto_queues``), so the race tests Sleeper, not moto. CI makes
2 x 8 ingests (about 50 transactions); the nightly profile (``SLEEPER_NIGHTLY=1``) 2 x 40 (about 200 transactions, 3
minutes); ``SLEEPER_A3_INGESTS_PER_WRITER`` sets another size.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from sleeper.core import operations
from sleeper.core.operations import TriggerKind
from sleeper.core.statestore.transactions.log import LogType
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.emulator.rounds import PumpRound
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws.moto_atomic import atomic_moto_queues, atomic_moto_transactions  # noqa: F401 - fixtures
from tests.integration.aws_runtime.converged import check_converged_on_aws
from tests.integration.runtime.crash_harness import SCHEMA, lost_race_batches, where
from tests.integration.runtime.test_mixed_race import (
    CHECKPOINTS,
    ROWS_PER_INGEST,
    _batch,
    checkpoint_pause,
    wait_for_compactions,
)
from tests.model.invariants import Row, rows_of
from tests.reliability_report import NIGHTLY, Reliability

pytestmark = [
    pytest.mark.integration,
    pytest.mark.aws,
    pytest.mark.slow,
    pytest.mark.usefixtures("atomic_moto_transactions", "atomic_moto_queues"),
]

INGESTS_PER_WRITER = int(os.environ.get("SLEEPER_A3_INGESTS_PER_WRITER", "40" if NIGHTLY else "8"))
"""Ingests per writer: 8 in CI, 40 nightly, or ``SLEEPER_A3_INGESTS_PER_WRITER`` (about 2.5 transactions per ingest)."""
MAX_BACKLOG: int | None = 40 if INGESTS_PER_WRITER > 40 else None
"""Beyond the nightly's size: an ingester waits (30 s at most) while the table has more files than this beyond one a
leaf, as the local A3 nightly's do, so the race stays a race of every operation rather than a backlog of compactions."""
BACKLOG_PAUSE = 0.5
"""How often a held-back ingester looks at the table again (each look is a state store refresh through moto)."""
CHECKPOINT_SECONDS = 1.0
DRAIN_CYCLES = 30
IDLE_SECONDS = 0.5
"""The wait of a pump after a round with nothing to do (``Pump.run_forever`` waits its interval likewise)."""
HANDLERS = tuple(
    operations.handler(name)
    for name in (
        operations.STATESTORE_COMMITTER,
        operations.INGEST_TASK_CREATION,
        operations.COMPACTION_JOB_CREATION_TRIGGER,
        operations.COMPACTION_JOB_CREATION,
        operations.COMPACTION_JOB_DISPATCHER,
        operations.COMPACTION_TASK_CREATION,
        operations.COMPACTION_COMMIT_BATCHER,
        operations.PARTITION_SPLITTING_TRIGGER,
        operations.FIND_PARTITIONS_TO_SPLIT,
        operations.SPLIT_PARTITION,
        operations.GARBAGE_COLLECTOR_TRIGGER,
        operations.GARBAGE_COLLECTOR,
        operations.SNAPSHOT_CREATION_TRIGGER,
        operations.SNAPSHOT_CREATION,
        operations.SNAPSHOT_DELETION_TRIGGER,
        operations.SNAPSHOT_DELETION,
        operations.TRANSACTION_DELETION_TRIGGER,
        operations.TRANSACTION_DELETION,
        operations.TRANSACTION_FOLLOWER,
    )
)
"""The functions that act on a table's data and logs (queries, metrics, Iceberg publishing, the ingest batcher and
bulk import and export are left out: nothing in this test uses them, and each would cost moto calls every round)."""
SQS_HANDLERS = tuple(h for h in HANDLERS if h.trigger.kind is TriggerKind.SQS)
QUEUES = (*(q for h in SQS_HANDLERS for q in h.trigger.queues), operations.INGEST_JOB_Q, operations.COMPACTION_JOB_Q)
"""Every queue a handler or a task of the pumps consumes."""
PERIODS = {
    "sleeper.ingest.task.creation.period.minutes": "1",
    "sleeper.compaction.task.creation.period.minutes": "1",
    "sleeper.compaction.job.creation.period.minutes": "1",
    "sleeper.statestore.snapshot.creation.lambda.period.seconds": "120",
    # Sleeper's finder sends a job for every leaf over the threshold on each run, queued or not; one pump splits
    # fewer than a finder every 2 s sends, so at 2,500 transactions 6,879 split jobs were queued and every SQS call
    # of moto (which looks at each message of a queue) slowed the race fourfold
    "sleeper.partition.splitting.period.minutes": "10",
    "sleeper.gc.period.minutes": "2",
    "sleeper.statestore.snapshot.deletion.lambda.period.minutes": "3",
    "sleeper.statestore.transaction.deletion.lambda.period.minutes": "3",
}
"""The rules' periods in the race, in minutes of the pump's clock (:class:`_Clock`), which are seconds of the test."""


class _Clock:
    """The clock of the pump that fires the rules: a minute passes every second of the race, so each rule (its period
    set to 1-10 minutes, :data:`PERIODS`) fires every 1-10 s; once frozen, time moves only when every rule is made due
    at once."""

    def __init__(self) -> None:
        self._start = time.time()
        self._began = time.monotonic()
        self._frozen: float | None = None

    def __call__(self) -> float:
        if self._frozen is not None:
            return self._frozen
        return self._start + (time.monotonic() - self._began) * 60

    def freeze(self) -> None:
        """Stops the clock: no rule fires by itself any more."""
        self._frozen = self()

    def every_rule_due(self) -> float:
        """An hour later: every rule is due (as the local runner's ``force`` makes every operation due)."""
        self._frozen = self() + 3600
        return self._frozen


def _dead_letters(instance: AwsInstance) -> dict[str, int]:
    counts = {name: instance.dead_letter_queue(name).approximate_counts().visible for name in QUEUES}
    return {name: n for name, n in counts.items() if n}


def _last_transactions(instance: AwsInstance, table_name: str) -> dict[LogType, int]:
    store = instance.table(table_name).state_store
    store.refresh()
    return store.last_transaction_numbers()


def _drain(pump: Pump, clock: _Clock, instance: AwsInstance, table_name: str) -> tuple[PumpRound, int]:
    """Fires every rule and runs the pump until idle, again and again until a cycle adds no transaction (the
    emulator's ``run_until_idle`` with the rules fired in between, as the local runner's ``run_until_idle`` forces
    them). Returns the totals and the cycles run."""
    total = PumpRound()
    for cycle in range(1, DRAIN_CYCLES + 1):
        before = _last_transactions(instance, table_name)
        total.add(pump.run_once(now=clock.every_rule_due()))
        total.add(pump.run_until_idle(timeout_seconds=180))
        if _last_transactions(instance, table_name) == before:
            return total, cycle
    return total, DRAIN_CYCLES


def should_keep_every_acknowledged_row_when_every_operation_races_on_the_emulated_instance(
    emulated: EmulatedAwsInstance, tmp_path: Path, reliability: Reliability
) -> None:
    # Given a table of 4 leaves that splits at 60 rows and compacts pairs of files
    name = f"a3-{uuid.uuid4().hex[:8]}"
    emulated.instance().create_table(
        name,
        SCHEMA,
        split_points=[500_000 * n for n in range(1, 4)],
        properties={
            "sleeper.table.partition.splitting.threshold": "60",
            "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
            "sleeper.table.compaction.files.batch.size": "2",
            # a pending batch seen before its assignment landed is checked again at once (the pumps do not wait out
            # a delayed message)
            "sleeper.table.compaction.job.send.retry.delay.seconds": "0",
        },
    )
    # And a pump firing the rules every 1-10 s and running the tasks, and a second one delivering every queue
    AwsApi.for_instance_id(emulated.instance_id).update_instance_properties(PERIODS)
    clock = _Clock()
    pump = emulated.pump(
        handlers=HANDLERS,
        clock=clock,
        task_log_dir=str(tmp_path / "tasks"),
        environment_extra={IDLE_WAIT_ENV: "1"},
        max_running_tasks=3,
        retry_failed_after_seconds=0,
    )
    second = emulated.pump(handlers=SQS_HANDLERS, containers=(), retry_failed_after_seconds=0)
    acknowledged: Counter[Row] = Counter()
    sent: Counter[Row] = Counter()
    early_rows: list[int] = []
    lock = threading.Lock()
    done = threading.Event()
    errors: list[str] = []
    anomalies: list[str] = []
    queries = [0]
    drained = threading.Event()
    rounds = [PumpRound(), PumpRound()]
    held_back: list[float] = []

    def ingester(writer: int) -> None:
        table = emulated.instance().table(name)
        for index in range(INGESTS_PER_WRITER):
            if MAX_BACKLOG is not None:
                held_back.append(wait_for_compactions(table, MAX_BACKLOG, pause=BACKLOG_PAUSE))
            batch = _batch(writer, index)
            with lock:
                sent.update(rows_of(batch))
            try:
                table.ingest(batch, job_id=f"w{writer}-{index}", direct=index % 2 == 1, timeout_seconds=300)
            except Exception as e:  # noqa: BLE001 - reported: an ingest must not fail in this race
                errors.append(f"ingest w{writer}-{index}: {type(e).__name__}: {e}")
                continue
            with lock:
                acknowledged.update(rows_of(batch))

    def scheduling_worker() -> None:
        while not done.is_set():
            result = pump.run_once()
            rounds[0].add(result)
            if not result.active:
                done.wait(IDLE_SECONDS)

    def delivering_worker() -> None:
        while not done.is_set():
            delivered = PumpRound()
            for spec in SQS_HANDLERS:
                delivered.add(second.deliver(spec.name))
            rounds[1].add(delivered)
            if not delivered.active:
                done.wait(IDLE_SECONDS)

    def reader() -> None:
        while not drained.is_set() or queries[0] < CHECKPOINTS:
            drained.wait(checkpoint_pause(time.perf_counter() - began, CHECKPOINT_SECONDS))
            queries[0] += 1
            with lock:
                before = Counter(acknowledged)
            try:
                seen = rows_of(emulated.instance().table(name).query())
            except Exception as e:  # noqa: BLE001 - a query failing in the race is reported
                anomalies.append(f"query failed: {type(e).__name__}: {e} ({where(e)})")
                continue
            with lock:
                after, sent_after = Counter(acknowledged), Counter(sent)
            if before - seen:
                anomalies.append(f"{sum((before - seen).values())} acknowledged rows missing from a query")
            if seen - sent_after:
                anomalies.append(f"{sum((seen - sent_after).values())} rows returned that were never sent")
            early_rows.append(sum((seen - after).values()))

    threads = [threading.Thread(target=ingester, args=(w,)) for w in range(2)]
    workers = [threading.Thread(target=scheduling_worker), threading.Thread(target=delivering_worker)]
    checkpoints = threading.Thread(target=reader, daemon=True)  # stops with the drain, or the process
    began = time.perf_counter()
    # When they all run at once
    for t in [*threads, *workers, checkpoints]:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in workers:
        t.join()
    racing = time.perf_counter() - began
    # And the first pump runs until the instance is idle (the reader's checkpoints go on meanwhile)
    instance = emulated.instance()
    table_id = instance.table(name).table_id
    clock.freeze()
    try:
        drain, cycles = _drain(pump, clock, instance, name)
    finally:
        drained.set()
        pump.close()
    draining = time.perf_counter() - began - racing
    checkpoints.join()
    # Then no ingest failed, every query saw a consistent table, and the table holds exactly the acknowledged rows
    # (an ingest that failed first: one whose rows landed anyway would read as rows not acknowledged)
    assert errors == [], f"{len(errors)} ingests failed: {errors[:3]}"
    restarted = AwsInstance(instance.config)
    converged = check_converged_on_aws(restarted, name, acknowledged, schema=SCHEMA)
    logs = restarted.state_store_backend
    transactions = {
        log.value: len(list(logs.transaction_log(table_id, log).read_transactions_after(0))) for log in LogType
    }
    failed: Counter[str] = Counter()
    for summary in (*rounds, drain):
        failed.update(summary.failed)
    dead = _dead_letters(restarted)
    reliability.record(
        "A3",
        backend="emulated",
        writers=2,
        workers=2,
        ingests=2 * INGESTS_PER_WRITER,
        transactions_retained=transactions,
        seconds_ingesters_held_back=round(sum(held_back), 1),
        leaves=len(restarted.table(name).leaf_partitions()),
        seconds_racing=round(racing, 1),
        seconds_draining=round(draining, 1),
        drain_cycles=cycles,
        rejected_by_queue=dict(failed),
        task_processes=len(rounds[0].tasks_started) + len(drain.tasks_started),
        ingest_failures=len(errors),
        query_checkpoints=queries[0],
        query_anomalies=len(anomalies),
        query_rows_seen_before_acknowledged=sum(early_rows),
        dead_lettered=sum(dead.values()),
        lost_race_batches_dead_lettered=dead.get(operations.PENDING_COMPACTION_JOB_BATCH_Q, 0),
        unhandled_exceptions=len(errors),
        **converged.figures(),
    )
    assert errors == [] and anomalies == [], (errors[:3], anomalies[:3])
    assert cycles < DRAIN_CYCLES, "the instance was still committing after every drain cycle"
    # and the only dead letters are pending compaction job batches that lost a race, none of whose jobs was sent
    lost = lost_race_batches(restarted)
    assert dead == ({operations.PENDING_COMPACTION_JOB_BATCH_Q: lost} if lost else {})
    assert converged.rows == sum(acknowledged.values()) == 2 * INGESTS_PER_WRITER * ROWS_PER_INGEST
