"""Ingest jobs and Spark bulk import of Parquet files into a table with the value types beyond Sleeper's: the files'
timestamps are read as the table's (Parquet gives seconds as milliseconds and every zone as UTC), and the rows come
back exactly."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Schema

pytestmark = pytest.mark.integration

ARROW = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("f64", pa.float64()),
        pa.field("f32", pa.float32()),
        pa.field("flag", pa.bool_()),
        pa.field("at_us", pa.timestamp("us", tz="UTC")),
        pa.field("at_ms", pa.timestamp("ms")),
        pa.field("at_s", pa.timestamp("s", tz="Europe/London")),
        pa.field("day", pa.date32()),
    ]
)
ROWS = 200


def _data() -> pa.Table:
    return pa.table(
        {
            "key": pa.array([f"k{i:03d}" for i in range(ROWS)]),
            "f64": pa.array([i * 0.5 if i % 3 else None for i in range(ROWS)], pa.float64()),
            "f32": pa.array([i * 0.25 if i % 4 else None for i in range(ROWS)], pa.float32()),
            "flag": pa.array([bool(i % 2) if i % 5 else None for i in range(ROWS)]),
            "at_us": pa.array([1_700_000_000_123_456 + i if i % 6 else None for i in range(ROWS)], pa.int64()),
            "at_ms": pa.array([-1_700_000_000_123 + i if i % 7 else None for i in range(ROWS)], pa.int64()),
            "at_s": pa.array([1_700_000_000 - 7 * i for i in range(ROWS)], pa.int64()),
            "day": pa.array([19000 - 50 * i if i % 8 else None for i in range(ROWS)], pa.int32()),
        }
    ).cast(ARROW)


def _input(tmp_path: Path) -> str:
    path = tmp_path / "input.parquet"
    pq.write_table(_data(), path, store_schema=False)  # as engines other than pyarrow write it
    return str(path)


def should_ingest_a_file_of_the_value_types_as_a_job(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("values", Schema.from_arrow(ARROW, row_keys=["key"]), split_points=["k100"])
    instance.ingest_files("values", [_input(tmp_path)])
    assert table.scan().to_arrow().equals(_data())


@pytest.mark.slow
def should_bulk_import_a_file_of_the_value_types_with_spark(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table(
        "values",
        Schema.from_arrow(ARROW, row_keys=["key"]),
        split_points=["k100"],
        properties={"sleeper.table.bulk.import.min.leaf.partitions": "2"},
    )
    report = instance.bulk_import_files("values", [_input(tmp_path)])
    assert report.rows_written == ROWS
    assert table.scan().to_arrow().equals(_data())


@pytest.mark.slow
def should_refuse_to_bulk_import_nanosecond_timestamps_naming_the_field(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    arrow = pa.schema([pa.field("key", pa.int64(), nullable=False), pa.field("at", pa.timestamp("ns"))])
    path = tmp_path / "input.parquet"
    pq.write_table(pa.table({"key": [1, 2], "at": [1, 2]}).cast(arrow), path)
    instance = sleeper.create_instance(tmp_path / "instance")
    instance.create_table("nanos", Schema.from_arrow(arrow, row_keys=["key"]))
    with pytest.raises(SleeperError, match="Spark reads no Parquet timestamps of unit ns, and field"):
        instance.bulk_import_files("nanos", [str(path)])
