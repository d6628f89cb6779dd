"""A query planned while a partition splits and its references move to the new leaves must still read every row: the
planner reads the files before the partitions (``plan_table_query``), and partitions are only ever added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from sleeper.compaction.creation import pre_split_file_references
from sleeper.core.partition import PartitionTree, split_partition
from sleeper.core.query import Query
from sleeper.core.range import Region
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.io.arrow_types import arrow_schema
from sleeper.query.executor import plan_table_query, processing_config, run_leaf_query
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.store import StateStore
from tests.integration.runtime.crash_harness import SCHEMA


class _SplitAfterFirstRead:
    """A table's state store through which a split and the pre-split of its references land right after the planner's
    first read of the state (partitions or files, whichever it reads first)."""

    def __init__(self, store: StateStore, writer: StateStore) -> None:
        self._store = store
        self._writer = writer
        self.split_done = False

    def _then_split(self, value: Any) -> Any:
        if not self.split_done:
            self.split_done = True
            root = self._writer.partition_tree().root
            parent, left, right = split_partition(SCHEMA, root, 0, 50)
            self._writer.commit(SplitPartitionTransaction(parent=parent, new_children=(left, right)))
            assert pre_split_file_references(self._writer) == 1
        return value

    def partition_tree(self) -> PartitionTree:
        return self._then_split(self._store.partition_tree())

    def partition_files(self) -> Any:
        return self._then_split(self._store.partition_files())

    def file_references(self) -> Any:
        return self._then_split(self._store.file_references())


def should_plan_every_row_when_a_split_and_its_pre_split_land_between_the_planners_reads(tmp_path: Path) -> None:
    # Given a table of one partition holding one file of 100 rows
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA)
    keys = pa.array(range(100), pa.int64())
    table.ingest(pa.table({"key": keys, "value": keys}), job_id="rows")
    reader = LocalInstance(instance.directory)
    store = _SplitAfterFirstRead(
        reader.table("t").state_store, LocalInstance(instance.directory).table("t").state_store
    )
    # When a query of every row is planned while the root splits at 50 and the file's reference moves to the halves
    sub_queries = plan_table_query(
        Query(query_id="q", table_name="t", regions=(Region.whole(SCHEMA),)), store, table_id=table.table_id
    )
    # Then the split landed during planning, and the sub-queries still read all 100 rows, once each
    assert store.split_done
    rows = pa.Table.from_batches(
        [
            batch
            for q in sub_queries
            for batch in run_leaf_query(q, SCHEMA, processing_config(table.properties, SCHEMA), now_ms=0, engine=None)
        ],
        schema=arrow_schema(SCHEMA),
    )
    assert sorted(rows["key"].to_pylist()) == list(range(100))
