from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from sleeper.core.exceptions import PartitionTreeError
from sleeper.core.partition import (
    ROOT_ID,
    Partition,
    PartitionTree,
    partitions_from_split_points,
    read_split_points,
    split_partition,
)
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING), Field("n", PrimitiveType.LONG)])


def _ids() -> object:
    counter = itertools.count()
    return lambda: f"p{next(counter)}"


def should_build_single_root_without_split_points() -> None:
    # When a tree is built from no split points
    partitions = partitions_from_split_points(SCHEMA, [])
    # Then there is one leaf called root covering everything
    assert [p.id for p in partitions] == [ROOT_ID]
    tree = PartitionTree(SCHEMA, partitions)
    tree.validate()
    assert tree.root.is_leaf and tree.leaf_for_key(("anything", 5)).id == ROOT_ID


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 15])
def should_build_valid_tree_from_split_points(count: int) -> None:
    # Given increasing split points
    points = [f"k{i:03d}" for i in range(count)]
    # When the tree is built
    tree = PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, points, id_supplier=_ids()))  # type: ignore[arg-type]
    # Then it is valid, has one leaf more than points, in key order, and every key finds its leaf
    tree.validate()
    leaves = tree.leaves
    assert len(leaves) == count + 1
    assert [lf.region.ranges["key"].min for lf in leaves] == ["", *points]
    for i, p in enumerate(points):
        assert tree.leaf_for_key((p, 0)).id == leaves[i + 1].id
        assert tree.leaf_for_key((p + "\x00", 0)).id == leaves[i + 1].id
    assert tree.leaf_for_key(("", 0)).id == leaves[0].id
    assert all(lf.id != ROOT_ID for lf in leaves)


def should_pair_neighbours_promoting_the_odd_last_node() -> None:
    # Given 3 leaves, the first two are paired and the third promoted to pair with their parent
    tree = PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, ["b", "d"], id_supplier=_ids()))  # type: ignore[arg-type]
    left, right = tree.children(tree.root.id)
    assert not left.is_leaf and right.is_leaf
    assert [c.region.ranges["key"].min for c in tree.children(left.id)] == ["", "b"]
    assert right.region.ranges["key"].min == "d"


def should_reject_unordered_or_mistyped_split_points() -> None:
    with pytest.raises(PartitionTreeError, match="strictly increasing"):
        partitions_from_split_points(SCHEMA, ["b", "a"])
    with pytest.raises(Exception, match="needs a string"):
        partitions_from_split_points(SCHEMA, [1])


def should_find_leaves_overlapping_region_and_ancestors() -> None:
    tree = PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, ["b", "d", "f"], id_supplier=_ids()))  # type: ignore[arg-type]
    region = Region.of([Range(field=SCHEMA.field("key"), min="c", max="e")])
    found = tree.leaves_overlapping(region)
    assert [p.region.ranges["key"].min for p in found] == ["b", "d"]
    leaf = found[0]
    assert tree.ancestors(leaf.id)[-1] == tree.root
    assert len(tree.descendants(tree.root.id)) == len(tree) - 1


def should_split_a_leaf_on_a_dimension() -> None:
    tree = PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, []))
    parent, left, right = split_partition(SCHEMA, tree.root, 1, 100, id_supplier=_ids())  # type: ignore[arg-type]
    new_tree = PartitionTree(SCHEMA, [parent, left, right])
    new_tree.validate()
    assert new_tree.leaf_for_key(("x", 99)).id == left.id
    assert new_tree.leaf_for_key(("x", 100)).id == right.id
    with pytest.raises(PartitionTreeError, match="strictly inside"):
        split_partition(SCHEMA, left, 1, 100)


def should_detect_invalid_trees() -> None:
    partitions = partitions_from_split_points(SCHEMA, ["m"], id_supplier=_ids())  # type: ignore[arg-type]
    tree = PartitionTree(SCHEMA, partitions)
    root = tree.root
    left, right = tree.children(root.id)
    # children swapped
    swapped = replace(root, child_ids=(right.id, left.id))
    with pytest.raises(PartitionTreeError):
        PartitionTree(SCHEMA, [swapped, left, right]).validate()
    # gap between children
    gap = replace(right, region=Region({**right.region.ranges, "key": Range(field=SCHEMA.field("key"), min="n")}))
    with pytest.raises(PartitionTreeError, match="meet at one point"):
        PartitionTree(SCHEMA, [root, left, gap]).validate()
    # missing child
    with pytest.raises(PartitionTreeError, match="missing child"):
        PartitionTree(SCHEMA, [root, left]).validate()
    # two roots
    with pytest.raises(PartitionTreeError, match="exactly one root"):
        PartitionTree(SCHEMA, [root, replace(left, parent_id=None)])


def should_round_trip_partition_json() -> None:
    partitions = partitions_from_split_points(SCHEMA, ["m"], id_supplier=_ids())  # type: ignore[arg-type]
    for p in partitions:
        doc = json.loads(json.dumps(p.to_dict(SCHEMA)))
        assert Partition.from_dict(SCHEMA, doc) == p
    root = next(p for p in partitions if p.parent_id is None)
    assert "parentPartitionId" not in root.to_dict(SCHEMA)


def should_read_split_points_files() -> None:
    assert read_split_points(SCHEMA, ["a\n", "\n", "b c\n"]) == ["a", "b c"]
    assert read_split_points(SCHEMA, ["YQ==\n"], strings_base64=True) == ["a"]
    long_schema = Schema.of(row_keys=[Field("n", PrimitiveType.LONG)])
    assert read_split_points(long_schema, ["5", "10"]) == [5, 10]
    with pytest.raises(PartitionTreeError, match="line 2"):
        read_split_points(long_schema, ["5", "x"])
