"""Which of a table's rows each referenced file gives: all of its rows, or only those in its references' partitions.

An Iceberg data file cannot be limited to a key range, while a Sleeper reference can: a file referenced from
several partitions (one_reference_per_leaf ingest, or a split that turned one reference into two) belongs to the
table only within the regions of the partitions referencing it, and once a compaction has taken some of those
references away, the file still holds rows that now live in the compaction's output. Publishing such a file whole
would show those rows twice.

So each referenced file is checked:

* **whole**: a reference says the file only holds data for its partition, or every row group of the file, by the
  minimum and maximum of its row key columns, lies within the union of the referencing partitions (partitions split
  on one dimension at a time, so children cover their parent exactly: a row group is covered if a referencing
  partition is an ancestor of all the leaves it overlaps). The file is published as it is;
* **partial**: some row group may hold keys outside every referencing partition. Only the rows in those partitions
  belong to the table, so the publisher writes a trimmed copy holding exactly those (see :mod:`sleeper.iceberg.trim`).

A row group without statistics for a row key field is taken to span that whole dimension, which can only make a file
partial, never wrongly whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from sleeper.core import KeyValue, Partition, PartitionTree, Range, Region, Schema
from sleeper.core.statestore import AllReferencesToAFile
from sleeper.io import SortedFileMetadata

__all__ = ["FilePlan", "covered", "plan_file", "plan_files", "row_group_box"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FilePlan:
    """How one referenced file is published.

    Attributes:
        filename: The file, as the state store records it.
        partition_ids: The partitions referencing it, sorted.
        whole: Whether every row of the file belongs to the table (published as it is); otherwise only its rows in
            the referencing partitions do (published as a trimmed copy).
        rows: The rows the references count (exact or estimated, as the state store has them).
    """

    filename: str
    partition_ids: tuple[str, ...]
    whole: bool
    rows: int


def row_group_box(schema: Schema, mins: Mapping[str, KeyValue], maxs: Mapping[str, KeyValue]) -> Region:
    """The region a row group's row key statistics bound (a field without statistics is unconstrained)."""
    ranges = []
    for f in schema.row_key_fields:
        low, high = mins.get(f.name), maxs.get(f.name)
        if low is None or high is None:
            continue
        ranges.append(Range(field=f, min=low, max=high, max_inclusive=True))
    return Region.of(ranges)


def covered(tree: PartitionTree, referencing: frozenset[str], box: Region) -> bool:
    """Whether every key in ``box`` lies in a partition of ``referencing``.

    A referencing partition covers its whole region; any other partition covers the box only through its children
    that overlap it, and a leaf that overlaps it and is not referencing leaves part of the box uncovered.
    """

    def cover(partition: Partition) -> bool:
        if partition.id in referencing:
            return True
        if partition.is_leaf or not partition.child_ids:
            return False
        return all(cover(child) for child in tree.children(partition.id) if child.region.overlaps(box))

    return cover(tree.root)


def plan_file(
    entry: AllReferencesToAFile,
    tree: PartitionTree,
    metadata: Callable[[str], SortedFileMetadata],
) -> FilePlan:
    """How a referenced file is published (see the module docs).

    Args:
        entry: The file with its references (at least one).
        tree: The table's partitions.
        metadata: Reads a file's footer statistics (only called when no reference says the file is within its
            partition).

    Raises:
        ValueError: If the file has no reference.
    """
    references = list(entry.references.values())
    if not references:
        raise ValueError(f"{entry.filename} has no reference: it is not part of the table")
    ids = tuple(sorted(r.partition_id for r in references))
    rows = sum(r.number_of_rows for r in references)
    if any(r.only_contains_data_for_this_partition for r in references) or tree.root.id in ids:
        return FilePlan(filename=entry.filename, partition_ids=ids, whole=True, rows=rows)
    schema = tree.schema
    referencing = frozenset(ids)
    groups = metadata(entry.filename).row_groups
    whole = all(covered(tree, referencing, row_group_box(schema, g.min, g.max)) for g in groups if g.rows > 0)
    return FilePlan(filename=entry.filename, partition_ids=ids, whole=whole, rows=rows)


def plan_files(
    entries: Iterable[AllReferencesToAFile],
    tree: PartitionTree,
    metadata: Callable[[str], SortedFileMetadata],
) -> list[FilePlan]:
    """How every referenced file is published, in file name order (unreferenced files are not part of the table)."""
    return [plan_file(entry, tree, metadata) for entry in sorted(entries, key=lambda e: e.filename) if entry.references]
