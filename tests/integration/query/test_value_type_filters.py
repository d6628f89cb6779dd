"""Filters on the value types beyond Sleeper's: numbers for floats and doubles, true/false for booleans, ISO 8601
strings for dates and timestamps, each selecting the rows pyarrow selects with typed values, on direct and queued
scans and bulk export."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.schema import Schema

pytestmark = pytest.mark.integration

ROWS = 500
ARROW = pa.schema(
    [
        pa.field("key", pa.int64(), nullable=False),
        pa.field("f64", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us", tz="Europe/London")),
        pa.field("wall", pa.timestamp("ms")),
    ]
)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, pa.Table]:
    data = pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "f64": pa.array([i / 7 if i % 9 else None for i in range(ROWS)], pa.float64()),
            "flag": pa.array([i % 3 == 0 if i % 10 else None for i in range(ROWS)]),
            "day": pa.array([19_000 + i if i % 11 else None for i in range(ROWS)], pa.int32()),
            "at": pa.array([1_700_000_000_000_000 + i * 3_600_000_000 for i in range(ROWS)], pa.int64()),
            "wall": pa.array([1_700_000_000_000 + i * 60_000 if i % 4 else None for i in range(ROWS)], pa.int64()),
        }
    ).cast(ARROW)
    instance = sleeper.create_instance(tmp_path_factory.mktemp("filters") / "instance")
    table = instance.create_table("values", Schema.from_arrow(ARROW, row_keys=["key"]), split_points=[250])
    table.ingest(data)
    return instance, table, data


CASES = [
    ("f64 > 10.5", pc.field("f64") > 10.5),
    ("f64 between 1 and 2", (pc.field("f64") >= 1) & (pc.field("f64") <= 2)),
    ("flag = true", pc.field("flag") == True),  # noqa: E712
    ("not (flag = true)", ~(pc.field("flag") == True)),  # noqa: E712
    ("day >= '2022-06-01'", pc.field("day") >= pa.scalar(date(2022, 6, 1))),
    ("day in ('2022-01-09', '2022-01-10')", pc.field("day").isin(pa.array([date(2022, 1, 9), date(2022, 1, 10)]))),
    (
        "at < '2023-11-20T00:00:00+01:00'",
        pc.field("at") < pa.scalar(datetime(2023, 11, 19, 23, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
    ),
    (
        "wall between '2023-11-14 23:00' and '2023-11-15T01:30:00.000'",
        (pc.field("wall") >= pa.scalar(datetime(2023, 11, 14, 23), pa.timestamp("ms")))
        & (pc.field("wall") <= pa.scalar(datetime(2023, 11, 15, 1, 30), pa.timestamp("ms"))),
    ),
]


@pytest.mark.parametrize(("text", "reference"), CASES, ids=[c[0] for c in CASES])
def should_select_the_rows_pyarrow_selects(loaded: tuple[Any, Any, pa.Table], text: str, reference: Any) -> None:
    # Given the reference rows, pyarrow's filter with typed values
    instance, table, data = loaded
    expected = data.filter(reference)
    assert 0 < expected.num_rows < ROWS
    # When the table is scanned with the filter, directly and through the query queue
    direct = table.scan(filter=text).to_arrow()
    queued = table.scan(filter=text, via_queue=True, queue_results="sqs").to_arrow()
    # Then both return exactly those rows
    assert direct.equals(expected.cast(direct.schema))
    assert queued.equals(expected.cast(queued.schema))


def should_export_the_rows_a_date_filter_selects(loaded: tuple[Any, Any, pa.Table], tmp_path: Path) -> None:
    instance, table, data = loaded
    expected = data.filter(pc.field("day") < pa.scalar(date(2022, 3, 1)))
    summary = instance.export_table("values", tmp_path / "export", filter="day < '2022-03-01'")
    exported = pa.concat_tables([pq.read_table(f, schema=ARROW) for f in summary["files"]]).sort_by("key")
    assert exported.equals(expected.cast(exported.schema))
