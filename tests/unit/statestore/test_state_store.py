"""The StateStore facade over both logs, and its upkeep: snapshots and deleting old snapshots and transactions."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from sleeper.core.partition import ROOT_ID
from sleeper.core.statestore.exceptions import StateStoreError
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    DeleteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.store import StateStore
from sleeper.statestore.upkeep import create_snapshot, delete_old_snapshots, delete_old_transactions
from tests.unit.core.statestore.builders import PartitionsBuilder, reference
from tests.unit.statestore.fakes import Table, new_table

TABLE = "table-1"


def _snapshot_files(table: Table) -> list[str]:
    selector = pa.fs.FileSelector(f"data/{TABLE}/statestore/snapshots", allow_not_found=True)
    return sorted(f.base_name for f in table.filesystem.get_file_info(selector))


def _busy_table(table: Table, files: int) -> StateStore:
    """A table split in two, with files added, some compacted and garbage collected."""
    store = table.store()
    tree = PartitionsBuilder(table.schema).split("root", "L", "R", 0)
    store.initialise([tree.get("root"), tree.get("L"), tree.get("R")])
    for i in range(files):
        store.add_files([reference(f"f{i}", "L" if i % 2 else "R", 10 + i)], job_id=f"ingest-{i}")
        table.clock.advance(1)
    store.add_transaction(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="c1", partition_id="R", filenames=("f0", "f2")),))
    )
    store.add_transaction(
        ReplaceFileReferencesTransaction(
            jobs=(
                ReplaceFileReferencesRequest(
                    job_id="c1", input_files=("f0", "f2"), new_reference=reference("c1", "R", 22)
                ),
            )
        )
    )
    store.add_transaction(DeleteFilesTransaction(filenames=("f0",)))
    return store


def should_initialise_a_table_with_a_single_root_partition() -> None:
    # Given a new table
    store = new_table().store()
    # When it is initialised without partitions
    store.initialise()
    # Then it has one leaf called root
    assert [p.id for p in store.leaf_partitions()] == [ROOT_ID]
    assert store.partition_tree().root.id == ROOT_ID


def should_refuse_to_initialise_a_table_that_has_files() -> None:
    # Given a table with a file
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a")])
    # When / Then initialising it again is refused, naming the table
    with pytest.raises(StateStoreError, match="cannot initialise table table-1: it has 1 files"):
        store.initialise()
    # And after its files are cleared it may be initialised
    store.clear_files()
    tree = PartitionsBuilder(store.schema).split("root", "L", "R", 5)
    store.initialise(tree.partitions())
    assert [p.id for p in store.leaf_partitions()] == ["L", "R"]


def should_report_no_tree_for_a_table_never_initialised() -> None:
    # Given a new table
    store = new_table().store()
    # When / Then
    assert store.leaf_partitions() == []
    with pytest.raises(StateStoreError, match="has not been initialised"):
        store.partition_tree()


def should_answer_reads_from_both_logs() -> None:
    # Given a busy table
    table = new_table()
    store = _busy_table(table, files=6)
    reader = table.store()
    # When / Then another state store object reads the same state
    assert sorted(f.filename for f in reader.files()) == ["c1", "f1", "f2", "f3", "f4", "f5"]
    assert sorted(r.filename for r in reader.references_on_partition("R")) == ["c1", "f4"]
    assert reader.unreferenced_files_before(table.clock.now + timedelta(seconds=1)) == ["f2"]
    assert reader.has_added_job("ingest-3") and not reader.has_added_job("ingest-9")
    assert reader.last_transaction_numbers() == {LogType.FILES: 9, LogType.PARTITIONS: 1}
    assert reader.files_state() == store.files_state()
    assert reader.partitions_state() == store.partitions_state()


def should_route_partition_transactions_to_the_partitions_log() -> None:
    # Given a table with a file
    table = new_table()
    store = table.store()
    store.initialise()
    store.add_files([reference("a")])
    tree = PartitionsBuilder(store.schema).split("root", "L", "R", 5)
    # When root is split
    number = store.add_transaction(
        SplitPartitionTransaction(parent=tree.get("root"), new_children=(tree.get("L"), tree.get("R")))
    )
    # Then it is transaction 2 of the partitions log, and the files log is unchanged
    assert number == 2
    assert store.last_transaction_numbers() == {LogType.FILES: 1, LogType.PARTITIONS: 2}


def should_hand_out_copies_of_the_state() -> None:
    # Given a table with a file
    store = new_table().store()
    store.add_files([reference("a")])
    # When the copy is changed
    copy = store.files_state()
    copy.clear()
    # Then the store is not
    assert [f.filename for f in store.files()] == ["a"]


# --- snapshots and upkeep ------------------------------------------------------------------------------------------


def should_reach_the_same_state_from_a_snapshot_and_the_log_tail_as_from_a_full_replay() -> None:
    # Given a busy table, snapshotted, then more transactions
    table = new_table()
    store = _busy_table(table, files=30)
    created = create_snapshot(store)
    store.add_files([reference("after-1", "L")])
    store.add_files([reference("after-2", "R")])
    # When one process starts from the snapshot and another replays the whole log without snapshots
    from_snapshot = table.store()
    full_replay = StateStore(schema=table.schema, table_id=TABLE, backend=table.backend)
    # Then both have the same state, the first having loaded the snapshot
    assert [s.transaction_number for s in created.created] == [33, 1]
    assert from_snapshot.files_state() == full_replay.files_state() == store.files_state()
    assert from_snapshot.partitions_state() == full_replay.partitions_state()
    assert from_snapshot.files_head.last_transaction_number == 35


def should_snapshot_only_logs_that_advanced() -> None:
    # Given a table snapshotted once
    table = new_table()
    store = _busy_table(table, files=3)
    create_snapshot(store)
    # When a file is added and snapshots are created again
    store.add_files([reference("new")])
    second = create_snapshot(store)
    third = create_snapshot(store)
    # Then only the files log got a new snapshot, and then nothing did
    assert [(s.log_type, s.transaction_number) for s in second.created] == [(LogType.FILES, 7)]
    assert second.up_to_date == [LogType.PARTITIONS]
    assert third.created == [] and third.up_to_date == [LogType.FILES, LogType.PARTITIONS]
    assert len(_snapshot_files(table)) == 3


def should_count_a_snapshot_that_lost_the_race_and_keep_the_winner() -> None:
    # Given two processes that read the table at the same point
    table = new_table()
    first = _busy_table(table, files=3)
    second = table.store()
    second.refresh()
    first.add_files([reference("new")])
    # When the first snapshots (at 7) and then the second, which is behind (at 6)
    won = create_snapshot(first)
    lost = create_snapshot(second)
    # Then the second only snapshots the partitions log... which the first already did
    assert [s.transaction_number for s in won.created] == [7, 1]
    assert lost.created == [] and lost.up_to_date == [LogType.FILES, LogType.PARTITIONS]
    assert table.store().files_state() == first.files_state()


def should_delete_expired_snapshots_but_never_the_latest() -> None:
    # Given snapshots made 3 days ago (both logs), just over 2 days ago (files) and now (files)
    table = new_table()
    store = _busy_table(table, files=3)
    create_snapshot(store)
    table.clock.advance(days=1)
    store.add_files([reference("a")])
    create_snapshot(store)
    table.clock.advance(days=2, seconds=1)
    store.add_files([reference("b")])
    create_snapshot(store)
    before = _snapshot_files(table)
    # When old snapshots are deleted
    deleted = delete_old_snapshots(store)
    # Then the two files snapshots older than 2 days are gone, file and record; the old partitions one is the latest
    assert [(s.log_type, s.transaction_number) for s in deleted] == [(LogType.FILES, 6), (LogType.FILES, 7)]
    assert len(before) == 4
    assert _snapshot_files(table) == [name for name in before if not name.startswith(("6-", "7-"))]
    snapshots = store.snapshot_store
    assert snapshots is not None
    assert [s.transaction_number for s in snapshots.snapshots(LogType.FILES)] == [8]
    assert [s.transaction_number for s in snapshots.snapshots(LogType.PARTITIONS)] == [1]


def should_delete_transactions_far_enough_behind_a_snapshot_old_enough() -> None:
    # Given 250 transactions adding files, bodies of 300 bytes or more stored outside the log, a snapshot at 250
    settings = StateStoreSettings(body_store_threshold_bytes=300)
    table = new_table(settings=settings)
    store = table.store()
    store.initialise()
    store.add_files([reference(f"{'long-name-' * 10}{i}") for i in range(2)])
    for i in range(249):
        store.add_files([reference(f"f{i}")])
    assert [s.transaction_number for s in create_snapshot(store).created] == [250, 1]
    bodies = table.backend.body_store(TABLE)
    assert len(bodies.keys()) == 1
    # When transactions are deleted within 2 minutes of the snapshot
    table.clock.advance(119)
    early = delete_old_transactions(store)
    # Then nothing is deleted
    assert early.entries_deleted == {}
    # When they are deleted after 2 minutes
    table.clock.advance(1)
    result = delete_old_transactions(store)
    # Then entries up to 250 - 200 = 51 are deleted with the large body; the partitions log is too short
    assert result.deleted_up_to == {LogType.FILES: 50}
    assert result.entries_deleted == {LogType.FILES: 50}
    assert result.bodies_deleted == 1 and bodies.keys() == []
    files_log = table.backend.transaction_log(TABLE, LogType.FILES)
    assert files_log.entries()[0].transaction_number == 51
    # And a new process still reaches the same state, from the snapshot
    assert table.store().files_state() == store.files_state()
