"""A filter evaluated over batches by compute kernels (RowPredicate) selects exactly the rows, and gives exactly the
true/false/null mask, that its pyarrow compute expression gives, on every column type, with nulls."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from sleeper.core.filter import parse_filter
from sleeper.core.schema import Field, PrimitiveType, Schema, TimestampType, ValueType
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.row_filter import RowPredicate, filter_batch, row_predicate, to_expression

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("n", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
        Field("f64", ValueType.DOUBLE, True),
        Field("flag", ValueType.BOOLEAN, True),
        Field("day", ValueType.DATE, True),
        Field("at_us", TimestampType("us", "UTC"), True),
        Field("at_ms", TimestampType("ms"), True),
    ],
)

FILTERS = [
    "age > 3",
    "age = 5",
    "age != 5",
    "age <= 2 or age >= 8",
    "age >= 3 and age < 7",
    "not (age > 3)",
    "not (age > 3 and name = 'bob')",
    "age in (1, 2, 3)",
    "age not in (1, 2)",
    "age between 2 and 8",
    "age not between 2 and 8",
    "age is null",
    "age is not null",
    "name = 'bob'",
    "name > 'b'",
    "name in ('a', 'bob')",
    "name starts with 'b'",
    "name like 'b%'",
    "name like '%o%'",
    "name not like 'b_b'",
    "raw = x'00ff'",
    "raw starts with x'00'",
    "raw in (x'00ff', x'01')",
    "key > 'm' and (n < 0 or n >= 100)",
    "f64 > 1",
    "f64 between -1.5 and 2",
    "flag = true",
    "flag != false or age is null",
    "day in ('2024-05-31', '2024-02-29')",
    "day > '2024-03-01'",
    "at_us >= '2024-05-31 12:30:00.25+01:00'",
    "at_us not between '2024-01-01' and '2024-06-01'",
    "at_ms < '2024-05-31T12:30'",
    "at_ms in ('2024-05-31T12:30', '2024-01-01T00:00')",
    "not (age in (1, 2) or name is null) and day is not null",
]

_DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=d) for d in (0, 59, 60, 151, 200)]
_TIMES = [
    dt.datetime(2024, 5, 31, 11, 30, 0, 250000),
    dt.datetime(2024, 1, 1),
    dt.datetime(2024, 5, 31, 12, 30),
    dt.datetime(2024, 7, 1),
]


def _batch(rows: int, seed: int) -> pa.RecordBatch:
    rng = random.Random(seed)

    def maybe(values: Sequence[object]) -> object:
        return None if rng.random() < 0.2 else rng.choice(values)

    return pa.RecordBatch.from_pylist(
        [
            {
                "key": rng.choice(["a", "m", "n", "z"]),
                "n": rng.choice([-5, 0, 99, 100, 1000]),
                "age": maybe(list(range(10))),
                "name": maybe(["a", "ab", "b", "bob", "bab", "c"]),
                "raw": maybe([b"\x00\xff", b"\x00", b"\x01", b""]),
                "f64": maybe([-2.0, -1.5, 0.5, 1.0, 2.0, 3.5, float("nan")]),
                "flag": maybe([True, False]),
                "day": maybe(_DAYS),
                "at_us": maybe([t.replace(tzinfo=dt.UTC) for t in _TIMES]),
                "at_ms": maybe(_TIMES),
            }
            for _ in range(rows)
        ],
        schema=arrow_schema(SCHEMA),
    )


def _rows(data: pa.RecordBatch | pa.Table) -> tuple[pa.Schema, list[dict[str, object]]]:
    """The schema and the rows, with NaN written as text (NaN equals nothing, itself included)."""
    rows = [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in data.to_pylist()]
    return data.schema, rows


def _expression_mask(batch: pa.RecordBatch, text: str) -> list[object]:
    """The mask as the expression gives it (true, false or null per row), through a dataset projection."""
    expression = to_expression(parse_filter(text, SCHEMA), SCHEMA)
    mask: list[object] = ds.dataset(pa.Table.from_batches([batch])).to_table(columns={"m": expression})["m"].to_pylist()
    return mask


@pytest.mark.parametrize("text", FILTERS)
def should_select_the_rows_and_give_the_mask_its_expression_gives(text: str) -> None:
    # Given a batch of every column type, with nulls, and a filter
    batch = _batch(400, seed=len(text))
    node = parse_filter(text, SCHEMA)
    predicate = row_predicate(node, SCHEMA)
    # When it is evaluated by kernels
    kept = predicate.filter(batch)
    # Then the rows are those the expression keeps, in order, and the mask is the same, nulls included
    assert _rows(kept) == _rows(batch.filter(to_expression(node, SCHEMA)))
    mask = predicate.mask(batch)
    assert mask.to_pylist() == _expression_mask(batch, text)
    assert 0 < kept.num_rows < batch.num_rows  # the filter tells rows apart
    # And filter_batch takes either form alike, and a table filters as its batches do
    assert _rows(filter_batch(batch, predicate)) == _rows(kept)
    table = pa.Table.from_batches([batch.slice(0, 150), batch.slice(150)])
    assert _rows(predicate.filter(table)) == _rows(pa.Table.from_batches([kept]))


def should_keep_an_empty_batch_and_give_the_expression_it_was_made_from() -> None:
    node = parse_filter("age > 3", SCHEMA)
    predicate = RowPredicate(node, SCHEMA)
    empty = _batch(1, seed=1).slice(0, 0)
    assert predicate.filter(empty) is empty
    assert predicate.expression.equals(to_expression(node, SCHEMA))
