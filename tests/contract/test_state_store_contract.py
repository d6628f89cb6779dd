"""The StateStore end to end over every adapter family: logs, collisions, large bodies, snapshots and upkeep."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from sleeper.core.statestore.exceptions import (
    FileNotFoundInStateError,
    FileOutsideTableError,
    JobIdReusedError,
    PartitionNotFoundError,
    TableDeletedError,
)
from sleeper.core.statestore.locations import file_outside_table
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.state import input_files_hash
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    DeleteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
    SplitFileReferenceRequest,
    SplitFileReferencesTransaction,
)
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.statestore.log_head import StateStoreSettings, transaction_body_key
from sleeper.statestore.ports import (
    SnapshotMetadataStore,
    StateStoreBackend,
    TransactionBodyStore,
    TransactionLogEntry,
    TransactionLogStore,
)
from sleeper.statestore.store import StateStore
from sleeper.statestore.upkeep import create_snapshot, delete_old_transactions
from tests.contract.conftest import BackendFactory
from tests.reliability_report import Reliability
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, PartitionsBuilder, reference
from tests.unit.statestore.fakes import FakeClock, RecordedSleeps, fixed_jitter

TABLE = "0a1b2c3d"


class Stores:
    """State store objects for one table over one backend, as separate processes would have them."""

    def __init__(self, factory: BackendFactory, backend: StateStoreBackend, settings: StateStoreSettings) -> None:
        self.factory = factory
        self.backend = backend
        self.settings = settings
        self.clock = FakeClock()
        self.sleeps = RecordedSleeps()

    def new(self, *, settings: StateStoreSettings | None = None, snapshots: bool = True) -> StateStore:
        return StateStore(
            schema=LONG_KEY_SCHEMA,
            table_id=TABLE,
            backend=self.backend,
            filesystem=self.factory.filesystem if snapshots else None,
            snapshot_base_path=f"{self.factory.snapshot_base}/{TABLE}" if snapshots else None,
            settings=settings or self.settings,
            clock=self.clock,
            sleep=self.sleeps,
            jitter=fixed_jitter(0.5),
        )


def _stores(factory: BackendFactory, **settings: object) -> Stores:
    return Stores(factory, factory.make(), StateStoreSettings(**settings))  # type: ignore[arg-type]


def _summary(store: StateStore) -> dict[str, dict[str, tuple[int, str | None]]]:
    return {f.filename: {pid: (r.number_of_rows, r.job_id) for pid, r in f.references.items()} for f in store.files()}


def should_run_a_table_through_its_lifecycle(backend_factory: BackendFactory) -> None:
    # Given an initialised table with two files
    stores = _stores(backend_factory)
    store = stores.new()
    store.initialise()
    store.add_files([reference("a", rows=100), reference("b", rows=200)], job_id="ingest-1")
    # When root is split, a's reference moved down, b compacted into c, and b garbage collected
    tree = PartitionsBuilder(LONG_KEY_SCHEMA).split("root", "L", "R", 0)
    store.add_transaction(
        SplitPartitionTransaction(parent=tree.get("root"), new_children=(tree.get("L"), tree.get("R")))
    )
    a = reference("a", rows=100)
    store.add_transaction(
        SplitFileReferencesTransaction(
            requests=(SplitFileReferenceRequest(old_reference=a, new_references=(a.split_to("L"), a.split_to("R"))),)
        )
    )
    store.add_transaction(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="c1", partition_id="root", filenames=("b",)),))
    )
    store.add_transaction(
        ReplaceFileReferencesTransaction(
            jobs=(
                ReplaceFileReferencesRequest(
                    job_id="c1", input_files=("b",), new_reference=reference("c", "root", 200)
                ),
            )
        )
    )
    store.add_transaction(DeleteFilesTransaction(filenames=("b",)))
    # Then another process sees the same state
    other = stores.new()
    assert _summary(other) == {"a": {"L": (50, None), "R": (50, None)}, "c": {"root": (200, None)}}
    assert [p.id for p in other.leaf_partitions()] == ["L", "R"]
    assert other.has_added_job("ingest-1")
    assert other.last_transaction_numbers() == {LogType.FILES: 5, LogType.PARTITIONS: 2}


def should_retry_on_the_backends_conditional_append(backend_factory: BackendFactory) -> None:
    # Given a writer that validates against its local state first, and another writer that moved the log on
    stores = _stores(backend_factory)
    ours = stores.new(settings=StateStoreSettings(update_log_before_add=False))
    other = stores.new()
    ours.add_files([reference("ours-1")])
    other.add_files([reference("theirs")])
    # When ours adds a file, trying number 2 first
    result = ours.commit(AddFilesTransaction.of_references([reference("ours-2")]))
    # Then the backend refused number 2, and ours retried at 3 after one wait
    assert (result.transaction_number, result.collisions) == (3, 1)
    assert len(stores.sleeps.waits) == 1
    assert sorted(_summary(stores.new())) == ["ours-1", "ours-2", "theirs"]


def should_keep_large_bodies_in_the_body_store(backend_factory: BackendFactory) -> None:
    # Given bodies of 1 KiB or more go to the body store
    stores = _stores(backend_factory, body_store_threshold_bytes=1024)
    store = stores.new()
    # When a large transaction is added, and one whose body was uploaded first (as for the committer)
    store.add_files([reference(f"file-{i:03d}") for i in range(20)])
    uploaded = AddFilesTransaction.of_references([reference("uploaded")])
    key = transaction_body_key(TABLE, stores.clock.now, "uploaded")
    stores.backend.body_store(TABLE).store(key, store.serde.to_json(uploaded))
    store.commit(uploaded, body_key=key)
    # Then both entries point at bodies, and another process reads them
    entries = list(stores.backend.transaction_log(TABLE, LogType.FILES).read_transactions_after(0))
    assert [e.body is None for e in entries] == [True, True]
    assert entries[1].body_key == key
    assert len(_summary(stores.new())) == 21


def should_reach_the_same_state_from_snapshots_after_old_transactions_are_deleted(
    backend_factory: BackendFactory,
) -> None:
    # Given 30 files added one per transaction, keeping 5 transactions behind a snapshot
    stores = _stores(backend_factory, delete_transactions_number_behind_snapshot=5)
    store = stores.new()
    store.initialise()
    for i in range(30):
        store.add_files([FileReference(filename=f"f{i:02d}", partition_id="root", number_of_rows=i)], job_id=f"j{i}")
    # When a snapshot is made, more files are added, and transactions behind the snapshot are deleted later
    created = create_snapshot(store)
    for i in range(30, 33):
        store.add_files([reference(f"f{i:02d}")])
    stores.clock.advance(minutes=3)
    deleted = delete_old_transactions(store)
    # Then transactions up to 25 are gone, and a new process reaches the full state from the snapshot and the tail
    assert [(s.log_type, s.transaction_number) for s in created.created] == [
        (LogType.FILES, 30),
        (LogType.PARTITIONS, 1),
    ]
    assert deleted.deleted_up_to == {LogType.FILES: 25}
    fresh = stores.new()
    assert fresh.files_state() == store.files_state()
    assert fresh.partitions_state() == store.partitions_state()
    assert fresh.has_added_job("j0")
    # And a process without snapshots cannot replay from the start: the log begins at 26
    first = next(iter(stores.backend.transaction_log(TABLE, LogType.FILES).read_transactions_after(0)))
    assert first.transaction_number == 26


def should_refuse_a_job_id_reused_for_other_input_files_after_its_transaction_is_only_in_a_snapshot(
    backend_factory: BackendFactory,
) -> None:
    # Given a job's files added from one input file, then a snapshot and the deletion of the transactions behind it
    stores = _stores(backend_factory, delete_transactions_number_behind_snapshot=0)
    store = stores.new()
    store.initialise()
    first_input = input_files_hash(["/in/a.parquet"])
    store.add_files([reference("f0")], job_id="same", inputs_hash=first_input)
    store.add_files([reference("f1")])
    create_snapshot(store)
    stores.clock.advance(minutes=3)
    assert delete_old_transactions(store).deleted_up_to[LogType.FILES] == 2
    # When a new process adds files under the same job id from another input file
    fresh = stores.new()
    with pytest.raises(JobIdReusedError, match="'same'"):
        fresh.add_files([reference("f2")], job_id="same", inputs_hash=input_files_hash(["/in/b7.parquet"]))
    # Then it was refused and nothing was added; the same input is still a retry that is already done
    assert sorted(_summary(stores.new())) == ["f0", "f1"]
    assert fresh.job_already_added("same", first_input)


def should_catch_up_with_a_writer_that_snapshotted(backend_factory: BackendFactory) -> None:
    # Given a reader that has read the table, and a writer that adds 10 files and snapshots
    stores = _stores(backend_factory)
    writer, reader = stores.new(), stores.new()
    writer.add_files([reference("first")])
    assert len(reader.files()) == 1
    for i in range(10):
        writer.add_files([reference(f"f{i}")])
    create_snapshot(writer)
    # When the reader reads again after a minute
    stores.clock.advance(timedelta(minutes=1).total_seconds())
    files = reader.files()
    # Then it has the writer's state
    assert len(files) == 11
    assert reader.files_state() == writer.files_state()


# --- table-level validation: where files lie, which partitions exist, deleted tables --------------------------------
DATA_PREFIX = f"s3a://data-bucket/{TABLE}"


def _file(name: str, partition_id: str = "root", rows: int = 100) -> FileReference:
    return reference(f"{DATA_PREFIX}/data/partition_{partition_id}/{name}.parquet", partition_id, rows)


class _ActBeforeNextAppend:
    """A backend whose logs run queued actions just before their next appends, as another process acting then would
    (works over any backend, unlike the in-memory log's ``at_start_of_next_add``)."""

    def __init__(self, backend: StateStoreBackend) -> None:
        self.backend = backend
        self.actions: list[Callable[[], object]] = []

    def transaction_log(self, table_id: str, log_type: LogType) -> TransactionLogStore:
        inner = self.backend.transaction_log(table_id, log_type)
        actions = self.actions

        class _Log:
            def add_transaction(self, entry: TransactionLogEntry) -> None:
                if actions:
                    actions.pop(0)()
                inner.add_transaction(entry)

            def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
                return inner.read_transactions_after(transaction_number)

            def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
                return inner.delete_transactions_at_or_before(transaction_number)

        return _Log()

    def body_store(self, table_id: str) -> TransactionBodyStore:
        return self.backend.body_store(table_id)

    def snapshot_metadata(self, table_id: str) -> SnapshotMetadataStore:
        return self.backend.snapshot_metadata(table_id)

    def delete_table(self, table_id: str) -> None:
        self.backend.delete_table(table_id)

    def is_deleted(self, table_id: str) -> bool:
        return self.backend.is_deleted(table_id)


def _table_store(stores: Stores, backend: StateStoreBackend | None = None) -> StateStore:
    """A state store of the table as the runtimes build it: it knows the table's data prefix."""
    return StateStore(
        schema=LONG_KEY_SCHEMA,
        table_id=TABLE,
        backend=backend or stores.backend,
        settings=stores.settings,
        clock=stores.clock,
        sleep=stores.sleeps,
        jitter=fixed_jitter(0.5),
        data_prefix=DATA_PREFIX,
    )


@pytest.mark.parametrize(
    "outside",
    [
        "s3a://data-bucket/9f8e7d6c/data/partition_root/theirs.parquet",
        "s3a://other-bucket/0a1b2c3d/data/partition_root/x.parquet",
        f"{DATA_PREFIX}/data/../../9f8e7d6c/data/partition_root/theirs.parquet",
        f"{DATA_PREFIX}-copy/data/partition_root/x.parquet",
    ],
)
def should_refuse_every_file_transaction_naming_a_file_outside_the_table(
    backend_factory: BackendFactory, outside: str, reliability: Reliability
) -> None:
    # Given a table with one file, assigned to a compaction job
    stores = _stores(backend_factory)
    store = _table_store(stores)
    store.initialise()
    tree = PartitionsBuilder(LONG_KEY_SCHEMA).split("root", "L", "R", 0)
    store.add_transaction(
        SplitPartitionTransaction(parent=tree.get("root"), new_children=(tree.get("L"), tree.get("R")))
    )
    mine = _file("mine")
    store.add_files([mine])
    store.add_transaction(
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id="c1", partition_id="root", filenames=(mine.filename,)),)
        )
    )
    before = store.last_transaction_numbers()
    forged = reference(outside, "root", 1)
    # When transactions naming the other file are committed: added, as a compaction output, split
    attempts = [
        AddFilesTransaction.of_references([forged]),
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id="c1", input_files=(mine.filename,), new_reference=forged),)
        ),
        SplitFileReferencesTransaction(
            requests=(SplitFileReferenceRequest(old_reference=forged, new_references=(forged.split_to("L"),)),)
        ),
        DeleteFilesTransaction(filenames=(outside,)),
    ]
    # Then each is refused naming the file, and nothing reached the log
    refused = []
    for transaction in attempts:
        with pytest.raises(FileOutsideTableError, match="does not belong to table"):
            store.commit(transaction)
        refused.append(type(transaction).__name__)
    # and a job assignment naming it is refused as naming a file the table does not track (its files are not checked
    # against the prefix again: every file it may name was checked when it was added)
    with pytest.raises(FileNotFoundInStateError, match="is not tracked"):
        store.commit(
            AssignJobIdsTransaction(
                requests=(AssignJobIdRequest(job_id="c2", partition_id="root", filenames=(outside,)),)
            )
        )
    refused.append("AssignJobIdsTransaction")
    after = stores.new().last_transaction_numbers()
    reliability.record(
        "D4",
        case="commit side: forged transactions naming a file outside the table",
        backend=backend_factory.name,
        file=outside,
        forged_commits=len(attempts) + 1,
        rejected_at_commit=len(refused),
        transactions_appended=sum(after[log] - before[log] for log in after),
        gc_would_delete=int(file_outside_table(outside, DATA_PREFIX) is None),
    )
    assert stores.new().last_transaction_numbers() == before
    assert sorted(_summary(stores.new())) == [mine.filename]


def should_refuse_references_on_partitions_that_do_not_exist(backend_factory: BackendFactory) -> None:
    # Given a table whose root was split into L and R
    stores = _stores(backend_factory)
    store = _table_store(stores)
    store.initialise()
    tree = PartitionsBuilder(LONG_KEY_SCHEMA).split("root", "L", "R", 0)
    store.add_transaction(
        SplitPartitionTransaction(parent=tree.get("root"), new_children=(tree.get("L"), tree.get("R")))
    )
    on_root = _file("on-root")
    store.add_files([on_root])
    # When files are added on a partition that does not exist, and a reference is split onto one
    with pytest.raises(PartitionNotFoundError, match="gone"):
        store.add_files([_file("lost", "gone")])
    with pytest.raises(PartitionNotFoundError, match="gone"):
        store.commit(
            SplitFileReferencesTransaction(
                requests=(
                    SplitFileReferenceRequest(
                        old_reference=on_root, new_references=(on_root.split_to("L"), on_root.split_to("gone"))
                    ),
                )
            )
        )
    # Then neither was committed; references on existing partitions, leaves or not, still are
    store.add_files([_file("on-L", "L")])
    assert sorted(_summary(stores.new())) == sorted([on_root.filename, _file("on-L", "L").filename])


def should_refuse_an_ingest_whose_partitions_a_reinitialisation_replaced_before_it_appended(
    backend_factory: BackendFactory,
) -> None:
    # Given a table with one file, and a writer that has read the table and is about to append its ADD_FILES
    stores = _stores(backend_factory)
    admin = _table_store(stores)
    admin.initialise()
    admin.add_files([_file("old")])
    racing = _ActBeforeNextAppend(stores.backend)
    writer = _table_store(stores, racing)
    writer.refresh()
    new_tree = PartitionsBuilder(LONG_KEY_SCHEMA, root_id="new-root").split("new-root", "L", "R", 0)
    # When the table is reinitialised with new partitions just before the writer's append
    racing.actions.append(lambda: admin.reinitialise(new_tree.partitions()))
    with pytest.raises(PartitionNotFoundError, match="root"):
        writer.add_files([_file("late")])
    # Then the writer was refused: the table is empty, on the new partitions, with no reference to an old one
    fresh = stores.new()
    assert _summary(fresh) == {}
    assert sorted(p.id for p in fresh.partitions()) == ["L", "R", "new-root"]


def should_refuse_appends_to_a_deleted_table(backend_factory: BackendFactory) -> None:
    # Given a table with a file, and a writer about to append while the table is deleted
    stores = _stores(backend_factory)
    store = stores.new(snapshots=False)
    store.initialise()
    store.add_files([reference("a")])
    racing = _ActBeforeNextAppend(stores.backend)
    writer = StateStore(schema=LONG_KEY_SCHEMA, table_id=TABLE, backend=racing, sleep=stores.sleeps)
    writer.refresh()
    racing.actions.append(lambda: stores.backend.delete_table(TABLE))
    # When the writer appends, and later another writer starts afresh
    with pytest.raises(TableDeletedError):
        writer.add_files([reference("late")])
    with pytest.raises(TableDeletedError):
        stores.new(snapshots=False).add_files([reference("later")])
    with pytest.raises(TableDeletedError):
        stores.backend.transaction_log(TABLE, LogType.PARTITIONS).add_transaction(
            TransactionLogEntry(
                transaction_number=1,
                update_time=stores.clock.now,
                transaction_type=TransactionType.INITIALISE_PARTITIONS,
                body='{"partitions": []}',
            )
        )
    # Then nothing was retried, the deleted table's logs stay empty, and the backend says it was deleted
    assert stores.sleeps.waits == []
    assert stores.backend.is_deleted(TABLE)
    assert not stores.backend.is_deleted("9f8e7d6c")
    for log_type in LogType:
        assert list(stores.backend.transaction_log(TABLE, log_type).read_transactions_after(0)) == []
