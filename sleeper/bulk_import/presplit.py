"""Extending a table's partition tree from a sample of the input before a bulk import.

When a table has fewer leaves than ``sleeper.table.bulk.import.min.leaf.partitions``, bulk import first splits leaves
until it has that many, choosing split points from the data it is about to import, and commits the new partitions in
one EXTEND_PARTITION_TREE transaction. As in Sleeper:

* only leaves holding at least ``sleeper.table.partition.splitting.min.distribution.percent`` of the rows an even
  spread of the input would give them are split (and the partitions split from them);
* the partition with the most rows is split next, at the median of its rows on the first row key dimension where the
  median lies above the smallest value;
* a partition with fewer than ``sleeper.table.partition.splitting.min.rows`` rows is not split;
* if no partition can be split before the minimum is reached, the job fails
  (:class:`~sleeper.bulk_import.exceptions.InsufficientDataForSplittingError`).

Sleeper sketches every input row; this port takes a uniform random sample of the row keys (Spark's ``sample``) and
scales counts by ``total rows / sampled rows``. Medians come from the sample exactly, so split points need no
sketch round trip and the children of a split get their rows by one comparison.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.bulk_import.exceptions import InsufficientDataForSplittingError
from sleeper.bulk_import.leaves import LeafTagger
from sleeper.core import IdSupplier, KeyValue, Partition, PartitionTree, Schema, random_id, split_partition
from sleeper.core.properties import TableProperties
from sleeper.core.properties import table as tp
from sleeper.core.statestore.transactions import ExtendPartitionTreeTransaction

__all__ = ["PreSplitSettings", "plan_partition_tree_extension", "sample_fraction"]

MIN_SAMPLE_ROWS = 100_000
"""The fewest rows sampled to choose split points (all rows if the input is smaller)."""

SAMPLE_ROWS_PER_LEAF = 1000
"""Rows sampled per leaf the table needs, if that is more than :data:`MIN_SAMPLE_ROWS`."""

MAX_SAMPLE_ROWS = 2_000_000
"""The most rows sampled (they are brought to the driver)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreSplitSettings:
    """How bulk import extends the partition tree.

    Attributes:
        min_leaf_partitions: ``sleeper.table.bulk.import.min.leaf.partitions``.
        min_rows: ``sleeper.table.partition.splitting.min.rows``: the fewest rows a partition needs to be split.
        min_distribution_percent: ``sleeper.table.partition.splitting.min.distribution.percent``.
        attempts: ``sleeper.table.bulk.import.partition.splitting.attempts``: tries to commit the extension when other
            processes change the tree at the same time.
    """

    min_leaf_partitions: int
    min_rows: int = 1000
    min_distribution_percent: int = 10
    attempts: int = 3

    @classmethod
    def from_table_properties(cls, properties: TableProperties) -> PreSplitSettings:
        """The settings of a table."""
        return cls(
            min_leaf_partitions=properties.get_int(tp.BULK_IMPORT_MIN_LEAF_PARTITION_COUNT),
            min_rows=properties.get_int(tp.PARTITION_SPLIT_MIN_ROWS),
            min_distribution_percent=properties.get_int(tp.PARTITION_SPLIT_MIN_DISTRIBUTION_PERCENT),
            attempts=properties.get_int(tp.BULK_IMPORT_PARTITION_SPLITTING_ATTEMPTS),
        )


def sample_fraction(total_rows: int, min_leaf_partitions: int) -> float:
    """The fraction of the input to sample for choosing split points (1.0 for small inputs)."""
    if total_rows <= 0:
        return 1.0
    wanted = min(MAX_SAMPLE_ROWS, max(MIN_SAMPLE_ROWS, SAMPLE_ROWS_PER_LEAF * min_leaf_partitions))
    return min(1.0, wanted / total_rows)


def plan_partition_tree_extension(
    schema: Schema,
    tree: PartitionTree,
    sample: pa.Table,
    *,
    total_rows: int,
    settings: PreSplitSettings,
    id_supplier: IdSupplier = random_id,
) -> ExtendPartitionTreeTransaction | None:
    """The EXTEND_PARTITION_TREE transaction that gives the table its minimum number of leaves.

    Args:
        schema: The table schema.
        tree: The current partition tree.
        sample: A uniform sample of the input's row keys (at least the row key columns).
        total_rows: The number of rows in the whole input; sampled counts are scaled by ``total_rows / len(sample)``.
        settings: The minimum number of leaves and the splitting thresholds.
        id_supplier: Makes the ids of new partitions.

    Returns:
        The transaction, or None if the tree already has enough leaves.

    Raises:
        InsufficientDataForSplittingError: If the data cannot be split into enough leaves.
    """
    leaves = tree.leaves
    if len(leaves) >= settings.min_leaf_partitions:
        return None
    sample = sample.select(list(schema.row_key_names)).combine_chunks()
    scale = total_rows / sample.num_rows if sample.num_rows else 0.0
    tags = LeafTagger(schema, tree).tag(sample)
    samples: dict[str, pa.Table] = {}
    for i, leaf in enumerate(leaves):
        samples[leaf.id] = sample.filter(pa.array(tags == i))
    expected = total_rows // len(leaves)
    min_share = math.ceil(expected * settings.min_distribution_percent / 100)
    heap: list[tuple[float, int, str]] = []
    counter = 0
    for leaf in leaves:
        estimate = samples[leaf.id].num_rows * scale
        if estimate >= min_share and estimate > 0:
            heap.append((-estimate, counter, leaf.id))
            counter += 1
    heapq.heapify(heap)
    current: dict[str, Partition] = {p.id: p for p in tree}
    original_leaves = {p.id for p in leaves}
    updated: list[str] = []
    created: list[str] = []
    leaf_count = len(leaves)
    while leaf_count < settings.min_leaf_partitions:
        if not heap:
            raise InsufficientDataForSplittingError(settings.min_leaf_partitions, leaf_count)
        negative_estimate, _, partition_id = heapq.heappop(heap)
        if -negative_estimate < settings.min_rows:
            continue
        partition = current[partition_id]
        rows = samples.pop(partition_id)
        found = _split_point(schema, rows)
        if found is None:
            continue
        dimension, point = found
        parent, left, right = split_partition(schema, partition, dimension, point, id_supplier=id_supplier)
        current[parent.id] = parent
        current[left.id] = left
        current[right.id] = right
        if parent.id in original_leaves:
            updated.append(parent.id)
        created.extend([left.id, right.id])
        column = rows.column(schema.row_key_fields[dimension].name)
        below = np.asarray(pc.less(column, pa.scalar(point, type=column.type)).to_numpy(zero_copy_only=False))
        for child, mask in ((left, below), (right, ~below)):
            samples[child.id] = rows.filter(pa.array(mask))
            heapq.heappush(heap, (-samples[child.id].num_rows * scale, counter, child.id))
            counter += 1
        leaf_count += 1
    return ExtendPartitionTreeTransaction(
        update_partitions=tuple(current[i] for i in updated),
        new_partitions=tuple(current[i] for i in created),
    )


def _split_point(schema: Schema, rows: pa.Table) -> tuple[int, KeyValue] | None:
    """The first dimension whose median lies above its smallest value, with that median."""
    if rows.num_rows < 2:
        return None
    for dimension, field in enumerate(schema.row_key_fields):
        column = rows.column(field.name)
        ordered = column.take(pc.sort_indices(column))
        smallest = ordered[0].as_py()
        median = ordered[rows.num_rows // 2].as_py()
        if smallest < median:
            return dimension, median
    return None
