"""Ids that become part of a path or key are checked against the one safe id rule when a message is read (query and
sub-query ids name result files, job ids name output files and key tracker records, partition ids name data
directories), so a message cannot make a worker write outside its place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sleeper.core.jobs.compaction import CompactionJob, CompactionJobCommitRequest
from sleeper.core.jobs.exceptions import QueryValidationError, UnsafeIdError
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.partition import Partition
from sleeper.core.paths import SAFE_ID_RULE
from sleeper.core.query import LeafPartitionQuery, Query, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema

APPROVALS = Path(__file__).resolve().parents[3] / "approvals" / "messages"
SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.INT)], values=[Field("integer", PrimitiveType.INT)])
SERDE = QuerySerDe.for_schema(SCHEMA)
UNSAFE = ["/../../escaped", "../query-other", "a/b", "..", "q 1", "x" * 129]


def _approved(name: str, **changes: Any) -> str:
    data = json.loads((APPROVALS / name).read_text(encoding="utf-8"))
    return json.dumps({**data, **changes})


@pytest.mark.parametrize("query_id", UNSAFE)
def should_reject_a_query_whose_id_could_escape_the_results_location(query_id: str) -> None:
    # Given a query as the Python client sends it, with an unsafe id
    text = _approved("query-python-client.json", queryId=query_id)
    serde = QuerySerDe.for_schema(Schema.of(row_keys=[Field("key", PrimitiveType.STRING)]))
    # When
    with pytest.raises(QueryValidationError) as e:
        serde.from_json(text)
    # Then the error names the field and the rule, and keeps the id so the failure can be tracked
    assert e.value.path == "$.queryId"
    assert SAFE_ID_RULE in e.value.reason
    assert isinstance(e.value.__cause__, UnsafeIdError)
    assert e.value.query_id == query_id


@pytest.mark.parametrize(("field", "value"), [("queryId", "../query-other"), ("subQueryId", "../../s")])
def should_reject_a_leaf_query_whose_ids_could_escape_the_results_location(field: str, value: str) -> None:
    # Given
    text = _approved("leaf-partition-query-all-fields.json", **{field: value})
    # When
    with pytest.raises(QueryValidationError) as e:
        SERDE.from_json(text)
    # Then
    assert e.value.path == f"$.{field}"
    assert isinstance(e.value.__cause__, UnsafeIdError)


def should_read_the_python_clients_uuid_query_id() -> None:
    # Given the client's message with its UUID query id
    text = _approved("query-python-client.json", queryId="0f6b4c1e-3b0a-4d59-9a57-8d5d0c7f3e21")
    serde = QuerySerDe.for_schema(Schema.of(row_keys=[Field("key", PrimitiveType.STRING)]))
    # When
    query = serde.from_json(text)
    # Then
    assert query.query_id == "0f6b4c1e-3b0a-4d59-9a57-8d5d0c7f3e21"


def should_refuse_to_build_queries_with_unsafe_ids() -> None:
    # When / Then
    with pytest.raises(UnsafeIdError):
        Query(query_id="../x", table_name="t", regions=(Region.whole(SCHEMA),))
    with pytest.raises(UnsafeIdError):
        LeafPartitionQuery(
            query_id="q",
            sub_query_id="../s",
            table_id="t",
            leaf_partition_id="root",
            partition_region=Region.whole(SCHEMA),
            regions=(),
            files=(),
        )


@pytest.mark.parametrize("job_id", UNSAFE + ["a|b"])
def should_reject_an_ingest_job_with_an_unsafe_id_tracking_it_under_a_new_id(job_id: str) -> None:
    # Given
    text = _approved("ingest-job.json", id=job_id)
    # When
    with pytest.raises(UnsafeIdError) as e:
        IngestJob.from_json(text, id_supplier=lambda: "new-id")
    # Then the rejection names the rule, and is tracked under a new id (the unsafe id never keys a tracker record)
    # with the message that shows the id sent
    assert e.value.path == "$.id"
    assert SAFE_ID_RULE in e.value.reason
    assert (e.value.job_id, e.value.json_message) == ("new-id", text)


def should_refuse_to_build_an_ingest_job_with_an_unsafe_id() -> None:
    # When / Then
    with pytest.raises(UnsafeIdError):
        IngestJob(id="../x", files=("b/k",), table_name="t")


def should_reject_a_compaction_job_whose_id_could_name_a_file_elsewhere() -> None:
    # Given
    text = _approved("compaction-job-no-iterator.json", jobId="../../job")
    # When
    with pytest.raises(UnsafeIdError) as e:
        CompactionJob.from_json(text)
    # Then
    assert e.value.path == "$.jobId"


def should_reject_a_compaction_commit_request_with_an_unsafe_job_id() -> None:
    # Given
    data = json.loads((APPROVALS / "compaction-commit-request.json").read_text(encoding="utf-8"))
    data["request"]["jobId"] = "job|1"
    # When
    with pytest.raises(UnsafeIdError) as e:
        CompactionJobCommitRequest.from_json(json.dumps(data))
    # Then
    assert e.value.path == "$.request.jobId"


def should_reject_a_partition_whose_id_could_name_a_directory_elsewhere() -> None:
    # Given
    data = {"partitionId": "../../../x", "isLeafPartition": True, "childPartitionIds": [], "region": {}}
    # When
    with pytest.raises(UnsafeIdError) as e:
        Partition.from_dict(SCHEMA, data, path="$.partitions[0]")
    # Then
    assert e.value.path == "$.partitions[0].partitionId"
