"""Cutting sorted batches at leaf partitions, and reading the file writing strategy."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.core.partition import Partition, PartitionTree, partitions_from_split_points, split_partition
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.ingest.exceptions import IngestConfigError
from sleeper.ingest.standard import ONE_FILE_PER_LEAF, ONE_REFERENCE_PER_LEAF, LeafSplitter, file_writing_strategy
from sleeper.io.sort import sort_table

ONE_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("v", PrimitiveType.LONG)])
TWO_KEYS = Schema.of(
    row_keys=[Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.BYTE_ARRAY)],
    values=[Field("v", PrimitiveType.LONG)],
)

_strings = st.text(alphabet="abcxyzé\u00ff\U0001f600", max_size=4)


def _batch(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(table.to_pylist(), schema=table.schema)


def _leaf_ids(splitter: LeafSplitter, batch: pa.RecordBatch) -> tuple[list[str], list[dict[str, object]]]:
    ids: list[str] = []
    rows: list[dict[str, object]] = []
    for index, part in splitter.slices(batch):
        ids.extend([splitter.partitions[index].id] * part.num_rows)
        rows.extend(part.to_pylist())
    return ids, rows


@settings(max_examples=60, deadline=None)
@given(
    split_points=st.lists(_strings.filter(bool), unique=True, max_size=5).map(sorted),
    keys=st.lists(_strings, max_size=60),
)
def should_cut_sorted_rows_into_their_leaves_on_the_first_key(split_points: list[str], keys: list[str]) -> None:
    # Given
    tree = PartitionTree(ONE_KEY, partitions_from_split_points(ONE_KEY, split_points))
    batch = _batch(sort_table(pa.table({"key": pa.array(keys, type=pa.string()), "v": range(len(keys))}), ["key"]))
    splitter = LeafSplitter(ONE_KEY, tree)

    # When
    ids, rows = _leaf_ids(splitter, batch)

    # Then
    assert splitter.cuts_on_first_key
    assert rows == batch.to_pylist()
    assert ids == [tree.leaf_for_key([row["key"]]).id for row in rows]


def _two_dimensional_tree(a_split: int, left_b: bytes, right_b: bytes) -> PartitionTree:
    first = partitions_from_split_points(TWO_KEYS, [a_split])
    root = next(p for p in first if p.parent_id is None)
    left, right = (p for p in first if p.parent_id is not None)
    partitions: list[Partition] = [root]
    for child, point in ((left, left_b), (right, right_b)):
        partitions.extend(split_partition(TWO_KEYS, child, 1, point))
    return PartitionTree(TWO_KEYS, partitions)


@settings(max_examples=60, deadline=None)
@given(
    a_split=st.integers(-5, 5),
    b_splits=st.tuples(st.binary(min_size=1, max_size=2), st.binary(min_size=1, max_size=2)),
    keys=st.lists(st.tuples(st.integers(-8, 8), st.binary(max_size=3)), max_size=60),
)
def should_find_each_rows_leaf_when_a_split_is_on_the_second_key(
    a_split: int, b_splits: tuple[bytes, bytes], keys: list[tuple[int, bytes]]
) -> None:
    # Given
    tree = _two_dimensional_tree(a_split, *b_splits)
    table = pa.table(
        {
            "a": pa.array([k[0] for k in keys], type=pa.int64()),
            "b": pa.array([k[1] for k in keys], type=pa.binary()),
            "v": pa.array(range(len(keys)), type=pa.int64()),
        }
    )
    batch = _batch(sort_table(table, ["a", "b"]))
    splitter = LeafSplitter(TWO_KEYS, tree)

    # When
    ids, rows = _leaf_ids(splitter, batch)

    # Then
    assert not splitter.cuts_on_first_key
    assert sorted(row["v"] for row in rows) == list(range(len(keys)))  # type: ignore[type-var]
    assert ids == [tree.leaf_for_key([row["a"], row["b"]]).id for row in rows]


def _properties(**values: str) -> TableProperties:
    return TableProperties(InstanceProperties({}), {"sleeper.table.schema": ONE_KEY.to_json(), **values})


def should_default_to_one_reference_per_leaf() -> None:
    # Given
    properties = _properties()

    # When
    strategy = file_writing_strategy(properties)

    # Then
    assert strategy == ONE_REFERENCE_PER_LEAF


def should_read_the_strategy_ignoring_case() -> None:
    # Given
    properties = _properties(**{"sleeper.table.ingest.file.writing.strategy": "ONE_FILE_PER_LEAF"})

    # When
    strategy = file_writing_strategy(properties)

    # Then
    assert strategy == ONE_FILE_PER_LEAF


def should_refuse_an_unknown_strategy() -> None:
    # Given
    properties = _properties(**{"sleeper.table.ingest.file.writing.strategy": "one_file_per_row"})

    # When / Then
    with pytest.raises(IngestConfigError, match="one_file_per_row"):
        file_writing_strategy(properties)
