"""Bulk export messages in Sleeper's JSON: the query (``BulkExportQuerySerDeTest``) and the leaf partition export
(its approved file, tests/approvals/messages/bulk-export-leaf-partition-query.json)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sleeper.bulk_export.exceptions import BulkExportQueryError
from sleeper.bulk_export.model import (
    BulkExportQuery,
    LeafPartitionExport,
    LeafPartitionExportSerDe,
    export_output_path,
    read_bulk_export_query,
)
from sleeper.core.jobs.exceptions import UnsafePathError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

APPROVED = Path(__file__).resolve().parents[2] / "approvals" / "messages" / "bulk-export-leaf-partition-query.json"
SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.INT)],
    values=[Field("value1", PrimitiveType.STRING), Field("value2", PrimitiveType.STRING)],
)
KEY = SCHEMA.field("key")
SERDE = LeafPartitionExportSerDe(lambda table_id: SCHEMA if table_id == "t-id" else None)


def _leaf() -> LeafPartitionExport:
    return LeafPartitionExport(
        table_id="t-id",
        export_id="e-id",
        sub_export_id="se-id",
        regions=(Region.of([Range(field=KEY, min=1, max=10, max_inclusive=True)]),),
        leaf_partition_id="lp-id",
        partition_region=Region.of([Range(field=KEY, min=0, max=1000)]),
        files=("/test/file.parquet",),
    )


def should_write_a_query_by_table_name_as_sleeper_does() -> None:
    query = BulkExportQuery(export_id="e1", table_name="test-table")
    assert query.to_json() == '{"exportId":"e1","tableName":"test-table"}'
    assert read_bulk_export_query(query.to_json()) == query


def should_write_a_query_by_table_id_as_sleeper_does() -> None:
    query = BulkExportQuery(export_id="e1", table_id="t1")
    assert query.to_json() == '{"exportId":"e1","tableId":"t1"}'
    assert read_bulk_export_query(query.to_json()) == query


def should_read_the_message_sleepers_python_client_sends() -> None:
    # Sleeper's python/src/sleeper/bulk_export.py: json.dumps({"exportId": ..., "tableName": ...})
    query = read_bulk_export_query(json.dumps({"exportId": "test-export", "tableName": "test-table"}))
    assert (query.export_id, query.table_name, query.table_id) == ("test-export", "test-table", None)


def should_draw_an_export_id_when_none_is_given() -> None:
    query = read_bulk_export_query('{"tableName":"t"}')
    assert len(query.export_id) == 36


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"exportId":"e1"}', "tableId or tableName field must be provided"),
        ('{"exportId":"e1","tableId":"a","tableName":"b"}', "not both"),
        ('{"exportId":"e1","tableName":"b","extra":1}', "extra"),
        ('{"exportId":"../x","tableName":"b"}', "export id"),
        ("not json", "$"),
    ],
)
def should_refuse_an_invalid_query(body: str, reason: str) -> None:
    with pytest.raises(BulkExportQueryError) as error:
        read_bulk_export_query(body)
    assert reason in str(error.value)


def should_keep_the_export_id_of_an_invalid_query_for_tracking() -> None:
    with pytest.raises(BulkExportQueryError) as error:
        read_bulk_export_query('{"exportId":"e1","tableId":"a","tableName":"b"}')
    assert error.value.export_id == "e1"


def should_write_a_leaf_partition_export_as_sleepers_approved_json() -> None:
    assert json.loads(SERDE.to_json(_leaf())) == json.loads(APPROVED.read_text())
    assert list(json.loads(SERDE.to_json(_leaf()))) == list(json.loads(APPROVED.read_text()))


def should_read_sleepers_approved_leaf_partition_export() -> None:
    assert SERDE.from_json(APPROVED.read_text()) == _leaf()


@pytest.mark.parametrize("missing", ["files", "subExportId", "leafPartitionId", "partitionRegion", "regions"])
def should_refuse_a_leaf_export_missing_a_field(missing: str) -> None:
    data = json.loads(APPROVED.read_text())
    del data[missing]
    with pytest.raises(BulkExportQueryError, match=f"{missing} field must be provided"):
        SERDE.from_json(json.dumps(data))


def should_refuse_a_leaf_export_of_an_unknown_table() -> None:
    data = json.loads(APPROVED.read_text())
    data["tableId"] = "other"
    with pytest.raises(BulkExportQueryError, match='Table could not be found with ID: "other"'):
        SERDE.from_json(json.dumps(data))


def should_refuse_a_leaf_export_whose_sub_export_id_could_leave_the_export_directory() -> None:
    data = json.loads(APPROVED.read_text())
    data["subExportId"] = "../../escape"
    with pytest.raises(BulkExportQueryError):
        SERDE.from_json(json.dumps(data))


def should_write_each_leaf_under_table_export_and_sub_export_ids() -> None:
    assert export_output_path("s3a://bucket", _leaf()) == "s3a://bucket/t-id/e-id/se-id.parquet"
    with pytest.raises(UnsafePathError):
        export_output_path("s3a://bucket", dataclasses.replace(_leaf(), table_id=".."))


def should_build_a_query_as_sleepers_python_client_does() -> None:
    # Given a query built as Sleeper's Python client builds one (its BulkExportQuery(table_name=...), no export id)
    query = BulkExportQuery(table_name="test-table")
    # Then an export id (a UUID) is drawn, and the JSON is the client's
    assert len(query.export_id) == 36
    assert json.loads(query.to_json()) == {"exportId": query.export_id, "tableName": "test-table"}


def should_take_the_export_id_by_position_or_as_none_as_sleepers_python_client_does() -> None:
    # Given queries built as Sleeper's client's users write them: the export id first, by position, or None
    by_position = BulkExportQuery("my-export", "test-table")
    with_none = BulkExportQuery(None, table_id="t-id")  # type: ignore[arg-type]  # Sleeper's signature takes None
    # Then the first keeps its id, the second draws one
    assert json.loads(by_position.to_json()) == {"exportId": "my-export", "tableName": "test-table"}
    assert len(with_none.export_id) == 36
    # And a query naming neither or both tables is a ValueError, as Sleeper's client raises
    with pytest.raises(ValueError, match="tableId or tableName"):
        BulkExportQuery("e")
    with pytest.raises(ValueError, match="not both"):
        BulkExportQuery("e", "a", "b")
