"""Planning a bulk export: one leaf export per leaf holding files, with its ancestors' files, and the same ids when
planned again."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_export.model import BulkExportQuery
from sleeper.bulk_export.planner import plan_export, sub_export_id_for
from sleeper.core.partition import PartitionTree, partitions_from_split_points
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
QUERY = BulkExportQuery(export_id="e1", table_name="t")


def _ids(prefix: str) -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"{prefix}{next(counter)}"


def _tree() -> PartitionTree:
    return PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, [10, 20, 30], id_supplier=_ids("p")))


def _ref(filename: str, partition_id: str) -> FileReference:
    return FileReference(filename=filename, partition_id=partition_id, number_of_rows=10)


def should_plan_one_export_per_leaf_with_files_reading_its_ancestors_files_too() -> None:
    # Given a file on the root (not yet compacted down), one on a leaf and a leaf with no file of its own
    tree = _tree()
    leaves = tree.leaves
    references = [_ref("root.parquet", tree.root.id), _ref("leaf0.parquet", leaves[0].id)]
    # When the export is planned
    plan = plan_export(QUERY, tree, references, table_id="tid")
    # Then every leaf is exported (the root's file holds rows of each), in key order, ancestors' files first
    assert [p.leaf_partition_id for p in plan] == [leaf.id for leaf in leaves]
    assert plan[0].files == ("root.parquet", "leaf0.parquet")
    assert all(p.files == ("root.parquet",) for p in plan[1:])
    # And each reads within its leaf's region only
    assert all(p.regions == (p.partition_region,) for p in plan)
    assert [p.partition_region for p in plan] == [leaf.region for leaf in leaves]


def should_skip_leaves_with_no_files() -> None:
    tree = _tree()
    plan = plan_export(QUERY, tree, [_ref("a.parquet", tree.leaves[2].id)], table_id="tid")
    assert [p.leaf_partition_id for p in plan] == [tree.leaves[2].id]
    assert plan_export(QUERY, tree, [], table_id="tid") == []


def should_give_the_same_sub_export_ids_when_planned_again() -> None:
    tree = _tree()
    references = [_ref("root.parquet", tree.root.id)]
    first = plan_export(QUERY, tree, references, table_id="tid")
    again = plan_export(QUERY, tree, references, table_id="tid")
    assert [p.sub_export_id for p in first] == [p.sub_export_id for p in again]
    assert len({p.sub_export_id for p in first}) == len(first)
    assert first[0].sub_export_id == sub_export_id_for("e1", first[0].leaf_partition_id)


def should_refuse_an_export_when_a_file_is_referenced_on_a_partition_the_tree_does_not_hold() -> None:
    # Given a reference on a leaf and one on a partition the tree does not hold (files and partitions not fitting)
    tree = _tree()
    references = [_ref("a.parquet", tree.leaves[0].id), _ref("gone.parquet", "gone")]
    # When the export is planned, Then it is refused naming the partition, rather than planned without its rows
    with pytest.raises(BulkExportError, match=r"bulk export e1: table tid has files referenced on .*\(gone\)"):
        plan_export(QUERY, tree, references, table_id="tid")
