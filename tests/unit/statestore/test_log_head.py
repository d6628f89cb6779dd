"""The transaction log head: numbering, conflicts and retries, ambiguous appends, large bodies, snapshots."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from sleeper.core.statestore.exceptions import FileNotFoundInStateError, FileReferenceAssignedToJobError
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.files import AddFilesTransaction, AssignJobIdRequest, AssignJobIdsTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.partitions import InitialisePartitionsTransaction
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError, TransactionLogGapError
from sleeper.statestore.log_head import FilesLogHead, StateStoreSettings, to_millis, transaction_body_key
from sleeper.statestore.store import StateStore
from tests.unit.core.statestore.builders import reference
from tests.unit.statestore.fakes import START, FakeClock, RecordedSleeps, Table, fixed_jitter, new_table

TABLE = "table-1"


def _assign(job_id: str, *names: str) -> AssignJobIdsTransaction:
    return AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=names),))


def _files_log(table: Table):  # type: ignore[no-untyped-def]
    return table.backend.transaction_log(TABLE, LogType.FILES)


def _names(store: StateStore) -> list[str]:
    return sorted(f.filename for f in store.files())


# --- numbering -----------------------------------------------------------------------------------------------------


def should_number_transactions_of_each_log_from_one() -> None:
    # Given a table
    table = new_table()
    store = table.store()
    # When partitions are initialised and two files added
    partitions = store.initialise()
    first = store.add_files([reference("a")])
    second = store.add_files([reference("b")])
    # Then each log numbers its own transactions from 1
    assert (partitions, first, second) == (1, 1, 2)
    assert [e.transaction_number for e in _files_log(table).entries()] == [1, 2]


def should_record_times_to_the_millisecond() -> None:
    # Given a clock with microseconds
    table = new_table()
    table.clock.now = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    store = table.store()
    # When a file is added
    store.add_files([reference("a")])
    # Then the log entry and the reference hold the time truncated to milliseconds
    expected = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert _files_log(table).entries()[0].update_time == expected
    assert store.file_references()[0].last_update_time == expected
    assert to_millis(table.clock.now) != table.clock.now


# --- collisions --------------------------------------------------------------------------------------------------


def should_retry_with_the_next_number_when_another_writer_takes_it() -> None:
    # Given two writers on one table, the other adding a file at the start of our append
    table = new_table()
    ours, other = table.store(), table.store()
    _files_log(table).at_start_of_next_add(lambda: other.add_files([reference("theirs")]))
    # When we add a file
    result = ours.commit(AddFilesTransaction.of_references([reference("ours")]))
    # Then we got number 2 after one collision and one wait, and both files are in our state
    assert (result.transaction_number, result.attempts, result.collisions) == (2, 2, 1)
    assert table.sleeps.waits == [pytest.approx(0.2)]
    assert _names(ours) == ["ours", "theirs"]
    assert [e.transaction_number for e in _files_log(table).entries()] == [1, 2]


def should_refuse_a_transaction_that_no_longer_fits_after_a_collision() -> None:
    # Given a file, and another writer assigning it to its job at the start of our append
    table = new_table()
    ours, other = table.store(), table.store()
    ours.add_files([reference("a")])
    _files_log(table).at_start_of_next_add(lambda: other.add_transaction(_assign("their-job", "a")))
    # When we assign it to our job
    with pytest.raises(FileReferenceAssignedToJobError):
        ours.add_transaction(_assign("our-job", "a"))
    # Then only their assignment is in the log, and our state shows it
    assert len(_files_log(table).entries()) == 2
    assert ours.file_references()[0].job_id == "their-job"


def should_give_up_after_the_maximum_attempts() -> None:
    # Given another writer that takes the number at the start of each of our appends
    table = new_table()
    ours, other = table.store(), table.store()
    log = _files_log(table)
    for i in range(10):
        log.at_start_of_next_add(lambda i=i: other.add_files([reference(f"theirs-{i}")]))
    # When we add a file
    with pytest.raises(AddTransactionRetriesExhaustedError) as caught:
        ours.add_files([reference("ours")])
    # Then we gave up after 10 attempts, waiting before each retry with the ceiling doubling from 200 ms up to 30 s
    assert caught.value.attempts == 10
    assert caught.value.transaction_type == "ADD_FILES"
    assert table.sleeps.waits == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0])
    # And our file is not in the log, theirs all are
    assert "ours" not in _names(other)
    assert len(log.entries()) == 10


def should_wait_a_random_fraction_of_the_ceiling() -> None:
    # Given three collisions and a jitter source giving a quarter
    table = new_table()
    ours, other = table.store(jitter=0.25), table.store()
    for i in range(3):
        _files_log(table).at_start_of_next_add(lambda i=i: other.add_files([reference(f"theirs-{i}")]))
    # When we add a file
    ours.add_files([reference("ours")])
    # Then each wait is a quarter of its ceiling
    assert table.sleeps.waits == pytest.approx([0.05, 0.1, 0.2])


@pytest.mark.parametrize(
    ("first", "maximum", "expected"),
    [(0.2, 30.0, [0.0, 0.2, 0.4, 0.8, 1.6]), (1.0, 3.0, [0.0, 1.0, 2.0, 3.0, 3.0]), (0.0, 0.0, [0.0] * 5)],
)
def should_double_the_wait_ceiling_up_to_the_maximum(first: float, maximum: float, expected: list[float]) -> None:
    # Given settings with retry ceilings
    settings = StateStoreSettings(first_retry_wait_ceiling_seconds=first, max_retry_wait_ceiling_seconds=maximum)
    # When / Then the ceilings of attempts 1 to 5 are none for the first, then doubling, capped
    assert [settings.retry_wait_ceiling_seconds(a) for a in range(1, 6)] == pytest.approx(expected)


# --- ambiguous appends -------------------------------------------------------------------------------------------


def should_report_success_once_when_an_append_lands_but_raises() -> None:
    # Given a file, and a log whose next append lands and then raises (a timeout after the write)
    table = new_table()
    store = table.store()
    store.add_files([reference("a")])
    _files_log(table).land_then_fail_next_add()
    # When the file is assigned to a job (which would be refused if applied twice)
    result = store.commit(_assign("job-1", "a"))
    # Then the assignment is reported added, at the number where it landed, once
    assert (result.transaction_number, result.ambiguous_failures) == (2, 1)
    assert len(_files_log(table).entries()) == 2
    assert store.file_references()[0].job_id == "job-1"
    assert table.store().file_references()[0].job_id == "job-1"


def should_retry_when_an_append_fails_without_landing() -> None:
    # Given a log whose next append fails without storing anything
    table = new_table()
    store = table.store()
    _files_log(table).fail_next_add()
    # When a file is added
    result = store.commit(AddFilesTransaction.of_references([reference("a")]))
    # Then it was retried and added once
    assert (result.transaction_number, result.attempts, result.ambiguous_failures) == (1, 2, 1)
    assert len(_files_log(table).entries()) == 1
    assert _names(store) == ["a"]


def should_find_an_ambiguous_append_that_landed_after_another_writer_moved_on() -> None:
    # Given our append lands then raises, and another writer adds a file while we wait to look again
    table = new_table()
    ours, other = table.store(), table.store()
    log = _files_log(table)
    log.land_then_fail_next_add()
    table.sleeps.actions.append(lambda: other.add_files([reference("theirs")]))
    # When we add a file
    result = ours.commit(AddFilesTransaction.of_references([reference("ours")]))
    # Then it is reported at the number where it landed, before theirs, and each file is in the log once
    assert (result.transaction_number, result.ambiguous_failures) == (1, 1)
    assert [e.transaction_number for e in log.entries()] == [1, 2]
    assert "ours" in (log.entries()[0].body or "")
    assert _names(ours) == ["ours", "theirs"]


def should_give_up_when_appends_keep_failing_without_landing() -> None:
    # Given a log that fails every append without storing anything
    table = new_table()
    _files_log(table).fail_next_add(10)
    # When / Then adding a file gives up, naming the failures, and nothing is in the log
    with pytest.raises(AddTransactionRetriesExhaustedError, match="10 failures with unknown outcome"):
        table.store().add_files([reference("a")])
    assert _files_log(table).entries() == []


# --- large bodies ------------------------------------------------------------------------------------------------


def should_store_a_large_body_outside_the_log() -> None:
    # Given settings storing bodies of 500 bytes or more outside the log, and ids for the body keys
    table = new_table(settings=StateStoreSettings(body_store_threshold_bytes=500))
    store = table.store()
    transaction = AddFilesTransaction.of_references([reference(f"file-{i:04d}") for i in range(20)])
    # When the large transaction is added
    store.add_transaction(transaction)
    # Then the entry points at the body in the body store, under a key named by time and a unique id
    entry = _files_log(table).entries()[0]
    assert entry.body is None and entry.body_key is not None
    assert re.fullmatch(
        r"table-1/statestore/transactions/2025-01-02T03:04:05\.678Z-[0-9a-f-]{36}\.json", entry.body_key
    )
    assert table.backend.body_store(TABLE).load(entry.body_key) == store.serde.to_json(transaction)
    # And another process reads it
    assert _names(table.store()) == [f"file-{i:04d}" for i in range(20)]


def should_store_bodies_of_200_kib_or_more_outside_the_log_by_default() -> None:
    # Given a small and a large transaction (over 200 KiB of JSON)
    table = new_table()
    store = table.store()
    small = AddFilesTransaction.of_references([reference("small")])
    large = AddFilesTransaction.of_references([reference(f"{'x' * 100}-{i:05d}") for i in range(2000)])
    assert len(store.serde.to_json(large).encode()) >= 200 * 1024
    # When both are added
    store.add_transaction(small)
    store.add_transaction(large)
    # Then only the large one went to the body store
    small_entry, large_entry = _files_log(table).entries()
    assert small_entry.body is not None and small_entry.body_key is None
    assert large_entry.body is None and large_entry.body_key is not None


def should_point_at_a_body_that_was_already_stored() -> None:
    # Given a body uploaded before the commit (as the committer receives it)
    table = new_table()
    store = table.store()
    transaction = AddFilesTransaction.of_references([reference("a")])
    key = transaction_body_key(TABLE, START, "uploaded")
    bodies = table.backend.body_store(TABLE)
    bodies.store(key, store.serde.to_json(transaction))
    # When it is committed with its key
    store.commit(transaction, body_key=key)
    # Then the entry points at that key, no other body was stored, and the state has the file
    entry = _files_log(table).entries()[0]
    assert (entry.body, entry.body_key) == (None, key)
    assert bodies.keys() == [key]
    assert _names(table.store()) == ["a"]


def should_delete_a_stored_body_when_the_transaction_is_refused() -> None:
    # Given bodies of 10 bytes or more go to the body store
    table = new_table(settings=StateStoreSettings(body_store_threshold_bytes=10))
    # When an assignment of a missing file is refused
    with pytest.raises(FileNotFoundInStateError):
        table.store().add_transaction(_assign("job-1", "missing"))
    # Then its body is not left behind
    assert table.backend.body_store(TABLE).keys() == []


def should_name_body_keys_as_java_instants() -> None:
    # When / Then
    assert transaction_body_key("t", datetime(2024, 3, 26, 9, 43, 1, tzinfo=UTC), "u") == (
        "t/statestore/transactions/2024-03-26T09:43:01Z-u.json"
    )
    assert transaction_body_key("t", datetime(2024, 3, 26, 9, 43, 1, 120500, tzinfo=UTC), "u") == (
        "t/statestore/transactions/2024-03-26T09:43:01.120Z-u.json"
    )


# --- reading -----------------------------------------------------------------------------------------------------


class FakeSnapshots:
    """A snapshot source holding at most one snapshot, recording each lookup."""

    def __init__(self) -> None:
        self.latest: tuple[FilesState, int] | None = None
        self.lookups: list[int] = []

    def load_latest_at_or_after(self, min_transaction_number: int) -> tuple[FilesState, int] | None:
        self.lookups.append(min_transaction_number)
        if self.latest is None or self.latest[1] < min_transaction_number:
            return None
        return self.latest[0].copy(), self.latest[1]


def _marker_state(name: str) -> FilesState:
    state = FilesState()
    AddFilesTransaction.of_references([reference(name)]).apply(state, START)
    return state


def _head(table: Table, snapshots: FakeSnapshots, clock: FakeClock) -> FilesLogHead:
    store = table.store()
    return FilesLogHead(
        table_id=TABLE,
        log_store=_files_log(table),
        body_store=table.backend.body_store(TABLE),
        serde=store.serde,
        snapshots=snapshots,
        clock=clock,
        sleep=RecordedSleeps(),
        jitter=fixed_jitter(0.5),
    )


def _add_files(table: Table, count: int, prefix: str = "f") -> None:
    writer = table.store()
    for i in range(count):
        writer.add_files([reference(f"{prefix}-{i:02d}")])


def should_start_from_the_latest_snapshot_then_read_the_log_after_it() -> None:
    # Given 12 transactions in the log and a snapshot at transaction 10 (marked by a file only it holds)
    table = new_table()
    _add_files(table, 12)
    snapshots = FakeSnapshots()
    snapshots.latest = (_marker_state("from-snapshot"), 10)
    head = _head(table, snapshots, FakeClock())
    # When a new head updates
    head.update()
    # Then it holds the snapshot's state plus transactions 11 and 12
    assert head.last_transaction_number == 12
    assert sorted(f.filename for f in head.state.files()) == ["f-10", "f-11", "from-snapshot"]
    assert snapshots.lookups == [1]


def should_load_a_snapshot_only_when_far_enough_ahead_and_at_most_once_a_minute() -> None:
    # Given a head that has read 12 transactions, with no snapshot
    table = new_table()
    _add_files(table, 12)
    snapshots = FakeSnapshots()
    clock = FakeClock()
    head = _head(table, snapshots, clock)
    head.update()
    # When a snapshot 9 ahead appears and a minute passes
    snapshots.latest = (_marker_state("snapshot-21"), 21)
    clock.advance(60)
    head.update()
    # Then it is not loaded: a snapshot must be at least 10 ahead
    assert "snapshot-21" not in head.state and snapshots.lookups == [1, 22]
    # When one 10 ahead appears but only 30 seconds pass
    snapshots.latest = (_marker_state("snapshot-22"), 22)
    clock.advance(30)
    head.update()
    # Then it is not looked for yet
    assert snapshots.lookups == [1, 22]
    # When another 30 seconds pass
    clock.advance(30)
    head.update()
    # Then it is loaded
    assert "snapshot-22" in head.state and head.last_transaction_number == 22
    assert snapshots.lookups == [1, 22, 22]


def should_load_a_snapshot_when_the_transactions_after_the_local_state_were_deleted() -> None:
    # Given a head that read transactions 1 and 2
    table = new_table()
    _add_files(table, 2)
    snapshots = FakeSnapshots()
    head = _head(table, snapshots, FakeClock())
    head.update()
    # And 3 more transactions, then a snapshot at 4 and the deletion of transactions up to 4
    _add_files(table, 3, prefix="g")
    snapshots.latest = (_marker_state("snapshot-4"), 4)
    _files_log(table).delete_transactions_at_or_before(4)
    # When the head updates (before its next scheduled snapshot check)
    head.update()
    # Then it loaded the snapshot to cross the gap, and read on
    assert head.last_transaction_number == 5
    assert sorted(f.filename for f in head.state.files()) == ["g-02", "snapshot-4"]


def should_fail_without_a_gap_when_deleted_transactions_have_no_snapshot() -> None:
    # Given a head that read transaction 1, then transactions 2 and 3 of which 2 is deleted
    table = new_table()
    _add_files(table, 1)
    head = _head(table, FakeSnapshots(), FakeClock())
    head.update()
    _add_files(table, 2, prefix="g")
    log = _files_log(table)
    entries = log.delete_transactions_at_or_before(3)
    log.add_transaction(entries[-1])
    # When / Then updating fails, and the state is as it was
    with pytest.raises(TransactionLogGapError):
        head.update()
    assert head.last_transaction_number == 1
    assert [f.filename for f in head.state.files()] == ["f-00"]


def should_validate_against_the_local_state_first_when_so_configured() -> None:
    # Given a writer that does not read the log before adding, whose state is behind another writer's file
    table = new_table()
    settings = StateStoreSettings(update_log_before_add=False)
    ours, other = table.store(settings=settings), table.store()
    ours.add_files([reference("ours")])
    other.add_files([reference("theirs")])
    # When it assigns the other writer's file (local validation fails: it reads the log once and validates again)
    number = ours.add_transaction(_assign("job-1", "theirs"))
    # Then it is added without any collision
    assert number == 3
    assert table.sleeps.waits == []
    assert {r.filename: r.job_id for r in ours.file_references()} == {"ours": None, "theirs": "job-1"}


def should_use_a_recent_state_for_reads_within_the_time_between_checks() -> None:
    # Given reads may use a state up to 5 seconds old
    table = new_table(settings=StateStoreSettings(time_between_transaction_checks_seconds=5))
    reader, writer = table.store(), table.store()
    assert reader.files() == []
    writer.add_files([reference("a")])
    # When / Then the reader does not see the new file within 5 seconds, and does after
    table.clock.advance(4)
    assert reader.files() == []
    table.clock.advance(1)
    assert _names(reader) == ["a"]


def should_refuse_a_transaction_of_the_other_log() -> None:
    # Given the files log head
    head = new_table().store().files_head
    # When / Then
    with pytest.raises(ValueError, match="partitions log"):
        head.add_transaction(InitialisePartitionsTransaction(partitions=()))  # type: ignore[arg-type]
