"""Test doubles for compaction execution, commits and tasks: tables and an instance held in memory."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker, InMemoryTaskTracker
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.partition import Partition, partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AssignJobIdRequest, AssignJobIdsTransaction
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.parquet import SortedFileWriter, WrittenFile, read_sorted
from sleeper.io.sort import sort_table
from sleeper.statestore.store import StateStore

QUEUES: dict[str, tuple[bool, int, int]] = {
    "CompactionJobQ": (False, 900, 3),
    "CompactionCommitQ": (False, 900, 3),
    "StateStoreCommitterQ.fifo": (True, 900, 1),
}


@dataclass
class FakeTable:
    """A table on an in-memory state store (implements ``sleeper.statestore.tables.SleeperTable``)."""

    table_id: str
    schema: Schema
    properties: TableProperties
    state_store: StateStore
    filesystem: pafs.FileSystem
    prefix: str = "data"

    @property
    def data_prefix(self) -> str:
        """Where the table's files are written (the only place its files are deleted from)."""
        return f"{self.prefix}/{self.table_id}"

    def leaf(self, index: int = 0) -> Partition:
        """A leaf partition in key order."""
        return self.state_store.partition_tree().leaves[index]

    def write_file(self, rows: pa.Table, name: str | None = None, **writer: Any) -> WrittenFile:
        """Sorts rows and writes them as a data file of the table (not yet referenced)."""
        location = f"{self.prefix}/{self.table_id}/data/{name or uuid.uuid4()}.parquet"
        with SortedFileWriter(location, self.schema, filesystem=self.filesystem, **writer) as w:
            w.write(sort_table(rows, self.schema.key_names))
        return w.result

    def add_file(self, rows: pa.Table, *, partitions: Sequence[str] | None = None, name: str | None = None) -> str:
        """Writes a data file and references it on partitions (the root by default)."""
        written = self.write_file(rows, name)
        ids = partitions or [self.state_store.partition_tree().root.id]
        self.state_store.add_files(
            [
                FileReference(
                    filename=written.location,
                    partition_id=pid,
                    number_of_rows=written.rows,
                    count_approximate=len(ids) > 1,
                    only_contains_data_for_this_partition=len(ids) == 1,
                )
                for pid in ids
            ]
        )
        return written.location

    def job(
        self, inputs: Sequence[str], partition_id: str | None = None, *, assign: bool = True, **kw: Any
    ) -> CompactionJob:
        """A compaction job of files on a partition (the root by default), assigned to them unless told not to."""
        pid = partition_id or self.state_store.partition_tree().root.id
        job_id = kw.pop("job_id", None) or str(uuid.uuid4())
        job = CompactionJob(
            table_id=self.table_id,
            job_id=job_id,
            input_files=tuple(inputs),
            output_file=f"{self.prefix}/{self.table_id}/data/partition_{pid}/{job_id}.parquet",
            partition_id=pid,
            **kw,
        )
        if assign:
            self.state_store.commit(
                AssignJobIdsTransaction(
                    requests=(AssignJobIdRequest(job_id=job.job_id, partition_id=pid, filenames=job.input_files),)
                )
            )
        return job

    def read(self, location: str) -> pa.Table:
        """Every row of a data file."""
        batches = list(read_sorted(location, self.schema, filesystem=self.filesystem))
        return pa.Table.from_batches(batches, schema=arrow_schema(self.schema))

    def exists(self, location: str) -> bool:
        """Whether a file exists."""
        return bool(self.filesystem.get_file_info(location).type == pafs.FileType.File)


def instance_properties(values: Mapping[str, str] | None = None) -> InstanceProperties:
    """Instance properties for tests."""
    return InstanceProperties({"sleeper.id": "test-instance", **(values or {})})


def new_table(
    schema: Schema,
    *,
    split_points: Sequence[KeyValue] | None = None,
    properties: Mapping[str, str] | None = None,
    instance: InstanceProperties | None = None,
    filesystem: pafs.FileSystem | None = None,
    table_id: str | None = None,
) -> FakeTable:
    """A table with partitions split at the points (one dimension), synchronous commits by default."""
    tid = table_id or f"table-{uuid.uuid4().hex[:8]}"
    values = {
        "sleeper.table.name": tid,
        "sleeper.table.id": tid,
        "sleeper.table.schema": schema.to_json(),
        "sleeper.table.compaction.job.commit.async": "false",
        "sleeper.table.data.engine": "ARROW",
        **(properties or {}),
    }
    store = StateStore(schema=schema, table_id=tid, backend=InMemoryStateStoreBackend())
    store.initialise(partitions_from_split_points(schema, list(split_points or [])))
    return FakeTable(
        table_id=tid,
        schema=schema,
        properties=TableProperties(instance or instance_properties(), values),
        state_store=store,
        filesystem=filesystem or in_memory_filesystem(),
    )


class FakeClock:
    """Seconds that move only when told (for queues and task idle times)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeInstance:
    """An instance in memory (implements ``sleeper.statestore.tables.SleeperRuntime``)."""

    properties: InstanceProperties = field(default_factory=instance_properties)
    clock: FakeClock = field(default_factory=FakeClock)
    compaction_job_tracker: InMemoryCompactionJobTracker = field(default_factory=InMemoryCompactionJobTracker)
    compaction_task_tracker: InMemoryTaskTracker = field(default_factory=InMemoryTaskTracker)
    tables: dict[str, FakeTable] = field(default_factory=dict)
    queues: InMemoryQueues = field(init=False)

    def __post_init__(self) -> None:
        self.queues = InMemoryQueues(self.clock)

    def add(self, table: FakeTable) -> FakeTable:
        self.tables[table.table_id] = table
        return table

    def table_by_id(self, table_id: str) -> FakeTable:
        table = self.tables.get(table_id)
        if table is None:
            raise TableNotFoundError(f"no table {table_id}")
        return table

    def queue(self, logical_name: str) -> Queue:
        fifo, visibility, receives = QUEUES[logical_name]
        return self.queues.queue(
            logical_name,
            fifo=fifo,
            visibility_timeout=visibility,
            dead_letter=f"{logical_name.removesuffix('.fifo')}-DLQ{'.fifo' if fifo else ''}",
            max_receive_count=receives,
        )

    def dead_letters(self, logical_name: str) -> Queue:
        dlq = self.queue(logical_name).config.dead_letter_queue
        assert dlq is not None
        return self.queues.queue(dlq)


def utc_clock() -> Any:
    """A timezone-aware clock that moves one millisecond per read (tracker updates stay in order)."""
    state = {"now": datetime(2025, 1, 1, tzinfo=UTC)}

    def now() -> datetime:
        state["now"] += timedelta(milliseconds=1)
        return state["now"]

    return now
