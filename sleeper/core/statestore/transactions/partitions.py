"""The three transactions on a table's partitions log, with their JSON, validation and effect."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from sleeper.core.exceptions import PartitionTreeError, SerDeError
from sleeper.core.partition import Partition, PartitionTree, validate_split
from sleeper.core.schema import Schema
from sleeper.core.statestore.exceptions import (
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PartitionNotLeafError,
    StateStoreError,
)
from sleeper.core.statestore.state import PartitionsState
from sleeper.core.statestore.transactions.log import LogType, TransactionType, list_field


class PartitionTransaction(ABC):
    """A transaction on the partitions log."""

    TYPE: ClassVar[TransactionType]
    LOG: ClassVar[LogType] = LogType.PARTITIONS

    @abstractmethod
    def validate(self, state: PartitionsState, schema: Schema) -> None:
        """Checks the transaction against the current partitions.

        Raises:
            StateStoreError: If it does not apply.
        """

    @abstractmethod
    def apply(self, state: PartitionsState, time: datetime) -> None:
        """Applies the transaction to the partitions. Never raises."""

    @abstractmethod
    def to_dict(self, schema: Schema) -> dict[str, Any]:
        """Sleeper's JSON body of the transaction."""

    @classmethod
    @abstractmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> PartitionTransaction:
        """Reads Sleeper's JSON body of the transaction."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InitialisePartitionsTransaction(PartitionTransaction):
    """Replaces every partition (an empty list clears them)."""

    TYPE: ClassVar[TransactionType] = TransactionType.INITIALISE_PARTITIONS
    partitions: tuple[Partition, ...]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        if self.partitions:
            try:
                PartitionTree(schema, self.partitions).validate()
            except PartitionTreeError as e:
                raise StateStoreError(f"invalid partition tree: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        state.clear()
        for p in self.partitions:
            state.put(p)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {"partitions": [p.to_dict(schema) for p in self.partitions]}

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> InitialisePartitionsTransaction:
        return cls(partitions=_partitions(schema, data, "partitions"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPartitionTransaction(PartitionTransaction):
    """Splits a leaf into two new leaves: applies only while the parent is still a leaf."""

    TYPE: ClassVar[TransactionType] = TransactionType.SPLIT_PARTITION
    parent: Partition
    new_children: tuple[Partition, Partition]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        existing = state.get(self.parent.id)
        if existing is None:
            raise PartitionNotFoundError(f"partition {self.parent.id} does not exist")
        if not existing.is_leaf:
            raise PartitionNotLeafError(f"partition {self.parent.id} is not a leaf: it has already been split")
        for child in self.new_children:
            if child.id in state:
                raise PartitionAlreadyExistsError(f"partition {child.id} already exists")
            if not child.is_leaf:
                raise StateStoreError(f"new child partition {child.id} must be a leaf")
        if existing.region != self.parent.region or existing.parent_id != self.parent.parent_id:
            raise StateStoreError(f"split parent {self.parent.id} does not match the stored partition")
        try:
            validate_split(schema, self.parent, self.new_children)
        except PartitionTreeError as e:
            raise StateStoreError(f"invalid split of partition {self.parent.id}: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        existing = state.get(self.parent.id)
        if existing is None or not existing.is_leaf:
            return
        state.put(self.parent)
        for child in self.new_children:
            state.put(child)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {"parent": self.parent.to_dict(schema), "newChildren": [c.to_dict(schema) for c in self.new_children]}

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> SplitPartitionTransaction:
        children = _partitions(schema, data, "newChildren")
        if len(children) != 2:
            raise SerDeError(f"newChildren must hold 2 partitions, has {len(children)}")
        return cls(
            parent=Partition.from_dict(schema, data.get("parent"), path="parent"),
            new_children=(children[0], children[1]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendPartitionTreeTransaction(PartitionTransaction):
    """Splits several leaves at once, possibly several levels deep (bulk import's pre-split)."""

    TYPE: ClassVar[TransactionType] = TransactionType.EXTEND_PARTITION_TREE
    update_partitions: tuple[Partition, ...]
    new_partitions: tuple[Partition, ...]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        for p in self.update_partitions:
            existing = state.get(p.id)
            if existing is None:
                raise PartitionNotFoundError(f"partition {p.id} does not exist")
            if not existing.is_leaf:
                raise PartitionNotLeafError(f"partition {p.id} is not a leaf: it has already been split")
            if p.is_leaf:
                raise StateStoreError(f"updated partition {p.id} must become a non-leaf")
        for p in self.new_partitions:
            if p.id in state:
                raise PartitionAlreadyExistsError(f"partition {p.id} already exists")
        trial = state.copy()
        self.apply(trial, datetime.now(tz=UTC))
        try:
            trial.tree(schema).validate()
        except PartitionTreeError as e:
            raise StateStoreError(f"extended partition tree is invalid: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        for p in (*self.update_partitions, *self.new_partitions):
            state.put(p)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {
            "updatePartitions": [p.to_dict(schema) for p in self.update_partitions],
            "newPartitions": [p.to_dict(schema) for p in self.new_partitions],
        }

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> ExtendPartitionTreeTransaction:
        return cls(
            update_partitions=_partitions(schema, data, "updatePartitions"),
            new_partitions=_partitions(schema, data, "newPartitions"),
        )


PARTITION_TRANSACTIONS: dict[TransactionType, type[PartitionTransaction]] = {
    t.TYPE: t for t in (InitialisePartitionsTransaction, SplitPartitionTransaction, ExtendPartitionTreeTransaction)
}


def _partitions(schema: Schema, data: Mapping[str, Any], key: str) -> tuple[Partition, ...]:
    return tuple(Partition.from_dict(schema, p, path=f"{key}[{i}]") for i, p in enumerate(list_field(data, key)))
