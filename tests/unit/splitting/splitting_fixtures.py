"""In-memory tables and instances for partition splitting tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.partition import partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.filesystem import filesystem_path
from sleeper.io.sketches import Sketches, sketches_path
from sleeper.statestore.store import StateStore
from tests.unit.statestore.fakes import MemoryInstance

LONG_KEY = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("v", PrimitiveType.LONG),))
TWO_KEYS = Schema(
    row_key_fields=(Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.STRING)),
    value_fields=(Field("v", PrimitiveType.LONG),),
)


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

    def other_store(self) -> StateStore:
        """Another state store object on the same logs, as another process would have."""
        return StateStore(schema=self.schema, table_id=self.table_id, backend=self.backend, sleep=_no_sleep)

    def file_location(self, name: str, partition_id: str = "root") -> str:
        """The URI of a data file of the table."""
        return f"{self.data_prefix}/data/partition_{partition_id}/{name}.parquet"

    def add_file(
        self,
        name: str,
        columns: Mapping[str, Sequence[KeyValue]],
        *,
        partition_id: str = "root",
        sketches: bool = True,
    ) -> str:
        """Writes a file's sketches (of rows sorted by the first key) and adds it to the state store on a partition."""
        location = self.file_location(name, partition_id)
        data = pa.table({name: list(values) for name, values in columns.items()})
        data = data.sort_by([(f.name, "ascending") for f in self.schema.row_key_fields])
        if sketches:
            built = Sketches.from_sorted_batches(self.schema, [data])
            built.write(self.filesystem, filesystem_path(sketches_path(location)))
        self.state_store.add_files(
            [FileReference(filename=location, partition_id=partition_id, number_of_rows=data.num_rows)]
        )
        return location


def new_table(
    schema: Schema = LONG_KEY,
    *,
    split_points: Sequence[KeyValue] | None = None,
    properties: Mapping[str, str] | None = None,
    instance_properties: InstanceProperties | None = None,
    table_id: str = "table-1",
) -> FakeTable:
    """A table with synchronous split commits unless the properties say otherwise."""
    backend = InMemoryStateStoreBackend()
    store = StateStore(schema=schema, table_id=table_id, backend=backend, sleep=_no_sleep)
    store.initialise(partitions_from_split_points(schema, list(split_points or [])))
    values = {
        "sleeper.table.name": table_id,
        "sleeper.table.id": table_id,
        "sleeper.table.schema": schema.to_json(),
        "sleeper.table.partition.splitting.commit.async": "false",
        **(properties or {}),
    }
    return FakeTable(
        table_id=table_id,
        schema=schema,
        properties=TableProperties(instance_properties or InstanceProperties({"sleeper.id": "test"}), values),
        state_store=store,
        data_prefix=f"s3a://data-bucket/{table_id}",
        filesystem=in_memory_filesystem(),
        backend=backend,
    )


FakeInstance = MemoryInstance[FakeTable]
"""An instance in memory holding these tables."""


def id_supplier(*ids: str) -> Callable[[], str]:
    """Returns the given ids in turn."""
    remaining = iter(ids)
    return lambda: next(remaining)


def _no_sleep(seconds: float) -> None:
    """State store retries in tests do not wait."""
