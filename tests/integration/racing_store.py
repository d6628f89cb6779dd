"""A state store through which another writer's transactions land at a chosen moment of a caller's work."""

from __future__ import annotations

from typing import Any

from sleeper.compaction.creation import pre_split_file_references
from sleeper.core.partition import split_partition
from sleeper.core.schema import KeyValue
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.statestore.store import StateStore


class SplitRightAfterCommit:
    """A state store through which, right after a commit lands, another writer splits the root partition and moves
    every file's reference on it to the new leaves (as a compaction job creation's pre-split does)."""

    def __init__(self, store: StateStore, writer: StateStore, *, split_point: KeyValue) -> None:
        self._store = store
        self._writer = writer
        self._split_point = split_point
        self.split_done = False

    def commit(self, transaction: Any, **kwargs: Any) -> Any:
        result = self._store.commit(transaction, **kwargs)
        root = self._writer.partition_tree().root
        parent, left, right = split_partition(self._writer.schema, root, 0, self._split_point)
        self._writer.commit(SplitPartitionTransaction(parent=parent, new_children=(left, right)))
        self.split_done = pre_split_file_references(self._writer) == 1
        return result

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)
