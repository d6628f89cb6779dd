"""Splitting a local table's partitions while its files stay on the parent: queries still return every row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.ingest.standard import ingest_batches
from sleeper.query.executor import table_query
from sleeper.runtime.local.instance import LocalInstance
from sleeper.splitting import (
    PARTITION_SPLITTING_JOB_QUEUE,
    SplitOutcome,
    find_partitions_to_split,
    run_find_partitions_to_split,
    run_split_job_message,
)

pytestmark = pytest.mark.integration

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(row_key_fields=(KEY,), value_fields=(Field("value", PrimitiveType.STRING),))


def _table(tmp_path: Path, threshold: int) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.partition.splitting.threshold": str(threshold),
            "sleeper.table.partition.splitting.commit.async": "false",
        },
    )
    return instance, table


def _rows(keys: np.ndarray) -> pa.RecordBatch:
    return pa.record_batch(
        {"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys.tolist()], pa.string())}
    )


def _ingest(table: Table[LocalInstance], keys: np.ndarray) -> None:
    ingest_batches(table.schema, table.properties, table.state_store, table.data_prefix, [_rows(keys)])


def _sorted_keys(result: pa.Table) -> list[int]:
    return sorted(result.column("key").to_pylist())


def _split_once(instance: LocalInstance, table: Table[LocalInstance]) -> SplitOutcome:
    run_find_partitions_to_split(instance, table.table_id)
    queue = instance.queue(PARTITION_SPLITTING_JOB_QUEUE)
    [message] = queue.receive(10)
    result = run_split_job_message(instance, message.body)
    queue.delete(message.receipt_handle)
    return result.outcome


def should_return_every_row_after_a_split_while_the_files_stay_on_the_parent(tmp_path: Path) -> None:
    # Given two files on the root, holding more rows than the threshold
    instance, table = _table(tmp_path, threshold=1000)
    rng = np.random.default_rng(7)
    first, second = rng.integers(0, 1_000_000, 3000), rng.integers(0, 1_000_000, 3000)
    _ingest(table, first)
    _ingest(table, second)
    references_before = table.state_store.file_references()

    # When
    outcome = _split_once(instance, table)

    # Then the root is split at about the median, its references are unchanged, and queries see every row
    assert outcome is SplitOutcome.SPLIT
    tree = table.state_store.partition_tree()
    left, right = tree.children("root")
    point = left.region.range("key").max
    everything = np.concatenate([first, second])
    assert abs(float(np.mean(everything < point)) - 0.5) < 0.05
    assert table.state_store.file_references() == references_before
    assert _sorted_keys(table_query(table)) == sorted(everything.tolist())
    below = table_query(table, regions=[Region({"key": Range(field=KEY, min=0, max=point)})])
    assert _sorted_keys(below) == sorted(everything[everything < point].tolist())


def should_ingest_into_the_children_after_a_split_and_query_everything(tmp_path: Path) -> None:
    # Given a split root
    instance, table = _table(tmp_path, threshold=1000)
    rng = np.random.default_rng(11)
    before = rng.integers(0, 1_000_000, 4000)
    _ingest(table, before)
    assert _split_once(instance, table) is SplitOutcome.SPLIT

    # When more rows arrive
    after = rng.integers(0, 1_000_000, 4000)
    _ingest(table, after)

    # Then they are referenced on both children, and every row is returned
    leaves = {p.id for p in table.state_store.leaf_partitions()}
    on_leaves = [r for r in table.state_store.file_references() if r.partition_id in leaves]
    assert {r.partition_id for r in on_leaves} == leaves
    assert _sorted_keys(table_query(table)) == sorted(np.concatenate([before, after]).tolist())
    # and a file shared by both children is not counted towards splitting them
    assert find_partitions_to_split(table) == []
