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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, Self, TypeVar, cast, overload

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.api.ingest_job import (
    IngestData,
    IngestJobSent,
    normalise_ingest_data,
    send_ingest_job,
    wait_for_ingest_job,
)
from sleeper.api.metadata import file_sizes, files_table, job_runs_table, partitions_table
from sleeper.api.queued_scan import DEFAULT_QUERY_WAIT_SECONDS, QueuedScan
from sleeper.api.scan import KeysArg, RangesArg, Scan, regions_of
from sleeper.api.time_travel import history_table, past_table
from sleeper.compaction import PurgeResult
from sleeper.core import (
    FieldType,
    Filter,
    KeyValue,
    Partition,
    PropertiesStore,
    PropertyError,
    Range,
    Region,
    Schema,
    SleeperError,
    TableAlreadyExistsError,
    TableIndex,
    TableStatus,
    new_table_id,
    partitions_from_split_points,
    read_split_points,
)
from sleeper.core.properties import (
    DEFAULT_STATESTORE_CLASSNAME,
    S3_TRANSACTION_LOG_STATE_STORE,
    SPLIT_POINTS_BASE64_ENCODED,
    SPLIT_POINTS_FILE,
    STATESTORE_CLASSNAME,
    TRANSACTION_LOG_FILES_TABLENAME,
    InstanceProperties,
    TableProperties,
    edited_table_properties,
    new_table_properties,
    state_store_class,
)
from sleeper.core.statestore import AllReferencesToAFile, FileReference
from sleeper.ingest import IngestResult, IngestRuntime, ingest_rows
from sleeper.io import filesystem_path
from sleeper.iterators import IteratorConfigError, check_table_iterators
from sleeper.query import (
    RESULTS_DESTINATIONS,
)
from sleeper.statestore import QueuedQueries, StateStore

DEFAULT_WAIT_SECONDS = 900.0
"""How long ``Table.ingest`` waits for an ingest job it sent to finish, by default."""

__all__ = [
    "DEFAULT_WAIT_SECONDS",
    "TABLE_NAME_PATTERN",
    "Table",
    "TableInstance",
    "TableMetadata",
    "check_table_name",
    "create_table",
]


class TableInstance(IngestRuntime, Protocol):
    """What a :class:`Table` needs of the instance holding it: the shared runtime port with ingest's part
    (:class:`sleeper.ingest.ports.IngestRuntime`), and what differs between the runtimes for a table's facade."""

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem of the data files (local, or S3 with paths ``bucket/key``)."""
        ...

    def data_uri(self, table_id: str) -> str:
        """The URI of a table's data prefix (``file:///.../data/<id>`` locally, ``s3a://<data bucket>/<id>`` on AWS)."""
        ...

    @property
    def ingests_in_process(self) -> bool:
        """Whether ``Table.ingest`` writes and commits the rows in this process (a local instance), rather than
        sending them as an ingest job for the instance's ingest tasks (an instance on AWS, as Sleeper's client does)."""
        ...

    def table(self, name: str) -> Table[Self]:
        """The table with this name.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def table_by_id(self, table_id: str) -> Table[Self]:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table[Self]:
        """Creates a table (:func:`create_table`).

        Raises:
            TableAlreadyExistsError: If the name is taken.
            PropertyError: If a property value is invalid.
        """
        ...

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> Table[Self]:
        """Validates and saves new values of a table's properties; returns the table with them.

        Raises:
            PropertyError: If a value is invalid or a property may not change; nothing is saved.
        """
        ...


InstanceT = TypeVar("InstanceT", bound=TableInstance, covariant=True)


@dataclass(frozen=True, slots=True, repr=False)
class Table(Generic[InstanceT]):
    """A table of an instance: its identity, properties and state store.

    Satisfies the table port every feature types against (``sleeper.statestore.tables.SleeperTable``) and the query
    executor's ``QueryableTable``.
    """

    instance: InstanceT
    status: TableStatus
    properties: TableProperties
    state_store: StateStore

    @property
    def name(self) -> str:
        """The table name."""
        return self.status.table_name

    def __repr__(self) -> str:
        return f"Table({self.name!r}, id={self.table_id!r}, instance={self.instance!r})"

    def _repr_html_(self) -> str:
        """A notebook's view: identity, schema, and the partitions, files and rows in the state store now."""
        from sleeper.api.views import html_summary

        references = self.file_references()
        schema = self.schema
        return html_summary(
            f"Sleeper table {self.name}",
            [
                ("id", self.table_id),
                ("online", self.status.online),
                ("row keys", ", ".join(schema.row_key_names)),
                ("sort keys", ", ".join(schema.sort_key_names) or "none"),
                ("values", ", ".join(schema.value_names) or "none"),
                ("formats", "readable by this port only" if self.port_only else "Sleeper's"),
                ("leaf partitions", len(self.leaf_partitions())),
                ("files", len({r.filename for r in references})),
                ("rows", sum(r.number_of_rows for r in references)),
                ("instance", repr(self.instance)),
            ],
        )

    @property
    def port_only(self) -> bool:
        """Whether the table is readable by this port only: its value fields use types Sleeper does not have
        (``Schema.uses_port_only_types``) or it keeps one row per row key (``sleeper.table.upsert``)."""
        from sleeper.iterators import table_upserts

        return self.schema.uses_port_only_types or table_upserts(self.properties)

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

    @property
    def inspect(self) -> TableMetadata:
        """The table's metadata as Arrow tables: ``inspect.files()``, ``inspect.partitions()``,
        ``inspect.properties()`` (pyiceberg's ``table.inspect``)."""
        return TableMetadata(self)

    @overload
    def ingest(
        self,
        data: IngestData,
        *,
        job_id: str | None = None,
        wait: Literal[True] = True,
        direct: bool | None = None,
        timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> IngestResult: ...

    @overload
    def ingest(
        self,
        data: IngestData,
        *,
        job_id: str | None = None,
        wait: Literal[False],
        direct: bool | None = None,
        timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> IngestJobSent: ...

    def ingest(
        self,
        data: IngestData,
        *,
        job_id: str | None = None,
        wait: bool = True,
        direct: bool | None = None,
        timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> IngestResult | IngestJobSent:
        """Ingests rows: Parquet paths (local paths relative to the working directory, or ``s3://``/``s3a://``), a
        pyarrow Table, RecordBatch(es) or RecordBatchReader, a list of dicts, a pandas DataFrame, or any object with
        ``__arrow_c_stream__`` (polars and DuckDB among them). Anything else is refused, naming what is accepted.

        A local instance ingests directly: the rows are sorted, written under the table's data prefix and committed
        in this process (sorted runs spill to the instance's job workspace). An instance on AWS ingests as Sleeper's
        client does, through an ingest job: rows in memory or local files are first written as one Parquet file
        under ``for_ingest/`` in the data bucket (S3 paths are named as they are), the job goes to the ingest job
        queue, and with ``wait=True`` the ingest job tracker is polled until the job finishes. ``direct`` chooses
        the other way on either runtime.

        Args:
            data: The rows.
            job_id: The id of the ingest: a retry with the same id adds its rows once.
            wait: Wait for the rows to be committed (the default); with False, send an ingest job and return at once.
            direct: True: write and commit in this process (on AWS this needs write access to the data bucket and
                the state store); False: send an ingest job; None: the instance's way (local: direct; AWS: a job).
            timeout_seconds: How long to wait for a job sent to the queue.

        Returns:
            With ``wait=True``, what was written and committed (for a job: the rows read and written, from the
            tracker); with ``wait=False``, the job sent.

        Raises:
            SleeperError: If the data is of no accepted form, or ``direct=True`` is asked with ``wait=False``.
            MissingFileError: If a local path names nothing.
            IngestJobError: If a job sent is rejected, fails or does not finish in time.
        """
        if not self.schema.sort_key_names and self._upserts:
            if not wait:
                raise SleeperError(
                    f"table {self.name} keeps the last committed row of each row key (sleeper.table.upsert), so its "
                    "rows are upserted in this process and wait=False cannot send an ingest job: drop wait=False"
                )
            return self._ingest_as_upsert(data)
        in_process = (self.instance.ingests_in_process and wait) if direct is None else direct
        if in_process and not wait:
            raise SleeperError("wait=False sends an ingest job, which direct=True does not: choose one")
        rows = normalise_ingest_data(data)
        if in_process:
            with self.instance.job_workspace() as workspace:
                return ingest_rows(
                    self, rows, job_id=job_id, local_dir=workspace.directory, options=self.instance.filesystem_options
                )
        instance = self.instance
        sent = send_ingest_job(instance, self.name, self.schema, rows, job_id=job_id)
        if not wait:
            return sent
        return wait_for_ingest_job(instance.ingest_job_tracker, sent.job_id, timeout_seconds=timeout_seconds)

    def scan(
        self,
        *,
        keys: KeysArg | None = None,
        ranges: RangesArg | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        as_of: int | datetime | str | None = None,
        via_queue: bool = False,
        queue_results: str | None = None,
        queue_timeout_seconds: float | None = None,
        filter: str | Filter | None = None,
        iterator: str | None = None,
        iterator_config: str | None = None,
    ) -> Scan:
        """The rows of exact row keys and/or ranges of row keys (every row if neither is given), read lazily with
        ``to_arrow()``, ``to_arrow_batch_reader()``, ``to_pandas()``, ``to_polars()`` or ``to_duckdb(name)``.

        Rows come in key order, with the table's filters, aggregations and iterator applied. By default they are read
        straight from the data files, as Sleeper's direct query client reads them. With ``via_queue=True`` each
        ``to_*`` call sends the query to the instance's query queue instead, as ``sleeper query --via-queue`` does:
        on AWS the deployed query functions run it as sub-queries (the caller needs no access to the data bucket or
        the state store, only to the queue, the query tracker and the results), it waits for the query tracker to
        record the query finished and reads the results; on a local instance the query and leaf handlers run it at
        once in this process, through the instance's own queues and query tracker. The whole result is then held in
        memory, and ``limit`` trims it after the query (which reads every row it selects).

        Args:
            keys: Exact row keys, each a mapping by row key field name or the values in row key order.
            ranges: A :class:`Region`, a :class:`Range`, a mapping ``{row key field: (min, max)}`` (``[min, max)``,
                None unbounded), or an iterable of those.
            columns: The columns to return, in order (key fields only if named); every column if None.
            limit: The most rows to return: reading stops once they are found.
            as_of: Beyond Sleeper, time travel: the rows of the table as it was after a files transaction (a number),
                or at a time (a ``datetime``, or an ISO 8601 string; naive times are UTC). See
                docs/usage/time-travel.md. The current rows if None.
            via_queue: Run the query through the query queue (see above) rather than reading the files here.
            queue_results: With ``via_queue``: ``s3`` (the default: each sub-query writes a Parquet file to the
                query results bucket) or ``sqs`` (each sends its rows in batches to the query results queue).
            queue_timeout_seconds: With ``via_queue``: how long to wait for the query to finish (300 s by default).
            filter: Beyond Sleeper: the rows to return among those selected, by a predicate on any column, such as
                ``"age >= 18 and name starts with 'a'"`` (docs/usage/filters.md has the language), or a
                :mod:`sleeper.core.filter` model. Row key predicates narrow the leaves read, every predicate skips
                row groups by their statistics, and the rest is filtered batch by batch. It applies after the
                table's own rules, so it never widens what they give. It travels with a queued query too.
            iterator: A query-time iterator applied after the table's rules (before ``filter``), as a query's
                ``queryTimeIteratorClassName``: ``package.module.Class`` or one of Sleeper's built-in names, e.g.
                ``sleeper.iterators.examples.SecurityFilteringIterator``. It travels with a queued query too.
            iterator_config: The query-time iterator's config, e.g. ``visibility,auth1,auth2``.

        Raises:
            KeyTypeError: If a key does not suit the schema.
            QueryExecutionError: If a column is not in the table, or the limit is negative.
            FilterError: If the filter has bad syntax, names a column the table lacks or compares one with a value
                of another type (the message gives the position).
            StateNotReadableError: If the state as of ``as_of`` can no longer be read (it names the oldest readable
                transaction).
            SleeperError: If ``via_queue`` is asked with ``as_of`` (a queued query reads the current state), or the
                queue options are given without it or are invalid.

        ``to_*`` on a queued scan raises ``QueuedQueryFailedError`` (with the tracker's reasons, and no rows) if the
        tracker records the query FAILED or PARTIALLY_FAILED, and ``QueryWaitTimeoutError`` if it does not finish in
        time.
        """
        selection: dict[str, Any] = {
            "keys": None if keys is None else tuple(keys),
            "regions": None if ranges is None else tuple(regions_of(self, ranges)),
            "columns": None if columns is None else tuple(columns),
            "limit": limit,
            "options": self.instance.filesystem_options,
            "filter": filter,
            "iterator": iterator,
            "iterator_config": iterator_config,
        }
        if via_queue:
            return self._queued_scan(selection, as_of, queue_results, queue_timeout_seconds)
        if queue_results is not None or queue_timeout_seconds is not None:
            raise SleeperError("queue_results and queue_timeout_seconds apply to a scan with via_queue=True only")
        return Scan(self if as_of is None else past_table(self, as_of), **selection)

    def _queued_scan(
        self,
        selection: dict[str, Any],
        as_of: int | datetime | str | None,
        results: str | None,
        timeout_seconds: float | None,
    ) -> QueuedScan:
        if as_of is not None:
            raise SleeperError("as_of reads the table's past state directly: it cannot be used with via_queue=True")
        if results is not None and results not in RESULTS_DESTINATIONS:
            raise SleeperError(f"queue_results must be one of {', '.join(RESULTS_DESTINATIONS)}, got {results!r}")
        wait = DEFAULT_QUERY_WAIT_SECONDS if timeout_seconds is None else timeout_seconds
        if wait <= 0:
            raise SleeperError(f"queue_timeout_seconds must be more than 0, got {wait:g}")
        return QueuedScan(
            self,
            **selection,
            table_name=self.name,
            admin=self._query_queue(),
            results=results or "s3",
            timeout_seconds=wait,
        )

    def _query_queue(self) -> QueuedQueries:
        """The instance holding the table, which sends (and, locally, runs) queued queries."""
        instance = self.instance
        if not callable(getattr(instance, "run_queued_query", None)):
            raise SleeperError(f"a {type(instance).__name__} has no query queue: via_queue=True cannot be used")
        return instance

    def query(
        self,
        *,
        keys: Iterable[Mapping[str, object] | Sequence[object]] | None = None,
        regions: Iterable[Region] | None = None,
        requested_value_fields: Sequence[str] | None = None,
        iterator: str | None = None,
        iterator_config: str | None = None,
        filter: str | Filter | None = None,
    ) -> pa.Table:
        """Rows for exact row keys and/or regions, in key order; every row if neither is given. Read directly (not
        through the query queue).

        The table's filters, aggregations and iterator apply, as in every Sleeper query, then the query-time
        ``iterator`` if given (a class name as in a query's ``queryTimeIteratorClassName``, with its
        ``iterator_config``; e.g. ``sleeper.iterators.examples.SecurityFilteringIterator`` with
        ``visibility,auth1,auth2``). An iterator that cannot be loaded raises ``IteratorLoadError``; no rows are read.
        Beyond Sleeper, ``filter`` keeps the rows matching a filter on any column (as in :meth:`scan`), applied last.
        """
        columns = None
        if requested_value_fields is not None:
            wanted = set(requested_value_fields) | set(self.schema.key_names)
            unknown = [f for f in requested_value_fields if not self.schema.has_field(f)]
            columns = [name for name in self.schema.field_names if name in wanted] + unknown  # unknown: refused
        return self.scan(
            keys=keys,
            ranges=None if regions is None else list(regions),
            columns=columns,
            filter=filter,
            iterator=iterator,
            iterator_config=iterator_config,
        ).to_arrow()

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

    def add_column(self, name: str, type: FieldType | str, *, nullable: bool = True) -> Table[InstanceT]:
        """Beyond Sleeper: appends a nullable value column to the table's schema; returns the table with it. Files
        written before read it as nulls on every door; nothing is rewritten until compaction. See
        :func:`sleeper.api.schema_change.add_column` (its errors, and the type names it takes)."""
        from sleeper.api.schema_change import add_column

        return cast("Table[InstanceT]", add_column(self, name, type, nullable=nullable))

    def truncate(self) -> Table[InstanceT]:
        """Beyond Sleeper: removes every row in one commit (the files log's CLEAR_FILES), keeping the partitions;
        returns the table. See :func:`sleeper.api.schema_change.truncate`."""
        from sleeper.api.schema_change import truncate

        return cast("Table[InstanceT]", truncate(self))

    def delete(self, where: str | Filter) -> int:
        """Beyond Sleeper: deletes the rows matching a filter (``sleeper.core.filter``'s language: keys, ranges and any
        column) among those committed before, in one atomic commit; returns its transaction number. Every read hides
        them at once; compaction removes them, and :meth:`purge` forces that. See :func:`sleeper.api.deletes.delete`.

        Raises:
            FilterError: If the filter is missing or does not suit the schema (``truncate`` removes every row).
        """
        from sleeper.api.deletes import delete

        return delete(self, where)

    def purge(self) -> PurgeResult:
        """Beyond Sleeper: compacts every file still holding rows a pending delete hides, in this process; returns the
        jobs run and the deletes left (``done`` once no file a read plans holds a deleted row). See
        :func:`sleeper.api.deletes.purge`."""
        from sleeper.api.deletes import purge

        return purge(self)

    @property
    def _upserts(self) -> bool:
        from sleeper.iterators import table_upserts

        return table_upserts(self.properties)

    def _ingest_as_upsert(self, data: IngestData) -> IngestResult:
        from sleeper.api.upserts import upsert_rows

        return upsert_rows(self, data)[1]

    def upsert(self, data: IngestData) -> list[int]:
        """Beyond Sleeper: writes rows (any form :meth:`ingest` takes) to a table that keeps one row per row key
        (``sleeper.table.upsert``), each replacing the row of its key: with a sort key the row with the greatest sort
        key is kept; without one the last committed, by commits that hide the older rows of the keys written. The rows
        are written in this process on either runtime. Returns the transaction numbers committed. See
        :func:`sleeper.api.upserts.upsert` and docs/usage/upserts.md.

        Raises:
            UpsertNotEnabledError: If the table does not set ``sleeper.table.upsert``; nothing is written.
        """
        from sleeper.api.upserts import upsert

        return upsert(self, data)

    def overwrite(self, data: IngestData) -> int:
        """Beyond Sleeper: replaces every row by the given rows (any form :meth:`ingest` takes) in one atomic commit,
        written in this process; returns its transaction number. A reader sees all the old rows or all the new ones,
        never a mix and never none. See :func:`sleeper.api.deletes.overwrite`."""
        from sleeper.api.deletes import overwrite

        return overwrite(self, data)

    def history(self) -> pa.Table:
        """Beyond Sleeper: the table's kept transactions, oldest first (log, number, type, time, files and rows added
        and removed, and whether the state as of each files transaction is readable by ``scan(as_of=...)``)."""
        return history_table(self)

    def set_properties(self, values: Mapping[str, str]) -> Table[InstanceT]:
        """Validates and saves new property values; returns the table with them.

        Raises:
            PropertyError: If a value is invalid or a property may not change; nothing is saved.
        """
        return self.instance.update_table_properties(self.name, values)


@dataclass(frozen=True, slots=True)
class TableMetadata:
    """A table's metadata as Arrow tables (``table.inspect``), read from its state store when called."""

    table: Table[Any]

    def files(self) -> pa.Table:
        """One row per file reference: file, partition, rows (and whether that count is exact), the job that added
        it, the file's size in bytes; plus one row with a null partition per file no longer referenced (awaiting
        garbage collection). The sizes are read from the filesystem in one listing call."""
        files = self.table.files()
        paths = {f.filename: filesystem_path(f.filename) for f in files}
        return files_table(files, file_sizes(self.table.instance.filesystem, paths))

    def partitions(self) -> pa.Table:
        """One row per partition: id, parent, children, leaf or not, the dimension split on, its region as
        ``<field>_min`` (inclusive) and ``<field>_max`` (exclusive, null if unbounded) per row key field, and the
        ``files``, ``rows`` and ``bytes`` referenced on it (a file referenced on several partitions counts its whole
        size on each)."""
        return partitions_table(self.table.partitions(), self.table.schema, self.files())

    def jobs(self) -> pa.Table:
        """One row per run of the table's ingest (and bulk import) and compaction jobs, from the job trackers: job,
        kind, run, task, status, partition (compaction), start, finish and commit times, duration, rows read and
        written, failure reasons (the runs ``sleeper report ingest-jobs`` and ``compaction-jobs`` print)."""
        from sleeper.api.reports import compaction_job_rows, ingest_job_rows

        instance = self.table.instance
        table_id = self.table.table_id
        return job_runs_table(
            ingest_job_rows(instance.ingest_job_tracker.jobs(table_id)),
            compaction_job_rows(instance.compaction_job_tracker.jobs(table_id)),
        )

    def properties(self) -> pa.Table:
        """One row per table property set or defaulted: name and value."""
        items = sorted(self.table.properties.items())
        return pa.table({"name": [k for k, _ in items], "value": [v for _, v in items]})


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


def check_processing(properties: TableProperties) -> None:
    """Checks a table's filters, aggregations and iterator as every place applying them will: the iterator
    (``sleeper.table.iterator.class.name`` with its ``.config``) is imported and initialised here, at table create
    and property set, on either runtime.

    Raises:
        PropertyError: In one line, naming the property and what is wrong.
    """
    try:
        check_table_iterators(properties)
    except IteratorConfigError as e:
        raise PropertyError(str(e)) from e


def edited_properties(current: TableProperties, values: Mapping[str, str | None]) -> TableProperties:
    """A table's properties with the values a user set, validated (``edited_table_properties``, then
    :func:`check_processing`); ``current`` is left as it was.

    Raises:
        PropertyError: Naming the first unknown, invalid or refused property, or the iterator that cannot be used.
    """
    updated = edited_table_properties(current, values)
    check_processing(updated)
    return updated


_Made = TypeVar("_Made", bound="Table[Any]")


def _split_points_file(properties: TableProperties, schema: Schema) -> list[KeyValue] | None:
    """The split points of the file ``sleeper.table.splits.file`` names, or None if it names none.

    Raises:
        SleeperError: Naming the property and the file, if it cannot be read or holds an invalid split point.
    """
    path = properties.get(SPLIT_POINTS_FILE)
    if not path:
        return None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SleeperError(f"{SPLIT_POINTS_FILE.name}: cannot read {path}: {e.strerror or e}") from None
    base64 = properties.get_bool(SPLIT_POINTS_BASE64_ENCODED)
    try:
        return list(read_split_points(schema, lines, strings_base64=base64))
    except SleeperError as e:
        raise SleeperError(f"{SPLIT_POINTS_FILE.name}: {path}: {e}") from None


def has_dynamodb_transaction_log(instance: InstanceProperties) -> bool:
    """Whether an instance has the DynamoDB transaction log (SQLite on a local instance): unless its
    ``sleeper.default.table.statestore.classname`` is ``S3TransactionLogStateStore`` and it names no DynamoDB files
    log table (a deployment whose tables all used that store deployed none)."""
    return not (
        state_store_class(instance.get(DEFAULT_STATESTORE_CLASSNAME)) == S3_TRANSACTION_LOG_STATE_STORE
        and not instance.get(TRANSACTION_LOG_FILES_TABLENAME)
    )


def check_state_store_deployed(properties: TableProperties) -> None:
    """Checks that a new table's state store exists on its instance. Beyond Sleeper: an instance whose
    ``sleeper.default.table.statestore.classname`` is ``S3TransactionLogStateStore`` and that names no DynamoDB
    files log table (a deployment whose tables all used that store deployed none; a local instance has none named)
    has no DynamoDB transaction log, so a table asking for a DynamoDB store is refused.

    Raises:
        PropertyError: In one line, naming the property and what to do, or if the table names no state store.
    """
    store = state_store_class(properties.get(STATESTORE_CLASSNAME))
    if store != S3_TRANSACTION_LOG_STATE_STORE and not has_dynamodb_transaction_log(properties.instance_properties):
        raise PropertyError(
            f"{STATESTORE_CLASSNAME.name}={store} needs the DynamoDB transaction log, which this instance does not "
            f"have ({DEFAULT_STATESTORE_CLASSNAME.name}={S3_TRANSACTION_LOG_STATE_STORE} and no table deployed with "
            f"it used DynamoDB): leave {STATESTORE_CLASSNAME.name} unset or set it to {S3_TRANSACTION_LOG_STATE_STORE}"
        )


def create_table(
    *,
    name: str,
    schema: Schema,
    split_points: Sequence[KeyValue] | None,
    properties: Mapping[str, str] | None,
    instance_properties: InstanceProperties,
    table_index: TableIndex,
    properties_store: PropertiesStore,
    make_table: Callable[[TableStatus], _Made],
) -> _Made:
    """Creates a table as Sleeper does, on either runtime: validates its name, properties and split points, saves its
    properties, adds it to the table index (taking the properties back if that fails) and initialises its partitions.

    With no split points given, those of the file ``sleeper.table.splits.file`` names are used (a path on this
    machine, base64 encoded strings if ``sleeper.table.splits.base64.encoded``), as Sleeper's table creation reads it.

    Raises:
        SleeperError: If the name is invalid.
        TableAlreadyExistsError: If the name is taken.
        PropertyError: If a property is invalid.
        PartitionTreeError: If the split points are invalid.
    """
    check_table_name(name)
    if any(t.table_name == name for t in table_index.list_tables()):
        raise TableAlreadyExistsError(f"table {name!r} already exists")
    table_id = new_table_id()
    values = {str(k): str(v) for k, v in (properties or {}).items()}
    table_properties = new_table_properties(
        instance_properties, name=name, table_id=table_id, schema=schema, values=values
    )
    if split_points is None:
        split_points = _split_points_file(table_properties, schema)
    partitions = partitions_from_split_points(schema, list(split_points or []))
    check_processing(table_properties)
    check_state_store_deployed(table_properties)  # a state store this port has and the instance deployed, or refused
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
