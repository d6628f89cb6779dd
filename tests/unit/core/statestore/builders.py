"""Builders of partitions and file references for state store tests."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime

from sleeper.core.partition import Partition, PartitionTree, split_partition
from sleeper.core.range import Region
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference

LONG_KEY_SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
STRING_KEY_SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)])
TIME = datetime(2024, 3, 26, 9, 43, 1, tzinfo=UTC)


class PartitionsBuilder:
    """Builds a partition tree with chosen ids, as Sleeper's ``PartitionsBuilder`` does in its tests."""

    def __init__(self, schema: Schema, root_id: str = "root") -> None:
        self.schema = schema
        self._by_id: dict[str, Partition] = {
            root_id: Partition(id=root_id, parent_id=None, region=Region.whole(schema))
        }

    def split(
        self, parent_id: str, left_id: str, right_id: str, point: KeyValue, dimension: int = 0
    ) -> PartitionsBuilder:
        """Splits a leaf into two children with the given ids at a point."""
        ids: Iterator[str] = iter([left_id, right_id])
        parent, left, right = split_partition(
            self.schema, self._by_id[parent_id], dimension, point, id_supplier=lambda: next(ids)
        )
        self._by_id.update({parent.id: parent, left.id: left, right.id: right})
        return self

    def get(self, partition_id: str) -> Partition:
        """A partition by id."""
        return self._by_id[partition_id]

    def partitions(self) -> list[Partition]:
        """Every partition, in the order they were made."""
        return list(self._by_id.values())

    def tree(self) -> PartitionTree:
        """The partitions as a tree."""
        return PartitionTree(self.schema, self._by_id.values())


def reference(
    filename: str,
    partition_id: str = "root",
    rows: int = 100,
    *,
    job_id: str | None = None,
    time: datetime | None = None,
) -> FileReference:
    """A file reference that holds only data of its partition."""
    return FileReference(
        filename=filename, partition_id=partition_id, number_of_rows=rows, job_id=job_id, last_update_time=time
    )


def file_with(*references: FileReference) -> AllReferencesToAFile:
    """A new file with its references (no update time: as a transaction carries it)."""
    return AllReferencesToAFile(filename=references[0].filename, references={r.partition_id: r for r in references})


def nested_partitions(schema: Schema) -> list[Partition]:
    """root -> L, R; L -> LL, LR; R -> RL, RR; LR -> LRL, LRR (split on the first row key, a long)."""
    return (
        PartitionsBuilder(schema)
        .split("root", "L", "R", 0)
        .split("L", "LL", "LR", -100)
        .split("R", "RL", "RR", 100)
        .split("LR", "LRL", "LRR", -50)
        .partitions()
    )


def random_references(rng: random.Random, partitions: list[Partition], count: int, prefix: str) -> list[FileReference]:
    """References of ``count`` files on random partitions (leaves mostly), some files on two leaves, some assigned to
    jobs, row counts with ties, exact or not, wholly in their partition or not."""
    ids = [p.id for p in partitions]
    leaves = [p.id for p in partitions if p.is_leaf]
    out: list[FileReference] = []
    for i in range(count):
        name = f"{prefix}/data/f{i}.parquet"
        where = rng.sample(leaves, 2) if rng.random() < 0.15 else [rng.choice(leaves if rng.random() < 0.9 else ids)]
        for pid in where:
            out.append(
                FileReference(
                    filename=name,
                    partition_id=pid,
                    number_of_rows=rng.choice([0, 10, 10, 20, 100, rng.randint(0, 400)]),
                    job_id=rng.choice(["job-a", "job-b", "job-c"]) if rng.random() < 0.15 else None,
                    count_approximate=rng.random() < 0.3,
                    only_contains_data_for_this_partition=rng.random() < 0.7,
                )
            )
    return out
