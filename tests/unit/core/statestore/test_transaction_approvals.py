"""Approval tests: our transaction JSON equals Sleeper's (tests/approvals/transactions/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sleeper.core.schema import Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ClearFilesTransaction,
    DeleteFilesTransaction,
    DeleteRowsTransaction,
    OverwriteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
    SplitFileReferenceRequest,
    SplitFileReferencesTransaction,
    UpsertFilesTransaction,
)
from sleeper.core.statestore.transactions.partitions import (
    ExtendPartitionTreeTransaction,
    InitialisePartitionsTransaction,
    SplitPartitionTransaction,
)
from sleeper.core.statestore.transactions.serde import Transaction, TransactionSerDe
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, STRING_KEY_SCHEMA, TIME, PartitionsBuilder

APPROVALS = Path(__file__).resolve().parents[3] / "approvals" / "transactions"
PORT_ONLY = APPROVALS.parent / "port-only"
PREFIX = "s3a://sleeper-instanceid-table-data-test-account/933cd595/data"


def _path(partition_id: str, name: str) -> str:
    return f"{PREFIX}/partition_{partition_id}/{name}.parquet"


def _ref(partition_id: str, name: str, rows: int, *, on: str | None = None) -> FileReference:
    # The update time is set, as in Sleeper's test, to check it does not show up in the JSON.
    return FileReference(
        filename=_path(partition_id, name), partition_id=on or partition_id, number_of_rows=rows, last_update_time=TIME
    )


def _add_files() -> Transaction:
    return AddFilesTransaction.of_references([_ref("root", "file1", 100), _ref("root", "file2", 200)])


def _add_split_file() -> Transaction:
    file = _ref("root", "file", 200)
    return AddFilesTransaction.of_references([file.split_to("L"), file.split_to("R")])


def _assign_job_ids() -> Transaction:
    return AssignJobIdsTransaction(
        requests=(
            AssignJobIdRequest(
                job_id="job1", partition_id="root", filenames=(_path("root", "file1"), _path("root", "file2"))
            ),
            AssignJobIdRequest(job_id="job2", partition_id="L", filenames=(_path("L", "file3"), _path("L", "file4"))),
        )
    )


def _delete_files() -> Transaction:
    return DeleteFilesTransaction(filenames=(_path("root", "file1"), _path("root", "file2")))


def _initialise_partitions() -> Transaction:
    tree = (
        PartitionsBuilder(STRING_KEY_SCHEMA)
        .split("root", "L", "R", "p")
        .split("L", "LL", "LR", "g")
        .split("R", "RL", "RR", "u")
    )
    return InitialisePartitionsTransaction(
        partitions=tuple(tree.get(i) for i in ("root", "L", "R", "LL", "LR", "RL", "RR"))
    )


def _replace_file_references(*, tracking: bool) -> Transaction:
    return ReplaceFileReferencesTransaction(
        jobs=(
            ReplaceFileReferencesRequest(
                job_id="job",
                task_id="task" if tracking else None,
                job_run_id="run" if tracking else None,
                input_files=(_path("root", "file1"), _path("root", "file2")),
                new_reference=_ref("root", "file3", 100),
            ),
        )
    )


def _split_file_references() -> Transaction:
    file1 = _ref("root", "file1", 100)
    file2 = _ref("L", "file2", 200)
    return SplitFileReferencesTransaction(
        requests=(
            SplitFileReferenceRequest(old_reference=file1, new_references=(file1.split_to("L"), file1.split_to("R"))),
            SplitFileReferenceRequest(old_reference=file2, new_references=(file2.split_to("LL"), file2.split_to("LR"))),
        )
    )


def _split_partition() -> Transaction:
    tree = PartitionsBuilder(STRING_KEY_SCHEMA).split("root", "L", "R", "p").split("L", "LL", "LR", "g")
    return SplitPartitionTransaction(parent=tree.get("L"), new_children=(tree.get("LL"), tree.get("LR")))


def _extend_partition_tree() -> Transaction:
    tree = (
        PartitionsBuilder(STRING_KEY_SCHEMA)
        .split("root", "L", "R", "p")
        .split("L", "LL", "LR", "g")
        .split("LR", "LRL", "LRR", "k")
        .split("R", "RL", "RR", "s")
    )
    return ExtendPartitionTreeTransaction(
        update_partitions=(tree.get("L"), tree.get("R")),
        new_partitions=tuple(tree.get(i) for i in ("LL", "LR", "LRL", "LRR", "RL", "RR")),
    )


CASES: dict[str, tuple[Schema, Any]] = {
    "add-files.json": (LONG_KEY_SCHEMA, _add_files),
    "add-split-file.json": (STRING_KEY_SCHEMA, _add_split_file),
    "assign-job-ids.json": (LONG_KEY_SCHEMA, _assign_job_ids),
    "clear-files.json": (LONG_KEY_SCHEMA, ClearFilesTransaction),
    "delete-files.json": (LONG_KEY_SCHEMA, _delete_files),
    "extend-partition-tree.json": (STRING_KEY_SCHEMA, _extend_partition_tree),
    "initialise-partitions.json": (STRING_KEY_SCHEMA, _initialise_partitions),
    "replace-file-references.json": (LONG_KEY_SCHEMA, lambda: _replace_file_references(tracking=False)),
    "replace-file-references-with-tracking-ids.json": (
        LONG_KEY_SCHEMA,
        lambda: _replace_file_references(tracking=True),
    ),
    "split-file-references.json": (STRING_KEY_SCHEMA, _split_file_references),
    "split-partition.json": (STRING_KEY_SCHEMA, _split_partition),
}


def _without_times(transaction: Transaction) -> Transaction:
    """The transaction as read back from JSON, where update times do not appear."""
    serde = TransactionSerDe(LONG_KEY_SCHEMA)
    if isinstance(transaction, AddFilesTransaction | ReplaceFileReferencesTransaction | SplitFileReferencesTransaction):
        return serde.from_json(transaction.TYPE, serde.to_json(transaction))
    return transaction


def should_cover_every_approved_file() -> None:
    # Given the approved files on disk
    on_disk = {p.name for p in APPROVALS.glob("*.json")}
    # Then every one has a case here
    assert on_disk == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def should_write_the_approved_json(name: str) -> None:
    # Given the transaction of Sleeper's test
    schema, build = CASES[name]
    transaction = build()
    serde = TransactionSerDe(schema)
    # When it is written
    written = serde.to_dict(transaction)
    # Then it equals the approved JSON
    assert written == json.loads((APPROVALS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(CASES))
def should_read_the_approved_json_and_round_trip(name: str) -> None:
    # Given the approved JSON and the transaction of Sleeper's test
    schema, build = CASES[name]
    transaction = build()
    serde = TransactionSerDe(schema)
    approved = (APPROVALS / name).read_text(encoding="utf-8")
    # When the JSON is read, and what we write is read back
    read = serde.from_json(transaction.TYPE, approved)
    round_trip = serde.from_json(transaction.TYPE, serde.to_json(read))
    # Then both equal the transaction (without the update times, which the JSON does not hold)
    expected = _without_times(transaction)
    assert read == expected
    assert round_trip == expected


PORT_ONLY_CASES: dict[str, Any] = {
    "delete-rows.json": lambda: DeleteRowsTransaction(filter="key < 100 and value = 'x'"),
    "overwrite-files.json": lambda: OverwriteFilesTransaction(
        add=AddFilesTransaction.of_references([_ref("root", "file1", 100)])
    ),
    "replace-file-references-applied-deletes.json": lambda: ReplaceFileReferencesTransaction(
        jobs=(
            ReplaceFileReferencesRequest(
                job_id="job",
                input_files=(_path("root", "file1"), _path("root", "file2")),
                new_reference=_ref("root", "file3", 100),
                applied_deletes=(3, 7),
            ),
        )
    ),
    "upsert-files.json": lambda: UpsertFilesTransaction(
        add=AddFilesTransaction.of_references([_ref("root", "file3", 2)]),
        filter="key in (1, 2)",
        unaffected=(_path("root", "file2"),),
    ),
}


def should_cover_every_port_only_file() -> None:
    assert {p.name for p in PORT_ONLY.glob("*.json")} == set(PORT_ONLY_CASES)


@pytest.mark.parametrize("name", sorted(PORT_ONLY_CASES))
def should_write_and_read_the_port_only_json(name: str) -> None:
    # Given a transaction only this port writes
    transaction = PORT_ONLY_CASES[name]()
    serde = TransactionSerDe(LONG_KEY_SCHEMA)
    approved = (PORT_ONLY / name).read_text(encoding="utf-8")
    # Then it is written as approved, and the approved JSON reads back as it
    assert serde.to_dict(transaction) == json.loads(approved)
    assert serde.from_json(transaction.TYPE, approved) == serde.from_json(transaction.TYPE, serde.to_json(transaction))


def should_keep_sleepers_json_for_a_compaction_that_applied_no_delete() -> None:
    # A table without deletes commits its compactions with no applied deletes: the JSON is Sleeper's approved file
    serde = TransactionSerDe(LONG_KEY_SCHEMA)
    written = serde.to_dict(_replace_file_references(tracking=False))
    assert written == json.loads((APPROVALS / "replace-file-references.json").read_text(encoding="utf-8"))
    with_deletes = json.loads((PORT_ONLY / "replace-file-references-applied-deletes.json").read_text(encoding="utf-8"))
    del with_deletes["jobs"][0]["appliedDeletes"]
    assert written == with_deletes
