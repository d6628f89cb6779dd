"""Property test: streaming filters and aggregation match a row-by-row reference on random sorted input."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.core.schema import LONG_MAX, LONG_MIN, PrimitiveType
from sleeper.iterators import ProcessingConfig
from sleeper.iterators.apply import RowProcessor
from tests.unit.iterators.reference import (
    WIDE_AGGREGATIONS,
    WIDE_ARROW,
    WIDE_SCHEMA,
    reference_age_off,
    reference_aggregate,
    split_batches,
)

P = PrimitiveType
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

SCHEMA, AGGREGATIONS, ARROW = WIDE_SCHEMA, WIDE_AGGREGATIONS, WIDE_ARROW

longs = st.integers(LONG_MIN, LONG_MAX) | st.integers(-5, 5)
ints = st.integers(INT_MIN, INT_MAX) | st.integers(-5, 5)
rows = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["", "a", "b", "é"]),
        "bucket": st.sampled_from([-1, 0, 1]),
        "tag": st.sampled_from([b"", b"\x00", b"\xff"]),
        "count": longs,
        "low": ints,
        "last": st.text(max_size=3),
        "first_blob": st.binary(max_size=3),
        "counts": st.dictionaries(st.sampled_from(["x", "y", "zz"]), longs, max_size=3).map(lambda d: list(d.items())),
        "peaks": st.dictionaries(st.sampled_from([b"", b"\x01", b"\xfe"]), ints, max_size=3).map(
            lambda d: list(d.items())
        ),
    }
)


@st.composite
def sorted_batch_and_cuts(draw: st.DrawFn) -> tuple[pa.RecordBatch, list[int]]:
    drawn = draw(st.lists(rows, max_size=40))
    drawn.sort(key=lambda r: (r["id"], r["bucket"], r["tag"]))
    cuts = draw(st.lists(st.integers(0, len(drawn)), max_size=6))
    return pa.RecordBatch.from_pylist(drawn, schema=ARROW), cuts


@settings(max_examples=200, deadline=None)
@given(case=sorted_batch_and_cuts(), max_age=st.none() | st.integers(LONG_MIN, LONG_MAX), now=longs)
def should_match_row_by_row_reference(case: tuple[pa.RecordBatch, list[int]], max_age: int | None, now: int) -> None:
    # Given
    batch, cuts = case
    filters = None if max_age is None else f"ageOff(count,{max_age})"
    processor = RowProcessor(SCHEMA, ProcessingConfig.parse(filters, AGGREGATIONS, SCHEMA), now)

    # When
    out = list(processor.process(split_batches(batch, cuts)))

    # Then
    kept: list[dict[str, Any]] = batch.to_pylist()
    if max_age is not None:
        kept = reference_age_off(kept, [("count", max_age)], now)
    ops = {"count": "sum", "low": "min", "last": "max", "first_blob": "min", "counts": "map_sum", "peaks": "map_max"}
    expected = reference_aggregate(kept, SCHEMA.key_names, ops, ARROW)
    assert [row for b in out for row in b.to_pylist()] == expected
    assert all(b.schema == ARROW and b.num_rows > 0 for b in out)
