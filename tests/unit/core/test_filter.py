"""The filter language: parsing, canonical text, typed errors, row key regions and statistics tests."""

from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.filter import (
    And,
    ColumnStats,
    Compare,
    FilterError,
    InList,
    IsNull,
    Not,
    Or,
    StartsWith,
    filter_of,
    key_regions,
    may_match,
    parse_filter,
)
from sleeper.core.schema import Field, ListType, PrimitiveType, Schema
from sleeper.io.row_filter import column_positions, filter_batch, row_group_may_match, to_expression

SCHEMA = Schema(
    (Field("key", PrimitiveType.STRING),),
    (Field("n", PrimitiveType.LONG),),
    (
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
        Field("tags", ListType(PrimitiveType.STRING), True),
        Field("and", PrimitiveType.INT, True),
    ),
)

FILTERS = [
    "age > 3",
    "age >= 3 and age <= 10",
    "age = 5 or name = 'bob'",
    "age != 5",
    "age <> 5",
    "not (age > 3)",
    "age in (1, 2, 3)",
    "age not in (1, 2)",
    "age between 2 and 8",
    "age not between 2 and 8",
    "name is null",
    "name is not null",
    "name starts with 'b'",
    "name like 'b%'",
    "name like '%o%'",
    "name not like 'b_b'",
    "raw = x'00ff'",
    "raw starts with x'00'",
    "key > 'm' and (n < 0 or n >= 100)",
    '"and" = 1',
    "NAME = 'it''s'".replace("NAME", "name"),
    "age > -5",
    "NOT age > 3 AND key IN ('a', 'b')",
]


@pytest.mark.parametrize("text", FILTERS)
def should_give_canonical_text_that_parses_back_to_the_same_filter(text: str) -> None:
    parsed = parse_filter(text, SCHEMA)
    assert parse_filter(str(parsed), SCHEMA) == parsed


def should_parse_the_precedence_of_not_and_or() -> None:
    parsed = parse_filter("not age = 1 and age = 2 or age = 3", SCHEMA)
    assert parsed == Or(
        (And((Not(Compare("age", "=", 1)), Compare("age", "=", 2))), Compare("age", "=", 3)),
    )
    assert parse_filter("name LIKE 'ab%'", SCHEMA) == StartsWith("name", "ab")
    assert parse_filter("age in (3)", SCHEMA) == InList("age", (3,))
    assert parse_filter("name is not null", SCHEMA) == IsNull("name", negated=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agee > 3", "position 0: the table has no column 'agee'"),
        ("age > 'x'", "position 6: column 'age' is IntType: compare it with an integer"),
        ("name = 5", "column 'name' is StringType"),
        ("raw = 'a'", "compare it with bytes such as x'00ff'"),
        ("age >", "position 5: expected a value for 'age', found the end"),
        ("age = null", "age is null"),
        ("", "the filter is empty"),
        ("   ", "the filter is empty"),
        ("age > 3 and", "expected a column, found the end"),
        ("age > 3 age < 4", "position 8: unexpected 'age'"),
        ("(age > 3", "expected ')'"),
        ("age in ()", "expected a value"),
        ("age in (1, 2", "expected ',' or ')'"),
        ("raw = x'zz'", "is not hexadecimal bytes"),
        ("tags = 'a'", "filters compare primitive columns only"),
        ("age like 'a%'", "like needs a string pattern"),
        ("and = 1", "quote a column so named"),
        ("age ~ 3", "unexpected '~'"),
        ("select * from t", "unexpected '*'"),
        ("age > 1.5", "compare it with an integer"),
        ("age not 3", "expected in, between or like after not"),
    ],
)
def should_refuse_a_bad_filter_naming_the_place(text: str, message: str) -> None:
    with pytest.raises(FilterError, match="^bad filter") as caught:
        parse_filter(text, SCHEMA)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def should_check_a_model_against_the_schema() -> None:
    assert filter_of(Compare("age", ">", 3), SCHEMA) == Compare("age", ">", 3)
    with pytest.raises(FilterError, match="no column 'nope'"):
        filter_of(Compare("nope", ">", 3), SCHEMA)
    with pytest.raises(FilterError, match="compare it with an integer"):
        filter_of(And((Compare("age", ">", "3"),)), SCHEMA)
    with pytest.raises(FilterError, match="unknown comparison"):
        filter_of(Compare("age", "~", 3), SCHEMA)
    with pytest.raises(FilterError, match="must be text"):
        filter_of(42, SCHEMA)  # type: ignore[arg-type]


def _ranges(text: str) -> list[tuple[object, object]] | None:
    regions = key_regions(parse_filter(text, SCHEMA), SCHEMA)
    if regions is None:
        return None
    out = []
    for region in regions:
        r = region.range("key")
        out.append((r.canonical_min, r.canonical_max) if r is not None else ("", None))
    return out


def should_narrow_row_keys_to_the_regions_a_filter_allows() -> None:
    assert _ranges("key = 'b'") == [("b", "b\x00")]
    assert _ranges("key >= 'b' and key < 'd'") == [("b", "d")]
    assert _ranges("key > 'b'") == [("b\x00", None)]
    assert _ranges("key in ('c', 'a')") == [("a", "a\x00"), ("c", "c\x00")]
    assert _ranges("key between 'a' and 'c' or key = 'x'") == [("a", "c\x00"), ("x", "x\x00")]
    assert _ranges("key starts with 'ab'") == [("ab", "ac")]
    assert _ranges("key > 'c' and key < 'b'") == []
    assert _ranges("key < ''") == []
    assert _ranges("key = 'a' and age > 3") == [("a", "a\x00")]
    # What says nothing of the row key, or says it through not/or with another column, does not narrow
    assert _ranges("age > 3") is None
    assert _ranges("key = 'a' or age > 3") is None
    assert _ranges("not key = 'a'") is None
    assert _ranges("key != 'a'") is None
    assert _ranges("n = 5") is None  # a sort key is not a row key


_VALUES = [None, 1, 2, 3, 5, 8]
_NAMES = [None, "a", "ab", "b", "bob", "c"]


def _stats(column: list[object]) -> ColumnStats:
    present = [v for v in column if v is not None]
    return ColumnStats(
        min=min(present) if present else None,  # type: ignore[type-var]
        max=max(present) if present else None,  # type: ignore[type-var]
        null_count=len(column) - len(present),
        rows=len(column),
    )


@pytest.mark.parametrize("text", [f for f in FILTERS if "raw" not in f and "key" not in f and 'and"' not in f])
def should_never_rule_out_statistics_of_rows_that_match(text: str) -> None:
    # Every small group of rows is tested: if any of its rows matches, its statistics must say it may match
    node = parse_filter(text, SCHEMA)
    expression = to_expression(node)
    rng = random.Random(text)
    for _ in range(300):
        size = rng.randint(1, 4)
        ages = [rng.choice(_VALUES) for _ in range(size)]
        names = [rng.choice(_NAMES) for _ in range(size)]
        batch = pa.record_batch(
            {
                "key": ["k"] * size,
                "n": [0] * size,
                "age": pa.array(ages, pa.int32()),
                "name": pa.array(names, pa.string()),
                "and": pa.array([1] * size, pa.int32()),
            }
        )
        matches = filter_batch(batch, expression).num_rows
        stats = {"age": _stats(ages), "name": _stats(names), "key": _stats(["k"] * size)}
        if matches:
            assert may_match(node, stats), (text, ages, names)


def should_rule_out_row_groups_by_their_statistics(tmp_path: pytest.TempPathFactory) -> None:
    # Given a file of 10 row groups whose ages rise from group to group
    path = f"{tmp_path}/f.parquet"
    ages = list(range(1000))
    pq.write_table(
        pa.table({"key": [f"k{i:04d}" for i in ages], "age": pa.array(ages, pa.int32())}), path, row_group_size=100
    )
    metadata = pq.ParquetFile(path).metadata
    positions = column_positions(metadata)

    def kept(text: str, columns: tuple[str, ...] = ("key", "age")) -> list[int]:
        node = parse_filter(text, SCHEMA)
        return [g for g in range(metadata.num_row_groups) if row_group_may_match(metadata, g, node, columns, positions)]

    assert kept("age >= 950") == [9]
    assert kept("age between 150 and 250") == [1, 2]
    assert kept("age in (5, 555)") == [0, 5]
    assert kept("not (age < 900)") == [9]
    assert kept("age is null") == []
    assert kept("key starts with 'k03'") == [3]
    assert kept("age < 0 or key = 'k0999'") == [9]
    # A column whose statistics may not be used rules nothing out
    assert kept("age >= 950", columns=("key",)) == list(range(10))


def should_apply_sql_null_semantics() -> None:
    batch = pa.record_batch({"age": pa.array([1, None, 5], pa.int32()), "name": ["a", None, "b"]})

    def rows(text: str) -> list[object]:
        return filter_batch(batch, to_expression(parse_filter(text, SCHEMA))).column("age").to_pylist()

    assert rows("age > 2") == [5]
    assert rows("not (age > 2)") == [1]
    assert rows("age not in (5)") == [1]
    assert rows("age in (5) or age is null") == [None, 5]
    assert rows("name not like 'a%'") == [5]
    assert rows("not (age > 2 or name = 'zz')") == [1]


def should_compose_many_key_predicates_without_blowing_up() -> None:
    letters = [f"'{a}{b}'" for a, b in itertools.product("abcdefghij", repeat=2)]
    text = " and ".join(f"key in ({', '.join(letters)})" for _ in range(3))
    assert key_regions(parse_filter(text, SCHEMA), SCHEMA) is None  # too many regions: planned whole, still filtered
