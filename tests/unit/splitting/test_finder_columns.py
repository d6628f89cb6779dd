"""The split finder over the leaves' references as columns (``split_jobs_from_columns``, what the scheduled finder
runs) must find exactly the jobs the finder over reference objects finds (``split_jobs``): the same leaves, in the
same order, naming the same files in the same order."""

from __future__ import annotations

import random

import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.state import ReferenceColumns
from sleeper.splitting.finder import split_jobs, split_jobs_from_columns
from tests.unit.core.statestore.builders import nested_partitions, random_references

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
TABLE_ID = "table-1"


def _columns(references: list[FileReference], leaf_ids: set[str]) -> ReferenceColumns:
    columns = ReferenceColumns()
    for ref in references:
        if ref.partition_id in leaf_ids:
            columns.append(ref)
    return columns


@pytest.mark.parametrize("seed", range(60))
def should_find_from_columns_the_jobs_found_from_objects(seed: int) -> None:
    # Given references in a random state order, a random threshold and a random most files per job
    rng = random.Random(seed)
    partitions = nested_partitions(SCHEMA)
    leaves = [p for p in partitions if p.is_leaf]
    rng.shuffle(leaves)
    references = random_references(rng, partitions, rng.randint(0, 80), f"file:///data/{TABLE_ID}")
    threshold = rng.choice([0, 1, 50, 200, 600, 10**9])
    max_files = rng.choice([1, 2, 3, 100])

    # When the jobs are found from objects and from columns
    expected = split_jobs(TABLE_ID, leaves, references, threshold=threshold, max_files=max_files)
    found = split_jobs_from_columns(
        TABLE_ID, leaves, _columns(references, {p.id for p in leaves}), threshold=threshold, max_files=max_files
    )

    # Then the same jobs, in the same order, naming the same files in the same order
    assert [(j.partition.id, j.filenames) for j in found] == [(j.partition.id, j.filenames) for j in expected]


def should_name_the_files_with_most_rows_earlier_first_on_ties() -> None:
    # Given a leaf over the threshold with four files wholly in it, two tied on rows, and one shared with another leaf
    leaf = next(p for p in nested_partitions(SCHEMA) if p.id == "LL")
    sizes = {"a": 10, "b": 30, "c": 30, "d": 5}
    refs = [FileReference(filename=name, partition_id="LL", number_of_rows=rows) for name, rows in sizes.items()]
    refs.append(
        FileReference(filename="e", partition_id="LL", number_of_rows=500, only_contains_data_for_this_partition=False)
    )
    # When the jobs are found with at most two files per job
    jobs = split_jobs_from_columns(TABLE_ID, [leaf], _columns(refs, {"LL"}), threshold=75, max_files=2)
    # Then the leaf's job names the two biggest files wholly in it, the earlier of the tie first
    assert [(j.partition.id, j.filenames) for j in jobs] == [("LL", ("b", "c"))]


def should_refuse_a_most_files_per_job_below_one() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        split_jobs_from_columns(TABLE_ID, [], ReferenceColumns(), threshold=1, max_files=0)
