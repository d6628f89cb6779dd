"""One table facade for both runtimes: :class:`Table`, a table of a local instance or of an instance on AWS.

A table is its identity (name, id, schema, data prefix), its properties and its state store; through it a program
reads its partitions and files, ingests rows (record batches, a pyarrow Table, dicts or Parquet paths), queries it and
edits its properties. What differs between the runtimes comes from the instance holding the table, through the small
:class:`TableInstance` port: where a table's data files live, how pyarrow reaches them, where ingest spills sorted
runs (its job workspace) and how table properties are saved. ``sleeper.runtime.local.instance.LocalInstance`` and
``sleeper.runtime.aws.instance.AwsInstance`` each make their tables as ``Table[LocalInstance]`` and
``Table[AwsInstance]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

import pyarrow as pa

from sleeper.core.exceptions import SleeperError, TableAlreadyExistsError
from sleeper.core.jobs.workspace import JobWorkspace
from sleeper.core.partition import Partition, partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.properties.properties import new_table_properties
from sleeper.core.range import Range, Region
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.table import TableIndex, TableStatus, new_table_id
from sleeper.ingest.inputs import IngestInput, ingest_rows
from sleeper.ingest.standard import IngestResult
from sleeper.io.filesystem import FileSystemOptions
from sleeper.query.executor import table_query
from sleeper.statestore.store import StateStore

__all__ = ["TABLE_NAME_PATTERN", "Table", "TableInstance", "TablePropertiesStore", "check_table_name", "create_table"]


class TableInstance(Protocol):
    """What a :class:`Table` needs of the instance holding it: the part that differs between the runtimes."""

    def data_uri(self, table_id: str) -> str:
        """The URI of a table's data prefix (``file:///.../data/<id>`` locally, ``s3a://<data bucket>/<id>`` on AWS)."""
        ...

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How pyarrow reaches the data files (None: the defaults)."""
        ...

    def job_workspace(self) -> AbstractContextManager[JobWorkspace]:
        """Where a job runs: the directory ingest spills sorted runs to (None: the system's temporary directory)."""
        ...

    def update_table_properties(self, name: str, values: Mapping[str, str]) -> Table[Self]:
        """Validates and saves new values of a table's properties; returns the table with them.

        Raises:
            PropertyError: If a value is invalid or a property may not change; nothing is saved.
        """
        ...


InstanceT = TypeVar("InstanceT", bound=TableInstance, covariant=True)


@dataclass(frozen=True, slots=True)
class Table(Generic[InstanceT]):
    """A table of an instance: its identity, properties and state store.

    Satisfies the table ports of the features (``sleeper.statestore.tables.SleeperTable``, ingest's
    ``IngestTable``, the query executor's ``QueryableTable``) and the admin commands' ``AdminTable``.
    """

    instance: InstanceT
    status: TableStatus
    properties: TableProperties
    state_store: StateStore

    @property
    def name(self) -> str:
        """The table name."""
        return self.status.table_name

    @property
    def table_id(self) -> str:
        """The table id."""
        return self.status.table_id

    @property
    def schema(self) -> Schema:
        """The table schema."""
        return self.properties.schema

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's files live (``<data bucket>/<table id>``)."""
        return self.instance.data_uri(self.table_id)

    def partitions(self) -> list[Partition]:
        """Every partition of the table."""
        return self.state_store.partitions()

    def leaf_partitions(self) -> list[Partition]:
        """The leaf partitions, in key order."""
        return self.state_store.partition_tree().leaves

    def file_references(self) -> list[FileReference]:
        """Every file reference."""
        return self.state_store.file_references()

    def files(self) -> list[AllReferencesToAFile]:
        """Every tracked file with its references (including files awaiting garbage collection)."""
        return self.state_store.files()

    def ingest(self, data: IngestInput, *, job_id: str | None = None) -> IngestResult:
        """Ingests rows with standard ingest: record batches, a pyarrow Table, dicts, or Parquet file paths.

        Data files are written under the table's data prefix with the instance's filesystem options; sorted runs
        spill to the directory of the instance's job workspace.

        Args:
            data: The rows (see :func:`sleeper.ingest.inputs.ingest_rows`).
            job_id: An id that makes a retry of the same ingest add its rows once.

        Returns:
            What was written and committed.
        """
        with self.instance.job_workspace() as workspace:
            return ingest_rows(
                self, data, job_id=job_id, local_dir=workspace.directory, options=self.instance.filesystem_options
            )

    def query(
        self,
        *,
        keys: Iterable[Mapping[str, object] | Sequence[object]] | None = None,
        regions: Iterable[Region] | None = None,
        requested_value_fields: Sequence[str] | None = None,
    ) -> pa.Table:
        """Rows for exact row keys and/or regions, in key order; every row if neither is given. Read directly (not
        through the query queue).

        The table's filters and aggregations apply, as in every Sleeper query.
        """
        return table_query(
            self,
            keys=keys,
            regions=regions,
            requested_value_fields=requested_value_fields,
            options=self.instance.filesystem_options,
        )

    def exact(self, **keys: object) -> pa.Table:
        """The rows whose row key fields equal the values given by name, e.g. ``table.exact(key="alice")``."""
        return self.query(keys=[keys])

    def range(
        self,
        min: KeyValue | None = None,
        max: KeyValue | None = None,
        *,
        field: str | None = None,
        min_inclusive: bool = True,
        max_inclusive: bool = False,
    ) -> pa.Table:
        """The rows whose row key field (the first by default) lies in ``[min, max)``; None bounds are unbounded.

        ``min_inclusive`` and ``max_inclusive`` choose which bounds include their value.
        """
        chosen = self.schema.field(field) if field is not None else self.schema.row_key_fields[0]
        low = Range.whole(chosen).min if min is None else min
        region = Region.of(
            [Range(field=chosen, min=low, min_inclusive=min_inclusive, max=max, max_inclusive=max_inclusive)]
        )
        return self.query(regions=[region])

    def set_properties(self, values: Mapping[str, str]) -> Table[InstanceT]:
        """Validates and saves new property values; returns the table with them.

        Raises:
            PropertyError: If a value is invalid or a property may not change; nothing is saved.
        """
        return self.instance.update_table_properties(self.name, values)


TABLE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A table name: letters, digits, ``_``, ``.`` and ``-``, starting with a letter or digit, at most 128 characters."""


def check_table_name(name: str) -> str:
    """Returns a table name that follows :data:`TABLE_NAME_PATTERN`.

    Raises:
        SleeperError: If it does not, saying what a name may hold.
    """
    if not TABLE_NAME_PATTERN.match(name):
        raise SleeperError(f"invalid table name {name!r}: use letters, digits, '_', '.', '-' (at most 128)")
    return name


class TablePropertiesStore(Protocol):
    """Where an instance keeps its tables' properties (the instance directory, or the config bucket)."""

    def save_table(self, table_id: str, values: dict[str, str]) -> None: ...

    def delete_table(self, table_id: str) -> None: ...


_Made = TypeVar("_Made", bound="Table[Any]")


def create_table(
    *,
    name: str,
    schema: Schema,
    split_points: Sequence[KeyValue] | None,
    properties: Mapping[str, str] | None,
    instance_properties: InstanceProperties,
    table_index: TableIndex,
    properties_store: TablePropertiesStore,
    make_table: Callable[[TableStatus], _Made],
) -> _Made:
    """Creates a table as Sleeper does, on either runtime: validates its name, properties and split points, saves its
    properties, adds it to the table index (taking the properties back if that fails) and initialises its partitions.

    Raises:
        SleeperError: If the name is invalid.
        TableAlreadyExistsError: If the name is taken.
        PropertyError: If a property is invalid.
        PartitionTreeError: If the split points are invalid.
    """
    check_table_name(name)
    if any(t.table_name == name for t in table_index.list_tables()):
        raise TableAlreadyExistsError(f"table {name!r} already exists")
    partitions = partitions_from_split_points(schema, list(split_points or []))
    table_id = new_table_id()
    values = {str(k): str(v) for k, v in (properties or {}).items()}
    table_properties = new_table_properties(
        instance_properties, name=name, table_id=table_id, schema=schema, values=values
    )
    status = TableStatus(table_id=table_id, table_name=name, online=table_properties.get_bool("sleeper.table.online"))
    properties_store.save_table(table_id, dict(table_properties.items()))
    try:
        table_index.create(status)
    except BaseException:
        properties_store.delete_table(table_id)
        raise
    table = make_table(status)
    table.state_store.initialise(partitions)
    return table
