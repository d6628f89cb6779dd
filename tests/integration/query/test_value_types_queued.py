"""A queued query of a table with the value types beyond Sleeper's returns them with their exact Arrow types, whether
its results are Parquet files in the results location or row JSON on the results queue."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import sleeper
from sleeper.core.schema import Schema

pytestmark = pytest.mark.integration

ARROW = pa.schema(
    [
        pa.field("key", pa.int64(), nullable=False),
        pa.field("f32", pa.float32()),
        pa.field("flag", pa.bool_()),
        pa.field("at_s", pa.timestamp("s", tz="Europe/London")),
        pa.field("at_ns", pa.timestamp("ns")),
        pa.field("day", pa.date32()),
    ]
)


@pytest.mark.parametrize("results", ["s3", "sqs"])
def should_return_the_value_types_exactly_through_the_query_queue(tmp_path: Path, results: str) -> None:
    # Given a table with a seconds timestamp in a named zone (Parquet holds it as UTC milliseconds) and others
    data = pa.table(
        {
            "key": pa.array(range(6), pa.int64()),
            "f32": pa.array([0.5, None, float("nan"), float("inf"), -1.25, 3.0], pa.float32()),
            "flag": pa.array([True, False, None, True, False, True]),
            "at_s": pa.array([0, -1, None, 1_700_000_000, 2**33, -(2**33)], pa.int64()),
            "at_ns": pa.array([1, -1, None, 2**62, -(2**62), 7], pa.int64()),
            "day": pa.array([0, -1, None, 2932896, -719162, 19000], pa.int32()),
        }
    ).cast(ARROW)
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("values", Schema.from_arrow(ARROW, row_keys=["key"]), split_points=[3])
    table.ingest(data)
    # When queried through the queue
    rows = table.scan(via_queue=True, queue_results=results).to_arrow()
    # Then the rows and their types are the table's
    assert rows.schema.equals(ARROW)
    for name in ARROW.names:
        if name == "f32":
            assert str(rows.column(name).to_pylist()) == str(data.column(name).to_pylist())  # NaN as NaN
        else:
            assert rows.column(name).equals(data.column(name)), name
