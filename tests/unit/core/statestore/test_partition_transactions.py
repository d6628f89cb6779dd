"""Validation and effect of the three partitions-log transactions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sleeper.core.partition import Partition
from sleeper.core.range import Range, Region
from sleeper.core.statestore.exceptions import (
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PartitionNotLeafError,
    StateStoreError,
)
from sleeper.core.statestore.state import PartitionsState
from sleeper.core.statestore.transactions.partitions import (
    ExtendPartitionTreeTransaction,
    InitialisePartitionsTransaction,
    SplitPartitionTransaction,
)
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA, TIME, PartitionsBuilder

SCHEMA = LONG_KEY_SCHEMA


def _initialised(builder: PartitionsBuilder) -> PartitionsState:
    state = PartitionsState()
    InitialisePartitionsTransaction(partitions=tuple(builder.partitions())).apply(state, TIME)
    return state


def should_initialise_partitions_replacing_any_existing_ones() -> None:
    # Given partitions split at 10
    state = _initialised(PartitionsBuilder(SCHEMA).split("root", "L", "R", 10))
    new = PartitionsBuilder(SCHEMA, root_id="new-root").partitions()
    transaction = InitialisePartitionsTransaction(partitions=tuple(new))
    # When the table is initialised again with one partition
    transaction.validate(state, SCHEMA)
    transaction.apply(state, TIME)
    # Then only that partition exists
    assert state.partitions() == new


def should_clear_partitions_with_an_empty_initialisation() -> None:
    # Given partitions
    state = _initialised(PartitionsBuilder(SCHEMA))
    # When initialised with none
    InitialisePartitionsTransaction(partitions=()).apply(state, TIME)
    # Then there are none
    assert len(state) == 0


def should_refuse_initialising_with_an_invalid_tree() -> None:
    # Given a tree whose right child is missing
    builder = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    partitions = [p for p in builder.partitions() if p.id != "R"]
    # When / Then
    with pytest.raises(StateStoreError, match="invalid partition tree"):
        InitialisePartitionsTransaction(partitions=tuple(partitions)).validate(PartitionsState(), SCHEMA)


def should_split_a_leaf_partition() -> None:
    # Given a single root
    state = _initialised(PartitionsBuilder(SCHEMA))
    split = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    transaction = SplitPartitionTransaction(parent=split.get("root"), new_children=(split.get("L"), split.get("R")))
    # When it is split
    transaction.validate(state, SCHEMA)
    transaction.apply(state, TIME)
    # Then the tree has two leaves meeting at 10
    tree = state.tree(SCHEMA)
    tree.validate()
    assert [leaf.id for leaf in tree.leaves] == ["L", "R"]
    assert tree.leaf_for_key((10,)).id == "R"


def should_refuse_splitting_a_partition_that_was_already_split() -> None:
    # Given root already split into L and R
    first = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    state = _initialised(first)
    second = PartitionsBuilder(SCHEMA).split("root", "L2", "R2", 20)
    transaction = SplitPartitionTransaction(
        parent=second.get("root"), new_children=(second.get("L2"), second.get("R2"))
    )
    # When / Then a second split of root is refused, and applying it changes nothing
    with pytest.raises(PartitionNotLeafError, match="already been split"):
        transaction.validate(state, SCHEMA)
    before = state.copy()
    transaction.apply(state, TIME)
    assert state == before


def should_refuse_splitting_a_missing_partition() -> None:
    # Given a single root
    state = _initialised(PartitionsBuilder(SCHEMA))
    other = PartitionsBuilder(SCHEMA, root_id="other").split("other", "L", "R", 10)
    transaction = SplitPartitionTransaction(parent=other.get("other"), new_children=(other.get("L"), other.get("R")))
    # When / Then
    with pytest.raises(PartitionNotFoundError):
        transaction.validate(state, SCHEMA)


def should_refuse_a_split_whose_child_id_is_taken() -> None:
    # Given root split into L and R
    state = _initialised(PartitionsBuilder(SCHEMA).split("root", "L", "R", 10))
    split = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10).split("R", "L", "RR", 20)
    transaction = SplitPartitionTransaction(parent=split.get("R"), new_children=(split.get("L"), split.get("RR")))
    # When / Then
    with pytest.raises(PartitionAlreadyExistsError):
        transaction.validate(state, SCHEMA)


def should_refuse_a_split_whose_parent_differs_from_the_stored_one() -> None:
    # Given a single root
    state = _initialised(PartitionsBuilder(SCHEMA))
    split = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    field = SCHEMA.row_key_fields[0]
    parent = replace(split.get("root"), region=Region({"key": Range(field=field, min=0)}))
    # When / Then
    with pytest.raises(StateStoreError, match="does not match"):
        SplitPartitionTransaction(parent=parent, new_children=(split.get("L"), split.get("R"))).validate(state, SCHEMA)


def should_refuse_a_split_with_children_that_do_not_meet() -> None:
    # Given a single root, and children that leave a gap between 10 and 20
    state = _initialised(PartitionsBuilder(SCHEMA))
    split = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    field = SCHEMA.row_key_fields[0]
    right: Partition = replace(split.get("R"), region=Region({"key": Range(field=field, min=20)}))
    # When / Then
    with pytest.raises(StateStoreError, match="invalid split"):
        SplitPartitionTransaction(parent=split.get("root"), new_children=(split.get("L"), right)).validate(
            state, SCHEMA
        )


def should_extend_the_tree_several_levels_deep() -> None:
    # Given root split into L and R
    state = _initialised(PartitionsBuilder(SCHEMA).split("root", "L", "R", 10))
    extended = (
        PartitionsBuilder(SCHEMA).split("root", "L", "R", 10).split("L", "LL", "LR", 0).split("LR", "LRL", "LRR", 5)
    )
    transaction = ExtendPartitionTreeTransaction(
        update_partitions=(extended.get("L"),),
        new_partitions=tuple(extended.get(i) for i in ("LL", "LR", "LRL", "LRR")),
    )
    # When the tree is extended
    transaction.validate(state, SCHEMA)
    transaction.apply(state, TIME)
    # Then it has the new leaves in key order
    tree = state.tree(SCHEMA)
    tree.validate()
    assert [leaf.id for leaf in tree.leaves] == ["LL", "LRL", "LRR", "R"]


def should_refuse_extending_from_a_non_leaf_or_onto_a_taken_id() -> None:
    # Given root split into L and R, L split into LL and LR
    base = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10).split("L", "LL", "LR", 0)
    state = _initialised(base)
    again = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10).split("L", "X", "Y", 5)
    from_non_leaf = ExtendPartitionTreeTransaction(
        update_partitions=(again.get("L"),), new_partitions=(again.get("X"), again.get("Y"))
    )
    taken = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10).split("R", "LL", "RR", 20)
    onto_taken = ExtendPartitionTreeTransaction(
        update_partitions=(taken.get("R"),), new_partitions=(taken.get("LL"), taken.get("RR"))
    )
    # When / Then
    with pytest.raises(PartitionNotLeafError):
        from_non_leaf.validate(state, SCHEMA)
    with pytest.raises(PartitionAlreadyExistsError):
        onto_taken.validate(state, SCHEMA)


def should_refuse_an_extension_that_leaves_the_tree_invalid() -> None:
    # Given a single root, and an extension that marks root split but adds only one child
    state = _initialised(PartitionsBuilder(SCHEMA))
    split = PartitionsBuilder(SCHEMA).split("root", "L", "R", 10)
    transaction = ExtendPartitionTreeTransaction(
        update_partitions=(split.get("root"),), new_partitions=(split.get("L"),)
    )
    # When / Then
    with pytest.raises(StateStoreError, match="invalid"):
        transaction.validate(state, SCHEMA)
