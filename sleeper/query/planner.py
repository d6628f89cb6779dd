"""Planning a query: one sub-query per leaf partition it touches, with the files to read there.

A leaf's sub-query reads the files referenced on the leaf **and on all its ancestors**: a file referenced on a
partition that has since been split still holds rows of its descendants until compaction moves them down. Each
file is read only within the sub-query's regions, which lie inside the leaf, so a row of a file referenced from an
ancestor, or from several leaves, is returned by exactly one sub-query.

A reference on a partition the tree does not hold is refused (:class:`ReferenceOnUnknownPartitionError`): no leaf
would read it, so planning on would silently leave out its rows. The partitions and files given must fit together
(every partition a reference names is in the tree); the state store and time travel read them so that they do.

Sub-query ids are derived from the query id and the leaf's id (Sleeper draws random ones), so planning a query that is
delivered again yields the same sub-queries while the partitions are unchanged, and their results overwrite the same
files instead of adding a second copy of every row under ``query-<id>/``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Sequence

from sleeper.core import LeafPartitionQuery, Partition, PartitionTree, Query, Region, references_outside_tree_message
from sleeper.core.statestore import FileReference
from sleeper.query.exceptions import QueryExecutionError

__all__ = [
    "ReferenceOnUnknownPartitionError",
    "check_references_in_tree",
    "leaf_regions",
    "plan_query",
    "sub_query_id_for",
]


class ReferenceOnUnknownPartitionError(QueryExecutionError):
    """A file reference names a partition the partition tree does not hold, so a plan by partition would leave out
    its rows: the partitions and files read do not fit together.

    Attributes:
        table_id: The table.
        partition_ids: The partitions referenced but not in the tree, sorted.
    """

    def __init__(self, message: str, *, table_id: str, partition_ids: Sequence[str]) -> None:
        super().__init__(message)
        self.table_id = table_id
        self.partition_ids = tuple(partition_ids)


def check_references_in_tree(tree: PartitionTree, partition_ids: Iterable[str], *, table_id: str) -> None:
    """Checks that every partition a file is referenced on is in the tree, before planning reads by partition.

    Every planner that reads a table's files by leaf partition (queries, bulk export) calls it: a reference on a
    partition outside the tree is reached by no leaf.

    Args:
        tree: The partitions planned over.
        partition_ids: The partitions of the file references (repeats are fine).
        table_id: The table, named in the error.

    Raises:
        ReferenceOnUnknownPartitionError: If any is not in the tree, naming them.
    """
    unknown = tree.not_held(partition_ids)
    if unknown:
        raise ReferenceOnUnknownPartitionError(
            references_outside_tree_message(table_id, unknown), table_id=table_id, partition_ids=unknown
        )


_SUB_QUERY_NAMESPACE = uuid.UUID("5b1e3f0e-8c1a-4a57-9d0c-53a1ee9e0c7d")


def sub_query_id_for(query_id: str, leaf_partition_id: str) -> str:
    """The id of a query's sub-query on a leaf: the same every time the query is planned."""
    return str(uuid.uuid5(_SUB_QUERY_NAMESPACE, f"{query_id}/{leaf_partition_id}"))


def leaf_regions(regions: Iterable[Region], partition_region: Region) -> list[Region]:
    """The non-empty intersections of some regions with a partition's region, in the order given.

    Args:
        regions: The query's regions.
        partition_region: The leaf partition's region.

    Returns:
        Each region's canonical intersection with the partition, where it is not empty.
    """
    out: list[Region] = []
    for region in regions:
        inside = region.intersection(partition_region)
        if inside is not None:
            out.append(inside)
    return out


def plan_query(
    query: Query,
    tree: PartitionTree,
    references: Iterable[FileReference] | None = None,
    *,
    table_id: str,
    sub_query_id: Callable[[str, str], str] = sub_query_id_for,
    files_on: Callable[[str], Sequence[str]] | None = None,
    referenced_partitions: Collection[str] | None = None,
) -> list[LeafPartitionQuery]:
    """Splits a query into sub-queries on the leaf partitions overlapping any of its regions.

    Leaves with no file referenced on them or their ancestors are skipped, so a query of an empty table plans no
    sub-query. Only the part of the tree overlapping the regions is visited, and only the files of the leaves
    touched and their ancestors are looked up (with ``files_on``, such as ``StateStore.partition_files().files_on``,
    a lookup does not go through the table's references).

    Args:
        query: The query.
        tree: The table's partitions.
        references: The table's file references (every partition's); not needed with ``files_on``.
        table_id: The table's id, recorded in each sub-query.
        sub_query_id: Makes each sub-query's id from the query id and the leaf id (see the module notes).
        files_on: The files referenced on a partition; built from ``references`` if not given.
        referenced_partitions: With ``files_on``, every partition with a file referenced on it (from the same read of
            the state), checked against the tree as ``references`` are.

    Returns:
        The sub-queries in key order of their leaves. Each holds the leaf's region, the query's regions cut to the
        leaf, and the files to read: those referenced on the leaf's ancestors (root first), then on the leaf, each
        file once.

    Raises:
        ReferenceOnUnknownPartitionError: If a reference (or one of ``referenced_partitions``) is on a partition not
            in the tree.
    """
    if files_on is None:
        files_by_partition: dict[str, list[str]] = {}
        for reference in references or ():
            files_by_partition.setdefault(reference.partition_id, []).append(reference.filename)
        check_references_in_tree(tree, files_by_partition, table_id=table_id)

        def files_on(partition_id: str) -> Sequence[str]:
            return files_by_partition.get(partition_id, ())

    elif referenced_partitions is not None:
        check_references_in_tree(tree, referenced_partitions, table_id=table_id)
    out: list[LeafPartitionQuery] = []
    for leaf in _leaves_overlapping_any(tree, query.regions):
        files = _files_for_leaf(tree, leaf.id, files_on)
        if not files:
            continue
        regions = leaf_regions(query.regions, leaf.region)
        if not regions:
            continue
        out.append(
            query.leaf_query(
                table_id=table_id,
                sub_query_id=sub_query_id(query.query_id, leaf.id),
                leaf_partition_id=leaf.id,
                partition_region=leaf.region,
                regions=regions,
                files=files,
            )
        )
    return out


def _leaves_overlapping_any(tree: PartitionTree, regions: Sequence[Region]) -> list[Partition]:
    """The leaves overlapping any of the regions, in key order (the tree's depth-first order), visiting only the
    partitions that overlap one."""
    out: list[Partition] = []
    stack = [tree.root]
    while stack:
        partition = stack.pop()
        if not any(partition.region.overlaps(region) for region in regions):
            continue
        if partition.is_leaf:
            out.append(partition)
        else:
            stack.extend(tree.get(child) for child in reversed(partition.child_ids))
    return out


def _files_for_leaf(tree: PartitionTree, leaf_id: str, files_on: Callable[[str], Sequence[str]]) -> list[str]:
    chain = [p.id for p in reversed(tree.ancestors(leaf_id))] + [leaf_id]
    seen: set[str] = set()
    files: list[str] = []
    for partition_id in chain:
        for name in files_on(partition_id):
            if name not in seen:
                seen.add(name)
                files.append(name)
    return files
