"""Time travel rebuilds a past state from partitions and files that fit together, whatever the clocks of the
processes that committed them said, and refuses (with a typed error) what it cannot read.

A split committed by a process whose clock runs ahead has a later time than files transactions that were validated
against it; a table reinitialised deletes the files of every earlier state; an ``as_of`` of the wrong type is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.api.table import Table
from sleeper.core.partition import partitions_from_split_points, split_partition
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.partitions import InitialisePartitionsTransaction, SplitPartitionTransaction
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.history import AsOfError, StateNotReadableError, table_history
from sleeper.statestore.store import StateStore

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
STORES = ["DynamoDBTransactionLogStateStore", "S3TransactionLogStateStore"]


def _batch(start: int, rows: int) -> pa.Table:
    keys = list(range(start, start + rows))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _table(tmp_path: Path, store: str) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.statestore.commit.async.enabled": "false",
            "sleeper.table.statestore.classname": store,
        },
    )
    return instance, table


def _skewed_store(instance: LocalInstance, table: Table[LocalInstance], store: str, ahead: timedelta) -> StateStore:
    """A state store of the table whose clock runs ``ahead`` of the others' (another host's)."""
    backend = instance.object_log_backend if store == "S3TransactionLogStateStore" else instance.state_store_backend
    return StateStore(
        schema=table.schema,
        table_id=table.table_id,
        backend=backend,
        clock=lambda: datetime.now(tz=UTC) + ahead,
        data_prefix=instance.data_uri(table.table_id),
    )


def _split_root(store: StateStore, schema: Schema, point: int) -> None:
    root = store.partition_tree().root
    parent, left, right = split_partition(schema, root, 0, point)
    store.add_transaction(SplitPartitionTransaction(parent=parent, new_children=(left, right)))


@pytest.mark.parametrize("store", STORES)
def should_read_every_row_as_of_head_when_the_split_was_committed_by_a_clock_ahead(tmp_path: Path, store: str) -> None:
    # Given a table given 1,000 rows on its root
    instance, table = _table(tmp_path, store)
    table.ingest(_batch(0, 1000))
    # And its root split by a process whose clock runs 5 seconds ahead
    _split_root(_skewed_store(instance, table, store, timedelta(seconds=5)), SCHEMA, 1500)
    # And 1,000 more rows ingested across both new leaves at once (their references validated against the split)
    table = instance.table("t")
    table.ingest(_batch(1000, 1000))
    table = instance.table("t")
    assert len(table.leaf_partitions()) == 2
    assert table.scan().count() == 2000
    head = table.state_store.last_transaction_numbers()[LogType.FILES]
    history = table.history()
    time_of = {
        (log, n): t
        for log, n, t in zip(
            history.column("log").to_pylist(),
            history.column("transaction_number").to_pylist(),
            history.column("time").to_pylist(),
            strict=True,
        )
    }
    split = history.column("type").to_pylist().index("SPLIT_PARTITION")
    split_time = history.column("time")[split].as_py()
    assert split_time > time_of[("files", head)]  # the split's time is after the ingest validated against it
    # When the table is scanned as of its last files transaction, by number and by that transaction's time
    # Then every row is returned, with the partitions the references were validated against
    assert table.scan(as_of=head).count() == 2000
    assert table.scan(as_of=time_of[("files", head)]).count() == 2000
    # And the state before the split still reads its 1,000 rows
    assert table.scan(as_of=head - 1).count() == 1000


@pytest.mark.parametrize("store", STORES)
def should_refuse_states_before_a_reinitialisation_naming_the_oldest_readable(tmp_path: Path, store: str) -> None:
    # Given a table given two batches, then reinitialised with a split point (its files deleted)
    instance, table = _table(tmp_path, store)
    table.ingest(_batch(0, 100))
    table.ingest(_batch(100, 100))
    admin = LocalApi(instance)
    admin.reinitialise_table("t", [50])
    table = instance.table("t")
    table.ingest(_batch(200, 10))
    table = instance.table("t")
    head = table.state_store.last_transaction_numbers()[LogType.FILES]
    history = table.history()
    files = [
        (n, t, readable)
        for log, n, t, readable in zip(
            history.column("log").to_pylist(),
            history.column("transaction_number").to_pylist(),
            history.column("type").to_pylist(),
            history.column("readable").to_pylist(),
            strict=True,
        )
        if log == "files"
    ]
    clear = next(n for n, t, _ in files if t == "CLEAR_FILES")
    # Then the history marks the states before the reinitialisation unreadable, and those from it on readable
    assert [(n, readable) for n, _, readable in files] == [(n, n >= clear) for n, _, _ in files]
    # And reading one is refused with the documented error naming the oldest readable transaction
    for number in range(1, clear):
        with pytest.raises(StateNotReadableError, match=f"oldest readable transaction is {clear} ") as e:
            table.scan(as_of=number).count()
        assert e.value.oldest_readable == clear
    # And the states from the reinitialisation on read as they were
    assert table.scan(as_of=clear).count() == 0
    assert table.scan(as_of=head).count() == 10


@pytest.mark.parametrize("value", [1.5, 2.0, b"3", [1], object()])
def should_refuse_an_as_of_of_no_accepted_type_naming_what_it_accepts(tmp_path: Path, value: object) -> None:
    # Given a table with one transaction
    _, table = _table(tmp_path, "DynamoDBTransactionLogStateStore")
    table.ingest(_batch(0, 10))
    # When it is scanned as of a value that is neither a transaction number nor a time
    # Then a typed error names what as_of accepts and what it was given
    with pytest.raises(AsOfError, match="transaction number .*time") as e:
        table.scan(as_of=value).count()  # type: ignore[arg-type]
    assert type(value).__name__ in str(e.value)


class _Clock:
    """A clock set by the test: each process's store reads it with its own offset."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def offset(self, by: timedelta) -> Callable[[], datetime]:
        return lambda: self.now + by

    def tick(self) -> None:
        self.now += timedelta(milliseconds=10)


def _store(backend: InMemoryStateStoreBackend, clock: Callable[[], datetime], *, checked: bool = True) -> StateStore:
    return StateStore(
        schema=SCHEMA, table_id="t", backend=backend, clock=clock, data_prefix="file:///data/t" if checked else None
    )


def _file(name: str, partition_id: str) -> FileReference:
    return FileReference(filename=f"file:///data/t/data/{name}", partition_id=partition_id, number_of_rows=10)


def should_pair_files_with_the_partitions_before_a_repartition_committed_by_a_clock_behind() -> None:
    # Given a table of one root given a file, then repartitioned by a process whose clock runs 5 seconds behind
    # (its INITIALISE_PARTITIONS gets a time before the file's), the files left as they were
    clock, backend = _Clock(), InMemoryStateStoreBackend()
    store = _store(backend, clock.offset(timedelta()))
    store.initialise()
    clock.tick()
    store.add_files([_file("a.parquet", "root")])
    clock.tick()
    behind = _store(backend, clock.offset(timedelta(seconds=-5)))
    behind.add_transaction(InitialisePartitionsTransaction(partitions=tuple(partitions_from_split_points(SCHEMA, [5]))))
    # When the state as of the file's transaction is rebuilt
    state = table_history(store).state_as_of(1)
    # Then its partitions are the ones holding the file's partition (the first), not the later ones by time
    assert state.partitions_number == 1
    assert [r.partition_id for r in state.file_references()] == ["root"]
    assert "root" in state.partition_tree()


def should_pair_files_with_the_split_they_were_validated_against_when_it_has_a_later_time() -> None:
    # Given a table of one root, split by a process whose clock runs 5 seconds ahead, then a file added on a new leaf
    clock, backend = _Clock(), InMemoryStateStoreBackend()
    store = _store(backend, clock.offset(timedelta()))
    store.initialise()
    clock.tick()
    _split_root(_store(backend, clock.offset(timedelta(seconds=5))), SCHEMA, 5)
    clock.tick()
    left = next(p for p in store.leaf_partitions())
    store.add_files([_file("a.parquet", left.id)])
    # When the state as of the file's transaction is rebuilt
    state = table_history(store).state_as_of(1)
    # Then its partitions are the split's, whose time is later than the file's
    assert state.partitions_number == 2
    assert left.id in state.partition_tree()


def should_refuse_a_state_whose_files_no_kept_partitions_hold() -> None:
    # Given a table whose store checks no partitions (as a log written without them), given a file on a partition
    # its partitions log never held
    clock, backend = _Clock(), InMemoryStateStoreBackend()
    store = _store(backend, clock.offset(timedelta()), checked=False)
    store.initialise()
    clock.tick()
    store.add_files([_file("a.parquet", "ghost")])
    # When the state as of it is rebuilt
    # Then it is refused, naming the partition, rather than read without the file's rows
    with pytest.raises(StateNotReadableError, match=r"as of transaction 1 cannot be read: .*\(ghost\)"):
        table_history(store).state_as_of(1)
