"""In-memory state store ports, for tests and embedded use, with hooks to inject faults.

Thread-safe: several threads (each with its own log head) may share a backend, which makes these fakes suitable for
concurrency tests of the log head's conditional append.

Fault injection (``InMemoryTransactionLogStore``):

- ``at_start_of_next_add(action)``: runs ``action`` at the start of the next append, before its number is checked
  (e.g. to add a conflicting entry as another writer would, as Sleeper's ``atStartOfNextAddTransaction``). Appends
  made inside the action stand for another writer: they trigger no injected action or fault themselves;
- ``land_then_fail_next_add()``: the next append stores its entry, then raises (an ambiguous outcome: a timeout
  after the write landed);
- ``fail_next_add()``: the next append raises without storing anything;
- ``ambiguous_put_probability``: each append lands and then raises with this probability (reliability test A2).
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sleeper.core import SleeperError
from sleeper.core.statestore import TableDeletedError
from sleeper.core.statestore.transactions import LogType
from sleeper.statestore import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    TransactionBodyNotFoundError,
    TransactionLogEntry,
)


class InjectedFaultError(SleeperError):
    """A failure injected by a test: the outcome of the write is unknown to the caller."""


@dataclass(slots=True)
class _Faults:
    before_next_add: list[Callable[[], None]] = field(default_factory=list)
    land_then_fail: int = 0
    fail: int = 0


class InMemoryTransactionLogStore:
    """One log of one table, in memory. Implements ``sleeper.statestore.ports.TransactionLogStore``.

    Args:
        ambiguous_put_probability: The chance that an append lands and then raises ``InjectedFaultError``.
        seed: Seeds the random choice of ambiguous appends.
    """

    def __init__(self, *, ambiguous_put_probability: float = 0.0, seed: int | str | None = None) -> None:
        self._entries: dict[int, TransactionLogEntry] = {}
        self._numbers: list[int] = []  # sorted, so reads cost in proportion to what they return
        self._lock = threading.RLock()
        self._faults = _Faults()
        self._in_action = False
        self.ambiguous_put_probability = ambiguous_put_probability
        self._random = random.Random(seed)
        self.ambiguous_puts = 0
        self._deleted = False

    @property
    def deleted(self) -> bool:
        """Whether the table was deleted (appends are refused)."""
        return self._deleted

    def mark_deleted(self) -> None:
        """Refuses every later append (``TableDeletedError``): the table was deleted."""
        with self._lock:
            self._deleted = True

    # --- fault injection -----------------------------------------------------------------------------------------
    def at_start_of_next_add(self, action: Callable[[], None]) -> None:
        """Runs an action at the start of the next append (before the number is checked). May be called repeatedly
        to queue actions for the following appends."""
        with self._lock:
            self._faults.before_next_add.append(action)

    def land_then_fail_next_add(self, times: int = 1) -> None:
        """Makes the next ``times`` appends store their entry and then raise ``InjectedFaultError``."""
        with self._lock:
            self._faults.land_then_fail += times

    def fail_next_add(self, times: int = 1) -> None:
        """Makes the next ``times`` appends raise ``InjectedFaultError`` without storing anything."""
        with self._lock:
            self._faults.fail += times

    # --- the port ------------------------------------------------------------------------------------------------
    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Appends an entry if no entry has its number yet.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists.
            TableDeletedError: If the table was deleted.
            InjectedFaultError: If a fault was injected.
        """
        with self._lock:
            # Appends made by an injected action stand for another writer: they take no injected faults.
            injected = not self._in_action
            if injected and self._faults.before_next_add:
                action = self._faults.before_next_add.pop(0)
                self._in_action = True
                try:
                    action()
                finally:
                    self._in_action = False
            if injected and self._faults.fail:
                self._faults.fail -= 1
                raise InjectedFaultError(f"injected failure adding transaction {entry.transaction_number}")
            if self._deleted:
                raise TableDeletedError(f"the table was deleted: transaction {entry.transaction_number} is refused")
            if entry.transaction_number in self._entries:
                raise DuplicateTransactionNumberError(f"transaction {entry.transaction_number} already exists")
            self._entries[entry.transaction_number] = entry
            bisect.insort(self._numbers, entry.transaction_number)
            land_then_fail = injected and self._faults.land_then_fail > 0
            if land_then_fail:
                self._faults.land_then_fail -= 1
            elif (
                injected
                and self.ambiguous_put_probability > 0
                and self._random.random() < self.ambiguous_put_probability
            ):
                land_then_fail = True
            if land_then_fail:
                self.ambiguous_puts += 1
                raise InjectedFaultError(
                    f"injected timeout after adding transaction {entry.transaction_number} (it landed)"
                )

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order."""
        with self._lock:
            start = bisect.bisect_right(self._numbers, transaction_number)
            found = [self._entries[n] for n in self._numbers[start:]]
        return iter(found)

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed."""
        with self._lock:
            end = bisect.bisect_right(self._numbers, transaction_number)
            removed = [self._entries.pop(n) for n in self._numbers[:end]]
            del self._numbers[:end]
        return removed

    # --- test helpers --------------------------------------------------------------------------------------------
    def entries(self) -> list[TransactionLogEntry]:
        """Every entry, in order."""
        return list(self.read_transactions_after(0))


class InMemoryTransactionBodyStore:
    """Large transaction bodies in memory. Implements ``sleeper.statestore.ports.TransactionBodyStore``."""

    def __init__(self) -> None:
        self._bodies: dict[str, str] = {}
        self._lock = threading.Lock()

    def store(self, key: str, body: str) -> None:
        """Stores a body under a key."""
        with self._lock:
            self._bodies[key] = body

    def load(self, key: str) -> str:
        """Loads a body.

        Raises:
            TransactionBodyNotFoundError: If there is none under the key.
        """
        with self._lock:
            body = self._bodies.get(key)
        if body is None:
            raise TransactionBodyNotFoundError(f"no transaction body under key {key}")
        return body

    def delete(self, key: str) -> None:
        """Deletes a body; a missing body is not an error."""
        with self._lock:
            self._bodies.pop(key, None)

    def keys(self) -> list[str]:
        """Every stored key, sorted."""
        with self._lock:
            return sorted(self._bodies)


class InMemorySnapshotMetadataStore:
    """Snapshot records of one table in memory. Implements ``sleeper.statestore.ports.SnapshotMetadataStore``."""

    def __init__(self) -> None:
        self._all: dict[LogType, dict[int, SnapshotMetadata]] = {t: {} for t in LogType}
        self._latest: dict[LogType, SnapshotMetadata] = {}
        self._lock = threading.Lock()

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        with self._lock:
            return self._latest.get(log_type)

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot and makes it the latest, only if it is ahead of the current latest.

        Raises:
            SnapshotConflictError: If the latest is at or beyond its number, or the snapshot is already recorded.
        """
        with self._lock:
            latest = self._latest.get(snapshot.log_type)
            number = snapshot.transaction_number
            if (latest is not None and latest.transaction_number >= number) or number in self._all[snapshot.log_type]:
                raise SnapshotConflictError(
                    f"a {snapshot.log_type.name} snapshot at or beyond transaction {number} already exists"
                )
            self._all[snapshot.log_type][number] = snapshot
            self._latest[snapshot.log_type] = snapshot

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        with self._lock:
            return [self._all[log_type][n] for n in sorted(self._all[log_type])]

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot.

        Raises:
            SnapshotConflictError: If it is the latest of its log.
        """
        with self._lock:
            latest = self._latest.get(snapshot.log_type)
            if latest is not None and latest.transaction_number == snapshot.transaction_number:
                raise SnapshotConflictError(
                    f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot"
                )
            self._all[snapshot.log_type].pop(snapshot.transaction_number, None)

    def delete_all(self) -> None:
        """Forgets every snapshot, the latest included."""
        with self._lock:
            for by_number in self._all.values():
                by_number.clear()
            self._latest.clear()


class InMemoryStateStoreBackend:
    """In-memory ports for any table. Implements ``sleeper.statestore.ports.StateStoreBackend``.

    Each table's ports are created on first use and then shared, so every state store over this backend sees the
    same logs (and the same injected faults).

    Args:
        ambiguous_put_probability: Given to every log (see ``InMemoryTransactionLogStore``).
        seed: Seeds the logs' random choice of ambiguous appends.
    """

    def __init__(self, *, ambiguous_put_probability: float = 0.0, seed: int | str | None = None) -> None:
        self._logs: dict[tuple[str, LogType], InMemoryTransactionLogStore] = {}
        self._bodies: dict[str, InMemoryTransactionBodyStore] = {}
        self._snapshots: dict[str, InMemorySnapshotMetadataStore] = {}
        self._lock = threading.Lock()
        self._ambiguous_put_probability = ambiguous_put_probability
        self._seed = seed

    def transaction_log(self, table_id: str, log_type: LogType) -> InMemoryTransactionLogStore:
        """The log of a table."""
        with self._lock:
            log = self._logs.get((table_id, log_type))
            if log is None:
                seed = None if self._seed is None else f"{self._seed}:{table_id}:{log_type.value}"
                log = InMemoryTransactionLogStore(ambiguous_put_probability=self._ambiguous_put_probability, seed=seed)
                self._logs[(table_id, log_type)] = log
            return log

    def body_store(self, table_id: str) -> InMemoryTransactionBodyStore:
        """The large-body store of a table."""
        with self._lock:
            return self._bodies.setdefault(table_id, InMemoryTransactionBodyStore())

    def snapshot_metadata(self, table_id: str) -> InMemorySnapshotMetadataStore:
        """The snapshot records of a table."""
        with self._lock:
            return self._snapshots.setdefault(table_id, InMemorySnapshotMetadataStore())

    def delete_table(self, table_id: str) -> None:
        """Marks a table deleted (its logs refuse every later append), then removes every log entry, large body and
        snapshot record of it."""
        for log_type in LogType:
            self.transaction_log(table_id, log_type).mark_deleted()
        for log_type in LogType:
            self.transaction_log(table_id, log_type).delete_transactions_at_or_before(2**63 - 1)
        with self._lock:
            self._bodies.pop(table_id, None)
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether a table was deleted."""
        with self._lock:
            log = self._logs.get((table_id, LogType.FILES))
        return log is not None and log.deleted
