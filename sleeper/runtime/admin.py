"""The admin port: what the ``sleeper`` command does to an instance, the same for a local instance directory and for an
instance on AWS (``aws:ID``), spec 10.

:class:`AdminInstance` is implemented by ``sleeper.runtime.local_admin.LocalAdmin`` (delegating to the local
instance) and ``sleeper.runtime.aws_admin.AwsAdmin`` (the config bucket, DynamoDB, SQS and EventBridge of a deployed
or emulated instance). Where the two differ in what "now" can mean, the port says so: run compaction, splitting or
garbage collection now runs it locally, and on AWS sends the table's message to the FIFO queue its scheduled rule
would, for the deployed functions to do the work.

A command that only makes sense on one machine (``run``, ``demo``, a Spark ``local[*]`` bulk import) asks for
:meth:`AdminInstance.local_instance`, which on AWS raises :class:`LocalOnlyError` saying so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from sleeper.core.exceptions import SleeperError
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.range import Region
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.table import TableStatus
from sleeper.core.trackers.compaction import CompactionJobTracker
from sleeper.core.trackers.ingest import IngestJobTracker
from sleeper.core.trackers.query import QueryTracker
from sleeper.core.trackers.task import TaskTracker
from sleeper.statestore.store import StateStore

if TYPE_CHECKING:
    from pyarrow import fs as pafs

    from sleeper.batcher.ports import IngestBatcherStore
    from sleeper.core.jobs.bulk_import import BulkImportJob
    from sleeper.core.jobs.ingest import IngestJob
    from sleeper.core.partition import Partition
    from sleeper.core.query import Query
    from sleeper.runtime.local import LocalInstance

__all__ = [
    "AWS_PREFIX",
    "AdminInstance",
    "AdminTable",
    "EditableInstance",
    "LocalOnlyError",
    "OperationReport",
    "PropertyChange",
]

AWS_PREFIX = "aws:"
"""``--instance aws:ID`` names an instance on AWS by its id; anything else is a local instance directory."""


class LocalOnlyError(SleeperError):
    """The command works only on a local instance, and was given an instance on AWS."""


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
    """A table as the admin commands see it (``LocalTable`` and ``AwsTable`` both are one)."""

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
    ) -> pa.Table:
        """Rows for exact keys and/or regions, read directly."""
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

    def update_table_properties(self, name: str, values: Mapping[str, str]) -> AdminTable:
        """Validates and saves table property edits (nothing saved if one is invalid)."""
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

    def send_bulk_import_job(self, job: BulkImportJob) -> str:
        """Sends a bulk import job to the bulk import queue; returns the queue's name."""
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
