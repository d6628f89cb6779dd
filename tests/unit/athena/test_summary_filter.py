"""Athena's constraint summaries as a filter: each value set of a shape the connector fully understands becomes a
filter selecting exactly the rows ``row_mask`` keeps; any other shape is left to ``row_mask`` (never narrowed)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from sleeper.athena.predicates import parse_summary, row_mask, summary_filter
from sleeper.core.filter import parse_filter
from sleeper.core.schema import Field, ListType, PrimitiveType, Schema
from sleeper.io.row_filter import to_expression
from tests.unit.athena import federation_requests as fr

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
        Field("tags", ListType(PrimitiveType.STRING)),
    ],
)
I32, I64, STR, BIN = pa.int32(), pa.int64(), pa.string(), pa.binary()


def _batch() -> pa.RecordBatch:
    n = 40
    return pa.record_batch(
        {
            "key": pa.array(range(n), I64),
            "age": pa.array([None if i % 7 == 0 else i % 10 for i in range(n)], I32),
            "name": pa.array([None if i % 5 == 0 else f"n{i % 4}" for i in range(n)], STR),
            "raw": pa.array([None if i % 6 == 0 else bytes([i % 3]) for i in range(n)], BIN),
        }
    )


# (column, value set, the filter text expected, or None if the value set converts to no filter)
CONVERTED: list[tuple[str, dict[str, Any], str | None]] = [
    ("age", fr.all_or_none(I32, all_values=True, null_allowed=True), None),
    ("age", fr.all_or_none(I32, all_values=True, null_allowed=False), "age is not null"),
    ("age", fr.all_or_none(I32, all_values=False, null_allowed=True), "age is null"),
    ("age", fr.all_or_none(I32, all_values=False, null_allowed=False), "age is null and age is not null"),
    ("age", fr.equatable([3, 4, 3], I32), "age in (3, 4)"),
    ("age", fr.equatable([3], I32, null_allowed=True), "age in (3) or age is null"),
    ("age", fr.equatable([3, 4], I32, white_list=False), "age not in (3, 4)"),
    ("age", fr.equatable([3], I32, white_list=False, null_allowed=True), "age not in (3) or age is null"),
    ("age", fr.equatable([], I32), "age is null and age is not null"),
    ("age", fr.equatable([], I32, white_list=False), "age is not null"),
    ("age", fr.sorted_ranges([(2, "EXACTLY", 5, "EXACTLY")], I32), "age between 2 and 5"),
    ("age", fr.sorted_ranges([(2, "ABOVE", 5, "BELOW")], I32), "age > 2 and age < 5"),
    ("age", fr.sorted_ranges([(None, "ABOVE", 5, "EXACTLY")], I32), "age <= 5"),
    ("age", fr.sorted_ranges([(None, "ABOVE", None, "BELOW")], I32), "age is not null"),
    (
        "age",
        fr.sorted_ranges([(1, "EXACTLY", 1, "EXACTLY"), (4, "EXACTLY", 6, "BELOW"), (8, "EXACTLY", 8, "EXACTLY")], I32),
        "age in (1, 8) or (age >= 4 and age < 6)",
    ),
    ("age", fr.sorted_ranges([(7, "ABOVE", None, "BELOW")], I32, null_allowed=True), "age > 7 or age is null"),
    ("age", fr.sorted_ranges([], I32), "age is null and age is not null"),
    ("name", fr.sorted_ranges([("n1", "EXACTLY", "n2", "EXACTLY")], STR), "name between 'n1' and 'n2'"),
    ("name", fr.equatable(["n0", "n3"], STR, white_list=False), "name not in ('n0', 'n3')"),
    ("raw", fr.equatable([b"\x01"], BIN, null_allowed=True), "raw in (x'01') or raw is null"),
    ("key", fr.sorted_ranges([(10, "EXACTLY", 20, "BELOW")], I64), "key >= 10 and key < 20"),
]


@pytest.mark.parametrize(("column", "value_set", "expected"), CONVERTED, ids=[str(c[2]) for c in CONVERTED])
def should_convert_the_shapes_it_understands_exactly(
    column: str, value_set: dict[str, Any], expected: str | None
) -> None:
    summary = parse_summary({column: value_set})
    # When the value set is converted
    node, covered = summary_filter(SCHEMA, summary)
    # Then it is covered, by the filter expected
    assert covered == {column}
    assert node == (None if expected is None else parse_filter(expected, SCHEMA))
    # And the filter keeps exactly the rows row_mask keeps
    batch = _batch()
    mask = row_mask(batch, summary)
    by_mask = batch if mask is None else batch.filter(mask)
    by_filter = batch if node is None else batch.filter(to_expression(node))
    assert by_filter.column("key").to_pylist() == by_mask.column("key").to_pylist()


@pytest.mark.parametrize(
    ("column", "value_set"),
    [
        ("age", fr.sorted_ranges([(2, "BELOW", 5, "EXACTLY")], I32)),  # a low end just below a value
        ("age", fr.sorted_ranges([(2, "EXACTLY", 5, "ABOVE")], I32)),  # a high end just above a value
        ("age", fr.sorted_ranges([(None, "EXACTLY", 5, "EXACTLY")], I32)),  # an unbounded end said EXACTLY
        ("age", fr.equatable([2**40], I64)),  # a value beyond IntType
        ("age", fr.sorted_ranges([("a", "EXACTLY", None, "BELOW")], STR)),  # a value of another type
        ("age", fr.equatable([1, None], I32)),  # a null among the listed values
        ("name", {"@type": "SomethingElse"}),
        ("tags", fr.equatable(["a"], STR)),  # a list column
        ("nope", fr.equatable([1], I32)),  # a column the table lacks
    ],
)
def should_leave_other_shapes_to_the_row_mask(column: str, value_set: dict[str, Any]) -> None:
    node, covered = summary_filter(SCHEMA, parse_summary({column: value_set}))
    assert node is None and covered == frozenset()


def should_join_the_columns_it_converts_with_and() -> None:
    summary = parse_summary(
        {
            "age": fr.sorted_ranges([(2, "EXACTLY", None, "BELOW")], I32),
            "name": fr.equatable(["n1"], STR),
            "raw": fr.sorted_ranges([(b"\x00", "BELOW", None, "BELOW")], BIN),
        }
    )
    node, covered = summary_filter(SCHEMA, summary)
    assert covered == {"age", "name"}
    assert node == parse_filter("age >= 2 and name in ('n1')", SCHEMA)
