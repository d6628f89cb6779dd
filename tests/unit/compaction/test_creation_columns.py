"""Job creation plans from the state's columns (``plan_jobs_from_columns`` over ``StateStore.reference_columns``)
and pre-splits from the references on non-leaf partitions only (``StateStore.files_on_partitions``). Both must do
exactly what planning every reference as an object does (``files_in_leaf_partitions`` then ``plan_jobs``; the
pre-split over ``file_references``), also over a state loaded from a snapshot and changed since."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker
from sleeper.compaction.creation import (
    _split_requests,
    compaction_output_file,
    create_compaction_jobs,
    limit_jobs,
    plan_jobs,
    plan_jobs_from_columns,
    pre_split_file_references,
)
from sleeper.compaction.strategies import BASIC_STRATEGY, SIZE_RATIO_STRATEGY, files_in_leaf_partitions
from sleeper.core.partition import Partition
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.state import ReferenceColumns
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    SplitFileReferenceRequest,
)
from sleeper.statestore.arrow_files import ArrowFileEntries
from sleeper.statestore.store import StateStore
from tests.unit.core.statestore.builders import nested_partitions, random_references

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
TABLE_ID = "table-1"
PREFIX = "file:///data/table-1"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def _partitions() -> list[Partition]:
    return nested_partitions(SCHEMA)


def _properties(rng: random.Random) -> TableProperties:
    props = {
        "sleeper.table.compaction.strategy.class": rng.choice([SIZE_RATIO_STRATEGY, BASIC_STRATEGY]),
        "sleeper.table.compaction.files.batch.size": str(rng.randint(1, 6)),
        "sleeper.table.compaction.strategy.sizeratio.ratio": str(rng.randint(1, 4)),
        "sleeper.table.partition.splitting.threshold": str(rng.choice([1, 50, 300, 10**9])),
        "sleeper.table.compaction.job.creation.limit": str(rng.choice([3, 100_000])),
    }
    if rng.random() < 0.5:
        props["sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition"] = str(rng.randint(1, 3))
    return TableProperties(InstanceProperties(), props)


def _random_references(rng: random.Random, partitions: list[Partition], count: int) -> list[FileReference]:
    return random_references(rng, partitions, count, PREFIX)


@pytest.mark.parametrize("seed", range(40))
def should_plan_from_columns_as_plan_jobs_plans_from_objects(seed: int) -> None:
    # Given references in a random state order, and random strategy settings
    rng = random.Random(seed)
    partitions = _partitions()
    references = _random_references(rng, partitions, rng.randint(0, 60))
    properties = _properties(rng)
    leaf_ids = [p.id for p in partitions if p.is_leaf]
    columns = ReferenceColumns()
    for ref in references:
        if ref.partition_id in leaf_ids:
            columns.append(ref)

    for compact_all in (False, True):
        # When planned as objects and as columns
        expected = plan_jobs(properties, files_in_leaf_partitions(references, partitions), compact_all=compact_all)
        planned = plan_jobs_from_columns(properties, leaf_ids, columns, compact_all=compact_all)

        # Then the same jobs, in the same order, with the same files in the same order
        assert [(p.partition_id, p.filenames) for p in planned] == [(p.partition_id, p.filenames) for p in expected]


@dataclass
class _Table:
    """A table (``sleeper.statestore.tables.SleeperTable``) over a state store that loads snapshots."""

    state_store: StateStore
    properties: TableProperties
    table_id: str = TABLE_ID
    schema: Schema = SCHEMA
    data_prefix: str = PREFIX


def _old_split_requests(store: StateStore) -> list[SplitFileReferenceRequest]:
    """The pre-split planned over every reference as an object (before the index by partition was used)."""
    non_leaf = {p.id: p for p in store.partitions() if not p.is_leaf}
    references = store.file_references()
    existing = {(r.filename, r.partition_id) for r in references}
    out = []
    for ref in references:
        parent = non_leaf.get(ref.partition_id)
        if parent is None or ref.job_id is not None:
            continue
        if any((ref.filename, child) in existing for child in parent.child_ids):
            continue
        out.append(
            SplitFileReferenceRequest(
                old_reference=ref, new_references=tuple(ref.split_to(c) for c in parent.child_ids)
            )
        )
    return out


def _assignment(rng: random.Random, store: StateStore, tag: str) -> AssignJobIdsTransaction:
    free = [r for r in store.file_references() if r.job_id is None]
    picked = rng.sample(free, min(len(free), rng.randint(1, 12)))
    requests = [
        AssignJobIdRequest(job_id=f"{tag}-{i}", partition_id=r.partition_id, filenames=(r.filename,))
        for i, r in enumerate(picked)
    ]
    return AssignJobIdsTransaction(requests=tuple(requests))


@pytest.mark.parametrize("seed", range(20))
def should_create_the_jobs_planning_every_reference_would_over_a_loaded_and_changed_state(seed: int) -> None:
    # Given a table whose files state was saved as a snapshot and changed since: files added, files of the snapshot
    # and added since assigned to jobs (so a store loading it holds columns, files replaced and files assigned)
    rng = random.Random(seed)
    backend, filesystem = InMemoryStateStoreBackend(), in_memory_filesystem()

    def store() -> StateStore:
        return StateStore(
            schema=SCHEMA, table_id=TABLE_ID, backend=backend, filesystem=filesystem, snapshot_base_path="data/t"
        )

    writer = store()
    partitions = _partitions()
    writer.initialise(partitions)
    references = _random_references(rng, partitions, 80)
    unassigned = [replace(r, job_id=None) for r in references]
    writer.add_files(unassigned[:60])
    writer.commit(_assignment(rng, writer, "before"))
    snapshots = writer.snapshot_store
    assert snapshots is not None
    writer.refresh()
    snapshots.save_files(writer.files_state(), writer.files_head.last_transaction_number, NOW)
    snapshots.save_partitions(writer.partitions_state(), writer.partitions_head.last_transaction_number, NOW)
    writer.add_files(unassigned[60:])
    writer.commit(_assignment(rng, writer, "after"))
    properties = _properties(rng)

    # When the pre-split is planned, Then as over every reference
    loaded = store()
    loaded.refresh()
    assert isinstance(loaded.files_state().entries, ArrowFileEntries)
    assert _split_requests(loaded) == _old_split_requests(store())
    while pre_split_file_references(loaded):
        pass

    # When jobs are created
    compact_all = rng.random() < 0.3
    reference = store()
    leaves = files_in_leaf_partitions(reference.file_references(), reference.partitions())
    planned = plan_jobs(properties, leaves, compact_all=compact_all)
    running = len({r.job_id for r in reference.file_references() if r.job_id is not None})
    expected = limit_jobs(
        planned, properties.get_int("sleeper.table.compaction.job.creation.limit"), running, random.Random(1)
    )
    counter = iter(range(1, 1000))
    supplier: Callable[[], str] | None = (lambda: f"job-{next(counter)}") if rng.random() < 0.5 else None
    result = create_compaction_jobs(
        _Table(state_store=loaded, properties=properties),
        InMemoryQueues().queue("CompactionJobQ"),
        InMemoryCompactionJobTracker(),
        compact_all=compact_all,
        job_id_supplier=supplier,
        rng=random.Random(1),
        clock=lambda: NOW,
    )

    # Then the jobs are those planned over every reference, their files are assigned to them, and each writes under
    # its partition
    assert [(j.partition_id, j.input_files) for j in result.jobs] == [(p.partition_id, p.filenames) for p in expected]
    after = {(r.filename, r.partition_id): r.job_id for r in store().file_references()}
    for job in result.jobs:
        assert {after[(name, job.partition_id)] for name in job.input_files} == {job.job_id}
        assert job.output_file == compaction_output_file(PREFIX, job.partition_id, job.job_id)
