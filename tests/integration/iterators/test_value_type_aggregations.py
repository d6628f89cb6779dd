"""Aggregations of the value types beyond Sleeper's on a local table: sum, min and max of floats and doubles, min and
max of timestamps, dates and booleans, checked against pyarrow's group_by over the ingested rows, before and after a
compaction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import sleeper
from sleeper.core.schema import Schema

pytestmark = pytest.mark.integration

AGGREGATIONS = "sum(f64),min(f32),max(at),min(day),max(flag),sum(f32b)"


def _batch(seed: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": pa.array([f"k{i:03d}" for i in rng.integers(0, 150, rows)]),
            "f64": pa.array(rng.normal(size=rows), pa.float64()),
            "f32": pa.array(rng.normal(size=rows).astype(np.float32), pa.float32()),
            "f32b": pa.array(rng.integers(0, 8, rows).astype(np.float32), pa.float32()),
            "at": pa.array(rng.integers(0, 2**50, rows), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "day": pa.array(rng.integers(-1000, 30000, rows).astype(np.int32), pa.int32()).cast(pa.date32()),
            "flag": pa.array(rng.integers(0, 2, rows).astype(bool)),
        }
    )


def _expected(data: pa.Table) -> pa.Table:
    grouped = data.group_by("key", use_threads=False).aggregate(
        [("f64", "sum"), ("f32", "min"), ("at", "max"), ("day", "min"), ("flag", "max"), ("f32b", "sum")]
    )
    names = {"f64_sum": "f64", "f32_min": "f32", "at_max": "at", "day_min": "day", "flag_max": "flag"}
    grouped = grouped.rename_columns([names.get(n, "f32b" if n == "f32b_sum" else n) for n in grouped.column_names])
    return grouped.select(data.column_names).sort_by("key")


def should_aggregate_floats_timestamps_dates_and_booleans_as_pyarrow_does(tmp_path: Path) -> None:
    # Given a table aggregating every new value type, and rows with repeated keys ingested in three parts
    parts = [_batch(seed, 400) for seed in (1, 2, 3)]
    data = pa.concat_tables(parts)
    schema = Schema.from_arrow(
        pa.schema([pa.field(f.name, f.type, nullable=False) for f in data.schema]), row_keys=["key"]
    )
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table(
        "agg", schema, split_points=["k075"], properties={"sleeper.table.aggregations": AGGREGATIONS}
    )
    for part in parts:
        table.ingest(part)
    expected = _expected(data)
    target = expected.schema
    # When scanned before and after compacting everything
    before = table.scan().to_arrow().cast(target)
    instance.compact_now("agg", compact_all=True)
    after = table.scan().to_arrow().cast(target)
    # Then each equals pyarrow's aggregation of the ingested rows (sums of doubles to rounding)
    for scanned in (before, after):
        assert scanned.num_rows == expected.num_rows
        for name in ("key", "f32", "at", "day", "flag", "f32b"):
            assert scanned.column(name).equals(expected.column(name)), name
        np.testing.assert_allclose(scanned.column("f64").to_numpy(), expected.column("f64").to_numpy(), rtol=1e-12)
