"""Planning a bulk export (Sleeper's ``BulkExportQuerySplitter``): one leaf partition export per leaf partition that
has files, reading the files referenced on the leaf and on its ancestors (a file on a partition since split still
holds rows of its descendants), each limited to the leaf's region so every row is exported exactly once.

Sub-export ids are derived from the export id and the leaf id (Sleeper draws random ones), so an export planned again
(the same ``exportId`` sent twice, or its message delivered again) names the same output files, which are overwritten
rather than added to: a second export of the same ``exportId`` never duplicates rows.

An export with a filter is planned as a query with one is (``sleeper.query.executor.narrowed_to_filter``): what the
filter says of the row keys (:func:`sleeper.core.filter.key_regions`) cuts each leaf's regions, and a leaf no region
reaches is not exported; the filter travels in each leaf export, to be applied to its rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_export.model import BulkExportQuery, LeafPartitionExport
from sleeper.core import Filter, PartitionTree, Region, Schema, key_regions, references_outside_tree_message
from sleeper.core.statestore import FileReference

__all__ = ["plan_export", "sub_export_id_for"]

_SUB_EXPORT_NAMESPACE = uuid.UUID("0f0d7c7e-3a55-4d0e-9a7b-6c1b1f6a5e21")


def sub_export_id_for(export_id: str, leaf_partition_id: str) -> str:
    """The id of an export's leaf partition export: the same every time the export is planned."""
    return str(uuid.uuid5(_SUB_EXPORT_NAMESPACE, f"{export_id}/{leaf_partition_id}"))


def plan_export(
    query: BulkExportQuery,
    tree: PartitionTree,
    references: Iterable[FileReference],
    *,
    table_id: str,
    row_filter: Filter | None = None,
    schema: Schema | None = None,
) -> list[LeafPartitionExport]:
    """Splits an export into one leaf partition export per leaf holding files, in key order of the leaves.

    Args:
        query: The export.
        tree: The table's partitions.
        references: The table's file references (every partition's).
        table_id: The table's id.
        row_filter: The export's filter, parsed against the table's schema (:meth:`BulkExportQuery.parsed_filter`);
            None for every row.
        schema: The table's schema; needed for a filter's row key predicates to narrow the leaves planned.

    Returns:
        The leaf exports; none for an empty table. Each lists the files of the leaf's ancestors (root first), then
        the leaf's own, each file once. With a filter narrowing the row keys, only the leaves it reaches, each with
        its region cut to what the filter allows.

    Raises:
        BulkExportError: If a file is referenced on a partition the tree does not hold (no leaf would reach it, so
            its rows would be left out of the export).
    """
    by_partition: dict[str, list[str]] = {}
    for reference in references:
        by_partition.setdefault(reference.partition_id, []).append(reference.filename)
    unknown = tree.not_held(by_partition)
    if unknown:
        raise BulkExportError(f"bulk export {query.export_id}: {references_outside_tree_message(table_id, unknown)}")
    allowed = None if row_filter is None or schema is None else key_regions(row_filter, schema)
    out: list[LeafPartitionExport] = []
    for leaf in tree.leaves:
        regions: tuple[Region, ...] = (leaf.region,)
        if allowed is not None:
            regions = tuple(inside for a in allowed if (inside := leaf.region.intersection(a)) is not None)
            if not regions:
                continue
        chain = [p.id for p in reversed(tree.ancestors(leaf.id))] + [leaf.id]
        files = list(dict.fromkeys(name for pid in chain for name in by_partition.get(pid, ())))
        if not files:
            continue
        out.append(
            LeafPartitionExport(
                table_id=table_id,
                export_id=query.export_id,
                sub_export_id=sub_export_id_for(query.export_id, leaf.id),
                regions=regions,
                leaf_partition_id=leaf.id,
                partition_region=leaf.region,
                files=tuple(files),
                filter=row_filter,
            )
        )
    return out
