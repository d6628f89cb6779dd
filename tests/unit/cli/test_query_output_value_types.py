"""``sleeper query --format json/ndjson`` writes the value types beyond Sleeper's as standard JSON: timestamps and
dates as ISO 8601 strings, NaN and infinities as strings (as row JSON writes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from rich.console import Console

from sleeper.cli.query_output import write

DATA = pa.table(
    {
        "key": pa.array([1, 2, 3], pa.int64()),
        "f64": pa.array([0.5, float("nan"), float("-inf")], pa.float64()),
        "flag": pa.array([True, None, False]),
        "day": pa.array([0, None, 19000], pa.int32()).cast(pa.date32()),
        "at": pa.array([1_700_000_000_123_456_789, -1, None], pa.int64()).cast(pa.timestamp("ns", tz="+01:00")),
        "wall": pa.array([0, 1_700_000_000_123, None], pa.int64()).cast(pa.timestamp("ms")),
    }
)


@pytest.mark.parametrize("output_format", ["json", "ndjson"])
def should_write_the_value_types_as_standard_json(tmp_path: Path, output_format: str) -> None:
    # When the rows are written as JSON
    path = tmp_path / f"rows.{output_format}"
    count = write(DATA.to_reader(), output_format, path, console=Console(file=None, quiet=True), limit=None)
    text = path.read_text()
    # Then every row is standard JSON with the documented encodings
    if output_format == "json":
        rows = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))["rows"]
    else:
        rows = [
            json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
            for line in text.splitlines()
        ]
    assert count == 3
    assert [r["f64"] for r in rows] == [0.5, "NaN", "-Infinity"]
    assert [r["flag"] for r in rows] == [True, None, False]
    assert [r["day"] for r in rows] == ["1970-01-01", None, "2022-01-08"]
    assert [r["at"] for r in rows] == [
        "2023-11-14T23:13:20.123456789+01:00",
        "1970-01-01T00:59:59.999999999+01:00",
        None,
    ]
    assert [r["wall"] for r in rows] == ["1970-01-01T00:00:00", "2023-11-14T22:13:20.123000", None]
