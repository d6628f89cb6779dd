"""The shared ports every feature types against: what a feature sees of a table, and of the instance it runs in.

One table port and two instance ports, built from a port per concern:

- :class:`SleeperTable`: a table's identity, schema, properties, state store and where its data files live;
- :class:`Queues`: the instance's queues and their dead letter queues, by Sleeper's logical names;
- :class:`Trackers`: the job and task trackers and the query tracker;
- :class:`Storage`: how to reach the data files and where they are, and where a job runs;
- :class:`QueuedQueries`: sending a query through the query queue and following it in the query tracker (the
  instance API of ``sleeper.api`` has it too, for the CLI);
- :class:`SleeperInstance`: tables, properties and queues (what job creation, splitting and the state store
  committer need);
- :class:`SleeperRuntime`: an instance with its trackers and storage, what a feature's entry runs on (the Lambdas,
  the containers, the local runner).

The instances of both runtimes (``LocalInstance``, ``AwsInstance``) implement :class:`SleeperRuntime` and their tables
(one facade, ``sleeper.api.table.Table``) :class:`SleeperTable`, structurally; each runtime's module has a
type-checked ``_conforms_to_the_feature_ports`` that proves it. A feature declares a port of its own only for what
belongs to it alone and is not on every runtime (ingest's sources and batcher store, a bulk import launch, a
WebSocket poster, the metrics publisher).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from sleeper.core import STATE_STORE_COMMITTER_Q as STATE_STORE_COMMITTER_QUEUE
from sleeper.core import KeyValue, Query, Queue, Schema, TableStatus
from sleeper.core.jobs import JobWorkspace
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.trackers import CompactionJobTracker, IngestJobTracker, QueryTracker, TaskTracker
from sleeper.io import FileSystemOptions
from sleeper.statestore.store import StateStore

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "STATE_STORE_COMMITTER_QUEUE",
    "QueuedQueries",
    "Queues",
    "SleeperInstance",
    "SleeperRuntime",
    "SleeperTable",
    "Storage",
    "Trackers",
]


class SleeperTable(Protocol):
    """A table: its identity, schema, properties, state store and where its data files live."""

    @property
    def table_id(self) -> str:
        """The table id."""
        ...

    @property
    def name(self) -> str:
        """The table name."""
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
        """The URI under which the table's data files are written (``<data bucket>/<table id>``)."""
        ...


class Queues(Protocol):
    """The instance's queues by Sleeper's logical names (``sleeper.core.operations``)."""

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (for example ``IngestJobQ``).

        Raises:
            SleeperError: If the instance has no such queue.
        """
        ...

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead letter queue of the queue with this logical name.

        Raises:
            SleeperError: If the instance has no such queue.
        """
        ...


class Trackers(Protocol):
    """Where the instance records its jobs, tasks and queries (``sleeper.core.trackers``)."""

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """Where ingest and bulk import job runs are recorded."""
        ...

    @property
    def ingest_task_tracker(self) -> TaskTracker:
        """Where ingest tasks are recorded."""
        ...

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """Where compaction job runs are recorded."""
        ...

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """Where compaction tasks are recorded."""
        ...

    @property
    def query_tracker(self) -> QueryTracker:
        """Where queries and their sub-queries are recorded."""
        ...


class Storage(Protocol):
    """How to reach the instance's files and where they are, and where a job runs."""

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How pyarrow reaches the data files (None for the defaults: a local instance)."""
        ...

    @property
    def data_root(self) -> str:
        """The URI every table's data prefix is under (``file://`` locally, ``s3a://<data bucket>`` on AWS)."""
        ...

    @property
    def query_results_uri(self) -> str:
        """Where queries write their results by default."""
        ...

    @property
    def bulk_export_uri(self) -> str:
        """Where bulk exports are written.

        Raises:
            PropertyError: If the instance has no bulk export bucket.
        """
        ...

    def job_workspace(self) -> AbstractContextManager[JobWorkspace]:
        """Where a job runs outside a task: the directory it spills to (None: the system's temporary directory)."""
        ...


class QueuedQueries(Queues, Trackers, Protocol):
    """Sending a query through the query queue, and following it in the query tracker."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties (where the query results bucket is)."""
        ...

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table | None:
        """Sends a query to the query queue: a local instance runs it at once and returns its rows, an instance on
        AWS only sends it (None; the deployed functions run it)."""
        ...


class SleeperInstance(Queues, Protocol):
    """An instance: its properties, its tables by name or id, and its queues."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def table(self, name: str) -> SleeperTable:
        """The table with this name.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def table_by_id(self, table_id: str) -> SleeperTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def tables(self) -> Sequence[TableStatus]:
        """Every table of the instance, ordered by name."""
        ...


class SleeperRuntime(SleeperInstance, QueuedQueries, Storage, Protocol):
    """An instance as a feature's entry runs on it: tables, queues, trackers, storage and the query queue, and the
    verbs the features share (creating a table, asking whether a table was deleted)."""

    @property
    def query_results_queue(self) -> Queue | None:
        """The queue queries asking for results on SQS get them on (None where the instance has none)."""
        ...

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> SleeperTable:
        """Creates a table: validates its name, properties and split points, saves and indexes it and initialises
        its partitions.

        Raises:
            TableAlreadyExistsError: If the name is taken.
            PropertyError: If a property value is invalid.
        """
        ...

    def is_table_deleted(self, table_id: str) -> bool:
        """Whether a state store of the instance marks this table id deleted (any of its kinds of store)."""
        ...
