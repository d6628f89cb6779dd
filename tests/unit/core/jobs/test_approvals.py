"""Approval tests: our JSON equals Sleeper's for every message type (tests/approvals/messages/README.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sleeper.bulk_export.model import LeafPartitionExportSerDe
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.compaction import (
    CompactionJob,
    CompactionJobBatch,
    CompactionJobCommitRequest,
    CompactionJobDispatchRequest,
)
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.query import Query, QuerySerDe
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.partitions import InitialisePartitionsTransaction

APPROVALS = Path(__file__).resolve().parents[3] / "approvals" / "messages"

LONG_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
INT_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.INT)])
STRING_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)])
# Sleeper's QuerySerDeTest requests a value field "integer"; our reader checks requested fields exist.
QUERY_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.INT)],
    sort_keys=[Field("sort", PrimitiveType.LONG)],
    values=[Field("integer", PrimitiveType.INT), Field("value1", PrimitiveType.LONG)],
)
QUERY_SERDE = QuerySerDe.for_schema(QUERY_SCHEMA)
BULK_EXPORT_SERDE = LeafPartitionExportSerDe(lambda _: INT_KEY)

Codec = tuple[Callable[[str], Any], Callable[[Any], dict[str, Any]]]

CODECS: dict[str, Codec] = {
    "ingest-job.json": (IngestJob.from_json, IngestJob.to_dict),
    "ingest-job-by-table-id.json": (IngestJob.from_json, IngestJob.to_dict),
    "ingest-job-python-client.json": (IngestJob.from_json, IngestJob.to_dict),
    "bulk-import-job.json": (BulkImportJob.from_json, BulkImportJob.to_dict),
    "bulk-import-job-python-client.json": (BulkImportJob.from_json, BulkImportJob.to_dict),
    "compaction-job-no-iterator.json": (CompactionJob.from_json, CompactionJob.to_dict),
    "compaction-job-with-iterator.json": (CompactionJob.from_json, CompactionJob.to_dict),
    "compaction-job-batch.json": (CompactionJobBatch.from_json, CompactionJobBatch.to_dict),
    "compaction-dispatch-request.json": (CompactionJobDispatchRequest.from_json, CompactionJobDispatchRequest.to_dict),
    "compaction-commit-request.json": (CompactionJobCommitRequest.from_json, CompactionJobCommitRequest.to_dict),
    "statestore-commit-add-files.json": (StateStoreCommitRequest.from_json, StateStoreCommitRequest.to_dict),
    "statestore-commit-initialise-partitions.json": (
        StateStoreCommitRequest.from_json,
        StateStoreCommitRequest.to_dict,
    ),
    "statestore-commit-replace-files-in-s3.json": (StateStoreCommitRequest.from_json, StateStoreCommitRequest.to_dict),
    "statestore-commit-initialise-partitions-in-s3.json": (
        StateStoreCommitRequest.from_json,
        StateStoreCommitRequest.to_dict,
    ),
    "split-partition-job.json": (
        lambda text: SplitPartitionJob.from_json(text, INT_KEY),
        lambda job: job.to_dict(INT_KEY),
    ),
    "split-partition-job-root-with-nulls.json": (
        lambda text: SplitPartitionJob.from_json(text, STRING_KEY),
        lambda job: job.to_dict(STRING_KEY),
    ),
    "query-all-fields.json": (QUERY_SERDE.from_json, QUERY_SERDE.to_dict),
    "leaf-partition-query-all-fields.json": (QUERY_SERDE.from_json, QUERY_SERDE.to_dict),
    # Sleeper's BulkExportLeafPartitionQuerySerDeTest: key int, values value1 and value2 strings
    "bulk-export-leaf-partition-query.json": (BULK_EXPORT_SERDE.from_json, BULK_EXPORT_SERDE.to_dict),
}
READ_ONLY = {"query-python-client.json"}


def _approved(name: str) -> str:
    return (APPROVALS / name).read_text(encoding="utf-8")


def should_have_a_codec_for_every_approved_file() -> None:
    # When
    files = {p.name for p in APPROVALS.glob("*.json")}
    # Then
    assert files == set(CODECS) | READ_ONLY


@pytest.mark.parametrize("name", sorted(CODECS))
def should_write_the_approved_json(name: str) -> None:
    # Given
    read, write = CODECS[name]
    text = _approved(name)
    # When
    message = read(text)
    # Then
    assert write(message) == json.loads(text)


@pytest.mark.parametrize("name", sorted(CODECS))
def should_round_trip_the_approved_message(name: str) -> None:
    # Given
    read, write = CODECS[name]
    message = read(_approved(name))
    # When
    again = read(json.dumps(write(message)))
    # Then
    assert again == message


def should_read_state_store_transactions_held_in_approved_requests() -> None:
    # Given
    add_files = StateStoreCommitRequest.from_json(_approved("statestore-commit-add-files.json"))
    partitions = StateStoreCommitRequest.from_json(_approved("statestore-commit-initialise-partitions.json"))
    # When
    files_tx = add_files.transaction()
    partitions_tx = partitions.transaction(LONG_KEY)
    # Then
    assert isinstance(files_tx, AddFilesTransaction)
    assert [r.number_of_rows for r in files_tx.references] == [100, 200]
    assert isinstance(partitions_tx, InitialisePartitionsTransaction)
    assert [p.id for p in partitions_tx.partitions] == ["root", "L", "R"]
    assert StateStoreCommitRequest.of_transaction("933cd595", partitions_tx, schema=LONG_KEY) == partitions


def should_read_the_python_client_query() -> None:
    # Given
    schema = STRING_KEY
    key = schema.row_key_fields[0]
    # When
    query = QuerySerDe.for_schema(schema).from_json(_approved("query-python-client.json"))
    # Then
    assert query == Query(
        query_id="my-query",
        table_name="my-table",
        regions=(
            Region.of([Range(field=key, min="a", max="c", max_inclusive=True)]),
            Region.of([Range(field=key, min="x")]),
        ),
    )
