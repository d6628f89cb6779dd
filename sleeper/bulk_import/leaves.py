"""Which leaf partition each row belongs to, vectorised, and how leaves map onto Spark partitions.

:class:`LeafTagger` walks the partition tree for a whole batch at once: every row starts at the root, and each round
moves every row that is still at a split partition to the child its key falls in, comparing the key column on the
split's dimension with the split point of each row's current partition (one Arrow comparison of two columns per
dimension and round). It takes as many rounds as the tree is deep, about log2(leaves) for a tree built from split
points, and works for any row key type and any split dimensions. Keys compare as Arrow compares them: integers
numerically, strings as UTF-8 bytes and byte arrays as unsigned bytes, Sleeper's default order.

:func:`spark_partition_keys` finds, for each leaf, an int whose Spark hash falls in that leaf's own shuffle
partition, so that ``repartition(n, key)`` gives exactly one Spark partition per leaf (Spark's hash partitioning is
``pmod(murmur3(key, seed 42), n)``).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.bulk_import.exceptions import BulkImportError
from sleeper.core import Partition, PartitionTree, Schema
from sleeper.io import key_arrow_type

__all__ = ["LeafTagger", "murmur3_hash_int", "spark_partition_keys"]

_MASK32 = 0xFFFFFFFF
SPARK_HASH_SEED = 42
"""The seed of Spark's ``hash`` function and of its hash partitioning."""


class LeafTagger:
    """Finds the leaf partition of every row of a batch, without a loop over rows.

    Args:
        schema: The table schema.
        tree: The table's partition tree.

    Attributes:
        leaves: The leaf partitions in key order; :meth:`tag` returns indexes into this list.

    Raises:
        BulkImportError: If a split partition does not have two children meeting at a point.
    """

    def __init__(self, schema: Schema, tree: PartitionTree) -> None:
        self.leaves: list[Partition] = tree.leaves
        self._schema = schema
        leaf_index = {p.id: i for i, p in enumerate(self.leaves)}
        order: list[Partition] = []
        queue = deque([tree.root])
        while queue:
            p = queue.popleft()
            order.append(p)
            if not p.is_leaf:
                queue.extend(tree.children(p.id))
        index = {p.id: i for i, p in enumerate(order)}
        n = len(order)
        self._is_leaf = np.array([p.is_leaf for p in order], dtype=bool)
        self._leaf_of_node = np.array([leaf_index.get(p.id, -1) for p in order], dtype=np.int32)
        self._left = np.full(n, -1, dtype=np.int32)
        self._right = np.full(n, -1, dtype=np.int32)
        self._dimension = np.full(n, -1, dtype=np.int32)
        key_fields = schema.row_key_fields
        values: dict[int, list[object]] = {}
        for i, p in enumerate(order):
            if p.is_leaf:
                continue
            if len(p.child_ids) != 2 or not 0 <= p.dimension < len(key_fields):
                raise BulkImportError(f"partition {p.id!r} is split but has no valid children or dimension")
            left, right = (tree.get(c) for c in p.child_ids)
            name = key_fields[p.dimension].name
            left_range, right_range = left.region.range(name), right.region.range(name)
            if left_range is None or right_range is None or left_range.canonical_max != right_range.canonical_min:
                raise BulkImportError(f"children of partition {p.id!r} do not meet at a point on {name!r}")
            self._left[i], self._right[i] = index[left.id], index[right.id]
            self._dimension[i] = p.dimension
            values.setdefault(p.dimension, [key_fields[p.dimension].primitive_type.minimum] * n)[i] = (
                right_range.canonical_min
            )
        self._splits: dict[int, pa.Array] = {
            d: pa.array(v, type=key_arrow_type(key_fields[d].primitive_type)) for d, v in sorted(values.items())
        }

    @property
    def leaf_count(self) -> int:
        """The number of leaf partitions."""
        return len(self.leaves)

    def tag(self, data: pa.RecordBatch | pa.Table) -> np.ndarray:
        """The leaf of every row.

        Args:
            data: Rows holding the row key columns (in any order; other columns are ignored).

        Returns:
            An int32 array with, for each row, the index of its leaf in :attr:`leaves`.

        Raises:
            KeyError: If a row key column the tree splits on is missing.
        """
        rows = data.num_rows
        node = np.zeros(rows, dtype=np.int32)
        if rows == 0 or self._is_leaf[0]:
            return self._leaf_of_node[node]
        columns = {d: data.column(self._schema.row_key_fields[d].name) for d in self._splits}
        while True:
            active = ~self._is_leaf[node]
            if not active.any():
                break
            dims = self._dimension[node]
            for d, splits in self._splits.items():
                selected = active & (dims == d)
                count = int(np.count_nonzero(selected))
                if count == 0:
                    continue
                column = columns[d]
                if count == rows:
                    current = node
                    keys = column
                else:
                    positions = np.flatnonzero(selected)
                    current = node[positions]
                    keys = column.take(pa.array(positions))
                bounds = splits.take(pa.array(current))
                if not bounds.type.equals(keys.type):
                    bounds = bounds.cast(keys.type)
                below = _to_bool(pc.less(keys, bounds))
                moved = np.where(below, self._left[current], self._right[current])
                if count == rows:
                    node = moved.astype(np.int32, copy=False)
                else:
                    node[positions] = moved
        return self._leaf_of_node[node]


def _to_bool(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def murmur3_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash`` of a 32-bit int (Murmur3 x86 32-bit of the int's 4 bytes), as a signed int.

    Args:
        value: A value in the int32 range.
        seed: The hash seed; Spark's ``hash`` and hash partitioning use 42.
    """
    k1 = (value & _MASK32) * 0xCC9E2D51 & _MASK32
    k1 = ((k1 << 15) | (k1 >> 17)) & _MASK32
    k1 = k1 * 0x1B873593 & _MASK32
    h1 = (seed & _MASK32) ^ k1
    h1 = ((h1 << 13) | (h1 >> 19)) & _MASK32
    h1 = (h1 * 5 + 0xE6546B64) & _MASK32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def spark_partition_keys(partitions: int) -> np.ndarray:
    """For each Spark partition, the smallest non-negative int that Spark's hash partitioning sends there.

    Repartitioning by a column holding ``keys[i]`` for the rows of leaf ``i`` puts each leaf in its own partition.

    Args:
        partitions: The number of Spark partitions (the number of leaves).

    Returns:
        An int32 array of length ``partitions``.

    Raises:
        ValueError: If ``partitions`` is not positive.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be positive, got {partitions}")
    keys = np.full(partitions, -1, dtype=np.int64)
    missing = partitions
    candidate = 0
    while missing:
        bucket = murmur3_hash_int(candidate) % partitions
        if keys[bucket] < 0:
            keys[bucket] = candidate
            missing -= 1
        candidate += 1
    return keys.astype(np.int32)
