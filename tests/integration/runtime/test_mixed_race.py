"""A3 mixed race (docs/reliability.md): ingest, compaction, splitting, GC, snapshots and queries at once on one table.

A local instance's table starts with 8 leaves, splits at 200 rows and compacts pairs of files. Two ingesters commit
small batches (each row's key unique, so a row's presence is exact); two workers run the instance's rounds (every
scheduled operation: compaction job creation, compaction, split finding and splitting, GC, snapshots, transaction
deletion) against the same SQLite database; a reader queries the whole table at 20 checkpoints meanwhile. A query may
only return rows that were acknowledged by the time it finished, and must return every row acknowledged before it
started. At the end the instance runs until idle and the table must hold exactly the acknowledged rows with I1-I7
holding.

CI (2 x 40 ingests, about 500 transactions) spreads each ingest's keys over the key space, so once the table has split
an ingest writes a file on up to 20 leaves. The nightly profile (``SLEEPER_NIGHTLY=1``: 2 x 1,200 ingests, about
6,000 transactions) writes each ingest's keys next to each other at a scattered place (a file on one leaf, two at a
boundary), queries at 60 checkpoints 2 s apart, and holds an ingester back while the table has more than
``MAX_BACKLOG`` files beyond one a leaf: the runner snapshots the logs once a round and each message reads the log
afresh from the latest snapshot, so a round of n compactions reads some n * n entries, and an unchecked backlog
(2 x 600 ingests: 57 s racing) took 475 s to settle where this one takes about a second.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core.operations import PENDING_COMPACTION_JOB_BATCH_Q
from sleeper.core.statestore.transactions.log import LogType
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner
from tests.integration.runtime.crash_harness import (
    SCHEMA,
    check_converged,
    dead_letters,
    lost_race_batches,
    restart_until_idle,
    where,
)
from tests.model.invariants import Row, rows_of
from tests.reliability_report import NIGHTLY, Reliability

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INGESTS_PER_WRITER = 1_200 if NIGHTLY else 40
ROWS_PER_INGEST = 20
CHECKPOINTS, CHECKPOINT_PAUSE = (60, 2.0) if NIGHTLY else (20, 0.2)
"""The reader's queries: at least this many, and on until the race ends (:func:`checkpoint_pause`)."""
SPREAD = 50_000
"""CI: the distance between the keys of one ingest."""
MAX_BACKLOG: int | None = 40 if NIGHTLY else None
"""Nightly: an ingester waits (30 s at most) while the table has more files than this beyond one a leaf."""


def _batch(writer: int, index: int) -> pa.Table:
    if NIGHTLY:
        # consecutive keys from a place in the writer's million keys that jumps about (7,919 is prime, so index ->
        # place is one to one)
        start = writer * 1_000_000 + index * 7_919 % INGESTS_PER_WRITER * (1_000_000 // INGESTS_PER_WRITER)
        keys = list(range(start, start + ROWS_PER_INGEST))
    else:
        keys = [writer * 1_000_000 + k * SPREAD + index for k in range(ROWS_PER_INGEST)]
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([index] * len(keys), pa.int64())})


def should_keep_every_acknowledged_row_when_every_operation_races(tmp_path: Path, reliability: Reliability) -> None:
    # Given a table of 8 leaves that splits at 200 rows and compacts pairs of files
    directory = tmp_path / "instance"
    instance = LocalInstance.create(directory)
    instance.create_table(
        "t",
        SCHEMA,
        split_points=[250_000 * n for n in range(1, 8)],
        properties={
            "sleeper.table.partition.splitting.threshold": "200",
            "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
            "sleeper.table.compaction.files.batch.size": "2",
        },
    )
    acknowledged: Counter[Row] = Counter()
    lock = threading.Lock()
    done = threading.Event()
    errors: list[str] = []
    anomalies: list[str] = []
    queries = [0]
    failed_rounds: Counter[str] = Counter()
    held_back: list[float] = []

    def ingester(writer: int) -> None:
        table = LocalInstance(directory).table("t")
        for index in range(INGESTS_PER_WRITER):
            if MAX_BACKLOG is not None:
                held_back.append(wait_for_compactions(table, MAX_BACKLOG))
            batch = _batch(writer, index)
            try:
                table.ingest(batch, job_id=f"w{writer}-{index}")
            except Exception as e:  # noqa: BLE001 - reported: an ingest must not fail in this race
                errors.append(f"ingest w{writer}-{index}: {type(e).__name__}: {e}")
                continue
            with lock:
                acknowledged.update(rows_of(batch))

    def worker() -> None:
        runner = LocalRunner(LocalInstance(directory), default_handlers())
        while not done.is_set():
            summary = runner.run_round(force=True, retry_failed_now=True)
            for queue, n in summary.failed.items():
                failed_rounds[queue] += n

    def reader() -> None:
        while not done.is_set() or queries[0] < CHECKPOINTS:
            done.wait(checkpoint_pause(time.perf_counter() - began, CHECKPOINT_PAUSE))
            queries[0] += 1
            with lock:
                before = Counter(acknowledged)
            try:
                seen = rows_of(LocalInstance(directory).table("t").query())
            except Exception as e:  # noqa: BLE001 - a query failing in the race is reported
                anomalies.append(f"query failed: {type(e).__name__}: {e} ({where(e)})")
                continue
            with lock:
                after = Counter(acknowledged)
            if before - seen:
                anomalies.append(f"{sum((before - seen).values())} acknowledged rows missing from a query")
            if seen - after:
                anomalies.append(f"{sum((seen - after).values())} rows returned that were never acknowledged")

    threads = [threading.Thread(target=ingester, args=(w,)) for w in range(2)]
    helpers = [threading.Thread(target=worker) for _ in range(2)] + [threading.Thread(target=reader)]
    began = time.perf_counter()
    # When they all run at once
    for t in threads + helpers:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in helpers:
        t.join()
    racing = time.perf_counter() - began
    restarted, summary = restart_until_idle(directory)
    settling = time.perf_counter() - began - racing
    # Then no ingest failed, every query saw a consistent table, and the table holds exactly the acknowledged rows
    # (an ingest that failed first: one whose rows landed anyway would read as rows not acknowledged)
    assert errors == [], f"{len(errors)} ingests failed: {errors[:3]}"
    converged = check_converged(restarted, "t", acknowledged)
    table_id = restarted.table("t").table_id
    logs = restarted.state_store_backend
    transactions = {
        log.value: len(list(logs.transaction_log(table_id, log).read_transactions_after(0))) for log in LogType
    }
    reliability.record(
        "A3",
        writers=2,
        workers=2,
        ingests=2 * INGESTS_PER_WRITER,
        transactions=converged.transactions,
        transactions_retained=transactions,
        leaves=len(restarted.table("t").leaf_partitions()),
        seconds_racing=round(racing, 1),
        seconds_settling=round(settling, 1),
        seconds_ingests_held_back=round(sum(held_back), 1),
        rejected_by_queue=dict(failed_rounds),
        ingest_failures=len(errors),
        query_checkpoints=queries[0],
        query_anomalies=len(anomalies),
        dead_lettered=sum(dead_letters(restarted).values()) - lost_race_batches(restarted),
        pending_batches_lost_to_races=lost_race_batches(restarted),
        unhandled_exceptions=len(errors),
        **{k: v for k, v in converged.figures().items() if k != "transactions"},
    )
    assert errors == [] and anomalies == [], (errors[:3], anomalies[:3])
    assert summary.failed == {}
    # and the only dead letters are pending compaction job batches that lost a race, none of whose jobs was sent
    lost = lost_race_batches(restarted)
    assert dead_letters(restarted) == ({PENDING_COMPACTION_JOB_BATCH_Q: lost} if lost else {})


def checkpoint_pause(elapsed: float, pause: float) -> float:
    """How long the race's reader waits before its next query: ``pause`` for the first :data:`CHECKPOINTS` (given
    seconds of the race so far), then longer as the race goes on, so a race of any length is checked to its end with
    about ``CHECKPOINTS`` queries more for each time it grows e-fold."""
    return max(pause, elapsed / CHECKPOINTS)


def wait_for_compactions(table: Table[Any], backlog: int, *, pause: float = 0.05) -> float:
    """Waits while the table has more than ``backlog`` file references beyond one a leaf (30 s at most), looking again
    every ``pause`` seconds; returns the seconds waited."""
    began = time.perf_counter()
    while len(table.file_references()) - len(table.leaf_partitions()) > backlog and time.perf_counter() - began < 30:
        time.sleep(pause)
    return time.perf_counter() - began
