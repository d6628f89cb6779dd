"""Tagging rows with their leaf partition (vectorised tree walk) and mapping leaves onto Spark partitions."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.bulk_import.leaves import LeafTagger, murmur3_hash_int, spark_partition_keys
from sleeper.core.partition import Partition, PartitionTree, partitions_from_split_points, split_partition
from sleeper.core.schema import Field, PrimitiveType, Schema

STRING_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("v", PrimitiveType.LONG)])
INT_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.INT)])
TWO_KEYS = Schema.of(row_keys=[Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.BYTE_ARRAY)])

_strings = st.text(alphabet="abcxyz\x00é\u00ff\U0001f600", max_size=4)
_ints = st.integers(min_value=-(2**31), max_value=2**31 - 1)


def _expected(tree: PartitionTree, tagger: LeafTagger, rows: list[dict[str, object]], names: list[str]) -> list[int]:
    index = {p.id: i for i, p in enumerate(tagger.leaves)}
    return [index[tree.leaf_for_key([row[n] for n in names]).id] for row in rows]


@settings(max_examples=80, deadline=None)
@given(
    split_points=st.lists(_strings.filter(bool), unique=True, max_size=9).map(sorted),
    keys=st.lists(_strings, max_size=80),
)
def should_tag_unsorted_string_keys_with_their_leaf(split_points: list[str], keys: list[str]) -> None:
    # Given
    tree = PartitionTree(STRING_KEY, partitions_from_split_points(STRING_KEY, split_points))
    batch = pa.record_batch({"key": pa.array(keys, type=pa.string()), "v": pa.array(range(len(keys)), pa.int64())})
    tagger = LeafTagger(STRING_KEY, tree)

    # When
    tags = tagger.tag(batch)

    # Then
    assert tags.tolist() == _expected(tree, tagger, batch.to_pylist(), ["key"])


@settings(max_examples=60, deadline=None)
@given(
    split_points=st.lists(_ints.filter(lambda x: x > -(2**31)), unique=True, max_size=20).map(sorted),
    keys=st.lists(_ints, max_size=80),
)
def should_tag_int_keys_with_their_leaf(split_points: list[int], keys: list[int]) -> None:
    # Given
    tree = PartitionTree(INT_KEY, partitions_from_split_points(INT_KEY, split_points))
    table = pa.table({"key": pa.array(keys, type=pa.int32())})
    tagger = LeafTagger(INT_KEY, tree)

    # When
    tags = tagger.tag(table)

    # Then
    assert tags.tolist() == _expected(tree, tagger, table.to_pylist(), ["key"])


def _split_leaves(tree_parts: list[Partition], choices: list[tuple[int, int, int | bytes]]) -> list[Partition]:
    """Splits leaves of a two-key tree in turn: (which leaf, which dimension, split point), skipping invalid ones."""
    parts = {p.id: p for p in tree_parts}
    for leaf_choice, dimension, point in choices:
        leaves = PartitionTree(TWO_KEYS, parts.values()).leaves
        leaf = leaves[leaf_choice % len(leaves)]
        name = TWO_KEYS.row_key_fields[dimension].name
        r = leaf.region.range(name)
        assert r is not None
        low, high = r.canonical_min, r.canonical_max
        if not (low < point and (high is None or point < high)):  # type: ignore[operator]
            continue
        parent, left, right = split_partition(TWO_KEYS, leaf, dimension, point)
        parts.update({parent.id: parent, left.id: left, right.id: right})
    return list(parts.values())


_split_choice = st.one_of(
    st.tuples(st.integers(0, 20), st.just(0), st.integers(-50, 50)),
    st.tuples(st.integers(0, 20), st.just(1), st.binary(min_size=1, max_size=3)),
)


@settings(max_examples=60, deadline=None)
@given(
    choices=st.lists(_split_choice, max_size=12),
    rows=st.lists(st.tuples(st.integers(-60, 60), st.binary(max_size=3)), max_size=80),
)
def should_tag_rows_in_a_tree_split_on_several_dimensions(
    choices: list[tuple[int, int, int | bytes]], rows: list[tuple[int, bytes]]
) -> None:
    # Given
    tree = PartitionTree(TWO_KEYS, _split_leaves(partitions_from_split_points(TWO_KEYS, []), choices))
    batch = pa.record_batch(
        {"a": pa.array([a for a, _ in rows], pa.int64()), "b": pa.array([b for _, b in rows], pa.binary())}
    )
    tagger = LeafTagger(TWO_KEYS, tree)

    # When
    tags = tagger.tag(batch)

    # Then
    assert tags.tolist() == _expected(tree, tagger, batch.to_pylist(), ["a", "b"])


def should_tag_large_string_columns_as_spark_may_send_them() -> None:
    # Given
    tree = PartitionTree(STRING_KEY, partitions_from_split_points(STRING_KEY, ["m"]))
    batch = pa.record_batch({"key": pa.array(["z", "a", "m", "l"], type=pa.large_string())})
    tagger = LeafTagger(STRING_KEY, tree)

    # When
    tags = tagger.tag(batch)

    # Then
    assert tags.tolist() == [1, 0, 1, 0]


def should_hash_ints_as_spark_does() -> None:
    # Given values whose Spark hash, hash(cast(id as int)), was read from Spark 4.3
    spark_hashes = {0: 933211791, 1: -559580957, 2: 1765031574, 3: -1823081949, 4: -397064898}

    # When
    hashes = {value: murmur3_hash_int(value) for value in spark_hashes}

    # Then
    assert hashes == spark_hashes


@given(partitions=st.integers(1, 600))
def should_find_a_key_for_every_spark_partition(partitions: int) -> None:
    # When
    keys = spark_partition_keys(partitions)

    # Then
    assert sorted(murmur3_hash_int(int(k)) % partitions for k in keys) == list(range(partitions))
