"""Athena reads a table with the value types beyond Sleeper's through the connector: floats, doubles, booleans and
dates as they are, timestamps as Athena's millisecond types (TIMESTAMPMILLITZ with a zone, DATEMILLI without)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.athena import AthenaSettings, simple_connector
from sleeper.core.schema import Schema
from sleeper.runtime.local.instance import LocalInstance
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

ARROW = pa.schema(
    [
        pa.field("key", pa.int64(), nullable=False),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("at_us", pa.timestamp("us", tz="UTC")),
        pa.field("at_ns", pa.timestamp("ns")),
    ]
)


def _read(instance: LocalInstance, table: str) -> pa.Table:
    connector = simple_connector(
        instance, AthenaSettings(instance_id=str(instance.properties.get("sleeper.id")), spill_bucket="spill")
    )
    schema_name = str(instance.properties.get("sleeper.id"))
    full = fr.decode_schema(connector.handle(fr.get_table(schema_name, table))["schema"])
    layout = connector.handle(fr.get_table_layout(schema_name, table, full))
    page = connector.handle(fr.get_splits(schema_name, table, layout["partitions"]))
    batches: list[Any] = []
    for split in page["splits"]:
        response = connector.handle(fr.read_records(schema_name, table, full, split))
        batches.append(fr.decode_block(response["records"]))
    return pa.Table.from_batches(batches, schema=full).sort_by("key")


def should_read_the_value_types_as_athenas_types(tmp_path: Path) -> None:
    # Given a table with every value type, timestamps finer than milliseconds
    data = pa.table(
        {
            "key": pa.array(range(5), pa.int64()),
            "f32": pa.array([0.5, None, -1.0, 2.0, 3.5], pa.float32()),
            "f64": pa.array([1e300, -0.0, None, 1.5, 2.5], pa.float64()),
            "flag": pa.array([True, None, False, True, False]),
            "day": pa.array([0, -1, None, 19000, 2932896], pa.int32()),
            "at_us": pa.array([1_700_000_000_123_456, -1, None, 0, 999], pa.int64()),
            "at_ns": pa.array([1_700_000_000_123_456_789, -1, None, 0, 1_000_000], pa.int64()),
        }
    ).cast(ARROW)
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table("values", Schema.from_arrow(ARROW, row_keys=["key"]), split_points=[2]).ingest(data)
    # When Athena reads it through the connector
    rows = _read(instance, "values")
    # Then the Arrow types are the SDK's, and timestamps are milliseconds, truncated towards the past
    assert rows.schema.field("f32").type == pa.float32()
    assert rows.schema.field("flag").type == pa.bool_()
    assert rows.schema.field("day").type == pa.date32()
    assert rows.schema.field("at_us").type == pa.timestamp("ms", tz="UTC")
    assert rows.schema.field("at_ns").type == pa.date64()
    for name in ("f32", "f64", "flag", "day"):
        assert rows.column(name).equals(data.column(name)), name
    assert rows.column("at_us").cast(pa.int64()).to_pylist() == [1_700_000_000_123, -1, None, 0, 0]
    assert rows.column("at_ns").cast(pa.int64()).to_pylist() == [1_700_000_000_123, -1, None, 0, 1]
