"""A1 and A2 of docs/reliability.md over DynamoDB (a moto server): 16 writer threads racing on one table's files log
through the real log head, with and without 10% of puts landing and then raising a timeout (Iceberg's "commit state
unknown").

CI runs 8 commits per writer; the nightly profile (``SLEEPER_NIGHTLY=1``) runs 200. The retry settings
are the table defaults (10 attempts, full jitter from 200 ms, at most 30 s): on this moto server 16 threads made 5.7
commits/s (16 x 25 commits took 70 s), so CI keeps the run short. The checks are those of
``tests/integration/statestore/test_log_race_battery.py``, whose figures this reports beside.

moto is not atomic where DynamoDB is (see ``sleeper.emulator.moto_guards``): run as is, a loser's rollback erased a
winner's acknowledged entry here (1 of 73 entries gone, a gap in the numbers), so the test serialises moto's
TransactWriteItems as DynamoDB's own isolation does, with the emulator's guards.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from sleeper.core.exceptions import SleeperError
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.ports import (
    SnapshotMetadataStore,
    StateStoreBackend,
    TransactionBodyStore,
    TransactionLogEntry,
    TransactionLogStore,
)
from sleeper.statestore.store import StateStore
from tests.contract.aws_backends import AwsStateStore
from tests.integration.aws.moto_atomic import atomic_moto_transactions  # noqa: F401 - a fixture
from tests.integration.statestore._sqlite_log_writer import SCHEMA, filename
from tests.integration.statestore.test_log_race_battery import TABLE, RaceFigures, check_log
from tests.reliability_report import NIGHTLY, Reliability
from tests.unit.core.statestore.builders import reference

pytestmark = [pytest.mark.integration, pytest.mark.aws]

WRITERS = 16
COMMITS = 200 if NIGHTLY else 8


class PutTimedOutError(SleeperError):
    """The injected failure: the put landed, but its reply was lost."""


class _AmbiguousLog:
    """A log store whose puts land and then, with some probability, raise as if their reply timed out."""

    def __init__(self, log: TransactionLogStore, probability: float, rng: random.Random, lock: threading.Lock) -> None:
        self._log = log
        self._probability = probability
        self._rng = rng
        self._lock = lock
        self.ambiguous = 0

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        self._log.add_transaction(entry)
        with self._lock:
            fail = self._rng.random() < self._probability
            if fail:
                self.ambiguous += 1
        if fail:
            raise PutTimedOutError(f"no reply for transaction {entry.transaction_number} (it landed)")

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        return self._log.read_transactions_after(transaction_number)

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        return self._log.delete_transactions_at_or_before(transaction_number)


class _AmbiguousBackend:
    """A state store backend whose files logs are :class:`_AmbiguousLog` over the real DynamoDB ones."""

    def __init__(self, backend: StateStoreBackend, probability: float, seed: int) -> None:
        self._backend = backend
        self._probability = probability
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.logs: list[_AmbiguousLog] = []

    def transaction_log(self, table_id: str, log_type: LogType) -> TransactionLogStore:
        log = self._backend.transaction_log(table_id, log_type)
        if log_type is not LogType.FILES or not self._probability:
            return log
        wrapped = _AmbiguousLog(log, self._probability, self._rng, self._lock)
        self.logs.append(wrapped)
        return wrapped

    def body_store(self, table_id: str) -> TransactionBodyStore:
        return self._backend.body_store(table_id)

    def snapshot_metadata(self, table_id: str) -> SnapshotMetadataStore:
        return self._backend.snapshot_metadata(table_id)

    def delete_table(self, table_id: str) -> None:
        self._backend.delete_table(table_id)

    def is_deleted(self, table_id: str) -> bool:
        return self._backend.is_deleted(table_id)


@dataclass
class _Outcome:
    told: dict[str, int]
    attempts: list[int]
    exhausted: int = 0
    ambiguous: int = 0
    failures: int = 0


def _writer(backend: _AmbiguousBackend, writer: int, start: threading.Barrier, outcome: _Outcome) -> None:
    store = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend)  # type: ignore[arg-type]
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
            except Exception:  # any other failure is wrongly reported
                outcome.failures += 1
                break
            outcome.told[name] = added.transaction_number
            outcome.attempts.append(added.attempts)
            outcome.ambiguous += added.ambiguous_failures
            break


@pytest.mark.usefixtures("atomic_moto_transactions")
@pytest.mark.parametrize("ambiguous", [0.0, 0.1], ids=["A1", "A2"])
def should_number_every_commit_once_when_16_threads_race_on_dynamodb(
    aws_state_store: AwsStateStore, ambiguous: float, reliability: Reliability
) -> None:
    # Given one table's files log in DynamoDB, shared by 16 writer threads, a fraction of whose puts time out after
    # landing
    backend = _AmbiguousBackend(aws_state_store.backend, ambiguous, seed=16)
    StateStore(schema=SCHEMA, table_id=TABLE, backend=aws_state_store.backend).initialise()
    start = threading.Barrier(WRITERS)
    outcomes = [_Outcome(told={}, attempts=[]) for _ in range(WRITERS)]
    threads = [threading.Thread(target=_writer, args=(backend, w, start, outcomes[w])) for w in range(WRITERS)]
    # When they all commit at once
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    # Then nothing was wrongly reported failed, lost or applied twice
    told = {name: n for o in outcomes for name, n in o.told.items()}
    expected = {filename(w, s) for w in range(WRITERS) for s in range(COMMITS)}
    lost, duplicated = check_log(aws_state_store.backend, told, expected)
    race = RaceFigures(
        commits=len(told),
        seconds=seconds,
        attempts=[a for o in outcomes for a in o.attempts],
        exhausted=sum(o.exhausted for o in outcomes),
        ambiguous=sum(log.ambiguous for log in backend.logs),
        wrongly_failed=sum(o.failures for o in outcomes),
        lost=lost,
        duplicated=duplicated,
    )
    reliability.record(
        "A2" if ambiguous else "A1", backend="dynamodb-moto", writers=WRITERS, kind="threads", **race.figures()
    )
    assert race.wrongly_failed == 0
    assert set(told) == expected and (lost, duplicated) == (0, 0)
    assert (race.ambiguous > 0) == (ambiguous > 0)
