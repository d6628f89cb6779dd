from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleeper.core.exceptions import SchemaError
from sleeper.io.sort import (
    KeyOrderer,
    NotSortedError,
    check_key_columns,
    check_sorted,
    is_sorted,
    key_at,
    sort_batch,
    sort_indices,
    sort_table,
)

KEY_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
}


def _reference_order(rows: list[tuple[Any, ...]]) -> list[int]:
    """Python's stable sort compares str by code point (= UTF-8 bytes) and bytes as unsigned bytes."""
    return sorted(range(len(rows)), key=lambda i: rows[i])


def _rows(table: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    columns = [table.column(name).to_pylist() for name in names]
    return list(zip(*columns, strict=True))


def should_sort_strings_by_their_utf8_bytes() -> None:
    # Given strings where UTF-16 order, or comparing as signed bytes, would disagree with UTF-8 byte order
    values = ["z", "é", "\uffff", "😀", "", "a", "\u00ff", "\x7f", "ab", "a\x00", "ﬀ", "Z", "😀a", "\U0010ffff"]
    table = pa.table({"key": pa.array(values, pa.string())})
    # When sorted
    result = sort_table(table, ["key"]).column("key").to_pylist()
    # Then the order is that of the UTF-8 encodings
    assert result == sorted(values, key=lambda v: v.encode())


def should_sort_byte_arrays_as_unsigned_bytes() -> None:
    # Given byte arrays with bytes on both sides of 0x80, prefixes of each other and trailing zero bytes
    values = [
        b"\x80",
        b"\x7f",
        b"\xff",
        b"",
        b"\x00",
        b"\x00\x00",
        b"\xff\x00",
        b"\x7f\xff",
        b"\x81\x01",
        b"abcdefghij",
    ]
    table = pa.table({"key": pa.array(values, pa.binary())})
    # When sorted
    result = sort_table(table, ["key"]).column("key").to_pylist()
    # Then 0x80 and above sort after 0x7f, and a prefix sorts before its extensions
    assert result == sorted(values)
    assert result.index(b"\x7f\xff") < result.index(b"\x80")


@pytest.mark.parametrize("kind", ["int32", "int64"])
def should_sort_integers_across_their_whole_range(kind: str) -> None:
    # Given integers including the type's extremes and values of both signs
    bits = 32 if kind == "int32" else 64
    rng = random.Random(7)
    values = [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0, -1, 1] + [
        rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1)) for _ in range(200)
    ]
    table = pa.table({"key": pa.array(values, KEY_TYPES[kind])})
    # When sorted
    result = sort_table(table, ["key"]).column("key").to_pylist()
    # Then the order is numeric
    assert result == sorted(values)


def should_order_by_row_keys_then_sort_keys() -> None:
    # Given rows whose first key ties often, so later keys decide
    rng = random.Random(3)
    rows = [
        (rng.choice(["b", "a", "c"]), rng.randrange(-3, 3), rng.choice([b"\x90", b"\x10", b""])) for _ in range(300)
    ]
    table = pa.table(
        {
            "value": list(range(len(rows))),
            "row_key": [r[0] for r in rows],
            "sort_key1": pa.array([r[1] for r in rows], pa.int32()),
            "sort_key2": pa.array([r[2] for r in rows], pa.binary()),
        }
    )
    keys = ["row_key", "sort_key1", "sort_key2"]
    # When sorted by the row key then the sort keys
    order = sort_indices(table, keys).to_pylist()
    # Then the order is lexicographic over the keys, and stable
    assert order == _reference_order(rows)


def should_keep_rows_with_equal_keys_in_their_order() -> None:
    # Given many rows with equal keys, tagged with their position
    rng = random.Random(11)
    keys = [rng.choice(["same", "other"]) for _ in range(1000)]
    table = pa.table({"key": keys, "position": list(range(len(keys)))})
    # When sorted
    result = sort_table(table, ["key"])
    # Then within each key the positions still increase
    for key in ("other", "same"):
        positions = [p for k, p in zip(*_columns(result, "key", "position"), strict=True) if k == key]
        assert positions == sorted(positions)


def _columns(table: pa.Table, *names: str) -> list[list[Any]]:
    return [table.column(name).to_pylist() for name in names]


def should_sort_strings_that_agree_on_long_prefixes() -> None:
    # Given strings that share 20 bytes and then differ, or differ only after 8 more bytes, or only by trailing zeros
    rng = random.Random(5)
    stem = "common-prefix-of-20b"
    values = [stem + "".join(rng.choice("ab\x00é") for _ in range(rng.randrange(0, 14))) for _ in range(500)]
    values += [stem, stem + "\x00", stem + "\x00\x00", stem + "abcdefgh", stem + "abcdefgh\x00", stem + "abcdefghi"]
    rng.shuffle(values)
    table = pa.table({"key": values})
    # When sorted
    order = sort_indices(table, ["key"]).to_pylist()
    # Then it is the byte order, stable among equal strings
    assert order == _reference_order([(v,) for v in values])


def should_sort_chunked_and_sliced_data() -> None:
    # Given a table of several chunks, some of them slices that start inside their buffers
    rng = random.Random(9)
    words = ["".join(rng.choice("xyzé") for _ in range(rng.randrange(0, 12))) for _ in range(400)]
    whole = pa.array(words, pa.large_string())
    chunks = [whole.slice(0, 100), whole.slice(100, 1), whole.slice(101, 0), whole.slice(101, 299)]
    table = pa.table({"key": pa.chunked_array(chunks), "number": pa.chunked_array([pa.array(range(400))])})
    # When sorted
    order = sort_indices(table, ["key"]).to_pylist()
    # Then the order is right across chunks
    assert order == _reference_order([(w,) for w in words])


def should_sort_a_record_batch() -> None:
    # Given a record batch
    batch = pa.record_batch({"key": pa.array([3, 1, 2], pa.int64()), "value": ["c", "a", "b"]})
    # When sorted
    result = sort_batch(batch, ["key"])
    # Then it is a sorted record batch
    assert isinstance(result, pa.RecordBatch)
    assert result.column("value").to_pylist() == ["a", "b", "c"]


@pytest.mark.parametrize("rows", [0, 1])
def should_sort_tiny_tables(rows: int) -> None:
    # Given an empty or one-row table
    table = pa.table({"key": pa.array(["a"][:rows], pa.string())})
    # When sorted
    # Then it is unchanged
    assert sort_table(table, ["key"]).equals(table)
    assert sort_indices(table, ["key"]).to_pylist() == list(range(rows))


def should_reject_missing_or_repeated_key_columns() -> None:
    # Given a schema
    schema = pa.schema([("key", pa.string()), ("value", pa.int64())])
    # When checked against missing, repeated or no keys
    # Then each is an error naming the problem
    with pytest.raises(SchemaError, match="missing"):
        check_key_columns(schema, ["nope"])
    with pytest.raises(SchemaError, match="repeat"):
        check_key_columns(schema, ["key", "key"])
    with pytest.raises(SchemaError, match="at least one"):
        check_key_columns(schema, [])
    with pytest.raises(SchemaError, match="missing"):
        sort_indices(pa.table({"key": [1]}), ["other"])


def should_tell_sorted_from_unsorted_data() -> None:
    # Given sorted data with ties on the first key, and copies with one pair of rows swapped
    table = pa.table({"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 1]})
    swapped_second_key = pa.table({"a": ["x", "x", "y", "y"], "b": [2, 1, 1, 1]})
    swapped_first_key = pa.table({"a": ["y", "x", "x", "y"], "b": [1, 1, 2, 1]})
    # When checked
    # Then only the sorted one passes, and the second key matters only where the first ties
    assert is_sorted(table, ["a", "b"])
    assert is_sorted(swapped_second_key, ["a"])
    assert not is_sorted(swapped_second_key, ["a", "b"])
    assert not is_sorted(swapped_first_key, ["a", "b"])
    assert is_sorted(pa.table({"a": pa.array([], pa.string())}), ["a"])


def should_tell_unsigned_byte_order_in_is_sorted() -> None:
    # Given byte arrays in unsigned order, and the same in signed order
    unsigned = pa.record_batch({"k": pa.array([b"\x01", b"\x7f", b"\x80", b"\xff"], pa.binary())})
    signed = pa.record_batch({"k": pa.array([b"\x80", b"\xff", b"\x01", b"\x7f"], pa.binary())})
    # When checked
    # Then only the unsigned order is sorted
    assert is_sorted(unsigned, ["k"])
    assert not is_sorted(signed, ["k"])


def should_read_the_key_of_a_row() -> None:
    # Given a batch with two key columns
    batch = pa.record_batch({"a": ["p", "q"], "b": pa.array([b"\x01", b"\x02"]), "v": [1, 2]})
    # When the key of the last row is read
    key = key_at(batch, ["a", "b"], -1)
    # Then it holds the values of the key columns
    assert key == ("q", b"\x02")


def should_stay_right_when_switching_to_pyarrow_after_heavy_ties() -> None:
    # Given an orderer fed first with keys that mostly tie beyond their first 8 bytes, then with distinct keys
    orderer = KeyOrderer()
    rng = random.Random(1)
    tied = ["same-prefix" + str(rng.randrange(3)) for _ in range(200)]
    distinct = [str(rng.random()) for _ in range(200)]
    # When the orderer orders each of them in turn
    results = [orderer.order([pa.array(values)]).tolist() for values in (tied, distinct, tied)]
    # Then every order is right
    expected = [_reference_order([(v,) for v in values]) for values in (tied, distinct, tied)]
    assert results == expected


@st.composite
def _tables(draw: st.DrawFn) -> tuple[pa.Table, list[str]]:
    kinds = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=3))
    rows = draw(st.integers(0, 60))
    prefix = draw(st.sampled_from(["", "long-shared-prefix-", "\x00\x00"]))
    columns: dict[str, pa.Array] = {}
    for index, kind in enumerate(kinds):
        values: list[Any]
        if kind.startswith("int"):
            bits = 32 if kind == "int32" else 64
            small = draw(st.booleans())
            low, high = (-3, 3) if small else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
            values = draw(st.lists(st.integers(low, high), min_size=rows, max_size=rows))
        elif "string" in kind:
            text = st.text(alphabet=st.sampled_from(["a", "b", "\x00", "é", "😀", "\uffff"]), max_size=11)
            values = [prefix + v for v in draw(st.lists(text, min_size=rows, max_size=rows))]
        else:
            raw = st.binary(max_size=11).map(lambda b: b.replace(b"\x01", b"\x80"))
            values = [prefix.encode() + v for v in draw(st.lists(raw, min_size=rows, max_size=rows))]
        columns[f"k{index}"] = pa.array(values, KEY_TYPES[kind])
    columns["v"] = pa.array(range(rows), pa.int64())
    return pa.table(columns), [f"k{i}" for i in range(len(kinds))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables())
def should_sort_like_pythons_stable_sort_of_the_keys(case: tuple[pa.Table, list[str]]) -> None:
    # Given any table with one to three key columns of Sleeper's key types
    table, keys = case
    # When its sort order is computed
    order = sort_indices(table, keys).to_pylist()
    # Then it is the stable order of the key tuples, and the sorted table passes is_sorted
    assert order == _reference_order(_rows(table, keys))
    assert is_sorted(table.take(pa.array(order, pa.int64())), keys)


def should_name_the_first_rows_out_of_order() -> None:
    # Given data sorted except for one pair of rows
    batch = pa.record_batch({"a": ["x", "y", "y", "b"], "b": pa.array([1, 5, 6, 0], pa.int64())})
    # When checked
    # Then the error names the pair
    with pytest.raises(NotSortedError, match=r"file 7 is not sorted by \['a', 'b'\]: row 2 has key \('y', 6\)"):
        check_sorted(batch, ["a", "b"], what="file 7")
    check_sorted(batch.slice(0, 3), ["a", "b"])


def should_sort_short_strings_exactly_with_a_following_key() -> None:
    # Given short strings (some differing only by trailing zero bytes, some empty) and a second key that often decides
    rng = random.Random(2)
    shorts = ["", "a", "a\x00", "a\x00\x00", "ab", "é", "b\x00", "b", "zzzzzzz"]
    rows = [(rng.choice(shorts), rng.randrange(-(2**40), 2**40)) for _ in range(400)]
    table = pa.table({"country": [r[0] for r in rows], "time": pa.array([r[1] for r in rows], pa.int64())})
    # When sorted by both
    order = sort_indices(table, ["country", "time"]).to_pylist()
    # Then the order is lexicographic, a string before its extensions by zero bytes
    assert order == _reference_order(rows)
