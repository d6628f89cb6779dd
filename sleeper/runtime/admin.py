"""The admin port: what the ``sleeper`` command does to an instance, the same for a local instance directory and for an
instance on AWS (``aws:ID``), spec 10.

:class:`AdminInstance` is implemented by ``sleeper.runtime.local.admin.LocalAdmin`` (delegating to the local
instance) and ``sleeper.runtime.aws.admin.AwsAdmin`` (the config bucket, DynamoDB, SQS and EventBridge of a deployed
or emulated instance). Where the two differ in what "now" can mean, the port says so: run compaction, splitting or
garbage collection now runs it locally, and on AWS sends the table's message to the FIFO queue its scheduled rule
would, for the deployed functions to do the work.

A command that only makes sense on one machine (``run``, ``demo``, a Spark ``local[*]`` bulk import) asks for
:meth:`AdminInstance.local_instance`, which on AWS raises :class:`LocalOnlyError` saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import pyarrow as pa

from sleeper.core import operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.partition import partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.properties.properties import validate_instance_update
from sleeper.core.queue import Queue
from sleeper.core.range import Region
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.table import TableStatus
from sleeper.core.trackers.compaction import CompactionJobTracker
from sleeper.core.trackers.ingest import IngestJobTracker
from sleeper.core.trackers.query import QueryTracker
from sleeper.core.trackers.task import TaskTracker
from sleeper.io.exceptions import UnsafeDeleteError
from sleeper.io.filesystem import delete_in_table, filesystem_path
from sleeper.io.sketches import Sketches, sketches_path
from sleeper.statestore.store import StateStore

if TYPE_CHECKING:
    from pyarrow import fs as pafs

    from sleeper.api.scan import Scan
    from sleeper.core.jobs.bulk_import import BulkImportJob
    from sleeper.core.jobs.ingest import IngestJob
    from sleeper.core.partition import Partition
    from sleeper.core.query import Query
    from sleeper.ingest.batcher.ports import IngestBatcherStore
    from sleeper.runtime.local.instance import LocalInstance

__all__ = [
    "AWS_PREFIX",
    "AdminInstance",
    "InstanceAdmin",
    "AdminTable",
    "EditableInstance",
    "LocalOnlyError",
    "OperationReport",
    "PropertyChange",
    "UnknownPlatformError",
    "bulk_import_platform_queue",
    "estimate_split_points",
    "reinitialise_table",
    "update_instance_properties",
]

AWS_PREFIX = "aws:"
"""``--instance aws:ID`` names an instance on AWS by its id; anything else is a local instance directory."""


class LocalOnlyError(SleeperError):
    """The command works only on a local instance, and was given an instance on AWS."""


class UnknownPlatformError(SleeperError):
    """A bulk import platform the instance does not have."""


def bulk_import_platform_queue(platform: str | None) -> str:
    """The queue of an AWS instance's bulk import platform (``operations.BULK_IMPORT_PLATFORM_QUEUES``; the first,
    EMR Serverless, if None).

    Raises:
        UnknownPlatformError: If the platform is not one of them.
    """
    platforms = operations.BULK_IMPORT_PLATFORM_QUEUES
    if platform is None:
        return next(iter(platforms.values()))
    queue = platforms.get(platform)
    if queue is None:
        raise UnknownPlatformError(f"unknown bulk import platform {platform!r}: use one of {', '.join(platforms)}")
    return queue


@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One property's value before and after an edit (None = unset)."""

    name: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class OperationReport:
    """What an operation run now did: plain data (printed as JSON) and lines for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)


class _HasFilesystem(Protocol):
    @property
    def filesystem(self) -> pafs.FileSystem:
        """The filesystem data files are read from."""
        ...


class EditableInstance(Protocol):
    """An instance whose properties can be read and saved."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Saves validated instance properties."""
        ...


class AdminTable(Protocol):
    """A table as the admin commands see it (``sleeper.api.table.Table`` of either runtime is one)."""

    @property
    def instance(self) -> _HasFilesystem:
        """The instance holding the table."""
        ...

    @property
    def status(self) -> TableStatus:
        """The table's name, id and online state."""
        ...

    @property
    def name(self) -> str:
        """The table name."""
        ...

    @property
    def table_id(self) -> str:
        """The table id."""
        ...

    @property
    def schema(self) -> Schema:
        """The table schema."""
        ...

    @property
    def properties(self) -> TableProperties:
        """The table properties."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's files live (the only place its files are deleted from)."""
        ...

    def partitions(self) -> list[Partition]:
        """Every partition."""
        ...

    def leaf_partitions(self) -> list[Partition]:
        """The leaf partitions, in key order."""
        ...

    def file_references(self) -> list[FileReference]:
        """Every file reference."""
        ...

    def files(self) -> list[AllReferencesToAFile]:
        """Every tracked file with its references."""
        ...

    def query(
        self,
        *,
        keys: Sequence[Mapping[str, object]] | None = None,
        regions: Sequence[Region] | None = None,
        requested_value_fields: Sequence[str] | None = None,
        iterator: str | None = None,
        iterator_config: str | None = None,
    ) -> pa.Table:
        """Rows for exact keys and/or regions, read directly, with a query-time iterator if one is named."""
        ...

    def scan(
        self,
        *,
        keys: Sequence[Mapping[str, object]] | None = None,
        ranges: Sequence[Region] | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        as_of: int | datetime | str | None = None,
    ) -> Scan:
        """The rows of exact keys and/or regions, read lazily (``to_arrow_batch_reader()`` streams them); with
        ``as_of``, of the table as it was after that files transaction or at that time (time travel)."""
        ...

    def history(self) -> pa.Table:
        """The table's kept transactions (time travel: ``sleeper.api.time_travel.history_table``)."""
        ...


class AdminInstance(Protocol):
    """Everything the ``sleeper`` command does to an instance."""

    @property
    def is_local(self) -> bool:
        """Whether this is a local instance directory (False: an instance on AWS)."""
        ...

    @property
    def location(self) -> str:
        """Where the instance is, for people: its directory, or ``s3://<config bucket>``."""
        ...

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def local_instance(self, what: str) -> LocalInstance:
        """The local instance, for a command that only works on one.

        Raises:
            LocalOnlyError: On AWS, naming ``what``.
        """
        ...

    # --- instance properties ---------------------------------------------------------------------------------
    def update_instance_properties(
        self, values: Mapping[str, str], unset: Sequence[str] = (), *, dry_run: bool = False
    ) -> list[PropertyChange]:
        """Validates and saves instance property edits (to the config bucket on AWS); returns the diff.

        Raises:
            PropertyError: If a value is invalid or a property may not change (nothing is saved).
            SleeperError: If a property is one only a deployment sets.
        """
        ...

    # --- tables ----------------------------------------------------------------------------------------------
    def tables(self) -> list[TableStatus]:
        """Every table, by name."""
        ...

    def table(self, name: str) -> AdminTable:
        """A table by name (raises ``TableNotFoundError``)."""
        ...

    def table_by_id(self, table_id: str) -> AdminTable:
        """A table by id (raises ``TableNotFoundError``)."""
        ...

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> AdminTable:
        """Creates a table: validated, saved, indexed, partitions initialised."""
        ...

    def rename_table(self, old_name: str, new_name: str) -> AdminTable:
        """Renames a table."""
        ...

    def delete_table(self, name: str) -> None:
        """Deletes a table with all its data."""
        ...

    def set_table_online(self, name: str, online: bool) -> AdminTable:
        """Puts a table online or takes it offline."""
        ...

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> AdminTable:
        """Validates and saves table property edits (nothing saved if one is invalid); a value of None unsets the
        property, so that it falls back to its default."""
        ...

    def reinitialise_table(self, name: str, split_points: Sequence[KeyValue] | None) -> AdminTable:
        """Deletes every file of a table and, with split points, repartitions it."""
        ...

    def estimate_split_points(self, name: str, partitions: int) -> list[KeyValue]:
        """Split points cutting a table's rows evenly, from its files' sketches."""
        ...

    # --- trackers and queues ---------------------------------------------------------------------------------
    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """The ingest job tracker."""
        ...

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """The compaction job tracker."""
        ...

    @property
    def ingest_task_tracker(self) -> TaskTracker:
        """The ingest task tracker."""
        ...

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """The compaction task tracker."""
        ...

    @property
    def query_tracker(self) -> QueryTracker:
        """The query tracker."""
        ...

    @property
    def batcher_store(self) -> IngestBatcherStore:
        """The ingest batcher's store of submitted files."""
        ...

    def queue_names(self) -> list[str]:
        """The logical names of the instance's queues (those that exist)."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """A queue by logical name."""
        ...

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead-letter queue of a queue named by its logical name."""
        ...

    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """Moves dead letters back to their queues; returns how many per queue (only non-zero)."""
        ...

    # --- operations ------------------------------------------------------------------------------------------
    def send_ingest_job(self, job: IngestJob) -> str:
        """Sends an ingest job to the ingest job queue; returns the queue's name."""
        ...

    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to the bulk import queue; returns the queue's name.

        Args:
            job: The job.
            platform: On AWS, the platform whose queue gets the job (a key of
                ``sleeper.core.operations.BULK_IMPORT_PLATFORM_QUEUES``; EMR Serverless if omitted). A local instance
                has one bulk import queue and refuses a platform.

        Raises:
            UnknownPlatformError: If the platform is not one of the instance's.
        """
        ...

    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Sends files to the ingest batcher; returns what happened, for people."""
        ...

    def compact_now(self, name: str, *, compact_all: bool = False, wait: bool = True) -> OperationReport:
        """Compaction of a table now (locally: create the jobs and run them; on AWS: trigger job creation)."""
        ...

    def split_now(self, name: str) -> OperationReport:
        """Partition splitting of a table now."""
        ...

    def gc_now(self, name: str, *, orphans: bool = False, dry_run: bool = False) -> OperationReport:
        """Garbage collection of a table now."""
        ...

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table | None:
        """Sends a query to the query queue. Locally it is run at once and its rows returned; on AWS the deployed
        functions run it and None is returned (follow it in the query tracker)."""
        ...

    def is_paused(self) -> bool:
        """Whether the scheduled operations are paused."""
        ...

    def pause(self) -> None:
        """Pauses the scheduled operations (raises ``SleeperError`` if already paused)."""
        ...

    def resume(self) -> None:
        """Resumes the scheduled operations (raises ``SleeperError`` if not paused)."""
        ...


_Table = TypeVar("_Table", bound=AdminTable)
_LOG = logging.getLogger(__name__)


def update_instance_properties(
    instance: EditableInstance,
    values: Mapping[str, str],
    unset: Sequence[str] = (),
    *,
    dry_run: bool = False,
    check: Callable[[InstanceProperties], None] | None = None,
) -> list[PropertyChange]:
    """Validates and saves instance property edits; returns the changes (the diff).

    ``check`` is a further rule of the kind of instance, given the edited properties (a local instance's
    :func:`~sleeper.runtime.local.instance.check_local_instance_properties`).

    Raises:
        PropertyError: If a value is invalid or a property may not change (nothing is saved).
        SleeperError: If a property is one only a deployment sets.
    """
    old = instance.properties
    updated = InstanceProperties(dict(old.items()))
    for name in [*values, *unset]:
        definition = updated.index.get(name)
        if definition is not None and definition.set_by_cdk:
            raise SleeperError(f"{name} is set by the deployment (cdk deploy) and cannot be edited")
    for name, value in values.items():
        updated.set(name, value)
    for name in unset:
        updated.unset(name)
    updated.validate_all()
    validate_instance_update(old, updated)
    if check is not None:
        check(updated)
    before, after = old.to_dict(), updated.to_dict()
    changes = [
        PropertyChange(name, before.get(name), after.get(name))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]
    if changes and not dry_run:
        instance.save_instance_properties(updated)
    return changes


def reinitialise_table(table: _Table, split_points: Sequence[KeyValue] | None = None) -> _Table:
    """Empties a table: stops tracking every file and deletes the files; with split points, repartitions it too.

    Without split points the partition tree is kept. The split points are validated before anything changes. With
    them the new partitions are committed before the files are cleared, so a write racing the reinitialisation is
    either cleared with the rest of the table or refused, never left on partitions that no longer exist (see
    :meth:`sleeper.statestore.store.StateStore.reinitialise`). Only files under the table's data prefix are deleted
    (through :func:`sleeper.io.filesystem.delete_in_table`): a tracked file anywhere else is logged and left.
    """
    partitions = partitions_from_split_points(table.schema, list(split_points)) if split_points is not None else None
    store = table.state_store
    store.refresh()
    files = [f.filename for f in store.files()]
    store.reinitialise(partitions)
    filesystem = table.instance.filesystem
    for filename in files:
        for location in (filename, sketches_path(filename)):
            try:
                delete_in_table(filesystem, filesystem_path(location), table.data_prefix)
            except UnsafeDeleteError as e:
                _LOG.warning("Table %s reinitialised without deleting a file it tracked: %s", table.name, e)
    return table


def estimate_split_points(table: AdminTable, partitions: int) -> list[KeyValue]:
    """Split points that cut the table's rows into ``partitions`` parts of about equal size, from the files' sketches.

    Raises:
        SleeperError: If the table has no files, or fewer than 2 partitions are asked for.
    """
    if partitions < 2:
        raise SleeperError("estimate split points for at least 2 partitions")
    filenames = sorted({r.filename for r in table.file_references()})
    if not filenames:
        raise SleeperError(f"table {table.name} has no files to estimate split points from")
    filesystem = table.instance.filesystem
    merged = Sketches.merge(
        Sketches.read(filesystem, filesystem_path(sketches_path(name)), table.schema) for name in filenames
    )
    field = table.schema.row_key_fields[0].name
    ranks = [i / partitions for i in range(1, partitions)]
    points: list[KeyValue] = []
    for value in merged.quantiles(field, ranks):
        if not points or value != points[-1]:
            points.append(value)
    return points


class AdministeredInstance(Protocol):
    """What an instance of either runtime gives its admin: properties, tables, trackers and queues."""

    @property
    def properties(self) -> InstanceProperties: ...

    def table(self, name: str) -> Any: ...

    @property
    def ingest_job_tracker(self) -> IngestJobTracker: ...

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker: ...

    @property
    def ingest_task_tracker(self) -> TaskTracker: ...

    @property
    def compaction_task_tracker(self) -> TaskTracker: ...

    @property
    def query_tracker(self) -> QueryTracker: ...

    def queue(self, logical_name: str) -> Queue: ...


_Instance = TypeVar("_Instance", bound=AdministeredInstance)


class InstanceAdmin(Generic[_Instance]):
    """The part of the admin port both runtimes do the same way, on the instance they administer: reinitialising a
    table, estimating split points, and the trackers and queues of the instance. ``LocalAdmin`` and ``AwsAdmin`` add
    what differs (where the instance lives, tables, running operations now, pausing).

    Args:
        instance: The instance.
    """

    def __init__(self, instance: _Instance) -> None:
        self.instance = instance

    def reinitialise_table(self, name: str, split_points: Sequence[KeyValue] | None) -> Any:
        """Reinitialises a table (:func:`reinitialise_table`) with its Iceberg view withdrawn first and published
        again after (:func:`sleeper.iceberg.publisher.reinitialise_with_view`), so the view never lists a deleted
        file. Split points are checked before the view is withdrawn.

        Raises:
            WithdrawalError: If the view could not be withdrawn; the table is not reinitialised.
        """
        from sleeper.iceberg.ports import IcebergRuntime
        from sleeper.iceberg.publisher import reinitialise_with_view

        table = self.instance.table(name)
        if split_points is not None:
            partitions_from_split_points(table.schema, list(split_points))  # refused before the view is withdrawn
        instance = cast(IcebergRuntime, self.instance)  # both runtimes' instances publish views
        return reinitialise_with_view(instance, table, lambda: reinitialise_table(table, split_points))

    def estimate_split_points(self, name: str, partitions: int) -> list[KeyValue]:
        """See :func:`estimate_split_points`."""
        return estimate_split_points(self.instance.table(name), partitions)

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """The ingest job tracker."""
        return self.instance.ingest_job_tracker

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """The compaction job tracker."""
        return self.instance.compaction_job_tracker

    @property
    def ingest_task_tracker(self) -> TaskTracker:
        """The ingest task tracker."""
        return self.instance.ingest_task_tracker

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """The compaction task tracker."""
        return self.instance.compaction_task_tracker

    @property
    def query_tracker(self) -> QueryTracker:
        """The query tracker."""
        return self.instance.query_tracker

    def queue(self, logical_name: str) -> Queue:
        """A queue by logical name."""
        return self.instance.queue(logical_name)
