"""UPSERT_FILES (beyond Sleeper): new files added with a pending delete, numbered by the transaction, of the filter
over every file referenced before them; skipped when redelivered; its JSON is ADD_FILES's with the filter."""

from __future__ import annotations

import json

import pytest

from sleeper.core.statestore.deletes import PendingDelete
from sleeper.core.statestore.exceptions import FileAlreadyExistsError, InvalidTransactionError
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    UpsertFilesTransaction,
)
from sleeper.core.statestore.transactions.log import TransactionType
from sleeper.core.statestore.transactions.serde import TransactionSerDe
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, TIME, reference


def _upsert(name: str, keys: str = "key in (1, 2)") -> UpsertFilesTransaction:
    return UpsertFilesTransaction(add=AddFilesTransaction.of_references([reference(name, "root", 2)]), filter=keys)


def _state() -> FilesState:
    state = FilesState()
    AddFilesTransaction.of_references([reference("a"), reference("c")]).apply(state, TIME)
    return state


def should_hide_the_keys_in_every_referenced_file_and_add_the_new_one() -> None:
    state = _state()
    transaction = _upsert("new")

    transaction.validate(state)
    transaction.apply_numbered(state, TIME, 7)

    assert state.pending_deletes == (PendingDelete(number=7, filter="key in (1, 2)", files=frozenset({"a", "c"})),)
    new = state.file("new")
    assert new is not None and set(new.references) == {"root"}


def should_skip_a_redelivery_and_refuse_a_tracked_file_or_no_filter() -> None:
    state = _state()
    _upsert("new").apply_numbered(state, TIME, 7)

    _upsert("new").apply_numbered(state, TIME, 8)

    assert [d.number for d in state.pending_deletes] == [7]
    with pytest.raises(FileAlreadyExistsError, match="new"):
        _upsert("new").validate(state)
    with pytest.raises(InvalidTransactionError, match="filter"):
        _upsert("other", keys=" ").validate(state)


def should_write_add_files_json_with_the_filter_and_read_it_back() -> None:
    serde = TransactionSerDe(LONG_KEY_SCHEMA)
    transaction = _upsert("s3a://bucket/t/data/partition_root/new.parquet")

    written = json.loads(serde.to_json(transaction))

    assert written == {**serde.to_dict(transaction.add), "filter": "key in (1, 2)"}
    assert serde.from_json(TransactionType.UPSERT_FILES, serde.to_json(transaction)) == transaction


def should_leave_the_unaffected_files_out_of_the_delete_and_write_them_only_when_some() -> None:
    state = _state()
    transaction = UpsertFilesTransaction(
        add=AddFilesTransaction.of_references([reference("new", "root", 2)]), filter="key = 1", unaffected=("c",)
    )
    serde = TransactionSerDe(LONG_KEY_SCHEMA)

    transaction.apply_numbered(state, TIME, 9)

    assert state.pending_deletes == (PendingDelete(number=9, filter="key = 1", files=frozenset({"a"})),)
    assert json.loads(serde.to_json(transaction))["unaffectedFiles"] == ["c"]
    assert "unaffectedFiles" not in json.loads(serde.to_json(_upsert("x")))
    assert serde.from_json(TransactionType.UPSERT_FILES, serde.to_json(transaction)) == transaction
