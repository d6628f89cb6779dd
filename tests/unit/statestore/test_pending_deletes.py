"""Pending row deletes in the files state: DELETE_ROWS, the compaction commit rule, GC, snapshots and time travel;
and OVERWRITE_FILES."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from sleeper.core.exceptions import SerDeError
from sleeper.core.statestore.deletes import PendingDelete, filters_by_file
from sleeper.core.statestore.exceptions import (
    FileAlreadyExistsError,
    InvalidTransactionError,
    PendingDeleteNotAppliedError,
)
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    DeleteFilesTransaction,
    DeleteRowsTransaction,
    OverwriteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.core.statestore.transactions.serde import TransactionSerDe
from sleeper.statestore.history import table_history
from sleeper.statestore.snapshots import METADATA_PENDING_DELETES, read_files_snapshot, write_files_snapshot
from sleeper.statestore.upkeep import create_snapshot
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, reference
from tests.unit.statestore.fakes import new_table

NOW = datetime(2025, 1, 2, tzinfo=UTC)


def _compact(job: str, inputs: list[str], output: str, applied: tuple[int, ...] = ()) -> list[object]:
    return [
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id=job, partition_id="root", filenames=tuple(inputs)),)
        ),
        ReplaceFileReferencesTransaction(
            jobs=(
                ReplaceFileReferencesRequest(
                    job_id=job,
                    input_files=tuple(inputs),
                    new_reference=reference(output),
                    applied_deletes=applied,
                ),
            )
        ),
    ]


def should_record_a_delete_over_the_files_referenced_when_it_is_committed() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    number = store.delete_rows("key < 5")
    store.add_files([reference("c")])
    assert store.pending_deletes() == (PendingDelete(number=number, filter="key < 5", files=frozenset({"a", "b"})),)
    assert filters_by_file(store.pending_deletes(), ["a", "c"]) == {"a": ("key < 5",)}


def should_record_nothing_for_a_delete_on_a_table_without_files() -> None:
    store = new_table().store()
    store.initialise()
    store.delete_rows("key < 5")
    assert store.pending_deletes() == ()


def should_refuse_a_delete_without_a_filter() -> None:
    store = new_table().store()
    store.initialise()
    with pytest.raises(InvalidTransactionError, match="needs a filter"):
        store.delete_rows(" ")


def should_keep_a_delete_for_a_file_until_it_leaves_the_state() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    number = store.delete_rows("key < 5")
    for t in _compact("j1", ["a", "b"], "ab", applied=(number,)):
        store.add_transaction(t)  # type: ignore[arg-type]
    # The inputs have no references but are still tracked: a query planned before the commit may read them.
    assert store.pending_deletes()[0].files == {"a", "b"}
    store.add_transaction(DeleteFilesTransaction(filenames=("a",)))
    assert store.pending_deletes()[0].files == {"b"}
    store.add_transaction(DeleteFilesTransaction(filenames=("b",)))
    assert store.pending_deletes() == ()


def should_let_an_output_join_a_delete_its_job_did_not_apply_when_every_input_is_listed() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    # The job was created before the delete, so it did not apply it
    store.add_transaction(_compact("j1", ["a", "b"], "ab")[0])  # type: ignore[arg-type]
    number = store.delete_rows("key < 5")
    store.add_transaction(_compact("j1", ["a", "b"], "ab")[1])  # type: ignore[arg-type]
    assert store.pending_deletes()[0].number == number
    assert "ab" in store.pending_deletes()[0].files


def should_not_let_an_output_join_a_delete_its_job_applied() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    number = store.delete_rows("key < 5")
    for t in _compact("j1", ["a", "b"], "ab", applied=(number,)):
        store.add_transaction(t)  # type: ignore[arg-type]
    assert "ab" not in store.pending_deletes()[0].files


def should_refuse_a_commit_whose_inputs_a_delete_it_did_not_apply_lists_only_in_part() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a")])
    store.delete_rows("key < 5")
    store.add_files([reference("b")])
    assign, replace = _compact("j1", ["a", "b"], "ab")
    store.add_transaction(assign)  # type: ignore[arg-type]
    with pytest.raises(PendingDeleteNotAppliedError, match="did not apply it"):
        store.add_transaction(replace)  # type: ignore[arg-type]
    # Applying it from the log (an asynchronous commit) skips the job, as Sleeper skips jobs that no longer fit
    state = store.files_state()
    replace.apply(state, NOW)  # type: ignore[attr-defined]
    assert "ab" not in state and state.reference("a", "root") is not None


def should_drop_every_pending_delete_when_the_files_are_cleared() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a")])
    store.delete_rows("key < 5")
    store.clear_files()
    assert store.pending_deletes() == ()


def should_write_delete_rows_as_a_port_only_transaction() -> None:
    serde = TransactionSerDe(LONG_KEY_SCHEMA)
    delete = DeleteRowsTransaction(filter="key < 5")
    assert serde.to_json(delete) == '{"filter":"key < 5"}'
    assert serde.from_json("DELETE_ROWS", '{"filter":"key < 5"}') == delete
    with pytest.raises(SerDeError, match="filter"):
        serde.from_json("DELETE_ROWS", "{}")


def should_write_applied_deletes_only_when_a_job_applied_some() -> None:
    plain = ReplaceFileReferencesRequest(job_id="j", input_files=("a",), new_reference=reference("b"))
    applied = ReplaceFileReferencesRequest(
        job_id="j", input_files=("a",), new_reference=reference("b"), applied_deletes=(3, 7)
    )
    assert "appliedDeletes" not in plain.to_dict()
    assert applied.to_dict()["appliedDeletes"] == [3, 7]
    assert ReplaceFileReferencesRequest.from_dict(applied.to_dict()) == applied
    with pytest.raises(SerDeError, match="appliedDeletes"):
        ReplaceFileReferencesRequest.from_dict({**plain.to_dict(), "appliedDeletes": ["x"]})


def _snapshot_metadata(state: FilesState) -> dict[bytes, bytes]:
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, state, transaction_number=9)
    return pa.ipc.open_stream(sink.getvalue()).schema.metadata


def should_write_pending_deletes_in_a_snapshot_only_when_there_are_some() -> None:
    plain = FilesState.of([])
    assert METADATA_PENDING_DELETES not in _snapshot_metadata(plain)
    delete = PendingDelete(number=4, filter="key < 5", files=frozenset({"b", "a"}))
    deleting = FilesState.of([], pending_deletes=[delete])
    metadata = _snapshot_metadata(deleting)
    assert json.loads(metadata[METADATA_PENDING_DELETES]) == [{"number": 4, "filter": "key < 5", "files": ["a", "b"]}]
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, deleting, transaction_number=9)
    assert read_files_snapshot(sink.getvalue()).state.pending_deletes == (delete,)


def should_load_pending_deletes_from_a_snapshot_with_the_log_tail() -> None:
    table = new_table()
    store = table.store()
    store.initialise()
    store.add_files([reference("a")])
    store.delete_rows("key < 5")
    create_snapshot(store)
    store.add_files([reference("b")])
    store.delete_rows("key > 9")
    loaded = table.store()
    assert loaded.pending_deletes() == store.pending_deletes()
    assert [d.files for d in loaded.pending_deletes()] == [{"a"}, {"a", "b"}]


def should_see_deleted_rows_in_a_past_state_before_the_delete_only() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a")])
    number = store.delete_rows("key < 5")
    history = table_history(store)
    assert history.state_as_of(number - 1).pending_deletes() == ()
    assert [d.number for d in history.state_as_of(number).pending_deletes()] == [number]


def _overwrite(*names: str) -> OverwriteFilesTransaction:
    return OverwriteFilesTransaction(add=AddFilesTransaction.of_references([reference(n) for n in names]))


def should_overwrite_every_reference_with_the_new_files_in_one_transaction() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    number = store.add_transaction(_overwrite("c"))
    # Every old file lost its references but stays tracked (for the garbage collector and time travel before)
    assert [r.filename for r in store.file_references()] == ["c"]
    assert {f.filename for f in store.files() if not f.references} == {"a", "b"}
    assert sorted(r.filename for r in table_history(store).state_as_of(number - 1).file_references()) == ["a", "b"]
    # Applied again (a redelivery), it adds nothing; a compaction of the old files is refused
    state = store.files_state()
    _overwrite("c").apply(state, NOW)
    assert state == store.files_state()
    with pytest.raises(FileAlreadyExistsError):
        store.add_transaction(_overwrite("c"))


def should_skip_a_compaction_of_overwritten_files() -> None:
    store = new_table().store()
    store.initialise()
    store.add_files([reference("a"), reference("b")])
    assign, replace = _compact("j1", ["a", "b"], "ab")
    store.add_transaction(assign)  # type: ignore[arg-type]
    store.add_transaction(_overwrite("c"))
    state = store.files_state()
    replace.apply(state, NOW)  # type: ignore[attr-defined]
    assert "ab" not in state and [r.filename for r in state.references()] == ["c"]
