"""Many processes adding to one table's files log in SQLite through the real log head lose and repeat nothing."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from pathlib import Path

import pytest

from sleeper.adapters.local.statestore import SqliteStateStoreBackend
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.store import StateStore
from tests.integration.statestore._sqlite_log_writer import SCHEMA, add_files, filename, wait_together
from tests.reliability_report import Reliability, percentiles

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WRITERS = 8
TRANSACTIONS_PER_WRITER = 200
TABLE = "0a1b2c3d"


def should_number_every_commit_of_concurrent_writer_processes_once_and_contiguously(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given one table's files log in a SQLite database, shared by 8 writer processes that start together, with
    # short retry waits and enough attempts for 8-way contention
    database, data = tmp_path / "sleeper.db", tmp_path / "data"
    settings = StateStoreSettings(
        max_add_attempts=50, first_retry_wait_ceiling_seconds=0.002, max_retry_wait_ceiling_seconds=0.05
    )
    StateStore(schema=SCHEMA, table_id=TABLE, backend=SqliteStateStoreBackend(database, data)).initialise()
    arguments = [(str(database), str(data), TABLE, w, TRANSACTIONS_PER_WRITER, settings) for w in range(WRITERS)]
    context = multiprocessing.get_context("spawn")
    # When every writer adds its files at the same time
    with context.Pool(WRITERS, initializer=wait_together, initargs=(context.Barrier(WRITERS),)) as pool:
        results = pool.starmap(add_files, arguments, chunksize=1)
    # Then the writers did collide
    attempts = sorted(a for r in results for a in r.attempts)
    assert attempts[-1] > 1
    # And the log numbers the 1,600 commits 1..1600 with no gap
    total = WRITERS * TRANSACTIONS_PER_WRITER
    entries = list(
        SqliteStateStoreBackend(database, data).transaction_log(TABLE, LogType.FILES).read_transactions_after(0)
    )
    assert [e.transaction_number for e in entries] == list(range(1, total + 1))
    # And every file is in exactly one entry, at the number its writer was told
    in_log = Counter(f["filename"] for e in entries for f in json.loads(e.body or "{}")["files"])
    expected = {filename(w, s) for w in range(WRITERS) for s in range(TRANSACTIONS_PER_WRITER)}
    assert set(in_log) == expected and set(in_log.values()) == {1}
    for r in results:
        told = [json.loads(entries[n - 1].body or "{}")["files"][0]["filename"] for n in r.numbers]
        assert told == [filename(r.writer, s) for s in range(TRANSACTIONS_PER_WRITER)]
    # And a new process's state holds every file once, with nothing applied twice
    state = StateStore(schema=SCHEMA, table_id=TABLE, backend=SqliteStateStoreBackend(database, data)).files_state()
    assert {f.filename for f in state.files()} == expected
    assert sum(r.number_of_rows for r in state.references()) == WRITERS * sum(range(TRANSACTIONS_PER_WRITER))
    spread = percentiles(attempts, 0.5, 0.99)
    seconds = max(r.seconds for r in results)
    reliability.record(
        "A1",
        backend="sqlite",
        writers=WRITERS,
        kind="processes, 50 attempts",
        commits=total,
        commits_per_s=round(total / seconds, 1) if seconds else 0.0,
        attempts_p50=spread["p50"],
        attempts_p99=spread["p99"],
        attempts_max=spread["max"],
        exhausted_retries=sum(r.exhausted for r in results),
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
