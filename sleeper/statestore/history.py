"""Time travel (beyond Sleeper): a table's past states, rebuilt from a snapshot and the transaction log, and its
history of transactions.

What "as of" means
------------------
A table's state **as of transaction N** is the files state after files-log transaction N was applied, with a
partitions state that holds every partition those files are referenced on. The two logs are written by different
processes whose clocks need not agree, so their times only say where to start looking: the partitions state as of N's
time (every partitions-log transaction at or before it; the same millisecond counts as before) if it holds every
referenced partition, else the nearest later one that does (a split committed by a clock running ahead is later, by
time, than the references validated against it), else the latest earlier one that does (a repartition committed by a
clock running behind). No kept partitions state holding them all: the read is refused (:class:`StateNotReadableError`).

Any partitions state that holds every referenced partition gives the same rows: a partition's region never changes
once it exists, partitions are only split below it (a split or a tree extension), and a query reads a file referenced
on a partition through the leaves beneath it, each cut to its leaf. Partition ids are random UUIDs, but for ``root``,
the whole key space in every tree, so an id names the same region in any tree holding it. A state **as of a time T**
is the state as of the last files transaction at or before T.

A past state is rebuilt from the earliest snapshot the log still follows on from (or the start of the log) by
replaying the log's entries, read through the same ports the state store reads (``StateStoreBackend``).

What can be read
----------------
A state is readable when it can be rebuilt (the log back to it, or a snapshot of it, is kept) and none of the files it
references can have been deleted by the garbage collector: a file is counted as deleted once a DELETE_FILES names it, or
once it has had no references since before ``collectable_before`` (the garbage collector may delete it at any moment).
``CLEAR_FILES`` counts as deleting every file it clears: only ``table reinit`` clears a table, and it deletes those
files straight after. The **oldest readable transaction** is the first from which every later state is readable; reading
an earlier state is refused with :class:`StateNotReadableError` naming it. A table property,
``sleeper.table.time.travel.retention.minutes``, keeps states of that many minutes readable: the garbage collector,
transaction deletion and snapshot deletion all wait for it (see ``docs/usage/time-travel.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sleeper.core import PartitionTree, Schema
from sleeper.core.statestore import FileReference, FilesState, PartitionsState, PendingDelete, StateStoreError
from sleeper.core.statestore.transactions import (
    ClearFilesTransaction,
    DeleteFilesTransaction,
    ExtendPartitionTreeTransaction,
    FileTransaction,
    LogType,
    OverwriteFilesTransaction,
    PartitionTransaction,
    SplitPartitionTransaction,
    TransactionType,
    log_type_of,
)
from sleeper.statestore.ports import SnapshotMetadata, TransactionLogEntry
from sleeper.statestore.store import StateStore

__all__ = [
    "AsOf",
    "AsOfError",
    "StateNotReadableError",
    "TableHistory",
    "TableStateAsOf",
    "TransactionRecord",
    "parse_as_of",
    "table_history",
]

AsOf = int | datetime
"""A past state: a files transaction number, or a time (timezone-aware; a naive time is taken as UTC)."""


class AsOfError(StateStoreError):
    """An ``as of`` value is neither a transaction number nor a time."""


_AS_OF_ACCEPTS = (
    "as of must be a files transaction number (an int, or a string of digits) or a time (a datetime, or an ISO 8601 "
    "string such as 2025-01-02T03:04:05Z)"
)


def parse_as_of(value: object) -> AsOf:
    """A transaction number (an int or a string of digits) or a time (a ``datetime``, or ISO 8601 text such as
    ``2025-01-02T03:04:05Z``; naive times are UTC).

    Raises:
        AsOfError: If the value is neither, naming what it is and what is accepted (a float, bool or bytes is refused:
            a transaction number is a whole number, and 1.5 or True is not one).
    """
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise AsOfError(f"{_AS_OF_ACCEPTS}; got {value!r} ({type(value).__name__})")
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise AsOfError(f"{_AS_OF_ACCEPTS}; got {value!r} (str)") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class StateNotReadableError(StateStoreError):
    """A past state of a table cannot be read: its transactions are gone, or the garbage collector may have deleted
    its files.

    Attributes:
        oldest_readable: The oldest transaction from which every state is readable (None if none is).
    """

    def __init__(self, message: str, *, oldest_readable: int | None) -> None:
        super().__init__(message)
        self.oldest_readable = oldest_readable


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionRecord:
    """One transaction of a table's history.

    Attributes:
        log: Which log it is in.
        number: Its number in that log.
        type: Its type.
        time: When it was committed.
        files_added: Files that gained their first reference (files log only).
        files_removed: Files that lost their last reference.
        rows_added: Rows of the references it added (estimates where the references are).
        rows_removed: Rows of the references it removed.
    """

    log: LogType
    number: int
    type: TransactionType
    time: datetime
    files_added: int = 0
    files_removed: int = 0
    rows_added: int = 0
    rows_removed: int = 0


@dataclass(frozen=True, slots=True)
class TableStateAsOf:
    """A past state of a table: what a query of it needs (``sleeper.query.executor.QueryableStateStore``).

    Attributes:
        schema: The table schema.
        files_number: The files-log transaction it is the state after.
        partitions_number: The partitions-log transaction of its partitions (one holding every partition its files
            are referenced on; see the module notes).
        time: The time of its files transaction.
        files: Its files.
        partitions: Its partitions.
    """

    schema: Schema
    files_number: int
    partitions_number: int
    time: datetime
    files: FilesState
    partitions: PartitionsState

    def partition_tree(self) -> PartitionTree:
        """Its partitions as a tree.

        Raises:
            StateStoreError: If it has no partitions.
        """
        if not len(self.partitions):
            raise StateStoreError(f"the state as of transaction {self.files_number} has no partitions")
        return self.partitions.tree(self.schema)

    def file_references(self) -> list[FileReference]:
        """Every file reference of the state."""
        return list(self.files.references())

    def pending_deletes(self) -> tuple[PendingDelete, ...]:
        """The row deletes pending in the state (a state before a delete's transaction has not got it)."""
        return self.files.pending_deletes


@dataclass(slots=True)
class _Replay:
    """A log replayed from its earliest base."""

    base: int
    entries: list[TransactionLogEntry]
    base_time: datetime | None
    head: int


@dataclass(slots=True)
class TableHistory:
    """A table's transactions as far back as they are kept, and which of its past states can be read.

    Made by :func:`table_history`, which replays both logs once; ``state_as_of`` then rebuilds any readable state.
    """

    store: StateStore
    files: _Replay
    partitions: _Replay
    records: list[TransactionRecord] = field(default_factory=list)
    oldest_readable: int | None = None

    @property
    def head(self) -> int:
        """The last files transaction."""
        return self.files.head

    def transaction_at(self, time: datetime) -> int:
        """The last files transaction at or before a time.

        Raises:
            StateNotReadableError: If the time is before the kept history, or before the table's first transaction.
        """
        moment = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
        found: int | None = None
        for entry in self.files.entries:
            if entry.update_time <= moment:
                found = entry.transaction_number
            else:
                break
        if found is not None:
            return found
        base_time = self.files.base_time
        if self.files.base > 0 and base_time is not None and base_time <= moment:
            return self.files.base
        first = self.files.entries[0].update_time.isoformat() if self.files.entries else "none"
        raise StateNotReadableError(
            f"table {self.store.table_id} has no readable state at {moment.isoformat()}: its oldest kept files "
            f"transaction is at {first}{self._oldest_text()}",
            oldest_readable=self.oldest_readable,
        )

    def _oldest_text(self) -> str:
        if self.oldest_readable is None:
            return "; no past state is readable"
        return f"; the oldest readable transaction is {self.oldest_readable} ({self._time_of(self.oldest_readable)})"

    def _time_of(self, number: int) -> str:
        for entry in self.files.entries:
            if entry.transaction_number == number:
                return entry.update_time.isoformat()
        return "its snapshot"

    def state_as_of(self, as_of: AsOf) -> TableStateAsOf:
        """The table's state as of a files transaction, or a time (see :meth:`transaction_at`).

        Raises:
            StateNotReadableError: If that state cannot be read (naming the oldest readable transaction), there is
                no such transaction yet, or no kept partitions state holds every partition its files are on.
        """
        number = as_of if isinstance(as_of, int) else self.transaction_at(as_of)
        if number < 1 or number > self.head:
            raise StateNotReadableError(
                f"table {self.store.table_id} has no files transaction {number}: its transactions are 1 to {self.head}",
                oldest_readable=self.oldest_readable,
            )
        if self.oldest_readable is None or number < self.oldest_readable:
            raise StateNotReadableError(
                f"the state of table {self.store.table_id} as of transaction {number} is no longer readable: its "
                f"transactions were deleted or the garbage collector may have deleted its files{self._oldest_text()}",
                oldest_readable=self.oldest_readable,
            )
        files = self._rebuild_files(number)
        time = self._entry_time(number)
        partitions, partitions_number = self._partitions_for(files, number, time)
        return TableStateAsOf(
            schema=self.store.schema,
            files_number=number,
            partitions_number=partitions_number,
            time=time,
            files=files,
            partitions=partitions,
        )

    def _entry_time(self, number: int) -> datetime:
        for entry in self.files.entries:
            if entry.transaction_number == number:
                return entry.update_time
        return self.files.base_time or datetime.now(tz=UTC)

    def _rebuild_files(self, number: int) -> FilesState:
        state = _load_base(self.store, LogType.FILES, self.files.base)
        assert isinstance(state, FilesState)
        for entry in self.files.entries:
            if entry.transaction_number > number:
                break
            transaction = _read(self.store, LogType.FILES, entry)
            if isinstance(transaction, FileTransaction):
                transaction.apply_numbered(state, entry.update_time, entry.transaction_number)
        return state

    def _partitions_for(self, files: FilesState, number: int, time: datetime) -> tuple[PartitionsState, int]:
        """The partitions of the state as of files transaction ``number``: a partitions state holding every partition
        the files reference, found from the transaction's time but not trusting it (see the module notes).

        Raises:
            StateNotReadableError: If no kept partitions state holds every partition the files reference.
        """
        referenced = {reference.partition_id for reference in files.references()}
        replay = self.partitions
        by_time = replay.base
        for entry in replay.entries:
            if entry.update_time > time:
                break
            by_time = entry.transaction_number
        # The state at the time, else the nearest later one that fits (a split committed by a clock running ahead
        # has a later time than the references validated against it).
        state = _load_base(self.store, LogType.PARTITIONS, replay.base)
        assert isinstance(state, PartitionsState)
        chosen = replay.base
        missing = _missing(state, referenced)
        for entry in replay.entries:
            if chosen >= by_time and not missing and len(state):
                return state, chosen
            transaction = _read(self.store, LogType.PARTITIONS, entry)
            if isinstance(transaction, PartitionTransaction):
                transaction.apply(state, entry.update_time)
                missing = _missing(state, missing if _only_adds(transaction) else referenced)
            chosen = entry.transaction_number
        if not missing and len(state):
            return state, chosen
        # Else the latest earlier one that fits (a reinitialisation committed by a clock running behind).
        earlier = self._latest_fitting_before(referenced, by_time)
        if earlier is not None:
            return earlier
        unknown = sorted(_missing(state, referenced)) or sorted(referenced)
        raise StateNotReadableError(
            f"the state of table {self.store.table_id} as of transaction {number} cannot be read: its files reference "
            f"partitions ({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}) that no kept partitions "
            f"state holds{self._oldest_text()}",
            oldest_readable=self.oldest_readable,
        )

    def _latest_fitting_before(self, referenced: set[str], before: int) -> tuple[PartitionsState, int] | None:
        replay = self.partitions
        state = _load_base(self.store, LogType.PARTITIONS, replay.base)
        assert isinstance(state, PartitionsState)
        fitting: int | None = replay.base if len(state) and not _missing(state, referenced) else None
        missing = _missing(state, referenced)
        for entry in replay.entries:
            if entry.transaction_number >= before:
                break
            transaction = _read(self.store, LogType.PARTITIONS, entry)
            if isinstance(transaction, PartitionTransaction):
                transaction.apply(state, entry.update_time)
                missing = _missing(state, missing if _only_adds(transaction) else referenced)
            if not missing and len(state):
                fitting = entry.transaction_number
        if fitting is None:
            return None
        state = _load_base(self.store, LogType.PARTITIONS, replay.base)
        assert isinstance(state, PartitionsState)
        for entry in replay.entries:
            if entry.transaction_number > fitting:
                break
            transaction = _read(self.store, LogType.PARTITIONS, entry)
            if isinstance(transaction, PartitionTransaction):
                transaction.apply(state, entry.update_time)
        return state, fitting


def _missing(state: PartitionsState, partition_ids: Iterable[str]) -> set[str]:
    return {partition_id for partition_id in partition_ids if partition_id not in state}


def _only_adds(transaction: PartitionTransaction) -> bool:
    """Whether a transaction only adds partitions (a split or an extension), so none missing before it reappears
    unless it adds it."""
    return isinstance(transaction, SplitPartitionTransaction | ExtendPartitionTreeTransaction)


def table_history(store: StateStore, *, collectable_before: datetime | None = None) -> TableHistory:
    """Reads a table's kept history: both logs from their earliest base, every transaction's record, and the oldest
    readable state.

    Args:
        store: The table's state store.
        collectable_before: Files with no references since before this time may be deleted by the garbage collector
            at any moment (now minus the longer of the GC delay and the retention); states referencing them are not
            readable. None counts only files a DELETE_FILES names.

    Raises:
        StateStoreError: If a log cannot be read.
    """
    files = _replay(store, LogType.FILES)
    partitions = _replay(store, LogType.PARTITIONS)
    history = TableHistory(store=store, files=files, partitions=partitions)
    state = _load_base(store, LogType.FILES, files.base)
    assert isinstance(state, FilesState)
    last_referenced: dict[str, tuple[int, datetime]] = {}
    deleted: set[str] = set()
    for entry in files.entries:
        transaction = _read(store, LogType.FILES, entry)
        if not isinstance(transaction, FileTransaction):
            history.records.append(_record(LogType.FILES, entry))
            continue
        names = list(transaction.named_files())
        if isinstance(transaction, ClearFilesTransaction | OverwriteFilesTransaction):
            names = [f.filename for f in state.files()] + names  # every file may lose its references
        before = _references(state, names)
        transaction.apply_numbered(state, entry.update_time, entry.transaction_number)
        after = _references(state, names)
        record, lost = _diff(entry, before, after)
        history.records.append(record)
        for name in lost:
            last_referenced[name] = (entry.transaction_number - 1, entry.update_time)
        if isinstance(transaction, DeleteFilesTransaction):
            deleted.update(transaction.filenames)
        elif isinstance(transaction, ClearFilesTransaction):
            # Only a reinitialisation clears a table's files, and it deletes every file it cleared straight after.
            deleted.update(names)
    for entry in partitions.entries:
        history.records.append(_record(LogType.PARTITIONS, entry))
    history.records.sort(key=lambda r: (r.time, r.log is LogType.FILES, r.number))
    oldest = files.base if files.base > 0 or files.entries else None
    if oldest is not None:
        for name, (number, lost_at) in last_referenced.items():
            collectable = collectable_before is not None and lost_at < collectable_before
            if name in deleted or collectable:
                oldest = max(oldest, number + 1)
        oldest = max(oldest, 1)
        if oldest > files.head:
            oldest = None if files.head < 1 else files.head
    history.oldest_readable = oldest
    return history


def _replay(store: StateStore, log_type: LogType) -> _Replay:
    entries = list(store.backend.transaction_log(store.table_id, log_type).read_transactions_after(0))
    snapshots: list[SnapshotMetadata] = []
    if store.snapshot_store is not None:
        snapshots = store.snapshot_store.snapshots(log_type)
    last_entry = entries[-1].transaction_number if entries else 0
    head = max([last_entry, *(s.transaction_number for s in snapshots)])
    # A base is a state the kept log follows on from: the start of the log, or a snapshot at or after the entry
    # before the first kept one (a snapshot further back cannot be followed: the entries after it are gone).
    follows_from = entries[0].transaction_number - 1 if entries else head
    bases: list[tuple[int, datetime | None]] = [
        (s.transaction_number, s.update_time) for s in snapshots if follows_from <= s.transaction_number <= head
    ]
    if follows_from == 0:
        bases.append((0, None))
    if not bases:
        raise StateNotReadableError(
            f"the {log_type.value} log of table {store.table_id} cannot be rebuilt: no snapshot covers the "
            f"transactions deleted before {follows_from + 1}",
            oldest_readable=None,
        )
    base, base_time = min(bases, key=lambda b: b[0])
    kept = [e for e in entries if e.transaction_number > base]
    _check_contiguous(store, log_type, base, kept)
    return _Replay(base=base, entries=kept, base_time=base_time, head=head)


def _check_contiguous(store: StateStore, log_type: LogType, base: int, entries: list[TransactionLogEntry]) -> None:
    expected = base + 1
    for entry in entries:
        if entry.transaction_number != expected:
            raise StateNotReadableError(
                f"the {log_type.value} log of table {store.table_id} has no transaction {expected}",
                oldest_readable=None,
            )
        expected += 1


def _load_base(store: StateStore, log_type: LogType, number: int) -> FilesState | PartitionsState:
    if number == 0 or store.snapshot_store is None:
        return FilesState() if log_type is LogType.FILES else PartitionsState()
    for snapshot in store.snapshot_store.snapshots(log_type):
        if snapshot.transaction_number == number:
            if log_type is LogType.FILES:
                return store.snapshot_store.load_files(snapshot)
            return store.snapshot_store.load_partitions(snapshot)
    raise StateNotReadableError(
        f"the {log_type.value} snapshot of table {store.table_id} at transaction {number} was deleted",
        oldest_readable=None,
    )


def _read(
    store: StateStore, log_type: LogType, entry: TransactionLogEntry
) -> FileTransaction | PartitionTransaction | None:
    if log_type_of(entry.transaction_type) is not log_type:
        return None
    body = entry.body if entry.body is not None else store.body_store.load(entry.body_key or "")
    transaction = store.serde.from_json(entry.transaction_type, body)
    return transaction if isinstance(transaction, FileTransaction | PartitionTransaction) else None


def _references(state: FilesState, names: Iterable[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for name in names:
        f = state.file(name)
        out[name] = {} if f is None else {pid: r.number_of_rows for pid, r in f.references.items()}
    return out


def _record(log: LogType, entry: TransactionLogEntry) -> TransactionRecord:
    return TransactionRecord(
        log=log, number=entry.transaction_number, type=entry.transaction_type, time=entry.update_time
    )


def _diff(
    entry: TransactionLogEntry, before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
) -> tuple[TransactionRecord, list[str]]:
    files_added = files_removed = rows_added = rows_removed = 0
    lost: list[str] = []
    for name in before.keys() | after.keys():
        old, new = before.get(name, {}), after.get(name, {})
        if not old and new:
            files_added += 1
        if old and not new:
            files_removed += 1
            lost.append(name)
        for pid, rows in new.items():
            if pid not in old:
                rows_added += rows
        for pid, rows in old.items():
            if pid not in new:
                rows_removed += rows
    record = TransactionRecord(
        log=LogType.FILES,
        number=entry.transaction_number,
        type=entry.transaction_type,
        time=entry.update_time,
        files_added=files_added,
        files_removed=files_removed,
        rows_added=rows_added,
        rows_removed=rows_removed,
    )
    return record, lost
