"""Running queries: read each leaf's files within its regions, merge, apply the table's processing, project (7.2).

A sub-query (:class:`~sleeper.core.query.LeafPartitionQuery`) reads every one of its files limited to its regions
cut to its leaf partition, so only the row groups that can hold those keys are decoded and a file shared with other
leaves gives each row once. The sorted streams are merged on the row and sort keys, the table's filters and
aggregations are applied to the merged stream, and the key fields plus the requested value fields are returned.

:func:`execute` plans a query against a table's state store and runs its sub-queries one after another, in key
order of their leaves, as one Arrow stream (the next sub-query's files are read ahead, at background priority, while
the current one is merged); :func:`table_query` is the convenience form returning a pyarrow Table.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import pyarrow as pa

from sleeper.core import (
    MAX_KEY_REGIONS,
    Filter,
    LeafPartitionQuery,
    PartitionTree,
    PrimitiveType,
    Query,
    QueryProcessingConfig,
    Region,
    Schema,
    SleeperError,
    columns_of,
    filter_of,
    key_regions,
    may_match,
)
from sleeper.core.properties import TableProperties
from sleeper.core.statestore import FileReference, PendingDelete, filters_by_file, filters_of_each
from sleeper.io import (
    DEFAULT_BATCH_ROWS,
    ENGINE_DATAFUSION,
    FileSystemOptions,
    KeyBounds,
    PageSpans,
    ReadPlan,
    RowPredicate,
    SortedFileReader,
    arrow_schema,
    conform_batch,
    datafusion_can_read,
    filter_batch,
    merge_sorted,
    page_spans,
    resolve_engine,
    row_predicate,
)
from sleeper.iterators import (
    AGGREGATIONS_PROPERTY,
    FILTERS_PROPERTY,
    QUERY_TIME_SOURCE,
    DeletedRows,
    IteratorSpec,
    ProcessingConfig,
    RowIterators,
)
from sleeper.query.exceptions import QueryExecutionError
from sleeper.query.planner import leaf_regions, plan_query

if TYPE_CHECKING:
    from sleeper.query.datafusion_read import DataFusionLeafRead

__all__ = [
    "QueryableStateStore",
    "QueryableTable",
    "execute",
    "narrowed_to_filter",
    "output_fields",
    "plan_table_query",
    "processing_config",
    "query_engine",
    "query_iterators",
    "read_fields",
    "region_bounds",
    "run_leaf_query",
    "table_query",
    "table_query_of",
]


class QueryableStateStore(Protocol):
    """What a query needs from a table's state store."""

    def partition_tree(self) -> PartitionTree:
        """The table's partitions."""
        ...

    def file_references(self) -> list[FileReference]:
        """Every file reference of the table."""
        ...


@runtime_checkable
class DeletingStateStore(Protocol):
    """A state store that keeps pending row deletes (``StateStore.pending_deletes``, a past state's too)."""

    def pending_deletes(self) -> tuple[PendingDelete, ...]:
        """The pending row deletes, oldest first."""
        ...


@runtime_checkable
class IndexedStateStore(Protocol):
    """A state store that keeps the files on each partition between reads (``StateStore.partition_files``)."""

    def partition_files(self) -> FilesOnPartitions:
        """The files referenced on each partition."""
        ...


class FilesOnPartitions(Protocol):
    """The files referenced on each partition of a table."""

    def files_on(self, partition_id: str) -> list[str]:
        """The files referenced on a partition."""
        ...

    def maybe_referenced_partitions(self) -> Collection[str]:
        """Every partition a file may be referenced on (a superset is fine: ``files_on`` tells)."""
        ...


def plan_table_query(
    query: Query, state_store: QueryableStateStore, *, table_id: str, schema: Schema | None = None
) -> list[LeafPartitionQuery]:
    """Plans a query against a table's state: from the state store's files by partition where it keeps them (so a
    lookup visits only the leaves it touches and their ancestors' files), else from every reference.

    A query with a filter is planned on its regions narrowed to what the filter says of the row keys
    (:func:`narrowed_to_filter`, given the table's ``schema``), so only the leaves that can hold a matching row get a
    sub-query.

    The files are read before the partitions (as every planner of reads by partition does: bulk export, Athena's
    layout, the Iceberg publisher). Partitions are only ever added, so a split landing between the two reads gives
    leaves whose ancestors hold the files read, and each sub-query reads them cut to its leaf. Read the other way
    round, a split and the move of its parent's references to the new leaves (job creation's pre-split) landing
    between the reads leave references on leaves the older tree lacks, and their rows are missed (the A3 mixed race
    saw a query miss 225 acknowledged rows).

    Each sub-query carries the filters of the pending row deletes that hide rows of its files
    (``LeafPartitionQuery.pending_deletes``), so wherever it runs (this process, a leaf query Lambda, a Spark
    executor) :func:`run_leaf_query` hides those rows as a direct query does.
    """
    leaves, _ = plan_with_deletes(query, state_store, table_id=table_id, schema=schema)
    return leaves


def plan_with_deletes(
    query: Query, state_store: QueryableStateStore, *, table_id: str, schema: Schema | None = None
) -> tuple[list[LeafPartitionQuery], dict[str, tuple[str, ...]]]:
    """Plans a query as :func:`plan_table_query` does, with the filters of the pending row deletes that hide rows of
    the files its sub-queries read, by file (none for a file no delete lists); each sub-query carries those of its
    own files.

    The deletes are read after the files: a file stays in a delete's set until it leaves the table's state, so they
    cover every file planned (``sleeper.core.statestore.deletes``).
    """
    leaves = _plan(query, state_store, table_id=table_id, schema=schema)
    if not isinstance(state_store, DeletingStateStore):
        return leaves, {}
    deletes = state_store.pending_deletes()
    if not deletes:
        return leaves, {}
    hidden = filters_by_file(deletes, {name for leaf in leaves for name in leaf.files})
    carried = filters_of_each(deletes, [leaf.files for leaf in leaves])
    return [replace(leaf, pending_deletes=c) if c else leaf for leaf, c in zip(leaves, carried, strict=True)], hidden


def _plan(
    query: Query, state_store: QueryableStateStore, *, table_id: str, schema: Schema | None = None
) -> list[LeafPartitionQuery]:
    if schema is not None:
        query = narrowed_to_filter(query, schema)
    if isinstance(state_store, IndexedStateStore):
        index = state_store.partition_files()
        tree = state_store.partition_tree()
        # A reference on a partition the tree lacks is reached by no leaf: refused, never left out (checked from the
        # index's partitions, so a lookup still goes through no reference of the leaves it does not touch).
        outside = [p for p in index.maybe_referenced_partitions() if p not in tree and index.files_on(p)]
        return plan_query(query, tree, table_id=table_id, files_on=index.files_on, referenced_partitions=outside)
    references = state_store.file_references()
    return plan_query(query, state_store.partition_tree(), references, table_id=table_id)


def narrowed_to_filter(query: Query, schema: Schema) -> Query:
    """The query with its regions cut to the row key regions its filter allows (the same query if it has no filter,
    or the filter does not narrow the row keys). The filter still applies to every row read."""
    node = query.processing.filter
    allowed = None if node is None else key_regions(node, schema)
    if allowed is None:
        return query
    if len(query.regions) * len(allowed) > MAX_KEY_REGIONS:
        return query
    try:
        cut = [inside for r in query.regions for a in allowed if (inside := r.intersection(a)) is not None]
    except SleeperError:
        return query  # bounds the key type cannot hold: planned unnarrowed, the filter still applies to every row
    return dataclasses.replace(query, regions=tuple(cut))


class QueryableTable(Protocol):
    """What a query needs from a table (a local runtime table fits)."""

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
    def state_store(self) -> QueryableStateStore:
        """The table's state store."""
        ...


def processing_config(properties: TableProperties, schema: Schema) -> ProcessingConfig:
    """The table's filters and aggregations, from ``sleeper.table.filters`` and ``sleeper.table.aggregations``.

    Raises:
        IteratorConfigError: If either property cannot be read or does not suit the schema.
    """
    return ProcessingConfig.parse(properties.get(FILTERS_PROPERTY), properties.get(AGGREGATIONS_PROPERTY), schema)


def query_iterators(
    properties: TableProperties, schema: Schema, processing: QueryProcessingConfig, now_ms: int
) -> RowIterators:
    """What a query applies to the merged rows, loaded before anything is read: the table's filters, aggregations
    and iterator (``sleeper.table.iterator.class.name``), then the query's own iterator
    (``queryTimeIteratorClassName`` with ``queryTimeIteratorConfig``).

    Raises:
        IteratorLoadError: If either iterator cannot be loaded or refuses its config (the query returns no rows).
        IteratorConfigError: If the table's filters or aggregations are invalid.
    """
    query_time = IteratorSpec.optional(
        processing.query_time_iterator_class_name, processing.query_time_iterator_config, QUERY_TIME_SOURCE
    )
    return RowIterators.for_table(properties, schema, query_time=query_time, now_ms=now_ms)


def query_engine(properties: TableProperties) -> str:
    """The engine a query reads a table's leaves with, ``ARROW`` or ``DATAFUSION``: chosen from
    ``sleeper.table.data.engine`` by the rule compaction follows too (:func:`sleeper.io.data_engine.resolve_engine`), so
    DATAFUSION only where the table or its instance names it, and ARROW at the built-in default.

    Raises:
        DataEngineError: If the property names no engine.
        EngineUnavailableError: If DATAFUSION is asked for and the ``datafusion`` extra is not installed.
    """
    return resolve_engine(properties)


def region_bounds(region: Region) -> list[KeyBounds]:
    """A region as the canonical key bounds a data file read takes (inclusive minimum, exclusive maximum)."""
    return [KeyBounds(name, r.canonical_min, r.canonical_max) for name, r in region.ranges.items()]


def output_fields(schema: Schema, requested_value_fields: Sequence[str] | None) -> list[str]:
    """The fields a query returns, in schema order: every key field, and the requested value fields (all if None).

    Raises:
        QueryExecutionError: If a requested field is not in the schema.
    """
    if requested_value_fields is None:
        return list(schema.field_names)
    unknown = [name for name in requested_value_fields if not schema.has_field(name)]
    if unknown:
        raise QueryExecutionError(f"table has no field {unknown[0]!r}")
    wanted = set(requested_value_fields)
    keys = set(schema.key_names)
    return [name for name in schema.field_names if name in keys or name in wanted]


def read_fields(
    schema: Schema,
    requested_value_fields: Sequence[str] | None,
    config: ProcessingConfig | RowIterators,
    row_filter: Filter | None = None,
) -> list[str]:
    """The fields to read from data files: those returned, plus the value fields the filters, aggregations,
    iterators and the query's filter need."""
    required = (
        config.required_value_fields() if isinstance(config, RowIterators) else config.required_value_fields(schema)
    )
    needed = set(output_fields(schema, requested_value_fields)) | set(required)
    if row_filter is not None:
        needed.update(columns_of(row_filter))
    return [name for name in schema.field_names if name in needed]


def run_leaf_query(
    leaf_query: LeafPartitionQuery,
    schema: Schema,
    config: ProcessingConfig | RowIterators,
    now_ms: int,
    *,
    options: FileSystemOptions | None = None,
    batch_rows: int | None = None,
    deleted: Mapping[str, DeletedRows] | None = None,
    engine: str | None,
) -> Iterator[pa.RecordBatch]:
    """Runs one sub-query: the rows of its files in its regions and its leaf, processed, filtered and projected.

    The sub-query's regions are cut to its partition region again here, so a sub-query read from a queue cannot
    return rows of another leaf. The query's filter applies after the table's processing and iterators, to the rows
    they give. Row groups are skipped by the filter's test of their statistics: on key fields always, and on value
    fields when the processing only drops rows (no aggregation, no iterator), so skipping never changes a result;
    then too the filter is applied to each file's rows before the merge.

    Args:
        leaf_query: The sub-query.
        schema: The table schema.
        config: What is applied after the merge (:func:`query_iterators`); filters and aggregations alone may be
            given as a ``ProcessingConfig``.
        now_ms: The time age-off filters measure from, in milliseconds since the epoch.
        options: How to reach S3.
        batch_rows: The most rows in a batch read and merged; the merge's default if None.
        deleted: The rows pending deletes hide, by file (:meth:`DeletedRows.by_file`): hidden from each file's rows
            as they are read, before the merge and the table's rules. If None, those the sub-query carries
            (``LeafPartitionQuery.pending_deletes``).
        engine: The table's :func:`query_engine`, which every door running sub-queries passes, so none reads with
            another engine than the table names. ``DATAFUSION`` reads and merges the files with DataFusion where they
            are local or on S3 (:mod:`sleeper.query.datafusion_read`); the pyarrow read otherwise. The rows returned
            are the same.

    Yields:
        Batches in key order with exactly the output fields (see :func:`output_fields`), in schema order.

    Raises:
        QueryExecutionError: If a requested field is not in the schema.
        MissingFileError: If a data file does not exist.
    """
    leaf = _open_leaf(leaf_query, schema, config, now_ms, options, batch_rows, deleted, engine=engine)
    if leaf is not None:
        yield from leaf.batches()


def _open_leaf(
    leaf_query: LeafPartitionQuery,
    schema: Schema,
    config: ProcessingConfig | RowIterators,
    now_ms: int,
    options: FileSystemOptions | None,
    batch_rows: int | None,
    deleted: Mapping[str, DeletedRows] | None,
    *,
    background: bool = False,
    engine: str | None = None,
) -> _LeafRead | None:
    """A sub-query's files opened and their reads planned and started (see :func:`run_leaf_query`); None if it reads
    nothing. With ``background``, its read ahead runs at background priority until its batches are taken."""
    requested = leaf_query.processing.requested_value_fields
    row_filter = leaf_query.processing.filter
    out_names = output_fields(schema, requested)
    names = read_fields(schema, requested, config, row_filter)
    if deleted is None and leaf_query.pending_deletes:
        deleted = DeletedRows.by_file(dict(leaf_query.pending_deletes), schema)
    hides = {name: hide for name in leaf_query.files if deleted and (hide := deleted.get(name)) is not None}
    if hides:
        needed = set(names).union(*(hide.columns for hide in hides.values()))
        names = [name for name in schema.field_names if name in needed]
    regions = leaf_regions(leaf_query.regions, leaf_query.partition_region)
    if not regions or not leaf_query.files:
        return None
    bounds = [region_bounds(r) for r in regions]
    rows = DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows
    iterators = config if isinstance(config, RowIterators) else RowIterators(schema, config, now_ms=now_ms)
    pruning = None
    expression = None if row_filter is None else row_predicate(row_filter, schema)
    if row_filter is not None:
        # Where the table's rules only drop rows, the filter commutes with them: each file's rows are filtered as
        # they are read (on the reading threads), so the merge and the rules see only the rows that can match.
        early = iterators.only_drops_rows
        usable = schema.field_names if early else schema.key_names
        stored = {f.name: f.type for f in schema.all_fields if f.name in usable}
        page_columns = frozenset(name for name, t in stored.items() if t in _PAGE_INDEX_TYPES)
        strings = frozenset(name for name in page_columns if stored[name] is PrimitiveType.STRING)
        pruning = _Pruning(row_filter, frozenset(usable), expression if early else None, page_columns, strings)
        if early:
            expression = None
    target = _output_schema(schema, out_names)
    if engine == ENGINE_DATAFUSION and datafusion_can_read(leaf_query.files):
        from sleeper.query.datafusion_read import datafusion_leaf_read

        early_filter = None if pruning is None else pruning.early
        fused = datafusion_leaf_read(
            leaf_query.files,
            schema,
            bounds,
            names,
            batch_rows=rows,
            options=options,
            early=early_filter,
            pushed=row_filter,
            hides=hides,
        )
        return _LeafRead(fused, schema.key_names, rows, iterators, expression, target, leaf_query.query_id)
    # Each file's row groups are decoded ahead on the reading pool (pyarrow decodes without the GIL), so decoding
    # overlaps the merge and uses every core.
    streams = _planned_reads(leaf_query.files, schema, bounds, names, rows, options, pruning, hides, background)
    return _LeafRead(streams, schema.key_names, rows, iterators, expression, target, leaf_query.query_id)


class _LeafRead:
    """A sub-query's planned reads, started; :meth:`batches` merges them, applies the table's processing and the
    query's filter, and projects (the DataFusion read comes merged). Closing it (as :meth:`batches` does when done or
    closed) closes every file."""

    def __init__(
        self,
        streams: list[_PlannedRead] | DataFusionLeafRead,
        key_names: Sequence[str],
        rows: int,
        iterators: RowIterators,
        expression: RowPredicate | None,
        target: pa.Schema,
        query_id: str,
    ) -> None:
        self._streams = streams
        self._key_names = key_names
        self._rows = rows
        self._iterators = iterators
        self._expression = expression
        self._target = target
        self._where = f"query {query_id}"

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The sub-query's rows, processed, filtered and projected, in key order."""
        try:
            # A large read's output batches are assembled (the merge's take) on a thread of the merge's own, while
            # the caller orders the next round: the caller's thread is otherwise the scan's bottleneck.
            streams = self._streams
            merged: Iterator[pa.RecordBatch]
            if isinstance(streams, list):
                pipeline = sum(read.plan.rows for read in streams) >= PIPELINE_ROWS
                merged = merge_sorted(streams, self._key_names, batch_rows=self._rows, pipeline=pipeline)
            else:
                merged = iter(streams)
            expression, target, where = self._expression, self._target, self._where
            for batch in self._iterators.apply(merged):
                if expression is not None and batch.num_rows:
                    batch = filter_batch(batch, expression)
                if batch.num_rows:
                    yield conform_batch(batch, target, where=where)
        finally:
            self.close()

    def close(self) -> None:
        """Closes every file (their reads ahead stopped first)."""
        streams, self._streams = self._streams, []
        if isinstance(streams, list):
            _close_reads(streams)
        else:
            streams.close()


PIPELINE_ROWS = 300_000
"""A sub-query planned to read at least this many rows (in the row groups it decodes) assembles the merge's output
on a thread of the merge's own (``merge_sorted(pipeline=True)``)."""

READ_AHEAD_ROW_GROUPS = 8
"""How many row groups a sub-query decodes at once, ahead of the merge, on the reading pool
(:func:`sleeper.io.parquet_reader.read_pool`): shared between its files, at least one each (so memory holds about
this many row groups, or one per file where there are more files). :func:`execute` reads the next sub-query ahead
too, so a query holds at most twice this."""

_PAGE_INDEX_TYPES = (PrimitiveType.INT, PrimitiveType.LONG, PrimitiveType.STRING, PrimitiveType.BYTE_ARRAY)
"""The types whose page bounds a filter is tested against (the page index holds them as stored)."""


@dataclass(frozen=True, slots=True)
class _Pruning:
    """A filter tested against row group statistics, on the columns whose statistics it may use, and the filter's
    expression when it may be applied to each file's rows before the merge (else None)."""

    node: Filter
    columns: frozenset[str]
    early: RowPredicate | None
    page_columns: frozenset[str]
    string_columns: frozenset[str]

    def pages(self) -> PageSpans:
        return page_spans(self.node, self.page_columns, self.string_columns)

    def keep(self, reader: SortedFileReader) -> Callable[[int], bool]:
        statistics = reader.row_group_statistics(self.columns)  # decoded once per file, kept with its footer

        def keep(group: int) -> bool:
            return may_match(self.node, statistics[group])

        return keep


class _PlannedRead:
    """The batches of one file's planned read, its row groups decoded ahead on the reading pool, where the rows
    deletes hide and those the early filter drops are left out; closing it (as the merge does) closes the file, read
    or not."""

    def __init__(
        self,
        reader: SortedFileReader,
        plan: ReadPlan,
        names: list[str],
        rows: int,
        expression: RowPredicate | None = None,
        hide: DeletedRows | None = None,
        readahead: int = 1,
        background: bool = False,
    ) -> None:
        self.plan = plan
        self._reader = reader
        steps: list[Callable[[pa.RecordBatch], pa.RecordBatch]] = []
        if hide is not None:
            steps.append(hide.keep)
        if expression is not None:
            steps.append(expression.filter)
        self._batches = reader.read_plan(
            plan, columns=names, batch_size=rows, readahead=readahead, transform=_chained(steps), background=background
        )

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        return next(self._batches)

    def close(self) -> None:
        close = getattr(self._batches, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self._reader.close()


def _close_reads(reads: Sequence[_PlannedRead]) -> None:
    """Closes every read, raising the first error after trying them all."""
    errors: list[BaseException] = []
    for read in reads:
        try:
            read.close()
        except BaseException as e:  # noqa: BLE001 - raised below, after every read is closed
            errors.append(e)
    if errors:
        raise errors[0]


def _chained(
    steps: Sequence[Callable[[pa.RecordBatch], pa.RecordBatch]],
) -> Callable[[pa.RecordBatch], pa.RecordBatch] | None:
    """The steps applied to a batch in turn (stopping once it is empty), or None if there are none."""
    if len(steps) <= 1:
        return steps[0] if steps else None

    def chained(batch: pa.RecordBatch) -> pa.RecordBatch:
        for step in steps:
            batch = step(batch)
            if not batch.num_rows:
                break
        return batch

    return chained


def _planned_reads(
    files: Sequence[str],
    schema: Schema,
    bounds: list[list[KeyBounds]],
    names: list[str],
    rows: int,
    options: FileSystemOptions | None,
    pruning: _Pruning | None = None,
    hides: Mapping[str, DeletedRows] | None = None,
    background: bool = False,
) -> list[_PlannedRead]:
    """Opens every file of a sub-query and plans its read, then starts the reads (footers come from the reader's cache
    when known; reads ahead are submitted to the reading pool, at background priority if ``background``). Every file
    is planned before any read starts: a started read's thread holds the interpreter between its decodes, which would
    otherwise delay planning the next file."""
    readers: list[SortedFileReader] = []
    plans: list[ReadPlan] = []
    reads: list[_PlannedRead] = []
    readahead = max(1, READ_AHEAD_ROW_GROUPS // max(1, len(files)))
    early = None if pruning is None else pruning.early
    try:
        for location in files:
            readers.append(reader := SortedFileReader(location, schema, options=options))
            keep, pages = (None, None) if pruning is None else (pruning.keep(reader), pruning.pages())
            plans.append(reader.plan(bounds, keep_row_group=keep, page_spans=pages))
        for location, reader, plan in zip(files, readers, plans, strict=True):
            hide = None if hides is None else hides.get(location)
            reads.append(_PlannedRead(reader, plan, names, rows, early, hide, readahead, background))
    except BaseException:
        for reader in readers[len(reads) :]:
            reader.close()  # the readers no read took over
        _close_reads(reads)
        raise
    return reads


def execute(
    query: Query,
    table: QueryableTable,
    *,
    now_ms: int | None = None,
    options: FileSystemOptions | None = None,
    batch_rows: int | None = None,
    limit: int | None = None,
) -> pa.RecordBatchReader:
    """Plans a query against a table's current files and runs its sub-queries in key order of their leaves.

    Args:
        query: The query; its table name is not checked against the table.
        table: The table.
        now_ms: The time age-off filters measure from; now if None.
        options: How to reach S3.
        batch_rows: The most rows in a batch read and merged.
        limit: The most rows to return: reading stops once they are found (no further sub-query runs, no further
            row group is read). Every row if None.

    Returns:
        A stream of the rows, with the key fields and the requested value fields in schema order. Files are read as
        the stream is consumed, a batch at a time, so memory is bounded by the batches, not by the result.

    Raises:
        QueryExecutionError: If a requested field is not in the schema, or the limit is negative.
        IteratorConfigError: If the table's filters or aggregations are invalid.
        IteratorLoadError: If the table's or the query's iterator cannot be loaded (nothing is read).
        DataEngineError: If the table's data engine is not one (see :func:`query_engine`).
        EngineUnavailableError: If the table asks for DATAFUSION and the ``datafusion`` extra is not installed.
    """
    if limit is not None and limit < 0:
        raise QueryExecutionError(f"a query limit must be 0 or more rows, got {limit}")
    schema = table.schema
    target = _output_schema(schema, output_fields(schema, query.processing.requested_value_fields))
    now = int(time.time() * 1000) if now_ms is None else now_ms
    config = query_iterators(table.properties, schema, query.processing, now)
    engine = query_engine(table.properties)
    leaf_queries, hidden = plan_with_deletes(query, table.state_store, table_id=table.table_id, schema=schema)
    deleted = DeletedRows.by_file(hidden, schema)

    def open_leaf(index: int, background: bool) -> _LeafRead | None:
        leaf = leaf_queries[index]
        return _open_leaf(leaf, schema, config, now, options, batch_rows, deleted, background=background, engine=engine)

    def batches() -> Iterator[pa.RecordBatch]:
        # While a sub-query is merged and processed here, the next one's files are opened and its first row groups
        # decoded at background priority, on cores the current one's reads leave idle; its merge and the table's
        # iterators run only once the current one is done, on this thread, in key order.
        opened: dict[int, _LeafRead | None] = {}
        current: _LeafRead | None = None
        try:
            for index in range(len(leaf_queries)):
                current = opened.pop(index) if index in opened else open_leaf(index, False)
                if index + 1 < len(leaf_queries):
                    try:
                        opened[index + 1] = open_leaf(index + 1, True)
                    except Exception:  # noqa: BLE001 - opened again in its turn, which raises it if it still fails
                        pass
                if current is not None:
                    yield from current.batches()
                current = None
        finally:
            for leaf in (current, *opened.values()):
                if leaf is not None:
                    leaf.close()

    stream = batches() if limit is None else _limited(batches(), limit)
    return pa.RecordBatchReader.from_batches(target, stream)


def _limited(batches: Iterator[pa.RecordBatch], limit: int) -> Iterator[pa.RecordBatch]:
    """The first ``limit`` rows of a stream; the stream is closed once they are found, so nothing more is read."""
    left = limit
    try:
        while left > 0:
            batch = next(batches, None)
            if batch is None:
                return
            if batch.num_rows > left:
                batch = batch.slice(0, left)
            left -= batch.num_rows
            yield batch
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def table_query(
    table: QueryableTable,
    *,
    keys: Iterable[Mapping[str, object] | Sequence[object]] | None = None,
    regions: Iterable[Region] | None = None,
    requested_value_fields: Sequence[str] | None = None,
    now_ms: int | None = None,
    options: FileSystemOptions | None = None,
    query_id: str | None = None,
    limit: int | None = None,
    iterator_class_name: str | None = None,
    iterator_config: str | None = None,
    row_filter: str | Filter | None = None,
) -> pa.Table:
    """Queries a table for exact row keys and/or regions; with neither, returns every row.

    Args:
        table: The table.
        keys: Row keys to look up exactly, each a sequence in row key order or a mapping by field name.
        regions: Regions to return rows from.
        requested_value_fields: The value fields to return; all if None. Key fields are always returned.
        now_ms: The time age-off filters measure from; now if None.
        options: How to reach S3.
        query_id: The query id; random if None.
        limit: The most rows to return (the first in key order); every row if None.
        iterator_class_name: A query-time iterator applied after the table's processing and iterator (a dotted path
            ``package.module.Class`` or one of Sleeper's built-in names), as a query's ``queryTimeIteratorClassName``.
        iterator_config: The query-time iterator's config, e.g. ``visibility,auth1,auth2`` for
            ``sleeper.iterators.examples.SecurityFilteringIterator``.
        row_filter: Beyond Sleeper: a filter on any column (text or a :mod:`sleeper.core.filter` model), applied
            after the table's processing and iterators.

    Returns:
        The rows in key order; a row in several of the keys or regions is returned once.

    Raises:
        KeyTypeError: If a key does not suit the schema.
        QueryExecutionError: If a requested field is not in the schema.
    """
    query = table_query_of(
        table, keys=keys, regions=regions, requested_value_fields=requested_value_fields, row_filter=row_filter
    )
    if query_id is not None:
        query = dataclasses.replace(query, query_id=query_id)
    if iterator_class_name is not None or iterator_config is not None:
        processing = dataclasses.replace(
            query.processing,
            query_time_iterator_class_name=iterator_class_name,
            query_time_iterator_config=iterator_config,
        )
        query = dataclasses.replace(query, processing=processing)
    return execute(query, table, now_ms=now_ms, options=options, limit=limit).read_all()


def table_query_of(
    table: QueryableTable,
    *,
    keys: Iterable[Mapping[str, object] | Sequence[object]] | None = None,
    regions: Iterable[Region] | None = None,
    requested_value_fields: Sequence[str] | None = None,
    row_filter: str | Filter | None = None,
) -> Query:
    """The query of a table for exact row keys and/or regions (every row if neither is given), with a random id,
    and the filter if one is given.

    Raises:
        KeyTypeError: If a key does not suit the schema.
        FilterError: If the filter does not suit the schema.
    """
    schema = table.schema
    wanted: list[Region] = [Region.exact(schema, key) for key in keys or ()]
    wanted.extend(regions or ())
    if keys is None and regions is None:
        wanted = [Region.whole(schema)]
    return Query(
        query_id=str(uuid.uuid4()),
        table_name=getattr(table, "name", table.table_id),
        regions=tuple(wanted),
        processing=QueryProcessingConfig(
            requested_value_fields=None if requested_value_fields is None else tuple(requested_value_fields),
            filter=None if row_filter is None else filter_of(row_filter, schema),
        ),
    )


def _output_schema(schema: Schema, names: Sequence[str]) -> pa.Schema:
    full = arrow_schema(schema)
    return pa.schema([full.field(name) for name in names])
