"""Extending the partition tree from a sample of the input before a bulk import."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.bulk_import.exceptions import InsufficientDataForSplittingError
from sleeper.bulk_import.leaves import LeafTagger
from sleeper.bulk_import.presplit import PreSplitSettings, plan_partition_tree_extension, sample_fraction
from sleeper.core.partition import PartitionTree, partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.state import PartitionsState

LONG_KEY = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("v", PrimitiveType.LONG)])


def _extended(tree: PartitionTree, transaction: object) -> PartitionTree:
    state = PartitionsState()
    for p in tree:
        state.put(p)
    for p in (*transaction.update_partitions, *transaction.new_partitions):  # type: ignore[attr-defined]
        state.put(p)
    return state.tree(LONG_KEY)


def _root() -> PartitionTree:
    return PartitionTree(LONG_KEY, partitions_from_split_points(LONG_KEY, []))


@settings(max_examples=30, deadline=None)
@given(min_leaves=st.integers(2, 40), seed=st.integers(0, 1000))
def should_split_a_root_into_the_minimum_number_of_leaves_with_even_shares(min_leaves: int, seed: int) -> None:
    # Given a sample of 20,000 distinct keys standing for 2,000,000 rows
    keys = np.random.default_rng(seed).permutation(1_000_000)[:20_000]
    sample = pa.table({"key": pa.array(keys, pa.int64())})
    tree = _root()

    # When
    transaction = plan_partition_tree_extension(
        LONG_KEY, tree, sample, total_rows=2_000_000, settings=PreSplitSettings(min_leaf_partitions=min_leaves)
    )

    # Then the tree is valid, has the minimum number of leaves, and no leaf holds more than twice an even share
    assert transaction is not None
    extended = _extended(tree, transaction)
    extended.validate()
    assert len(extended.leaves) == min_leaves
    counts = np.bincount(LeafTagger(LONG_KEY, extended).tag(sample), minlength=min_leaves)
    assert counts.max() <= 2 * len(keys) / min_leaves + 1
    assert [p.id for p in transaction.update_partitions] == [tree.root.id]


def should_do_nothing_when_the_table_has_enough_leaves() -> None:
    # Given
    tree = PartitionTree(LONG_KEY, partitions_from_split_points(LONG_KEY, [10, 20, 30]))
    sample = pa.table({"key": pa.array(range(100), pa.int64())})

    # When
    transaction = plan_partition_tree_extension(
        LONG_KEY, tree, sample, total_rows=100, settings=PreSplitSettings(min_leaf_partitions=4)
    )

    # Then
    assert transaction is None


def should_fail_when_every_key_is_the_same() -> None:
    # Given
    sample = pa.table({"key": pa.array([50] * 5000, pa.int64())})

    # When / Then
    with pytest.raises(InsufficientDataForSplittingError, match="Required 2 minimum leaf partitions") as caught:
        plan_partition_tree_extension(
            LONG_KEY, _root(), sample, total_rows=5000, settings=PreSplitSettings(min_leaf_partitions=2)
        )
    assert caught.value.max_leaf_partitions == 1


def should_not_split_partitions_with_fewer_than_the_minimum_rows() -> None:
    # Given 3 rows, and 5 needed to split
    sample = pa.table({"key": pa.array([25, 50, 75], pa.int64())})

    # When / Then
    with pytest.raises(InsufficientDataForSplittingError):
        plan_partition_tree_extension(
            LONG_KEY, _root(), sample, total_rows=3, settings=PreSplitSettings(min_leaf_partitions=2, min_rows=5)
        )


def should_split_at_the_median_when_a_partition_has_the_minimum_rows() -> None:
    # Given
    sample = pa.table({"key": pa.array([75, 25, 50], pa.int64())})

    # When
    transaction = plan_partition_tree_extension(
        LONG_KEY, _root(), sample, total_rows=3, settings=PreSplitSettings(min_leaf_partitions=2, min_rows=1)
    )

    # Then
    assert transaction is not None
    left, right = transaction.new_partitions
    left_range = left.region.range("key")
    assert left_range is not None and left_range.canonical_max == 50


def should_not_split_a_leaf_holding_less_than_the_minimum_share_of_the_rows() -> None:
    # Given two leaves, the left one holding 1% of the rows, and 10% of an even share needed to be split
    tree = PartitionTree(LONG_KEY, partitions_from_split_points(LONG_KEY, [1000]))
    keys = np.concatenate([np.arange(100), 1000 + np.arange(9900)])
    sample = pa.table({"key": pa.array(keys, pa.int64())})

    # When
    transaction = plan_partition_tree_extension(
        LONG_KEY, tree, sample, total_rows=10_000, settings=PreSplitSettings(min_leaf_partitions=8, min_rows=10)
    )

    # Then only the right leaf and its descendants were split
    assert transaction is not None
    left = tree.leaves[0]
    extended = _extended(tree, transaction)
    assert extended.get(left.id).is_leaf
    assert len(extended.leaves) == 8


def should_read_the_settings_from_the_table_properties() -> None:
    # Given
    properties = TableProperties(
        InstanceProperties({"sleeper.id": "test"}),
        {
            "sleeper.table.name": "t",
            "sleeper.table.schema": LONG_KEY.to_json(),
            "sleeper.table.bulk.import.min.leaf.partitions": "16",
            "sleeper.table.partition.splitting.min.rows": "7",
        },
    )

    # When
    chosen = PreSplitSettings.from_table_properties(properties)

    # Then
    assert chosen == PreSplitSettings(min_leaf_partitions=16, min_rows=7, min_distribution_percent=10, attempts=3)


def should_sample_everything_of_small_inputs_and_a_share_of_large_ones() -> None:
    # When
    small, large = sample_fraction(50_000, 16), sample_fraction(100_000_000, 256)

    # Then
    assert small == 1.0
    assert large * 100_000_000 == pytest.approx(256_000)
