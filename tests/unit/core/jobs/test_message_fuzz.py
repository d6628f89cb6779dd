"""Fuzz every message reader with random and mutated JSON (docs/reliability.md, row E): only our typed errors may
escape, and whatever is accepted writes back to JSON that reads as the same message."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.compaction import (
    CompactionJob,
    CompactionJobBatch,
    CompactionJobCommitRequest,
    CompactionJobDispatchRequest,
)
from sleeper.core.jobs.exceptions import MessageError, QueryValidationError
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.query import QuerySerDe
from sleeper.core.schema import Field, PrimitiveType, Schema

APPROVALS = Path(__file__).resolve().parents[3] / "approvals" / "messages"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.INT)])
LONG_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
QUERY_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.INT)],
    sort_keys=[Field("sort", PrimitiveType.LONG)],
    values=[Field("integer", PrimitiveType.INT)],
)
STRING_QUERY_SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)])

TRICKY = st.sampled_from(
    [
        "",
        " ",
        "..",
        "b/../k",
        "b/%2e%2e/k",
        "/etc/passwd",
        "s3a://b/k",
        "\x00",
        "\\",
        "\ud800",
        "YQ==",
        "not base64!",
        "Query",
        "LeafPartitionQuery",
        "ADD_FILES",
        "INITIALISE_PARTITIONS",
        -1,
        0,
        2**31,
        2**63,
        -(2**63) - 1,
        10**30,
        1.5,
        True,
        False,
        None,
    ]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
JSON = st.recursive(
    SCALARS | TRICKY,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


def _seed(name: str) -> Any:
    return json.loads((APPROVALS / name).read_text(encoding="utf-8"))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw: st.DrawFn, seed: Any) -> Any:
    """A valid message with one to three parts replaced, removed or added."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        value = draw(JSON | TRICKY)
        if not path:
            doc = value if action == "replace" else doc
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        if action == "replace":
            parent[key] = value
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = value
        else:
            parent.insert(key, value)
    return doc


Reader = Callable[[Any], Any]
Writer = Callable[[Any], dict[str, Any]]


def _check(data: Any, read: Reader, write: Writer, error: type[MessageError] = MessageError) -> None:
    try:
        message = read(data)
    except error:
        return
    # Accepted messages must write back to JSON that reads as the same message.
    assert read(json.loads(json.dumps(write(message)))) == message


def _check_text(text: str | bytes, read: Callable[[Any], Any], error: type[MessageError] = MessageError) -> None:
    try:
        read(text)
    except error:
        return


def _commit_read(data: Any) -> StateStoreCommitRequest:
    request = StateStoreCommitRequest.from_dict(data)
    schema = LONG_KEY if request.transaction_type.value.endswith("PARTITIONS") else INT_KEY
    request.transaction(schema, load_body=lambda _: json.dumps(data.get("transaction", {})))
    return request


QUERY_SERDE = QuerySerDe.for_schema(QUERY_SCHEMA)
STRING_QUERY_SERDE = QuerySerDe.for_schema(STRING_QUERY_SCHEMA)

READERS: dict[str, tuple[Reader, Writer, str]] = {
    "ingest": (lambda d: IngestJob.from_dict(d, id_supplier=lambda: "generated"), IngestJob.to_dict, "ingest-job.json"),
    "bulk_import": (
        lambda d: BulkImportJob.from_dict(d, id_supplier=lambda: "generated"),
        BulkImportJob.to_dict,
        "bulk-import-job.json",
    ),
    "compaction": (CompactionJob.from_dict, CompactionJob.to_dict, "compaction-job-with-iterator.json"),
    "batch": (CompactionJobBatch.from_dict, CompactionJobBatch.to_dict, "compaction-job-batch.json"),
    "dispatch": (
        CompactionJobDispatchRequest.from_dict,
        CompactionJobDispatchRequest.to_dict,
        "compaction-dispatch-request.json",
    ),
    "compaction_commit": (
        CompactionJobCommitRequest.from_dict,
        CompactionJobCommitRequest.to_dict,
        "compaction-commit-request.json",
    ),
    "state_store_commit": (
        _commit_read,
        StateStoreCommitRequest.to_dict,
        "statestore-commit-initialise-partitions.json",
    ),
    "state_store_commit_files": (_commit_read, StateStoreCommitRequest.to_dict, "statestore-commit-add-files.json"),
    "split": (
        lambda d: SplitPartitionJob.from_dict(d, INT_KEY),
        lambda j: j.to_dict(INT_KEY),
        "split-partition-job.json",
    ),
}


def _fuzz_reader(name: str) -> None:
    read, write, seed_file = READERS[name]
    seed = _seed(seed_file)

    @FUZZ
    @given(data=JSON | mutated(seed))
    def run(data: Any) -> None:
        _check(data, read, write)

    run()


def should_only_raise_typed_errors_reading_ingest_jobs() -> None:
    # Given random and mutated ingest job JSON / When / Then only MessageError escapes
    _fuzz_reader("ingest")


def should_only_raise_typed_errors_reading_bulk_import_jobs() -> None:
    # Given random and mutated bulk import job JSON / When / Then only MessageError escapes
    _fuzz_reader("bulk_import")


def should_only_raise_typed_errors_reading_compaction_jobs() -> None:
    # Given random and mutated compaction job JSON / When / Then only MessageError escapes
    _fuzz_reader("compaction")


def should_only_raise_typed_errors_reading_compaction_batches() -> None:
    # Given random and mutated batch files / When / Then only MessageError escapes
    _fuzz_reader("batch")


def should_only_raise_typed_errors_reading_dispatch_requests() -> None:
    # Given random and mutated pending batch messages / When / Then only MessageError escapes
    _fuzz_reader("dispatch")


def should_only_raise_typed_errors_reading_compaction_commits() -> None:
    # Given random and mutated compaction commit messages / When / Then only MessageError escapes
    _fuzz_reader("compaction_commit")


def should_only_raise_typed_errors_reading_state_store_commits_and_their_transactions() -> None:
    # Given random and mutated commit requests, converted to transactions / When / Then only MessageError escapes
    _fuzz_reader("state_store_commit")
    _fuzz_reader("state_store_commit_files")


def should_only_raise_typed_errors_reading_split_jobs() -> None:
    # Given random and mutated split jobs / When / Then only MessageError escapes
    _fuzz_reader("split")


@FUZZ
@given(data=JSON | mutated(_seed("query-all-fields.json")) | mutated(_seed("leaf-partition-query-all-fields.json")))
def should_only_raise_query_validation_errors_reading_queries(data: Any) -> None:
    # Given random and mutated queries / When / Then only QueryValidationError escapes
    _check(data, QUERY_SERDE.from_dict, QUERY_SERDE.to_dict, QueryValidationError)


@FUZZ
@given(data=mutated(_seed("query-python-client.json")))
def should_only_raise_query_validation_errors_reading_python_client_queries(data: Any) -> None:
    # Given mutated Python client queries with raw strings / When / Then only QueryValidationError escapes
    _check(data, STRING_QUERY_SERDE.from_dict, STRING_QUERY_SERDE.to_dict, QueryValidationError)


@FUZZ
@given(text=st.text() | st.binary() | JSON.map(json.dumps))
def should_only_raise_typed_errors_reading_any_text(text: str | bytes) -> None:
    # Given arbitrary text or bytes / When / Then each reader raises only its typed errors
    for read in (
        IngestJob.from_json,
        BulkImportJob.from_json,
        CompactionJob.from_json,
        CompactionJobBatch.from_json,
        CompactionJobDispatchRequest.from_json,
        CompactionJobCommitRequest.from_json,
        StateStoreCommitRequest.from_json,
        lambda t: SplitPartitionJob.from_json(t, INT_KEY),
    ):
        _check_text(text, read)
    _check_text(text, QUERY_SERDE.from_json, QueryValidationError)
