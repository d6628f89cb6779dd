"""Writers racing on one log through the real log head, over the in-memory conditional append (reliability A1, A2)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field

import pytest

from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.store import StateStore
from tests.reliability_report import Reliability
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, reference

TABLE = "table-1"
COMMITS = 100


@dataclass
class Outcome:
    """What one writer was told."""

    numbers: dict[str, int] = field(default_factory=dict)
    ambiguous: int = 0
    failures: list[BaseException] = field(default_factory=list)


def _write(backend: InMemoryStateStoreBackend, writer: int, start: threading.Barrier, outcome: Outcome) -> None:
    store = StateStore(
        schema=LONG_KEY_SCHEMA,
        table_id=TABLE,
        backend=backend,
        settings=StateStoreSettings(max_add_attempts=1000),
        sleep=lambda _: None,
    )
    start.wait()
    for sequence in range(COMMITS):
        name = f"w{writer}-{sequence:03d}"
        try:
            result = store.commit(AddFilesTransaction.of_references([reference(name, rows=sequence)]))
        except Exception as e:  # any failure is a wrongly reported one here
            outcome.failures.append(e)
            continue
        outcome.numbers[name] = result.transaction_number
        outcome.ambiguous += result.ambiguous_failures


@pytest.mark.parametrize(("writers", "ambiguous"), [(4, 0.0), (4, 0.1)], ids=["conflicts", "conflicts-and-ambiguous"])
def should_number_every_commit_once_when_writers_race(writers: int, ambiguous: float, reliability: Reliability) -> None:
    # Given a log shared by writer threads, where a fraction of appends land but raise a timeout
    backend = InMemoryStateStoreBackend(ambiguous_put_probability=ambiguous, seed=7)
    start = threading.Barrier(writers)
    outcomes = [Outcome() for _ in range(writers)]
    threads = [threading.Thread(target=_write, args=(backend, w, start, outcomes[w])) for w in range(writers)]
    # When they all add files at once
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then no commit was reported failed, and ambiguous appends happened when injected
    assert [o.failures for o in outcomes] == [[]] * writers
    log = backend.transaction_log(TABLE, LogType.FILES)
    assert (log.ambiguous_puts > 0) == (ambiguous > 0)
    assert sum(o.ambiguous for o in outcomes) == log.ambiguous_puts
    # And the log numbers the commits 1..N, each file once, at the number its writer was told
    entries = log.entries()
    assert [e.transaction_number for e in entries] == list(range(1, writers * COMMITS + 1))
    in_log = {f["filename"]: e.transaction_number for e in entries for f in json.loads(e.body or "{}")["files"]}
    told = {name: number for o in outcomes for name, number in o.numbers.items()}
    assert in_log == told
    assert set(Counter(f["filename"] for e in entries for f in json.loads(e.body or "{}")["files"]).values()) == {1}
    # And a new reader's state has every file once
    reader = StateStore(schema=LONG_KEY_SCHEMA, table_id=TABLE, backend=backend)
    assert sorted(f.filename for f in reader.files()) == sorted(told)
    reliability.record(
        "A2" if ambiguous else "A1",
        backend="memory",
        writers=writers,
        commits=len(told),
        ambiguous_outcomes=log.ambiguous_puts,
        wrongly_reported_failures=0,
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
