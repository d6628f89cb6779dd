"""Time travel while compaction, splitting and garbage collection run (docs/usage/time-travel.md).

tests/integration/runtime/test_time_travel.py reads past states after each operation has run; here they are read
while the operations run. A local instance's table splits at 100 rows and compacts pairs of files. Its first two
batches are ingested and compacted before the race ("pre-history"), so the garbage collector has files to delete.
Then a background thread runs the instance's rounds over and over (every scheduled operation, through the same
handlers ``sleeper run`` uses: compaction job creation and compaction, split finding and splitting, GC, snapshots,
transaction deletion) on its own ``LocalInstance`` of the same directory, and also collects garbage as a run an hour
later would: one whose delay reaches back to just after the pre-history, so it deletes exactly the pre-history's
compacted-away files, which no state read in the race holds. Meanwhile the main thread ingests more batches (keys
unique per batch, so a row's presence is exact), records in a model which files transaction added each, and after
every ingest reads ``scan(as_of=N)`` for every model state and for the latest transaction, comparing the sorted rows
exactly. The table keeps 60 minutes of past states (``sleeper.table.time.travel.retention.minutes``), so every state
since the pre-history stays readable throughout: no read may fail, and each must hold the model's rows.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.gc.collector import GcSettings, collect_garbage
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
PRE_HISTORY_BATCHES = 2
RACE_BATCHES = 16
ROWS_PER_BATCH = 40
RACE_SECONDS_AT_MOST = 15.0

Rows = list[tuple[int, str]]


def _batch(index: int) -> pa.Table:
    # keys spread over the key space so that every split leaves rows on both sides
    keys = [k * 1_000 + index for k in range(ROWS_PER_BATCH)]
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _rows(table: pa.Table) -> Rows:
    return sorted(zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True))


def _files_transactions(history: pa.Table) -> list[tuple[int, str]]:
    files = history.filter(pa.compute.equal(history.column("log"), "files"))
    return list(zip(files.column("transaction_number").to_pylist(), files.column("type").to_pylist(), strict=True))


def should_read_every_past_state_exactly_while_compaction_splitting_and_gc_run(tmp_path: Path) -> None:
    # Given a table that splits at 100 rows, compacts pairs of files and keeps an hour of past states
    directory = tmp_path / "instance"
    instance = LocalInstance.create(directory)
    instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.statestore.commit.async.enabled": "false",
            "sleeper.table.partition.splitting.threshold": "100",
            "sleeper.table.compaction.strategy.class": "BasicCompactionStrategy",
            "sleeper.table.compaction.files.batch.size": "2",
            "sleeper.table.time.travel.retention.minutes": "60",
        },
    )
    # And a pre-history of two batches compacted into one file, whose inputs the garbage collector may delete
    for index in range(PRE_HISTORY_BATCHES):
        instance.table("t").ingest(_batch(index))
    LocalApi(instance).compact_now("t", compact_all=True)
    pre_history_inputs = set(
        instance.table("t").state_store.unreferenced_files_before(datetime.now(tz=UTC) + timedelta(days=1))
    )
    assert len(pre_history_inputs) == PRE_HISTORY_BATCHES
    time.sleep(0.05)
    cutoff = datetime.now(tz=UTC)
    time.sleep(0.05)
    present: Rows = sorted(r for index in range(PRE_HISTORY_BATCHES) for r in _rows(_batch(index)))
    first = instance.table("t").state_store.last_transaction_numbers()[LogType.FILES]
    model: dict[int, Rows] = {first: present}  # files transaction number -> the rows present after it

    stop = threading.Event()
    processed: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    gc_deleted: list[str] = []
    background_errors: list[str] = []
    rounds = [0]

    def background() -> None:
        try:
            worker = LocalInstance(directory)
            runner = LocalRunner(worker, default_handlers())
            while not stop.is_set():
                summary = runner.run_round(force=True, retry_failed_now=True)
                processed.update(summary.processed)
                failed.update(summary.failed)
                # a garbage collection run an hour later, as far as the pre-history's files are concerned: files
                # unreferenced before the cutoff are past the delay, every file unreferenced in the race is not
                table = worker.table("t")
                settings = GcSettings.of(table)
                gc_deleted.extend(collect_garbage(table, now=cutoff + settings.delay, settings=settings).deleted)
                rounds[0] += 1
        except Exception as e:  # noqa: BLE001 - reported: the background work must not fail
            background_errors.append(f"{type(e).__name__}: {e}")

    reads = 0
    wrong: list[str] = []
    read_failures: list[str] = []
    heads_read: list[int] = []

    def check(table_number: int, expected: Rows, what: str, key_range: tuple[int, int] | None = None) -> None:
        nonlocal reads
        reads += 1
        if key_range is not None:
            expected = [r for r in expected if key_range[0] <= r[0] < key_range[1]]
        ranges = None if key_range is None else {"key": key_range}
        try:
            seen = _rows(LocalInstance(directory).table("t").scan(as_of=table_number, ranges=ranges).to_arrow())
        except Exception as e:  # noqa: BLE001 - a read failing in the race is reported
            read_failures.append(f"{what} as of {table_number}: {type(e).__name__}: {e}")
            return
        if seen != expected:
            missing, extra = set(expected) - set(seen), set(seen) - set(expected)
            wrong.append(
                f"{what} as of {table_number}: {len(seen)} rows, expected {len(expected)} "
                f"({len(missing)} missing, {len(extra)} extra)"
            )

    worker_thread = threading.Thread(target=background, name="time-travel-background")
    began = time.perf_counter()
    # When the background runs every operation over and over while more batches are ingested and read back
    worker_thread.start()
    try:
        for index in range(PRE_HISTORY_BATCHES, PRE_HISTORY_BATCHES + RACE_BATCHES):
            batch = _batch(index)
            instance.table("t").ingest(batch)
            present = sorted(present + _rows(batch))
            # the ingest's transaction: the files log's latest ADD_FILES (only this thread adds files)
            added = [n for n, kind in _files_transactions(instance.table("t").history()) if kind == "ADD_FILES"]
            assert added[-1] > max(model)
            model[added[-1]] = present
            for number, expected in model.items():
                check(number, expected, "ingest state")
            head = instance.table("t").state_store.last_transaction_numbers()[LogType.FILES]
            heads_read.append(head)
            check(head, present, "latest")
            check(head, present, "latest, a range", (index * 1_000, (index + 20) * 1_000))
            time.sleep(0.05)
        # And reading goes on until the background has split, compacted and deleted the pre-history's files
        deadline = time.perf_counter() + RACE_SECONDS_AT_MOST
        while time.perf_counter() < deadline and not (
            processed[operations.PARTITION_SPLITTING_JOB_Q]
            and processed[operations.COMPACTION_JOB_Q] >= 3
            and gc_deleted
            and rounds[0] >= 3
        ):
            for number, expected in model.items():
                check(number, expected, "ingest state")
            head = instance.table("t").state_store.last_transaction_numbers()[LogType.FILES]
            heads_read.append(head)
            check(head, present, "latest")
    finally:
        stop.set()
        worker_thread.join()
    racing = time.perf_counter() - began

    # Then the background did real work while the reads ran: compactions, a split, garbage collected
    assert background_errors == []
    assert dict(failed) == {}
    assert processed[operations.COMPACTION_JOB_Q] >= 3, dict(processed)
    assert processed[operations.PARTITION_SPLITTING_JOB_Q] >= 1, dict(processed)
    assert processed[operations.GC_JOB_Q] >= 1, dict(processed)
    assert set(gc_deleted) == pre_history_inputs
    table = instance.table("t")
    assert len(table.leaf_partitions()) >= 2
    history = table.history()
    assert "SPLIT_PARTITION" in history.column("type").to_pylist()
    files_log = _files_transactions(history)
    background_kinds = {kind for n, kind in files_log if n > first and kind != "ADD_FILES"}
    assert {"REPLACE_FILE_REFERENCES", "DELETE_FILES"} <= background_kinds, background_kinds
    # the background's transactions were made between reads, not only before or after them
    assert any(heads_read[0] < n < heads_read[-1] and kind != "ADD_FILES" for n, kind in files_log), (
        heads_read,
        files_log,
    )
    assert racing < RACE_SECONDS_AT_MOST + 15, racing
    # And no read failed, and every one returned exactly the model's rows
    assert reads >= sum(i + 4 for i in range(RACE_BATCHES))  # the model's states, the latest, a range of it
    assert read_failures == [], read_failures[:3]
    assert wrong == [], wrong[:3]
    # And afterwards every files transaction since the pre-history still reads back as the model says
    numbers = sorted(model)
    for number in range(first, files_log[-1][0] + 1):
        check(number, model[max(n for n in numbers if n <= number)], "after the race")
    assert read_failures == [], read_failures[:3]
    assert wrong == [], wrong[:3]
