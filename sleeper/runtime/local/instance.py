"""The embedded local instance: everything in one directory, no AWS account (composition root).

Layout of an instance directory::

    instance.properties              instance properties (Java .properties), as in Sleeper's config bucket
    tables/table-<id>.properties     table properties, schema JSON inside sleeper.table.schema
    sleeper.db                       SQLite (WAL): transaction logs, snapshot records, table index, queues, trackers
    data/<table id>/data/partition_<id>/<file>.parquet (+ .sketches)
    data/<table id>/statestore/snapshots/... and statestore/transactions/...

File references record absolute ``file://`` URIs of data files, as Sleeper records ``s3a://`` URIs.

The instance directory is private to its owner (mode 0700): it is created so, and an existing instance's directory
is tightened when opened, with a one-line notice. Everything the instance writes (the database with its ``-wal`` and
``-shm`` files, properties, data files, sketches, snapshots, query results, spilled runs) lies under it, so this one
mode protects all of it whatever mode SQLite, pyarrow, DataFusion or ``tempfile`` give their own files. Setting the
process umask instead would also change the files of every other thread and of a program using sleeper as a library,
and a mode set per write would have to be repeated in every writer, including those of other libraries.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.adapters.local import (
    FileStateStoreBackend,
    LocalPropertiesStore,
    SqliteCompactionJobTracker,
    SqliteIngestBatcherStore,
    SqliteIngestJobTracker,
    SqliteQueryTracker,
    SqliteQueues,
    SqliteStateStoreBackend,
    SqliteTableIndex,
    SqliteTaskTracker,
)
from sleeper.api import Table
from sleeper.core import (
    BULK_IMPORT_JOB_Q,
    QUERY_RESULTS_Q,
    InstanceAlreadyExistsError,
    InstanceNotFoundError,
    PropertyError,
    Query,
    Queue,
    Schema,
    SleeperError,
    TableStatus,
    local_dead_letter_queue_name,
    local_queues,
)
from sleeper.core.jobs import JobWorkspace
from sleeper.core.properties import (
    S3_TRANSACTION_LOG_STATE_STORE,
    STATESTORE_CLASSNAME,
    STATESTORE_PROVIDER_CACHE_SIZE,
    InstanceProperties,
    TableProperties,
    state_store_class,
)
from sleeper.ingest import IngestSources
from sleeper.ingest.batcher import route_bulk_import_to
from sleeper.runtime.local.tasks import LocalTask, job_workspace
from sleeper.runtime.tables import InstanceTables
from sleeper.statestore import StateStore, StateStoreSettings

DATABASE_FILE = "sleeper.db"


def local_queue_settings() -> dict[str, tuple[bool, int, int]]:
    """The queues of a local instance by logical name: (FIFO, visibility timeout seconds, maxReceiveCount), as the
    registry of operations says now."""
    return {spec.name: (spec.fifo, spec.visibility_timeout_seconds, spec.max_receive_count) for spec in local_queues()}


_LOG = logging.getLogger(__name__)

INSTANCE_DIRECTORY_MODE = 0o700
"""The permissions of a local instance directory: its owner's alone (see the module docstring)."""


def make_private(directory: Path) -> None:
    """Makes an instance directory accessible to its owner alone, logging a one-line notice if that changes it.

    A directory that cannot be changed (owned by another user) is left as it is, with a warning.
    """
    if os.name != "posix":
        return
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode == INSTANCE_DIRECTORY_MODE:
        return
    try:
        directory.chmod(INSTANCE_DIRECTORY_MODE)
    except OSError as e:
        _LOG.warning("could not make instance directory %s private to its owner (mode %o): %s", directory, mode, e)
        return
    _LOG.warning(
        "made instance directory %s private to its owner: permissions %o -> %o",
        directory,
        mode,
        INSTANCE_DIRECTORY_MODE,
    )


PAUSED_FILE = "scheduler.paused"
"""The file in an instance directory whose presence pauses the local scheduler (``sleeper pause``)."""


def is_paused(instance: LocalInstance) -> bool:
    """Whether the local scheduler of an instance is paused: no periodic operation is triggered until resumed."""
    return (instance.directory / PAUSED_FILE).exists()


LOCAL_FILESYSTEM = "file://"
"""The ``sleeper.filesystem`` of every local instance: it keeps its data under its own directory, never in S3."""


def check_local_instance_properties(properties: InstanceProperties) -> None:
    """Checks that instance properties suit a local instance (used before saving an edit of them).

    Raises:
        PropertyError: If ``sleeper.filesystem`` is not ``file://``: a local instance keeps its data under its
            directory, and an instance on AWS is needed to keep it in S3.
    """
    value = properties.get("sleeper.filesystem")
    if value != LOCAL_FILESYSTEM:
        raise PropertyError(
            f"sleeper.filesystem must be {LOCAL_FILESYSTEM} on a local instance, which keeps its data under its "
            f"directory; got {value!r} (deploy an instance to AWS to keep data in S3)"
        )


class LocalInstance(InstanceTables):
    """A Sleeper instance held in one directory.

    Args:
        directory: The instance directory (it must hold an instance; see ``create``).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).resolve()
        self._properties_store = LocalPropertiesStore(self.directory)
        if not self._properties_store.instance_file.exists():
            raise InstanceNotFoundError(f"no Sleeper instance in {self.directory} (create one with 'instance create')")
        make_private(self.directory)
        self._properties = InstanceProperties(self._properties_store.load_instance())
        self.database = self.directory / DATABASE_FILE
        self.state_store_backend = SqliteStateStoreBackend(self.database, self.directory / "data")
        self._table_index = SqliteTableIndex(self.database)
        self.object_log_backend = FileStateStoreBackend(self.directory / "data")
        """The logs of tables whose ``sleeper.table.statestore.classname`` is ``S3TransactionLogStateStore``: files
        under each table's directory, created exclusively (``sleeper.adapters.local.file_log``)."""
        self._filesystem = pafs.LocalFileSystem()
        self._state_stores = threading.local()
        self.task: LocalTask | None = None
        """The local task this process runs as, while it runs as one (``sleeper.runtime.local.tasks.local_task``)."""

    def __repr__(self) -> str:
        return f"LocalInstance({str(self.directory)!r})"

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties (``instance.properties``)."""
        return self._properties

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The local filesystem."""
        return self._filesystem

    @property
    def table_index(self) -> SqliteTableIndex:
        """The table index, in the instance's database."""
        return self._table_index

    @property
    def properties_store(self) -> LocalPropertiesStore:
        """The properties files of the instance and its tables."""
        return self._properties_store

    # --- lifecycle ---------------------------------------------------------------------------------------------
    @classmethod
    def create(cls, directory: str | Path, *, instance_id: str | None = None) -> LocalInstance:
        """Creates a new instance in a directory (which may exist but must not hold an instance).

        Raises:
            InstanceAlreadyExistsError: If the directory already holds an instance.
        """
        path = Path(directory).resolve()
        store = LocalPropertiesStore(path)
        if store.instance_file.exists():
            raise InstanceAlreadyExistsError(f"{path} already holds a Sleeper instance")
        path.mkdir(mode=INSTANCE_DIRECTORY_MODE, parents=True, exist_ok=True)
        make_private(path)
        (path / "data").mkdir(exist_ok=True)
        iid = instance_id or f"local-{uuid.uuid4().hex[:8]}"
        props = InstanceProperties(
            {
                "sleeper.id": iid,
                "sleeper.filesystem": LOCAL_FILESYSTEM,
                "sleeper.data.bucket": str(path / "data"),
            }
        )
        props.validate_all()
        store.save_instance(dict(props.items()))
        return cls(path)

    @classmethod
    def open_or_create(cls, directory: str | Path) -> LocalInstance:
        """Opens the instance in a directory, creating it if there is none."""
        path = Path(directory)
        if (path / "instance.properties").exists():
            return cls(path)
        return cls.create(path)

    # --- queues and trackers (one SQLite database shared by every worker process) ------------------------------
    @cached_property
    def queues(self) -> SqliteQueues:
        """The instance's queues."""
        return SqliteQueues(self.database)

    def queue(self, name: str) -> Queue:
        """A queue of the instance by Sleeper's logical name (e.g. ``IngestJobQ``), with its dead-letter queue.

        The settings mirror Sleeper's: FIFO for the committer and the per-table scheduled queues, visibility and
        maxReceiveCount as Sleeper's stacks set them.
        """
        spec = (known := local_queue_settings()).get(name)
        if spec is None:
            raise SleeperError(f"unknown queue {name!r}; known queues: {', '.join(sorted(known))}")
        fifo, visibility, max_receive = spec
        return self.queues.queue(
            name,
            fifo=fifo,
            visibility_timeout=visibility,
            dead_letter=local_dead_letter_queue_name(name),
            max_receive_count=max_receive,
        )

    @property
    def query_results_uri(self) -> str:
        """Where queries sent to the query queue write their results (as Sleeper's query results bucket)."""
        return (self.directory / "query-results").as_uri()

    @property
    def bulk_export_uri(self) -> str:
        """Where bulk exports sent to the bulk export queue are written (as Sleeper's bulk export bucket)."""
        return (self.directory / "bulk-export").as_uri()

    @property
    def query_results_queue(self) -> Queue:
        """The queue queries asking for results on SQS get them on (``QueryResultsQ``)."""
        return self.queue(QUERY_RESULTS_Q)

    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Saves the instance properties (validate them first; see ``local_admin.update_instance_properties``)."""
        self.properties_store.save_instance(dict(properties.items()))
        self._properties = InstanceProperties(self._properties_store.load_instance())

    def dead_letter_queue(self, name: str) -> Queue:
        """The dead-letter queue of a queue named by its logical name (e.g. ``IngestJobQ``)."""
        source = self.queue(name)
        dead_letter = source.config.dead_letter_queue
        if dead_letter is None:
            raise SleeperError(f"queue {name!r} has no dead-letter queue")
        return self.queues.queue(dead_letter)

    @cached_property
    def batcher_store(self) -> SqliteIngestBatcherStore:
        """The ingest batcher's store of submitted files."""
        return SqliteIngestBatcherStore(self.database)

    @property
    def ingest_sources(self) -> IngestSources:
        """Anywhere: ingest jobs run as the user, who can read those files anyway (:mod:`sleeper.ingest.sources`)."""
        return IngestSources.anywhere()

    @property
    def accepts_local_files(self) -> bool:
        """Always True: requests and jobs may name local files, which the instance's workers read."""
        return True

    @property
    def batcher_queue_names(self) -> Mapping[str, str]:
        """The queue each ``sleeper.table.ingest.batcher.ingest.queue`` value sends jobs to: standard ingest to the
        ingest job queue, every bulk import platform to the one bulk import queue (``BulkImportJobQ``, local
        Spark)."""
        return route_bulk_import_to(BULK_IMPORT_JOB_Q)

    def delete_expired_batcher_records(self, now: datetime) -> None:
        """Deletes the batcher store's records past their time to live."""
        self.batcher_store.delete_expired(now)

    @cached_property
    def ingest_job_tracker(self) -> SqliteIngestJobTracker:
        """The ingest job tracker."""
        return SqliteIngestJobTracker(self.database)

    @cached_property
    def compaction_job_tracker(self) -> SqliteCompactionJobTracker:
        """The compaction job tracker."""
        return SqliteCompactionJobTracker(self.database)

    @cached_property
    def ingest_task_tracker(self) -> SqliteTaskTracker:
        """The ingest task tracker."""
        return SqliteTaskTracker(self.database, kind="ingest")

    @cached_property
    def compaction_task_tracker(self) -> SqliteTaskTracker:
        """The compaction task tracker."""
        return SqliteTaskTracker(self.database, kind="compaction")

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table:
        """Sends a query to the query queue, runs it there at once through the query and leaf partition query
        entries (:func:`sleeper.runtime.router.drain`), and reads the sub-queries' result files back in key order."""
        import pyarrow.parquet as pq

        from sleeper.core import QuerySerDe
        from sleeper.io import arrow_schema
        from sleeper.query import LEAF_PARTITION_QUERY_QUEUE, QUERY_QUEUE, query_results_dir
        from sleeper.runtime.router import drain

        self.queue(QUERY_QUEUE).send(QuerySerDe.for_schema(schema).to_json(query))
        drain(self, QUERY_QUEUE)
        drain(self, LEAF_PARTITION_QUERY_QUEUE)
        directory = Path(query_results_dir(str(self.directory / "query-results"), query.query_id))
        requested = query.processing.requested_value_fields
        names = [f.name for f in schema.row_key_fields + schema.sort_key_fields]
        values = [f.name for f in schema.value_fields if requested is None or f.name in requested]
        target = pa.schema([arrow_schema(schema).field(name) for name in names + values])
        # the files keep only Parquet's types: reading them as the table's gives back a timestamp's unit and zone
        files = sorted(directory.glob("*.parquet")) if directory.exists() else []
        parts = [pq.read_table(p, schema=target) for p in files]
        if not parts:
            return target.empty_table()
        key_names = [(f.name, "ascending") for f in schema.row_key_fields + schema.sort_key_fields]
        return pa.concat_tables(parts).sort_by(key_names)

    @cached_property
    def query_tracker(self) -> SqliteQueryTracker:
        """The query tracker."""
        return SqliteQueryTracker(self.database)

    # --- paths -------------------------------------------------------------------------------------------------
    def data_uri(self, table_id: str) -> str:
        """The URI of a table's data prefix."""
        return (self.directory / "data" / table_id).as_uri()

    @property
    def data_root(self) -> str:
        """The URI every table's data prefix is under."""
        return (self.directory / "data").as_uri()

    @property
    def filesystem_options(self) -> None:
        """How to reach the data files: a local instance's are on the local filesystem, with the defaults."""
        return None

    @property
    def ingests_in_process(self) -> bool:
        """Always True: ``Table.ingest`` writes and commits the rows in the calling process."""
        return True

    def job_workspace(self) -> AbstractContextManager[JobWorkspace]:
        """Where a job runs: under the local task this process runs as, else a directory it owns while the job runs
        (see :func:`sleeper.runtime.local.tasks.job_workspace`)."""
        return job_workspace(self)

    # --- tables ------------------------------------------------------------------------------------------------
    def is_table_deleted(self, table_id: str) -> bool:
        """Whether either kind of state store marks this table id deleted (for the sweep of deleted tables)."""
        return self.object_log_backend.is_deleted(table_id) or self.state_store_backend.is_deleted(table_id)

    def _state_store(self, table_id: str, properties: TableProperties) -> StateStore:
        """The table's state store, kept per thread between calls as Sleeper's state store provider keeps one per
        table in a process (``sleeper.statestore.provider.cache.size`` tables, the least recently used dropped first;
        0 keeps none, a negative size every table).

        Every read brings a state store up to date from its log, reading only the transactions after those it has
        (``sleeper.statestore.store``). A new state store loads the latest snapshot and reads every transaction after
        it: with one per message, handling n messages read about n squared transactions once the log ran ahead of the
        snapshots (58 per message in a profiled local run). A store is kept while the table's schema, state store
        class and settings stay as they were, and is never shared between threads.
        """
        schema = properties.schema
        object_log = state_store_class(properties.get(STATESTORE_CLASSNAME)) == S3_TRANSACTION_LOG_STATE_STORE
        settings = StateStoreSettings.from_properties(properties)
        stores: OrderedDict[str, tuple[tuple[object, ...], StateStore]] | None = getattr(
            self._state_stores, "by_table", None
        )
        if stores is None:
            stores = self._state_stores.by_table = OrderedDict()
        key = (schema, object_log, settings)
        size = self.properties.get_int(STATESTORE_PROVIDER_CACHE_SIZE)
        kept = stores.pop(table_id, None)
        if kept is None or kept[0] != key or size == 0:
            store = StateStore(
                schema=schema,
                table_id=table_id,
                backend=self.object_log_backend if object_log else self.state_store_backend,
                filesystem=self.filesystem,
                snapshot_base_path=str(self.directory / "data" / table_id),
                settings=settings,
                clock=lambda: datetime.now(tz=UTC),
                data_prefix=self.data_uri(table_id),
            )
            kept = (key, store)
        stores[table_id] = kept  # last: the least recently used are first
        while 0 <= size < len(stores):
            stores.popitem(last=False)
        return kept[1]

    def _table(self, status: TableStatus) -> Table[LocalInstance]:
        properties = TableProperties(self.properties, self.properties_store.load_table(status.table_id))
        store = self._state_store(status.table_id, properties)
        return Table(instance=self, status=status, properties=properties, state_store=store)


if TYPE_CHECKING:
    from sleeper.api import TableInstance
    from sleeper.ingest import IngestRuntime
    from sleeper.query import QueryableTable
    from sleeper.statestore import SleeperRuntime, SleeperTable

    def _conforms_to_the_feature_ports(instance: LocalInstance, table: Table[LocalInstance]) -> None:
        """Checked by mypy: the local instance and its tables fit the shared ports and ingest's (the ports only an
        instance on AWS fits, bulk import's launch, the WebSocket poster and the metrics publisher, are not its)."""
        runtime: SleeperRuntime = instance
        ingest: IngestRuntime = instance
        table_instance: TableInstance = instance
        sleeper_table: SleeperTable = table
        queryable: QueryableTable = table
        del runtime, ingest, table_instance, sleeper_table, queryable
