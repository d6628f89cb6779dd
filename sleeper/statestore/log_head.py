"""The head of one transaction log of one table: the state derived from the log, and adding to the log.

A ``TransactionLogHead`` holds the state of one log (files or partitions) and the number of the last transaction
applied to it. ``update`` brings the state up to date: it loads the latest snapshot if nothing has been read yet, or
if the snapshot is far enough ahead (checked at most once a minute), then applies the log entries after the local
number. ``add_transaction`` appends a transaction with the next number, using the log's conditional write to detect
other writers: on a collision it backs off with full jitter, catches up with the log, validates again and retries.

Beyond Sleeper, every append carries a transaction id (a UUID, the same on each attempt of one ``add_transaction``)
that the backends keep beside the entry, and an append's outcome is settled from the log whenever it is not certain,
as Iceberg settles a commit whose state is unknown:

* an error other than a collision (e.g. a timeout): the entry may have landed;
* a collision: the number may be taken by this very append, when the client (botocore) retried a conditional write
  whose response was lost and the retry found the first request's entry (S3 answers 412, DynamoDB
  ``ConditionalCheckFailed``).

The head then reads the log, and if an entry holds its transaction id (or, on a backend that keeps no id, is at a
number it tried with the same type, body and update time), the transaction is reported as added and is applied once,
from the log. Only an entry of another writer is a collision.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sleeper.core import SleeperError, crash_point
from sleeper.core.jobs import transaction_body_prefix
from sleeper.core.statestore import FilesState, PartitionsState, StateStoreError, TableDeletedError, check_file_in_table
from sleeper.core.statestore.transactions import (
    FileTransaction,
    LogType,
    PartitionTransaction,
    Transaction,
    TransactionSerDe,
    log_type_of,
)
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError, TransactionLogGapError
from sleeper.statestore.ports import (
    DuplicateTransactionNumberError,
    TransactionBodyStore,
    TransactionLogEntry,
    TransactionLogStore,
)

LOGGER = logging.getLogger(__name__)

Clock = Callable[[], datetime]
"""Supplies the time now, timezone-aware."""
Sleeper = Callable[[float], None]
"""Waits a number of seconds."""
JitterSource = Callable[[], float]
"""Supplies random fractions in [0, 1) for full jitter."""

BODY_STORE_THRESHOLD_BYTES = 200 * 1024
"""Transaction bodies of this many UTF-8 bytes or more go to the body store (200 KiB)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def utc_now() -> datetime:
    """The time now in UTC."""
    return datetime.now(tz=UTC)


def to_millis(time: datetime) -> datetime:
    """A time truncated to whole milliseconds, in UTC (as the log and snapshots store times)."""
    aware = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
    return _EPOCH + ((aware - _EPOCH) // _MS) * _MS


def transaction_body_key(table_id: str, time: datetime, unique_id: str) -> str:
    """The key of a large transaction body, as Sleeper makes it.

    ``<table id>/statestore/transactions/<ISO-8601 instant>-<unique id>.json``, the instant as Java's
    ``Instant.toString`` writes it (e.g. ``2024-03-26T09:43:01.123Z``, no fraction when it is zero).
    """
    instant = to_millis(time).astimezone(UTC)
    text = instant.strftime("%Y-%m-%dT%H:%M:%S")
    if instant.microsecond:
        text += f".{instant.microsecond // 1000:03d}"
    return f"{transaction_body_prefix(table_id)}{text}Z-{unique_id}.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateStoreSettings:
    """How a table's transaction-log state store behaves. Defaults are Sleeper's.

    Attributes:
        max_add_attempts: ``sleeper.table.statestore.transactionlog.add.transaction.max.attempts`` (10).
        first_retry_wait_ceiling_seconds:
            ``sleeper.table.statestore.transactionlog.add.transaction.first.retry.wait.ceiling.ms`` (200 ms).
        max_retry_wait_ceiling_seconds:
            ``sleeper.table.statestore.transactionlog.add.transaction.max.retry.wait.ceiling.ms`` (30,000 ms).
        min_transactions_ahead_to_load_snapshot:
            ``sleeper.table.statestore.transactionlog.snapshot.load.min.transactions.ahead`` (10).
        time_between_snapshot_checks_seconds:
            ``sleeper.table.statestore.transactionlog.time.between.snapshot.checks.seconds`` (60).
        time_between_transaction_checks_seconds:
            ``sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms`` (0): how long reads may
            use the local state without checking the log. Adding a transaction always checks.
        files_snapshot_batch_size: ``sleeper.table.statestore.transactionlog.files.snapshot.batch.size`` (1000).
        partitions_snapshot_batch_size:
            ``sleeper.table.statestore.transactionlog.partitions.snapshot.batch.size`` (1000).
        update_log_before_add: Whether to read the log before the first attempt to add a transaction (Sleeper's
            default for direct use; its committer uses ``sleeper.table.statestore.committer.update.every.commit``).
            When false, the first attempt validates against the local state and reads the log only if that fails.
        body_store_threshold_bytes: Bodies of this many UTF-8 bytes or more go to the body store (200 KiB).
        snapshot_expiry_days: ``sleeper.table.statestore.transactionlog.snapshot.expiry.days`` (2).
        delete_transactions_snapshot_min_age_minutes:
            ``sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes`` (2).
        delete_transactions_number_behind_snapshot:
            ``sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot`` (200).
        time_travel_retention_minutes: Beyond Sleeper, ``sleeper.table.time.travel.retention.minutes`` (0): upkeep
            keeps the log back to a snapshot at least this old, and that snapshot (``sleeper.statestore.upkeep``).
    """

    max_add_attempts: int = 10
    first_retry_wait_ceiling_seconds: float = 0.2
    max_retry_wait_ceiling_seconds: float = 30.0
    min_transactions_ahead_to_load_snapshot: int = 10
    time_between_snapshot_checks_seconds: float = 60.0
    time_between_transaction_checks_seconds: float = 0.0
    files_snapshot_batch_size: int = 1000
    partitions_snapshot_batch_size: int = 1000
    update_log_before_add: bool = True
    body_store_threshold_bytes: int = BODY_STORE_THRESHOLD_BYTES
    snapshot_expiry_days: float = 2
    delete_transactions_snapshot_min_age_minutes: float = 2
    delete_transactions_number_behind_snapshot: int = 200
    time_travel_retention_minutes: float = 0

    def __post_init__(self) -> None:
        if self.max_add_attempts < 1:
            raise ValueError("max_add_attempts must be at least 1")
        if self.first_retry_wait_ceiling_seconds < 0 or self.max_retry_wait_ceiling_seconds < 0:
            raise ValueError("retry wait ceilings must not be negative")
        if self.min_transactions_ahead_to_load_snapshot < 1:
            raise ValueError("min_transactions_ahead_to_load_snapshot must be at least 1")
        if self.body_store_threshold_bytes < 1:
            raise ValueError("body_store_threshold_bytes must be at least 1")

    @classmethod
    def from_properties(cls, properties: IntProperties) -> StateStoreSettings:
        """Reads the settings from a table's properties (anything with ``get_int(name)``, e.g. TableProperties)."""
        prefix = "sleeper.table.statestore.transactionlog."
        return cls(
            max_add_attempts=properties.get_int(prefix + "add.transaction.max.attempts"),
            first_retry_wait_ceiling_seconds=properties.get_int(prefix + "add.transaction.first.retry.wait.ceiling.ms")
            / 1000,
            max_retry_wait_ceiling_seconds=properties.get_int(prefix + "add.transaction.max.retry.wait.ceiling.ms")
            / 1000,
            min_transactions_ahead_to_load_snapshot=properties.get_int(prefix + "snapshot.load.min.transactions.ahead"),
            time_between_snapshot_checks_seconds=properties.get_int(prefix + "time.between.snapshot.checks.seconds"),
            time_between_transaction_checks_seconds=properties.get_int(prefix + "time.between.transaction.checks.ms")
            / 1000,
            files_snapshot_batch_size=properties.get_int(prefix + "files.snapshot.batch.size"),
            partitions_snapshot_batch_size=properties.get_int(prefix + "partitions.snapshot.batch.size"),
            snapshot_expiry_days=properties.get_int(prefix + "snapshot.expiry.days"),
            delete_transactions_snapshot_min_age_minutes=properties.get_int(
                prefix + "delete.behind.snapshot.min.age.minutes"
            ),
            delete_transactions_number_behind_snapshot=properties.get_int(
                prefix + "delete.number.behind.latest.snapshot"
            ),
            time_travel_retention_minutes=properties.get_int("sleeper.table.time.travel.retention.minutes"),
        )

    def retry_wait_ceiling_seconds(self, attempt: int) -> float:
        """The most to wait before an attempt (numbered from 1): none before the first, then the first ceiling,
        doubling each retry up to the maximum."""
        if attempt <= 1:
            return 0.0
        return min(self.max_retry_wait_ceiling_seconds, self.first_retry_wait_ceiling_seconds * 2.0 ** (attempt - 2))


class IntProperties(Protocol):
    """Properties with integer values by name (``sleeper.core.properties.TableProperties``)."""

    def get_int(self, prop: str) -> int:
        """The value of a property as an integer."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AddTransactionResult:
    """The outcome of adding a transaction to a log.

    Attributes:
        transaction_number: The number the transaction got.
        attempts: How many attempts were made (1 if there was no collision).
        collisions: How many attempts found the number taken by another writer.
        ambiguous_failures: How many attempts failed with an error that left the outcome unknown (a collision
            that turned out to be the append's own entry is counted here, not as a collision).
        body_key: Where the body is stored, if it went to the body store.
    """

    transaction_number: int
    attempts: int
    collisions: int = 0
    ambiguous_failures: int = 0
    body_key: str | None = None


S = TypeVar("S", FilesState, PartitionsState)
T = TypeVar("T", FileTransaction, PartitionTransaction)


S_co = TypeVar("S_co", FilesState, PartitionsState, covariant=True)


class SnapshotSource(Protocol[S_co]):
    """Loads the latest snapshot of a log (see ``sleeper.statestore.snapshots``)."""

    def load_latest_at_or_after(self, min_transaction_number: int) -> tuple[S_co, int] | None:
        """The latest snapshot's state and transaction number, if the latest is at or after a number."""
        ...


@dataclass(slots=True)
class _Pending:
    """The attempts of one append whose entry may be in the log: failed with an unknown outcome, or collided (the
    entry found may be the append's own, written by a request whose response was lost).

    Attributes:
        transaction_id: The append's transaction id, on each of its entries.
        entries: The attempts, by number.
        collided: The numbers of attempts that collided.
        unknown: Whether an attempt failed with an unknown outcome (its request may land later, so its large body
            is kept even if no entry is found).
        landed: The number of the append's entry, once found in the log.
    """

    transaction_id: str
    entries: dict[int, list[TransactionLogEntry]] = field(default_factory=dict)
    collided: set[int] = field(default_factory=set)
    unknown: bool = False
    landed: int | None = None

    def add(self, entry: TransactionLogEntry, *, unknown: bool) -> None:
        self.entries.setdefault(entry.transaction_number, []).append(entry)
        if unknown:
            self.unknown = True
        else:
            self.collided.add(entry.transaction_number)

    def check(self, found: TransactionLogEntry) -> None:
        if found.transaction_id is not None:
            if found.transaction_id == self.transaction_id:
                self.landed = found.transaction_number
            return
        # A backend that keeps no id: the entry is ours if it is one we tried, to the millisecond.
        if any(_same_entry(mine, found) for mine in self.entries.get(found.transaction_number, ())):
            self.landed = found.transaction_number


class TransactionLogHead(ABC, Generic[S, T]):
    """The state of one log of one table, and the way to add to that log.

    Not safe for concurrent use from several threads; give each thread its own head (or its own ``StateStore``).
    Several heads, in any processes, may share a log: the log's conditional append keeps them consistent.

    Args:
        table_id: The table.
        log_store: The log.
        body_store: Where large bodies are kept.
        serde: Reads and writes transaction bodies for the table's schema.
        snapshots: Loads the latest snapshot, or None to always read the log from the start.
        settings: Behaviour settings.
        clock: The time now (timezone-aware); times are truncated to milliseconds.
        sleep: Waits before a retry (injected so tests do not sleep).
        jitter: Random fractions for full jitter (injected so tests are deterministic).
        id_supplier: Makes the unique part of large body keys.
        transaction_id_supplier: Makes the id each appended transaction carries (a UUID by default).
    """

    log_type: LogType

    def __init__(
        self,
        *,
        table_id: str,
        log_store: TransactionLogStore,
        body_store: TransactionBodyStore,
        serde: TransactionSerDe,
        snapshots: SnapshotSource[S] | None = None,
        settings: StateStoreSettings | None = None,
        clock: Clock = utc_now,
        sleep: Sleeper = time.sleep,
        jitter: JitterSource = random.random,
        id_supplier: Callable[[], str] = lambda: str(uuid.uuid4()),
        transaction_id_supplier: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.table_id = table_id
        self._log = log_store
        self._bodies = body_store
        self._serde = serde
        self._snapshots: SnapshotSource[S] | None = snapshots
        self._settings = settings or StateStoreSettings()
        self._clock = clock
        self._sleep = sleep
        self._jitter = jitter
        self._id_supplier = id_supplier
        self._transaction_id_supplier = transaction_id_supplier
        self._state: S = self._new_state()
        self._last = 0
        self._next_snapshot_check: datetime | None = None
        self._next_transaction_check: datetime | None = None
        self._pending: _Pending | None = None

    # --- what differs between the logs -------------------------------------------------------------------------
    @abstractmethod
    def _new_state(self) -> S:
        """An empty state."""

    @abstractmethod
    def _validate(self, transaction: T) -> None:
        """Validates a transaction against the local state (raises StateStoreError)."""

    @abstractmethod
    def _apply(self, transaction: T, time: datetime, number: int) -> None:
        """Applies a transaction to the local state as the log's entry ``number``."""

    @abstractmethod
    def _accepts(self, transaction: Transaction) -> bool:
        """Whether a transaction belongs to this log."""

    # --- reading -----------------------------------------------------------------------------------------------
    @property
    def state(self) -> S:
        """The local state. Owned by the head: read it, never change it (use ``state.copy()`` to keep a copy)."""
        return self._state

    @property
    def last_transaction_number(self) -> int:
        """The number of the last transaction applied to the local state (0 if none)."""
        return self._last

    @property
    def settings(self) -> StateStoreSettings:
        """The head's settings."""
        return self._settings

    def update(self) -> None:
        """Brings the local state up to date, unless the log was checked less than
        ``time_between_transaction_checks_seconds`` ago.

        Raises:
            TransactionLogGapError: If entries after the local state were deleted and no snapshot covers them.
        """
        now = self._clock()
        if self._next_transaction_check is not None and now < self._next_transaction_check:
            return
        self._update(now)

    def force_update(self) -> None:
        """Brings the local state up to date now (a snapshot is still only checked for once a minute).

        Raises:
            TransactionLogGapError: If entries after the local state were deleted and no snapshot covers them.
        """
        self._update(self._clock())

    def _update(self, now: datetime) -> None:
        self._load_snapshot_if_due(now)
        if not self._read_log():
            # Entries after our number were deleted (behind a newer snapshot): load the latest snapshot and go on.
            self._load_snapshot(self._last + 1)
            if not self._read_log():
                raise TransactionLogGapError(
                    f"{self.log_type.value} log of table {self.table_id} has no transaction {self._last + 1} and no "
                    f"snapshot covers it; try again later"
                )
        self._next_transaction_check = self._clock() + timedelta(
            seconds=self._settings.time_between_transaction_checks_seconds
        )

    def _load_snapshot_if_due(self, now: datetime) -> None:
        if self._snapshots is None:
            return
        if self._next_snapshot_check is not None and now < self._next_snapshot_check:
            return
        min_number = 1 if self._last < 1 else self._last + self._settings.min_transactions_ahead_to_load_snapshot
        self._load_snapshot(min_number)

    def _load_snapshot(self, min_number: int) -> None:
        if self._snapshots is None:
            return
        loaded = self._snapshots.load_latest_at_or_after(min_number)
        self._next_snapshot_check = self._clock() + timedelta(
            seconds=self._settings.time_between_snapshot_checks_seconds
        )
        if loaded is None:
            return
        state, number = loaded
        if number <= self._last:
            return
        LOGGER.debug("Loaded %s snapshot of table %s at transaction %d", self.log_type.value, self.table_id, number)
        self._state = state
        self._last = number
        crash_point("statestore.after_snapshot_load")
        pending = self._pending
        if pending is not None and pending.landed is None and pending.entries and min(pending.entries) <= number:
            # The snapshot covers an attempt whose outcome was unknown; the entries themselves tell if it landed.
            self._check_pending_in_log(pending, number)

    def _read_log(self) -> bool:
        """Applies the entries after the local number; False if the next one is missing but later ones exist."""
        for entry in self._log.read_transactions_after(self._last):
            if entry.transaction_number != self._last + 1:
                if entry.transaction_number <= self._last:
                    continue
                return False
            self._apply_entry(entry)
        return True

    def _apply_entry(self, entry: TransactionLogEntry) -> None:
        if self._pending is not None:
            self._pending.check(entry)
        transaction = self._read_transaction(entry)
        if transaction is None:
            LOGGER.warning(
                "Skipping transaction %d of type %s in the %s log of table %s: it belongs to the other log",
                entry.transaction_number,
                entry.transaction_type.value,
                self.log_type.value,
                self.table_id,
            )
        else:
            self._apply(transaction, entry.update_time, entry.transaction_number)
        self._last = entry.transaction_number

    def _read_transaction(self, entry: TransactionLogEntry) -> T | None:
        if log_type_of(entry.transaction_type) is not self.log_type:
            return None
        body = entry.body if entry.body is not None else self._bodies.load(entry.body_key or "")
        transaction = self._serde.from_json(entry.transaction_type, body)
        return transaction if self._accepts(transaction) else None  # type: ignore[return-value]

    def _check_pending_in_log(self, pending: _Pending, up_to: int) -> None:
        """Looks up, in the log, attempts at numbers a snapshot covered (the snapshot skipped their entries)."""
        lowest = min(pending.entries)
        for entry in self._log.read_transactions_after(lowest - 1):
            if entry.transaction_number > up_to or pending.landed is not None:
                break
            pending.check(entry)

    # --- writing -----------------------------------------------------------------------------------------------
    def add_transaction(self, transaction: T, *, body_key: str | None = None) -> AddTransactionResult:
        """Adds a transaction to the log and applies it to the local state.

        Each attempt's entry carries the same new transaction id. When an attempt collides or fails with an unknown
        outcome, the next read of the log settles it: an entry holding the id is this append's, which has landed.

        Args:
            transaction: The transaction; it must belong to this head's log.
            body_key: Where the body is already stored in the body store (the committer reuses uploaded bodies);
                the entry then points at it whatever its size.

        Returns:
            The transaction number and how it went.

        Raises:
            StateStoreError: If the transaction does not fit the state, after bringing the state up to date
                (``TableDeletedError`` if the table was deleted).
            AddTransactionRetriesExhaustedError: If every attempt collided with other writers (or failed
                ambiguously without landing). The transaction is not in the log.
            TransactionLogGapError: If the log cannot be read up to its head.
        """
        if not self._accepts(transaction):
            raise ValueError(f"{transaction.TYPE.value} transactions belong to the {transaction.LOG.value} log")
        settings = self._settings
        body: str | None = None
        stored_body = False
        if body_key is None:
            body = self._serde.to_json(transaction)
            if len(body.encode("utf-8")) >= settings.body_store_threshold_bytes:
                body_key = transaction_body_key(self.table_id, self._clock(), self._id_supplier())
                self._bodies.store(body_key, body)
                stored_body = True
                crash_point("statestore.after_body_put")
                body = None
        pending = _Pending(transaction_id=self._transaction_id_supplier())
        self._pending = pending
        collisions = 0
        ambiguous = 0
        last_error: Exception | None = None
        try:
            for attempt in range(1, settings.max_add_attempts + 1):
                if attempt > 1:
                    self._sleep(self._jitter() * settings.retry_wait_ceiling_seconds(attempt))
                refreshed = attempt > 1 or settings.update_log_before_add or self._last < 1
                if refreshed:
                    self.force_update()
                if pending.landed is not None:
                    return self._landed(pending, attempt - 1, collisions, ambiguous, body_key)
                try:
                    self._validate(transaction)
                except StateStoreError:
                    if refreshed:
                        raise
                    self.force_update()
                    if pending.landed is not None:
                        return self._landed(pending, attempt - 1, collisions, ambiguous, body_key)
                    self._validate(transaction)
                number = self._last + 1
                update_time = to_millis(self._clock())
                entry = TransactionLogEntry(
                    transaction_number=number,
                    update_time=update_time,
                    transaction_type=transaction.TYPE,
                    body=body,
                    body_key=None if body is not None else body_key,
                    transaction_id=pending.transaction_id,
                )
                try:
                    self._log.add_transaction(entry)
                except DuplicateTransactionNumberError as e:
                    # Another writer's entry, or this one's if a retried request found its lost predecessor's: the
                    # read of the log before the next attempt (or the last read below) tells.
                    collisions += 1
                    last_error = e
                    pending.add(entry, unknown=False)
                    LOGGER.debug(
                        "Transaction %d of table %s was taken by another writer (attempt %d of %d)",
                        number,
                        self.table_id,
                        attempt,
                        settings.max_add_attempts,
                    )
                    continue
                except TableDeletedError:
                    raise  # the table is gone: no retry can land
                except (SleeperError, OSError) as e:
                    # The entry may have landed: a later read of the log tells.
                    ambiguous += 1
                    last_error = e
                    pending.add(entry, unknown=True)
                    LOGGER.warning(
                        "Adding transaction %d to table %s failed with an unknown outcome (attempt %d of %d): %s",
                        number,
                        self.table_id,
                        attempt,
                        settings.max_add_attempts,
                        e,
                    )
                    continue
                crash_point("statestore.after_log_put")
                self._apply(transaction, update_time, number)
                self._last = number
                return self._result(number, attempt, collisions, ambiguous, body_key)
            # A last read settles any attempt whose outcome was unknown.
            if pending.entries:
                self.force_update()
                if pending.landed is not None:
                    return self._landed(pending, settings.max_add_attempts, collisions, ambiguous, body_key)
            if stored_body and not pending.unknown:
                self._bodies.delete(body_key or "")
            raise AddTransactionRetriesExhaustedError(
                f"failed adding {transaction.TYPE.value} transaction to table {self.table_id} after "
                f"{settings.max_add_attempts} attempts ({collisions} collisions with other writers, {ambiguous} "
                f"failures with unknown outcome); last error: {last_error}",
                table_id=self.table_id,
                transaction_type=transaction.TYPE.value,
                attempts=settings.max_add_attempts,
            ) from last_error
        except StateStoreError:
            if stored_body and not pending.unknown:
                self._bodies.delete(body_key or "")
            raise
        finally:
            self._pending = None

    def _landed(
        self, pending: _Pending, attempts: int, collisions: int, ambiguous: int, body_key: str | None
    ) -> AddTransactionResult:
        number = pending.landed
        assert number is not None
        if number in pending.collided:
            # The collision was with this append's own entry: its outcome was unknown, not another writer's.
            LOGGER.info(
                "Transaction %d of table %s was this writer's own (a retried request found it), not another's",
                number,
                self.table_id,
            )
            collisions, ambiguous = collisions - 1, ambiguous + 1
        return self._result(number, attempts, collisions, ambiguous, body_key)

    def _result(
        self, number: int, attempts: int, collisions: int, ambiguous: int, body_key: str | None
    ) -> AddTransactionResult:
        return AddTransactionResult(
            transaction_number=number,
            attempts=max(1, attempts),
            collisions=collisions,
            ambiguous_failures=ambiguous,
            body_key=body_key,
        )


def _same_entry(mine: TransactionLogEntry, found: TransactionLogEntry) -> bool:
    return (
        mine.transaction_type is found.transaction_type
        and mine.body == found.body
        and mine.body_key == found.body_key
        and _epoch_ms(mine.update_time) == _epoch_ms(found.update_time)
    )


def _epoch_ms(time: datetime) -> int:
    aware = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MS


class FilesLogHead(TransactionLogHead[FilesState, FileTransaction]):
    """The head of a table's files log.

    Besides the files state, a transaction is validated against where the table's files may lie and against the
    table's partitions, when the head is given them:

    Args:
        data_prefix: The table's data prefix: every file a transaction names must lie under it
            (:func:`sleeper.core.statestore.locations.check_file_in_table`). None checks no locations (for tests of
            the log that name files without a prefix).
        partitions: Supplies the table's partitions, read from their log after the files state was brought up to
            date; a transaction that adds references (ADD_FILES, SPLIT_FILE_REFERENCES) must name partitions that
            exist in it. None checks no partitions.
        **kwargs: As for :class:`TransactionLogHead`.
    """

    log_type = LogType.FILES

    def __init__(
        self,
        *,
        data_prefix: str | None = None,
        partitions: Callable[[], PartitionsState] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._data_prefix = data_prefix
        self._partitions = partitions

    def _new_state(self) -> FilesState:
        return FilesState()

    def _validate(self, transaction: FileTransaction) -> None:
        if self._data_prefix is not None:
            for filename in transaction.files_it_may_track():
                check_file_in_table(filename, self._data_prefix, table_id=self.table_id)
        transaction.validate(self._state)
        if self._partitions is not None and next(transaction.new_reference_partitions(), None) is not None:
            # Read after the files state this append is conditional on: see StateStore.reinitialise.
            transaction.validate_partitions(self._partitions())

    def _apply(self, transaction: FileTransaction, time: datetime, number: int) -> None:
        transaction.apply_numbered(self._state, time, number)

    def _accepts(self, transaction: Transaction) -> bool:
        return isinstance(transaction, FileTransaction)


class PartitionsLogHead(TransactionLogHead[PartitionsState, PartitionTransaction]):
    """The head of a table's partitions log."""

    log_type = LogType.PARTITIONS

    def _new_state(self) -> PartitionsState:
        return PartitionsState()

    def _validate(self, transaction: PartitionTransaction) -> None:
        transaction.validate(self._state, self._serde.schema)

    def _apply(self, transaction: PartitionTransaction, time: datetime, number: int) -> None:
        transaction.apply(self._state, time)

    def _accepts(self, transaction: Transaction) -> bool:
        return isinstance(transaction, PartitionTransaction)
