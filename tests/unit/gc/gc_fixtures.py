"""In-memory tables for garbage collection tests, with a clock that moves only when told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.io.filesystem import exists, filesystem_path, write_bytes
from sleeper.io.sketches import sketches_path
from sleeper.statestore.store import StateStore
from tests.unit.statestore.fakes import MemoryInstance

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("v", PrimitiveType.LONG),))
START = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class FakeClock:
    """The time now, moved by tests."""

    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> datetime:
        self.now += delta
        return self.now


@dataclass
class FakeTable:
    """A table in memory (implements ``sleeper.statestore.tables.SleeperTable``)."""

    table_id: str
    schema: Schema
    properties: TableProperties
    state_store: StateStore
    data_prefix: str
    filesystem: pafs.FileSystem
    backend: InMemoryStateStoreBackend
    clock: FakeClock

    def location(self, name: str, partition_id: str = "root") -> str:
        """The URI of a data file of the table."""
        return f"{self.data_prefix}/data/partition_{partition_id}/{name}.parquet"

    def write(self, location: str) -> str:
        """Writes a data file and its sidecar."""
        write_bytes(self.filesystem, filesystem_path(location), b"data")
        write_bytes(self.filesystem, filesystem_path(sketches_path(location)), b"sketches")
        return location

    def exists(self, location: str) -> bool:
        """Whether a file is on the filesystem."""
        return exists(self.filesystem, filesystem_path(location))

    def add_referenced(self, name: str, rows: int = 10) -> str:
        """Writes a file and adds it with a reference on the root partition."""
        location = self.write(self.location(name))
        self.state_store.add_files([FileReference(filename=location, partition_id="root", number_of_rows=rows)])
        return location

    def add_unreferenced(self, location: str, *, write: bool = True) -> str:
        """Adds a file with no references (as if compacted away now), writing it unless told not to."""
        if write:
            self.write(location)
        self.state_store.commit(AddFilesTransaction(files=(AllReferencesToAFile(filename=location, references={}),)))
        return location

    def compact(self, inputs: Sequence[str], output_name: str, job_id: str = "job-1") -> str:
        """Replaces references to the inputs with one to a new output file, as a compaction commit."""
        output = self.write(self.location(output_name))
        store = self.state_store
        store.commit(
            AssignJobIdsTransaction(
                requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=tuple(inputs)),)
            )
        )
        store.commit(
            ReplaceFileReferencesTransaction(
                jobs=(
                    ReplaceFileReferencesRequest(
                        job_id=job_id,
                        input_files=tuple(inputs),
                        new_reference=FileReference(filename=output, partition_id="root", number_of_rows=10),
                    ),
                )
            )
        )
        return output

    def tracked(self) -> set[str]:
        """Every file the state store tracks."""
        self.state_store.refresh()
        return {f.filename for f in self.state_store.files()}


def new_table(
    *,
    properties: Mapping[str, str] | None = None,
    instance_values: Mapping[str, str] | None = None,
    table_id: str = "table-1",
) -> FakeTable:
    """A table with synchronous GC commits unless the properties say otherwise, and Sleeper's 20 minute delay."""
    clock = FakeClock()
    backend = InMemoryStateStoreBackend()
    store = StateStore(schema=SCHEMA, table_id=table_id, backend=backend, clock=clock, sleep=lambda _: None)
    store.initialise()
    values = {
        "sleeper.table.name": table_id,
        "sleeper.table.id": table_id,
        "sleeper.table.schema": SCHEMA.to_json(),
        "sleeper.table.gc.commit.async": "false",
        **(properties or {}),
    }
    instance = InstanceProperties({"sleeper.id": "test", **(instance_values or {})})
    return FakeTable(
        table_id=table_id,
        schema=SCHEMA,
        properties=TableProperties(instance, values),
        state_store=store,
        data_prefix=f"s3a://data-bucket/{table_id}",
        filesystem=in_memory_filesystem(),
        backend=backend,
        clock=clock,
    )


FakeInstance = MemoryInstance[FakeTable]
"""An instance in memory holding these tables."""
