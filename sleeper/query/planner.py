"""Planning a query: one sub-query per leaf partition it touches, with the files to read there (spec 7.2).

A leaf's sub-query reads the files referenced on the leaf **and on all its ancestors**: a file referenced on a
partition that has since been split still holds rows of its descendants until compaction moves them down. Each
file is read only within the sub-query's regions, which lie inside the leaf, so a row of a file referenced from an
ancestor, or from several leaves, is returned by exactly one sub-query.

Sub-query ids are derived from the query id and the leaf's id (Sleeper draws random ones), so planning a query that is
delivered again yields the same sub-queries while the partitions are unchanged, and their results overwrite the same
files instead of adding a second copy of every row under ``query-<id>/``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from sleeper.core.partition import PartitionTree
from sleeper.core.query import LeafPartitionQuery, Query
from sleeper.core.range import Region
from sleeper.core.statestore.references import FileReference

__all__ = ["leaf_regions", "plan_query", "sub_query_id_for"]


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
    references: Iterable[FileReference],
    *,
    table_id: str,
    sub_query_id: Callable[[str, str], str] = sub_query_id_for,
) -> list[LeafPartitionQuery]:
    """Splits a query into sub-queries on the leaf partitions overlapping any of its regions.

    Leaves with no file referenced on them or their ancestors are skipped, so a query of an empty table plans no
    sub-query.

    Args:
        query: The query.
        tree: The table's partitions.
        references: The table's file references (every partition's).
        table_id: The table's id, recorded in each sub-query.
        sub_query_id: Makes each sub-query's id from the query id and the leaf id (see the module notes).

    Returns:
        The sub-queries in key order of their leaves. Each holds the leaf's region, the query's regions cut to the
        leaf, and the files to read: those referenced on the leaf's ancestors (root first), then on the leaf, each
        file once.
    """
    files_by_partition: dict[str, list[str]] = {}
    for reference in references:
        files_by_partition.setdefault(reference.partition_id, []).append(reference.filename)
    touched: set[str] = set()
    for region in query.regions:
        touched.update(p.id for p in tree.leaves_overlapping(region))
    out: list[LeafPartitionQuery] = []
    for leaf in tree.leaves:
        if leaf.id not in touched:
            continue
        files = _files_for_leaf(tree, leaf.id, files_by_partition)
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


def _files_for_leaf(tree: PartitionTree, leaf_id: str, files_by_partition: dict[str, list[str]]) -> list[str]:
    chain = [p.id for p in reversed(tree.ancestors(leaf_id))] + [leaf_id]
    seen: set[str] = set()
    files: list[str] = []
    for partition_id in chain:
        for name in files_by_partition.get(partition_id, ()):
            if name not in seen:
                seen.add(name)
                files.append(name)
    return files
