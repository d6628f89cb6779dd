"""A1 and A2 of docs/reliability.md at scale: writers racing on one table's files log through the real log head.  A1
over SQLite: 2 and 8 writer processes in CI, 32 and 64 in the nightly profile (``SLEEPER_NIGHTLY=1``), each making 200
ADD_FILES commits with the table defaults (10 attempts, full jitter from 200 ms), as ``sleeper run --workers N``
processes would. A commit that runs out of attempts is reported failed to its writer, which counts it and commits it
again (as a redelivered job would). A1 and A2 over the in-memory conditional append: 2, 8, 32 and 64 threads, with and
without 10% of appends landing and then raising a timeout (32 and 64 in the nightly profile). Every run checks that the
log is numbered 1..n with no gap, that every acknowledged file is in it exactly once at the number its writer was told,
and that a new reader's state holds every file once; it reports commits/s, attempts p50/p99/max, exhausted retries and
ambiguous outcomes."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sleeper.adapters.local.statestore import SqliteStateStoreBackend
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.ports import StateStoreBackend
from sleeper.statestore.store import StateStore
from tests.integration.statestore._sqlite_log_writer import SCHEMA, add_files, filename, wait_together
from tests.reliability_report import Reliability, nightly, percentiles
from tests.unit.core.statestore.builders import reference

pytestmark = pytest.mark.integration

COMMITS = 200
TABLE = "0a1b2c3d"


@dataclass(frozen=True, slots=True)
class RaceFigures:
    """What a race came to, checked and ready to report."""

    commits: int
    seconds: float
    attempts: list[int]
    exhausted: int
    ambiguous: int = 0
    wrongly_failed: int = 0
    lost: int = 0
    duplicated: int = 0

    def figures(self) -> dict[str, object]:
        spread = percentiles(self.attempts, 0.5, 0.99)
        return {
            "commits": self.commits,
            "seconds": round(self.seconds, 2),
            "commits_per_s": round(self.commits / self.seconds, 1) if self.seconds else 0.0,
            "attempts_p50": spread["p50"],
            "attempts_p99": spread["p99"],
            "attempts_max": spread["max"],
            "exhausted_retries": self.exhausted,
            "ambiguous_outcomes": self.ambiguous,
            "wrongly_reported_failures": self.wrongly_failed,
            "rows_lost": self.lost,
            "rows_duplicated": self.duplicated,
            "unhandled_exceptions": 0,
        }


def check_log(backend: StateStoreBackend, told: dict[str, int], expected: set[str]) -> tuple[int, int]:
    """I2 and A1's checks: the log is numbered 1..n, each file once at the number its writer was told, and a new
    reader's state holds every file once. Returns (files lost, files duplicated)."""
    entries = list(backend.transaction_log(TABLE, LogType.FILES).read_transactions_after(0))
    assert [e.transaction_number for e in entries] == list(range(1, len(entries) + 1)), "I2 log numbers have a gap"
    in_log = Counter(f["filename"] for e in entries for f in json.loads(e.body or "{}")["files"])
    lost = len(expected - set(in_log))
    duplicated = sum(n - 1 for n in in_log.values() if n > 1)
    at = {f["filename"]: e.transaction_number for e in entries for f in json.loads(e.body or "{}")["files"]}
    assert {name: at.get(name) for name in told} == told, "a writer was told a number its file is not at"
    state = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend).files_state()
    assert {f.filename for f in state.files()} == set(in_log)
    return lost, duplicated


# --- A1 over SQLite, processes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "writers",
    [2, 8, pytest.param(32, marks=nightly), pytest.param(64, marks=nightly)],
)
def should_number_every_commit_once_when_writer_processes_race_on_sqlite(
    tmp_path: Path, writers: int, reliability: Reliability
) -> None:
    # Given one table's files log in a SQLite database, and writer processes that start together with the table
    # defaults for retries
    database, data = tmp_path / "sleeper.db", tmp_path / "data"
    settings = StateStoreSettings()
    StateStore(schema=SCHEMA, table_id=TABLE, backend=SqliteStateStoreBackend(database, data)).initialise()
    arguments = [(str(database), str(data), TABLE, w, COMMITS, settings) for w in range(writers)]
    context = multiprocessing.get_context("spawn")
    # When every writer makes its commits at the same time
    with context.Pool(writers, initializer=wait_together, initargs=(context.Barrier(writers),)) as pool:
        results = pool.starmap(add_files, arguments, chunksize=1)
    # Then every acknowledged file is in the log once, at its number, with no gap
    told = {filename(r.writer, s): n for r in results for s, n in enumerate(r.numbers)}
    expected = {filename(w, s) for w in range(writers) for s in range(COMMITS)}
    assert set(told) == expected
    lost, duplicated = check_log(SqliteStateStoreBackend(database, data), told, expected)
    race = RaceFigures(
        commits=len(told),
        seconds=max(r.seconds for r in results),
        attempts=[a for r in results for a in r.attempts],
        exhausted=sum(r.exhausted for r in results),
        lost=lost,
        duplicated=duplicated,
    )
    reliability.record("A1", backend="sqlite", writers=writers, kind="processes", **race.figures())
    assert (lost, duplicated) == (0, 0)
    if writers > 1:
        assert max(race.attempts) > 1, "the writers never collided"


# --- A1 and A2 over the in-memory conditional append, threads ---------------------------------------------------------
@dataclass
class _ThreadOutcome:
    told: dict[str, int] = field(default_factory=dict)
    attempts: list[int] = field(default_factory=list)
    exhausted: int = 0
    ambiguous: int = 0
    failures: list[BaseException] = field(default_factory=list)


def _thread_writer(
    backend: InMemoryStateStoreBackend, writer: int, start: threading.Barrier, outcome: _ThreadOutcome
) -> None:
    store = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend, sleep=lambda _: None)
    start.wait()
    for sequence in range(COMMITS):
        name = filename(writer, sequence)
        transaction = AddFilesTransaction.of_references([reference(name, rows=sequence)])
        while True:
            try:
                added = store.commit(transaction)
            except AddTransactionRetriesExhaustedError:
                outcome.exhausted += 1
                continue
            except Exception as e:  # any other failure is wrongly reported: the race must not fail a commit
                outcome.failures.append(e)
                break
            outcome.told[name] = added.transaction_number
            outcome.attempts.append(added.attempts)
            outcome.ambiguous += added.ambiguous_failures
            break


@pytest.mark.parametrize("ambiguous", [0.0, 0.1], ids=["A1", "A2"])
@pytest.mark.parametrize("writers", [2, 8, pytest.param(32, marks=nightly), pytest.param(64, marks=nightly)])
def should_number_every_commit_once_when_writer_threads_race_in_memory(
    writers: int, ambiguous: float, reliability: Reliability
) -> None:
    # Given a log shared by writer threads, where a fraction of appends land and then raise a timeout
    backend = InMemoryStateStoreBackend(ambiguous_put_probability=ambiguous, seed=writers)
    StateStore(schema=SCHEMA, table_id=TABLE, backend=backend).initialise()
    start = threading.Barrier(writers)
    outcomes = [_ThreadOutcome() for _ in range(writers)]
    threads = [threading.Thread(target=_thread_writer, args=(backend, w, start, outcomes[w])) for w in range(writers)]
    # When they all commit at once
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    # Then no commit was wrongly reported failed, each ambiguous append was resolved, and nothing was lost or repeated
    told = {name: n for o in outcomes for name, n in o.told.items()}
    expected = {filename(w, s) for w in range(writers) for s in range(COMMITS)}
    lost, duplicated = check_log(backend, told, expected)
    log = backend.transaction_log(TABLE, LogType.FILES)
    race = RaceFigures(
        commits=len(told),
        seconds=seconds,
        attempts=[a for o in outcomes for a in o.attempts],
        exhausted=sum(o.exhausted for o in outcomes),
        ambiguous=log.ambiguous_puts,
        wrongly_failed=sum(len(o.failures) for o in outcomes),
        lost=lost,
        duplicated=duplicated,
    )
    row = "A2" if ambiguous else "A1"
    reliability.record(row, backend="memory", writers=writers, kind="threads", **race.figures())
    assert [o.failures for o in outcomes] == [[]] * writers
    assert set(told) == expected and (lost, duplicated) == (0, 0)
    assert (log.ambiguous_puts > 0) == (ambiguous > 0)
