from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

import pytest

from sleeper.core.partition import ROOT_ID, PartitionTree, partitions_from_split_points
from sleeper.core.query import Query, QueryProcessingConfig
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.query.executor import plan_table_query
from sleeper.query.planner import (
    ReferenceOnUnknownPartitionError,
    check_references_in_tree,
    leaf_regions,
    plan_query,
)

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(row_key_fields=(KEY,), value_fields=(Field("value", PrimitiveType.STRING),))


def _ids(prefix: str) -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"{prefix}{next(counter)}"


def _tree(split_points: list[int]) -> PartitionTree:
    return PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, split_points, id_supplier=_ids("p")))


def _ref(filename: str, partition_id: str, *, whole: bool = True) -> FileReference:
    return FileReference(
        filename=filename, partition_id=partition_id, number_of_rows=10, only_contains_data_for_this_partition=whole
    )


def _query(*regions: Region, fields: tuple[str, ...] | None = None) -> Query:
    return Query(
        query_id="q",
        table_name="t",
        regions=regions,
        processing=QueryProcessingConfig(requested_value_fields=fields),
    )


def _range(low: int, high: int | None, *, low_inclusive: bool = True, high_inclusive: bool = False) -> Region:
    return Region.of([Range(field=KEY, min=low, min_inclusive=low_inclusive, max=high, max_inclusive=high_inclusive)])


def should_read_files_of_the_leaf_and_every_ancestor_once() -> None:
    # Given leaves [min,100), [100,200), [200,max) under a root, a file on the root, a file on the leaf's parent,
    # a file referenced on two leaves and a file only on the first leaf
    tree = _tree([100, 200])
    low, middle, high = tree.leaves
    parent = tree.get(middle.parent_id or "")
    refs = [
        _ref("root.parquet", tree.root.id, whole=False),
        _ref("low.parquet", low.id),
        _ref("shared.parquet", middle.id, whole=False),
        _ref("shared.parquet", high.id, whole=False),
        _ref("middle.parquet", middle.id),
    ]
    if parent.id != tree.root.id:
        refs.append(_ref("parent.parquet", parent.id, whole=False))
    # When a query of everything is planned
    plans = plan_query(
        _query(Region.whole(SCHEMA)), tree, refs, table_id="tid", sub_query_id=lambda q, leaf: f"{q}-{leaf}"
    )
    # Then each leaf reads the root's and its ancestors' files first, then its own, each file once
    by_leaf = {p.leaf_partition_id: p.files for p in plans}
    ancestors_of_middle = [p.id for p in reversed(tree.ancestors(middle.id))]
    expected_middle = ["root.parquet"] + (["parent.parquet"] if parent.id != tree.root.id else [])
    expected_middle += ["shared.parquet", "middle.parquet"]
    assert ancestors_of_middle[0] == tree.root.id
    assert list(by_leaf[middle.id]) == expected_middle
    assert by_leaf[low.id][0] == "root.parquet" and by_leaf[low.id][-1] == "low.parquet"
    assert "shared.parquet" in by_leaf[high.id] and "low.parquet" not in by_leaf[high.id]
    # And the sub-queries are in key order with their own ids, the table id and the query's processing
    assert [p.leaf_partition_id for p in plans] == [low.id, middle.id, high.id]
    assert [p.sub_query_id for p in plans] == [f"q-{low.id}", f"q-{middle.id}", f"q-{high.id}"]
    assert {p.table_id for p in plans} == {"tid"} and {p.query_id for p in plans} == {"q"}


def should_cut_regions_to_each_leaf_and_drop_leaves_outside_them() -> None:
    # Given three leaves, each with a file
    tree = _tree([100, 200])
    low, middle, high = tree.leaves
    refs = [_ref(f"{p.id}.parquet", p.id) for p in tree.leaves]
    # When regions [50, 150] and (250, 260) are planned
    query = _query(_range(50, 150, high_inclusive=True), _range(250, 260, low_inclusive=False))
    plans = plan_query(query, tree, refs, table_id="t")
    # Then every leaf is read, each only within the parts of the regions inside it
    assert [p.leaf_partition_id for p in plans] == [low.id, middle.id, high.id]
    assert [p.regions for p in plans] == [
        (_range(50, 100),),
        (_range(100, 151),),
        (_range(251, 260),),
    ]
    assert all(p.partition_region == leaf.region for p, leaf in zip(plans, tree.leaves, strict=True))

    # When a region inside one leaf is planned
    plans = plan_query(_query(_range(120, 130)), tree, refs, table_id="t")
    # Then only that leaf is read
    assert [(p.leaf_partition_id, p.regions) for p in plans] == [(middle.id, (_range(120, 130),))]


def should_skip_leaves_without_files() -> None:
    # Given a split table with a file only on the last leaf
    tree = _tree([100, 200])
    high = tree.leaves[-1]
    # When everything is queried
    plans = plan_query(_query(Region.whole(SCHEMA)), tree, [_ref("f.parquet", high.id)], table_id="t")
    # Then only the last leaf is read
    assert [p.leaf_partition_id for p in plans] == [high.id]

    # When the table has no files
    # Then nothing is planned
    assert plan_query(_query(Region.whole(SCHEMA)), tree, [], table_id="t") == []


def should_plan_nothing_for_a_query_with_no_regions_or_an_empty_region() -> None:
    # Given a table with a file on the root
    tree = _tree([])
    refs = [_ref("f.parquet", ROOT_ID)]
    # When a query has no regions, or only a region holding no key
    empty = _range(5, 5)
    # Then nothing is planned
    assert plan_query(_query(), tree, refs, table_id="t") == []
    assert plan_query(_query(empty), tree, refs, table_id="t") == []
    # And a non-empty region is planned on the root
    assert [p.leaf_partition_id for p in plan_query(_query(_range(5, 6)), tree, refs, table_id="t")] == [ROOT_ID]


def should_give_disjoint_regions_to_leaves_sharing_a_file() -> None:
    # Given a file referenced on two neighbouring leaves
    tree = _tree([100])
    refs = [_ref("shared.parquet", p.id, whole=False) for p in tree.leaves]
    # When a region across both leaves is planned
    plans = plan_query(_query(_range(0, 1000)), tree, refs, table_id="t")
    # Then both read the file, within regions that share no key
    assert [p.files for p in plans] == [("shared.parquet",), ("shared.parquet",)]
    first, second = (p.regions[0] for p in plans)
    assert not first.overlaps(second)
    assert first.intersection(second) is None


def should_keep_requested_fields_in_sub_queries() -> None:
    # Given a query asking for one value field
    tree = _tree([])
    query = _query(Region.whole(SCHEMA), fields=("value",))
    # When planned
    plans = plan_query(query, tree, [_ref("f.parquet", ROOT_ID)], table_id="t")
    # Then the sub-query carries the request
    assert [p.processing.requested_value_fields for p in plans] == [("value",)]


def should_cut_regions_dropping_those_outside_the_partition() -> None:
    # Given a partition region [100, 200)
    partition = _range(100, 200)
    # When regions inside, across and outside it are cut
    cut = leaf_regions([_range(0, 50), _range(150, 300), _range(200, 300)], partition)
    # Then only the overlapping part is kept
    assert cut == [_range(150, 200)]


def should_give_the_same_sub_query_ids_each_time_a_query_is_planned() -> None:
    # Given two leaves with a file each
    tree = _tree([100])
    refs = [_ref(f"{leaf.id}.parquet", leaf.id) for leaf in tree.leaves]
    # When the same query is planned twice, and another query once
    first = plan_query(_query(Region.whole(SCHEMA)), tree, refs, table_id="tid")
    again = plan_query(_query(Region.whole(SCHEMA)), tree, refs, table_id="tid")
    other = plan_query(replace(_query(Region.whole(SCHEMA)), query_id="other"), tree, refs, table_id="tid")
    # Then the plans repeat their ids, distinct per leaf and per query
    ids = [p.sub_query_id for p in first]
    assert ids == [p.sub_query_id for p in again]
    assert len(set(ids)) == 2
    assert not set(ids) & {p.sub_query_id for p in other}


def should_refuse_a_reference_on_a_partition_the_tree_does_not_hold() -> None:
    # Given a tree of two leaves, and references on a leaf and on two partitions the tree does not hold
    tree = _tree([100])
    low, _ = tree.leaves
    refs = [_ref("low.parquet", low.id), _ref("gone-1.parquet", "gone-1"), _ref("gone-2.parquet", "gone-2")]
    # When a query of everything is planned from them
    # Then it is refused, naming the partitions and the table, rather than planned without their rows
    with pytest.raises(ReferenceOnUnknownPartitionError, match=r"table tid .*\(gone-1, gone-2\)") as e:
        plan_query(_query(Region.whole(SCHEMA)), tree, refs, table_id="tid")
    assert e.value.partition_ids == ("gone-1", "gone-2")
    assert e.value.table_id == "tid"
    # And so is a query of a range far from them: the state does not fit together, whatever the query
    with pytest.raises(ReferenceOnUnknownPartitionError):
        plan_query(_query(_range(0, 10)), tree, refs, table_id="tid")


def should_refuse_a_partition_with_files_the_tree_does_not_hold_when_planning_from_an_index() -> None:
    # Given a tree of two leaves, and an index of the files on each partition naming one partition not in the tree
    tree = _tree([100])
    low, high = tree.leaves
    index = {low.id: ["low.parquet"], "gone": ["gone.parquet"]}
    # When a query is planned through the index, given the partitions it holds files for
    # Then it is refused
    with pytest.raises(ReferenceOnUnknownPartitionError, match="gone"):
        plan_query(
            _query(Region.whole(SCHEMA)),
            tree,
            table_id="tid",
            files_on=lambda pid: index.get(pid, []),
            referenced_partitions=index.keys(),
        )
    # And with the index fitting the tree, the plan reads the leaf's file
    del index["gone"]
    plans = plan_query(
        _query(Region.whole(SCHEMA)),
        tree,
        table_id="tid",
        files_on=lambda pid: index.get(pid, []),
        referenced_partitions=index.keys(),
    )
    assert [(p.leaf_partition_id, list(p.files)) for p in plans] == [(low.id, ["low.parquet"])]
    assert high.id not in {p.leaf_partition_id for p in plans}


def should_check_every_reference_against_the_tree_in_the_shared_helper() -> None:
    # Given a tree of one root
    tree = _tree([])
    # When the partitions of references are checked, Then the root passes and an unknown one is refused
    check_references_in_tree(tree, [ROOT_ID, ROOT_ID], table_id="tid")
    with pytest.raises(ReferenceOnUnknownPartitionError, match="x1, x2"):
        check_references_in_tree(tree, ["x2", ROOT_ID, "x1"], table_id="tid")


class _IndexedStore:
    """A state store keeping its files by partition, whose files and partitions do not fit together."""

    def __init__(self, tree: PartitionTree, files: dict[str, list[str]]) -> None:
        self._tree = tree
        self._files = files

    def partition_tree(self) -> PartitionTree:
        return self._tree

    def file_references(self) -> list[FileReference]:
        return [_ref(name, pid) for pid, names in self._files.items() for name in names]

    def partition_files(self) -> _IndexedStore:
        return self

    def files_on(self, partition_id: str) -> list[str]:
        return list(self._files.get(partition_id, ()))

    def maybe_referenced_partitions(self) -> set[str]:
        return set(self._files) | {"emptied"}  # a superset: a partition whose files all went since a snapshot


def should_refuse_a_table_query_planned_through_the_index_when_a_partition_with_files_is_not_in_the_tree() -> None:
    # Given a table whose index names files on a leaf and on a partition its tree does not hold
    tree = _tree([100])
    low, _ = tree.leaves
    store = _IndexedStore(tree, {low.id: ["low.parquet"], "gone": ["gone.parquet"]})
    # When a lookup far from it is planned, Then it is refused rather than planned without the partition's rows
    with pytest.raises(ReferenceOnUnknownPartitionError, match="gone"):
        plan_table_query(_query(_range(0, 10)), store, table_id="tid")
    # And a partition the index names without files is no reason to refuse
    del store._files["gone"]
    plans = plan_table_query(_query(_range(0, 10)), store, table_id="tid")
    assert [(p.leaf_partition_id, list(p.files)) for p in plans] == [(low.id, ["low.parquet"])]
