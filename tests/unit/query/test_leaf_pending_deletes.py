"""The pending row deletes a leaf read carries to wherever it runs (a leaf partition query, a leaf partition export):
written only when some hide rows of its files, so a table that never deleted rows sends exactly Sleeper's JSON, and
read back checked against the files the read names and the table's schema."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sleeper.bulk_export.exceptions import BulkExportQueryError
from sleeper.bulk_export.model import LeafPartitionExport, LeafPartitionExportSerDe
from sleeper.core.query import LeafPartitionQuery, QueryProcessingConfig, QuerySerDe, QueryValidationError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("colour", PrimitiveType.STRING)])
KEY = SCHEMA.field("key")
QUERIES = QuerySerDe({"t": SCHEMA}.get, {"t-id": SCHEMA}.get)
EXPORTS = LeafPartitionExportSerDe({"t-id": SCHEMA}.get)
HIDDEN = {"s3a://b/t-id/data/partition_root/a.parquet": ("key < 10", "colour = 'red'")}


def _leaf_query(**changes: object) -> LeafPartitionQuery:
    query = LeafPartitionQuery(
        query_id="q",
        sub_query_id="s",
        table_id="t-id",
        leaf_partition_id="root",
        partition_region=Region.of([Range.whole(KEY)]),
        regions=(Region.of([Range(field=KEY, min=0, max=100)]),),
        files=("s3a://b/t-id/data/partition_root/a.parquet", "s3a://b/t-id/data/partition_root/b.parquet"),
        processing=QueryProcessingConfig(),
    )
    return dataclasses.replace(query, **changes)  # type: ignore[arg-type]


def _leaf_export(**changes: object) -> LeafPartitionExport:
    export = LeafPartitionExport(
        table_id="t-id",
        export_id="e",
        sub_export_id="se",
        regions=(Region.of([Range(field=KEY, min=0, max=100)]),),
        leaf_partition_id="root",
        partition_region=Region.of([Range.whole(KEY)]),
        files=("s3a://b/t-id/data/partition_root/a.parquet",),
    )
    return dataclasses.replace(export, **changes)  # type: ignore[arg-type]


def should_carry_the_deletes_of_a_leaf_query_through_its_json() -> None:
    # Given a sub-query one of whose files pending deletes hide rows of
    query = _leaf_query(pending_deletes=HIDDEN)
    # When it is written and read back
    data = json.loads(QUERIES.to_json(query))
    # Then the filters travel by file and come back equal
    assert data["pendingDeletes"] == {name: list(texts) for name, texts in HIDDEN.items()}
    assert QUERIES.leaf_query_from_json(json.dumps(data)) == query


def should_write_no_deletes_field_for_a_leaf_query_of_no_deleted_file() -> None:
    # Given a sub-query whose files no delete lists
    # When it is written
    data = json.loads(QUERIES.to_json(_leaf_query()))
    # Then the message has exactly Sleeper's fields
    assert "pendingDeletes" not in data


@pytest.mark.parametrize(
    ("deletes", "message"),
    [
        ({"s3a://b/t-id/data/partition_root/other.parquet": ["key < 10"]}, "does not read"),
        ({"s3a://b/t-id/data/partition_root/a.parquet": ["size > 3"]}, "size"),
        ({"s3a://b/t-id/data/partition_root/a.parquet": []}, "non-empty list"),
        (["key < 10"], "object"),
    ],
)
def should_refuse_deletes_a_leaf_query_cannot_apply(deletes: object, message: str) -> None:
    # Given a sub-query message whose deletes name a file it does not read, a column the table lacks, or no filter
    data = json.loads(QUERIES.to_json(_leaf_query()))
    data["pendingDeletes"] = deletes
    # When it is read
    with pytest.raises(QueryValidationError, match=message) as e:
        QUERIES.leaf_query_from_json(json.dumps(data))
    # Then the error names the field
    assert "$.pendingDeletes" in str(e.value.path)


def should_carry_the_deletes_of_a_leaf_export_through_its_json() -> None:
    # Given a leaf export of a file pending deletes hide rows of
    export = _leaf_export(pending_deletes=HIDDEN)
    # When it is written and read back
    data = json.loads(EXPORTS.to_json(export))
    # Then the filters come back equal, and an export of no deleted file writes no such field
    assert EXPORTS.from_json(json.dumps(data)) == export
    assert "pendingDeletes" not in json.loads(EXPORTS.to_json(_leaf_export()))


def should_refuse_a_leaf_export_whose_deletes_name_a_file_it_does_not_read() -> None:
    data = json.loads(EXPORTS.to_json(_leaf_export()))
    data["pendingDeletes"] = {"s3a://b/t-id/data/partition_root/other.parquet": ["key < 10"]}
    with pytest.raises(BulkExportQueryError, match=r"\$\.pendingDeletes"):
        EXPORTS.from_json(json.dumps(data))
