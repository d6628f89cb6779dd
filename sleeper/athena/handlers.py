"""The connector's handlers: metadata (ping, schemas, tables, layout, splits) and records (read a split).

Sleeper offers two connectors, chosen by :class:`ConnectorKind`:

* **simple**: one split per distinct data file, read with the key ranges pushed down and no merge or table
  processing; so it serves only tables whose rows are their files' rows, and refuses (``OPERATION_NOT_SUPPORTED``,
  naming the table and the property) a table that sets filters, aggregations or an iterator
  (:func:`~sleeper.iterators.pipeline.table_rules_refusal`), at layout, splits and read alike;
* **iterator applying**: one split per leaf partition, carrying the leaf's files and key bounds; its files are read
  within the leaf, merged, and the table's filters, aggregations and iterator applied, so the rows equal a Sleeper
  query's; then, if the connector is given one, a query-time iterator with a fixed config (fine-grained security,
  docs/usage/iterators.md).

Nothing a request holds is trusted to say who the caller is: the ``identity`` of a federation request (principal
tags, ARN, groups) is part of the event body, written by whoever invokes the function, and the Lambda runtime
passes no authenticated caller. So no authorisation is taken from a request; a query-time iterator's config (a
security filter's authorisations among it) comes only from the connector's settings, which the instance's admin
controls.

Both choose the leaf partitions from the row key predicates. The layout has one row per chosen leaf with files on it
or its ancestors: ``_SleeperRelevantFiles`` (a JSON list of the files) and the leaf's bounds ``_MinRowKey-<field>`` /
``_MaxRowKey-<field>`` (null maximum = unbounded). Iterator-applying splits copy those columns into their properties
(byte arrays as base64, numbers as decimal text), as Sleeper's Java connector does. Simple splits hold the file in
``_SleeperRelevantFiles`` and, in ``_SleeperFileRegions``, the bounds of the chosen leaves that list it: the file is
read only within them, so a file whose references were split and partly compacted returns each row once (Sleeper's
Java connector reads such a file whole).

Pushed-down constraints on any column that a filter says exactly become one
(:func:`~sleeper.athena.predicates.summary_filter`), applied as a query's filter is: after the table's rules, row
groups skipped by statistics first (value columns only where the rules only drop rows). Others are applied to the
rows returned; Athena applies all again.

Each handler's :meth:`handle` takes the request object a Lambda receives and returns the response object; on failure
it raises :class:`~sleeper.athena.exceptions.AthenaConnectorError`, which the Lambda runtime reports as a function
error (see :func:`~sleeper.athena.exceptions.lambda_error_payload`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.athena.exceptions import (
    ACCESS_DENIED,
    ENTITY_NOT_FOUND,
    INTERNAL_SERVICE,
    INVALID_INPUT,
    OPERATION_NOT_SUPPORTED,
    AthenaConnectorError,
)
from sleeper.athena.predicates import (
    ValueSet,
    filtered_rows,
    intersect_intervals,
    key_intervals,
    partition_matches,
    read_file_rows,
    read_regions,
    row_mask,
    summary_filter,
)
from sleeper.athena.protocol import (
    EncryptionKey,
    GetDataSourceCapabilitiesRequest,
    GetSplitsRequest,
    GetTableLayoutRequest,
    GetTableRequest,
    ListSchemasRequest,
    ListTablesRequest,
    PingRequest,
    ReadRecordsRequest,
    S3SpillLocation,
    Split,
    TableName,
    athena_value_type,
    capabilities_response,
    get_splits_response,
    get_table_layout_response,
    get_table_response,
    list_schemas_response,
    list_tables_response,
    parse_request,
    ping_response,
    to_athena_column,
)
from sleeper.athena.spill import BlockSpiller
from sleeper.athena.splits import (
    FILE_REGIONS_FIELD,
    MAX_ROW_KEY_PREFIX,
    MIN_ROW_KEY_PREFIX,
    PENDING_DELETES_FIELD,
    RELEVANT_FILES_FIELD,
    file_split_properties,
    hidden_rows_removed,
    leaf_bounds,
    leaf_split_properties,
    parse_file_regions,
    property_value,
    row_files,
    split_hides,
)
from sleeper.core import (
    Filter,
    KeyValue,
    ListType,
    MapType,
    PrimitiveType,
    Schema,
    TableNotFoundError,
    references_outside_tree_message,
)
from sleeper.core.statestore import filters_of_each
from sleeper.io import DEFAULT_BATCH_ROWS, FileSystemOptions, key_arrow_type, merge_sorted
from sleeper.iterators import IteratorConfigError, IteratorSpec, RowIterators, table_rules_refusal
from sleeper.statestore import SleeperInstance, SleeperTable

__all__ = [
    "AthenaSettings",
    "CompositeHandler",
    "ConnectorKind",
    "MetadataHandler",
    "RecordHandler",
    "athena_schema",
    "iterator_applying_connector",
    "simple_connector",
]

DEFAULT_SPILL_PREFIX = "athena-federation-spill"
"""The spill key prefix when none is configured (the SDK's default)."""
MAX_SPLITS_PER_RESPONSE = 1000
"""The most splits in one get splits response; more are paged with a continuation token."""


class ConnectorKind(Enum):
    """Which of Sleeper's two connectors a handler serves."""

    SIMPLE = "simple"
    ITERATOR_APPLYING = "iterator-applying"


@dataclass(frozen=True, slots=True, kw_only=True)
class AthenaSettings:
    """How the connector is set up.

    Attributes:
        instance_id: The Sleeper instance id: the one schema (database) the catalog holds.
        spill_bucket: The bucket reads spill large results to (the SDK's ``spill_bucket``); a request's identity
            ``configOptions`` may override it.
        spill_prefix: The key prefix of spilled blocks (the SDK's ``spill_prefix``).
        encrypt_spills: Whether splits carry an encryption key for their spilled blocks (the SDK's
            ``disable_spill_encryption`` turned around).
        options: How to reach S3, for data files and spills.
        batch_rows: The most rows in a batch read from a data file and merged.
        query_time_iterator_class_name: An iterator the iterator-applying connector applies after the table's, as a
            Sleeper query's ``queryTimeIteratorClassName`` (e.g.
            ``sleeper.iterators.examples.SecurityFilteringIterator`` for fine-grained security); None for none. The
            simple connector applies no iterator, so it refuses settings that name one.
        query_time_iterator_config: Its config, the same for every caller (e.g. ``visibility,PUBLIC``: every Athena
            reader has the authorisation ``PUBLIC``). A per-caller placeholder (:data:`AUTHS_PLACEHOLDER`) is refused:
            a request's identity is written by whoever invokes the function, so it cannot say who may see what.

    Raises:
        AthenaConnectorError: If the config asks for the caller's authorisations.
    """

    instance_id: str
    spill_bucket: str | None = None
    spill_prefix: str = DEFAULT_SPILL_PREFIX
    encrypt_spills: bool = True
    options: FileSystemOptions | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    query_time_iterator_class_name: str | None = None
    query_time_iterator_config: str | None = None

    def __post_init__(self) -> None:
        config = self.query_time_iterator_config or ""
        if AUTHS_PLACEHOLDER in config:
            raise AthenaConnectorError(
                f"the Athena query time iterator config {config!r} asks for each caller's authorisations "
                f"({AUTHS_PLACEHOLDER}), but the connector takes none from a request: its identity (principal tags "
                "among it) is written by whoever invokes the function. Write into the config the authorisations "
                "every Athena reader may have (e.g. 'visibility,PUBLIC'), and give per-user authorisations through "
                "a service that authenticates its users and sends their queries to the query queue",
                error_code=INVALID_INPUT,
            )

    def query_time_iterator(self) -> IteratorSpec | None:
        """The query-time iterator every read of the iterator-applying connector applies, or None."""
        return IteratorSpec.optional(
            self.query_time_iterator_class_name, self.query_time_iterator_config, "Athena query time iterator"
        )


AUTHS_PLACEHOLDER = "{auths}"
"""A per-caller placeholder for authorisations in a query-time iterator's config: refused (see
:class:`AthenaSettings`)."""


def athena_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema Athena sees for a table: row keys, sort keys, values; every field nullable.

    ``IntType`` is int32, ``LongType`` int64, ``StringType`` UTF-8, ``ByteArrayType`` binary, lists are lists of
    their element type (child field named ``""``, as the SDK builds them). Map fields are left out: Sleeper's
    connectors do not support them.
    """
    fields = []
    for f in schema.all_fields:
        if isinstance(f.type, PrimitiveType):
            fields.append(pa.field(f.name, key_arrow_type(f.type)))
        elif isinstance(f.type, ListType):
            fields.append(pa.field(f.name, pa.list_(pa.field("", key_arrow_type(f.type.element_type)))))
        elif not isinstance(f.type, MapType):  # a value type beyond Sleeper's, as the SDK's type
            fields.append(pa.field(f.name, athena_value_type(f.type)))
    return pa.schema(fields)


# --- shared helpers --------------------------------------------------------------------------------------------------


class _Tables:
    """Resolves Athena's (lower-cased) schema and table names against the instance, and refuses the tables a
    connector cannot serve."""

    def __init__(self, instance: SleeperInstance, settings: AthenaSettings, kind: ConnectorKind) -> None:
        if kind is ConnectorKind.SIMPLE and settings.query_time_iterator_class_name:
            raise AthenaConnectorError(
                f"the simple connector applies no iterator, so it cannot apply the query time iterator "
                f"{settings.query_time_iterator_class_name!r}: set it on the iterator-applying connector only",
                error_code=INVALID_INPUT,
            )
        self._instance = instance
        self._instance_id = settings.instance_id
        self._kind = kind

    def check_schema(self, schema_name: str | None) -> None:
        if schema_name is not None and schema_name.lower() != self._instance_id.lower():
            raise AthenaConnectorError(
                f"no schema {schema_name!r}: this catalog holds only {self._instance_id!r}", error_code=ENTITY_NOT_FOUND
            )

    def names(self) -> list[str]:
        return sorted(t.table_name for t in self._instance.tables())

    def table(self, name: TableName) -> SleeperTable:
        self.check_schema(name.schema_name)
        try:
            return self._instance.table(name.table_name)
        except TableNotFoundError:
            matches = [n for n in self.names() if n.lower() == name.table_name.lower()]
            if len(matches) == 1:
                try:
                    return self._instance.table(matches[0])
                except TableNotFoundError:
                    pass
        raise AthenaConnectorError(
            f"no table {name.table_name!r} in schema {name.schema_name!r}", error_code=ENTITY_NOT_FOUND
        )

    def readable(self, name: TableName) -> SleeperTable:
        """The table, if this connector may return its rows.

        Raises:
            AthenaConnectorError: ``ENTITY_NOT_FOUND`` for an unknown table; ``OPERATION_NOT_SUPPORTED`` if the
                connector is the simple one and the table's rules change its rows as they are read.
        """
        table = self.table(name)
        if self._kind is ConnectorKind.SIMPLE:
            refusal = table_rules_refusal(table.properties, "the simple connector")
            if refusal is None and table.state_store.holds_deleted_rows():
                refusal = "it has pending row deletes, which the simple connector cannot apply (until a purge)"
            if refusal is not None:
                raise AthenaConnectorError(
                    f"table {table.name!r} cannot be read through the simple connector: {refusal}. Query it through "
                    f"the iterator-applying connector (Athena data catalog "
                    f"{self._instance_id}IteratorApplyingSleeperConnector), which applies them",
                    error_code=OPERATION_NOT_SUPPORTED,
                )
        return table


# --- metadata ------------------------------------------------------------------------------------------------------


class MetadataHandler:
    """Answers ping, capabilities, list schemas, list tables, get table, get table layout and get splits.

    Args:
        instance: The Sleeper instance.
        settings: How the connector is set up.
        kind: Which connector this is.
        random_bytes: Makes encryption keys and nonces (``os.urandom`` by default).
        new_id: Makes the spill directory name of each split (a random UUID by default).
    """

    def __init__(
        self,
        instance: SleeperInstance,
        settings: AthenaSettings,
        kind: ConnectorKind,
        *,
        random_bytes: Callable[[int], bytes] = os.urandom,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self._tables = _Tables(instance, settings, kind)
        self._settings = settings
        self._kind = kind
        self._random_bytes = random_bytes
        self._new_id = new_id

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """Answers one metadata request (or a ping).

        Raises:
            AthenaConnectorError: If the request cannot be served (unknown schema or table: ``ENTITY_NOT_FOUND``).
        """
        request = parse_request(event)
        if isinstance(request, PingRequest):
            return ping_response(request)
        if isinstance(request, GetDataSourceCapabilitiesRequest):
            return capabilities_response(request.catalog_name)
        if isinstance(request, ListSchemasRequest):
            return list_schemas_response(request.catalog_name, [self._settings.instance_id])
        if isinstance(request, ListTablesRequest):
            return self._list_tables(request)
        if isinstance(request, GetTableRequest):
            table = self._tables.table(request.table_name)
            return get_table_response(request.catalog_name, request.table_name, athena_schema(table.schema))
        if isinstance(request, GetTableLayoutRequest):
            return self._layout(request)
        if isinstance(request, GetSplitsRequest):
            return self._splits(request)
        raise AthenaConnectorError(f"{type(request).__name__} goes to the record handler", error_code=INVALID_INPUT)

    def _list_tables(self, request: ListTablesRequest) -> dict[str, Any]:
        self._tables.check_schema(request.schema_name)
        schema_name = request.schema_name or self._settings.instance_id
        names = self._tables.names()
        next_token = None
        if request.page_size >= 0:
            try:
                start = int(request.next_token) if request.next_token else 0
            except ValueError:
                raise AthenaConnectorError(
                    f"invalid nextToken {request.next_token!r}", error_code=INVALID_INPUT
                ) from None
            end = start + request.page_size
            next_token = str(end) if end < len(names) else None
            names = names[start:end]
        tables = [TableName(schema_name=schema_name, table_name=n) for n in names]
        return list_tables_response(request.catalog_name, tables, next_token)

    def _layout_schema(self, schema: Schema) -> pa.Schema:
        fields = [pa.field(RELEVANT_FILES_FIELD, pa.string())]
        if self._kind is ConnectorKind.ITERATOR_APPLYING:
            fields.append(pa.field(PENDING_DELETES_FIELD, pa.string()))
        for f in schema.row_key_fields:
            key_type = key_arrow_type(f.primitive_type)
            fields.append(pa.field(f"{MIN_ROW_KEY_PREFIX}-{f.name}", key_type))
            fields.append(pa.field(f"{MAX_ROW_KEY_PREFIX}-{f.name}", key_type))
        return pa.schema(fields)

    def _layout(self, request: GetTableLayoutRequest) -> dict[str, Any]:
        table = self._tables.readable(request.table_name)
        schema = table.schema
        intervals = key_intervals(schema, request.summary)
        references = table.state_store.file_references()
        tree = table.state_store.partition_tree()  # after the files: see sleeper.query.executor.plan_table_query
        files_by_partition: dict[str, list[str]] = {}
        for reference in references:
            files_by_partition.setdefault(reference.partition_id, []).append(reference.filename)
        unknown = tree.not_held(files_by_partition)
        if unknown:  # reached by no leaf: refused rather than served without their rows
            raise AthenaConnectorError(
                references_outside_tree_message(table.table_id, unknown), error_code=INTERNAL_SERVICE
            )
        deletes = table.state_store.pending_deletes()  # after the files: they cover every file listed
        rows: dict[str, list[object]] = {name: [] for name in self._layout_schema(schema).names}
        for leaf in tree.leaves:
            bounds = leaf_bounds(leaf, schema)
            if not partition_matches(intervals, bounds):
                continue
            files: list[str] = []
            for partition in [*reversed(tree.ancestors(leaf.id)), leaf]:
                for name in files_by_partition.get(partition.id, ()):
                    if name not in files:
                        files.append(name)
            if not files:
                continue
            rows[RELEVANT_FILES_FIELD].append(json.dumps(files))
            if PENDING_DELETES_FIELD in rows:
                hidden = filters_of_each(deletes, [files])[0]
                rows[PENDING_DELETES_FIELD].append(json.dumps(hidden) if hidden else None)
            for f in schema.row_key_fields:
                low, high = bounds[f.name]
                rows[f"{MIN_ROW_KEY_PREFIX}-{f.name}"].append(low)
                rows[f"{MAX_ROW_KEY_PREFIX}-{f.name}"].append(high)
        batch = pa.RecordBatch.from_pydict(rows, schema=self._layout_schema(schema))
        return get_table_layout_response(request.catalog_name, request.table_name, batch)

    def _new_split(self, request: GetSplitsRequest, properties: Mapping[str, str]) -> Split:
        options = request.config_options
        bucket = options.get("spill_bucket") or self._settings.spill_bucket
        if not bucket:
            raise AthenaConnectorError("no spill bucket is configured for the connector", error_code=INVALID_INPUT)
        prefix = (options.get("spill_prefix") or self._settings.spill_prefix).strip("/")
        parts = [prefix] if request.query_id in prefix or not request.query_id else [prefix, request.query_id]
        key = "/".join([*parts, self._new_id()])
        encryption_key = None
        if self._settings.encrypt_spills:
            encryption_key = EncryptionKey(key=self._random_bytes(32), nonce=self._random_bytes(12))
        return Split(
            spill_location=S3SpillLocation(bucket=bucket, key=key, directory=True),
            encryption_key=encryption_key,
            properties=properties,
        )

    def _splits(self, request: GetSplitsRequest) -> dict[str, Any]:
        table = self._tables.readable(request.table_name)
        schema = table.schema
        rows = request.partitions.to_pylist()
        if self._kind is ConnectorKind.ITERATOR_APPLYING:
            properties = [leaf_split_properties(row, schema) for row in rows]
        else:
            properties = file_split_properties(rows, schema)
        try:
            start = int(request.continuation_token) if request.continuation_token else 0
        except ValueError:
            raise AthenaConnectorError(
                f"invalid continuationToken {request.continuation_token!r}", error_code=INVALID_INPUT
            ) from None
        end = start + MAX_SPLITS_PER_RESPONSE
        token = str(end) if end < len(properties) else None
        splits = [self._new_split(request, p) for p in properties[start:end]]
        return get_splits_response(request.catalog_name, splits, token)


# --- records -------------------------------------------------------------------------------------------------------


class RecordHandler:
    """Answers read records requests: reads a split's rows and returns them inline or spilled.

    Args:
        instance: The Sleeper instance.
        settings: How the connector is set up.
        kind: Which connector this is.
        clock_ms: The time age-off filters measure from (now by default).
        spill_filesystem: A filesystem to spill to instead of S3 (for local runs and tests).
    """

    def __init__(
        self,
        instance: SleeperInstance,
        settings: AthenaSettings,
        kind: ConnectorKind,
        *,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        spill_filesystem: pafs.FileSystem | None = None,
    ) -> None:
        self._tables = _Tables(instance, settings, kind)
        self._settings = settings
        self._kind = kind
        self._clock_ms = clock_ms
        self._spill_filesystem = spill_filesystem

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """Answers one read records request (or a ping).

        Raises:
            AthenaConnectorError: If the request cannot be served.
        """
        request = parse_request(event)
        if isinstance(request, PingRequest):
            return ping_response(request)
        if not isinstance(request, ReadRecordsRequest):
            raise AthenaConnectorError(
                f"{type(request).__name__} goes to the metadata handler", error_code=INVALID_INPUT
            )
        table = self._tables.readable(request.table_name)
        spiller = BlockSpiller(
            request.schema,
            request.split,
            max_block_size=request.max_block_size,
            max_inline_block_size=request.max_inline_block_size,
            options=self._settings.options,
            filesystem=self._spill_filesystem,
        )
        spiller.write_all(self.read(request, table))
        return spiller.response(request.catalog_name)

    def read(self, request: ReadRecordsRequest, table: SleeperTable) -> Iterator[pa.RecordBatch]:
        """The split's rows that satisfy the request's predicates, with exactly the request's columns.

        The predicates a filter says exactly are applied as one (:func:`summary_filter`) after the table's rules,
        with row groups skipped by their statistics; the others are applied to the rows that come out.
        """
        schema = table.schema
        unknown = [n for n in request.schema.names if not schema.has_field(n)]
        if unknown:
            raise AthenaConnectorError(f"table has no column {unknown[0]!r}", error_code=INVALID_INPUT)
        filtered = [n for n in request.summary if schema.has_field(n)]
        _check_split_files(request.split.properties, table, self._kind)
        row_filter, covered = summary_filter(schema, request.summary)
        rest = {name: value_set for name, value_set in request.summary.items() if name not in covered}
        if self._kind is ConnectorKind.ITERATOR_APPLYING:
            batches = self._read_leaf(request, table, filtered, self._iterators(request, table), row_filter)
        else:
            batches = self._read_file(request, schema, filtered, row_filter)
        return _finish(batches, rest, request.schema)

    def _columns(self, schema: Schema, wanted: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
        names = set(wanted) | set(extra) | set(schema.row_key_names)
        return [n for n in schema.field_names if n in names]

    def _read_file(
        self, request: ReadRecordsRequest, schema: Schema, filtered: list[str], row_filter: Filter | None
    ) -> Iterator[pa.RecordBatch]:
        properties = request.split.properties
        file = properties.get(RELEVANT_FILES_FIELD)
        if not file:
            raise AthenaConnectorError(f"split has no {RELEVANT_FILES_FIELD}", error_code=INVALID_INPUT)
        intervals = key_intervals(schema, request.summary)
        regions = read_regions(intervals, schema.row_key_names)
        raw_regions = properties.get(FILE_REGIONS_FIELD)
        if raw_regions is not None:
            regions = []
            for leaf in parse_file_regions(raw_regions, schema):
                # every row key is bounded by the leaf, so this is a list (never None for "everything")
                regions.extend(read_regions(intersect_intervals(intervals, leaf), schema.row_key_names) or [])
        if regions == []:
            return
        # the simple connector serves only tables without rules: every column's statistics may skip a row group
        columns = self._columns(schema, request.schema.names, filtered)
        options, rows = self._settings.options, self._settings.batch_rows
        batches = read_file_rows(file, schema, regions, columns, row_filter, schema.field_names, options, rows)
        yield from filtered_rows(batches, row_filter, schema)

    def _iterators(self, request: ReadRecordsRequest, table: SleeperTable) -> RowIterators:
        """The table's processing and iterator, then the connector's query-time iterator (the same for every
        request); loaded before anything is read, so a read fails (never returns unfiltered rows) if one cannot be
        loaded."""
        try:
            return RowIterators.for_table(
                table.properties,
                table.schema,
                query_time=self._settings.query_time_iterator(),
                now_ms=self._clock_ms(),
            )
        except IteratorConfigError as e:
            raise AthenaConnectorError(str(e), error_code=INVALID_INPUT) from e

    def _read_leaf(
        self,
        request: ReadRecordsRequest,
        table: SleeperTable,
        filtered: list[str],
        iterators: RowIterators,
        row_filter: Filter | None,
    ) -> Iterator[pa.RecordBatch]:
        schema = table.schema
        properties = request.split.properties
        raw = properties.get(RELEVANT_FILES_FIELD)
        files = row_files({RELEVANT_FILES_FIELD: raw})
        leaf: dict[str, tuple[KeyValue, KeyValue | None]] = {}
        for f in schema.row_key_fields:
            low = properties.get(f"{MIN_ROW_KEY_PREFIX}-{f.name}")
            high = properties.get(f"{MAX_ROW_KEY_PREFIX}-{f.name}")
            leaf[f.name] = (
                f.primitive_type.minimum if low is None else property_value(low, f),
                None if high is None else property_value(high, f),
            )
        intervals = intersect_intervals(key_intervals(schema, request.summary), leaf)
        regions = read_regions(intervals, schema.row_key_names)
        if regions == [] or not files:
            return
        hides = split_hides(properties.get(PENDING_DELETES_FIELD), table, files)
        columns = self._columns(
            schema,
            request.schema.names,
            [
                *filtered,
                *schema.key_names,
                *iterators.required_value_fields(),
                *(c for h in hides.values() for c in h.columns),
            ],
        )
        rows = self._settings.batch_rows
        # statistics may skip row groups before the rules only where the rules only drop rows
        statistics = schema.field_names if iterators.only_drops_rows else schema.key_names
        options = self._settings.options
        streams = [
            hidden_rows_removed(
                read_file_rows(file, schema, regions, columns, row_filter, statistics, options, rows), hides.get(file)
            )
            for file in files
        ]
        merged = merge_sorted(streams, schema.key_names, batch_rows=rows)
        yield from filtered_rows(iterators.apply(merged), row_filter, schema)


def _check_split_files(properties: Mapping[str, str], table: SleeperTable, kind: ConnectorKind) -> None:
    """Checks that every file a split names is a data file of the table it is read as.

    A split comes back in the read request as the metadata handler made it only if Athena sends the request; the
    check keeps a request written by anyone else from reading another table's files under this table's (weaker)
    rules. Every writer puts a table's data files under ``<data bucket>/<table id>/data/``.

    Raises:
        AthenaConnectorError: ``ACCESS_DENIED``, naming the file and the table, for any other file.
    """
    raw = properties.get(RELEVANT_FILES_FIELD)
    if kind is ConnectorKind.SIMPLE:
        files = [raw] if raw else []
    else:
        files = row_files({RELEVANT_FILES_FIELD: raw})
    marker = f"/{table.table_id}/data/"
    for file in files:
        _, found, rest = file.partition(marker)
        segments = file.replace("://", "/").split("/")
        if not found or not rest or "." in segments or ".." in segments:
            raise AthenaConnectorError(
                f"the split names {file!r}, which is not a data file of table {table.name!r} "
                f"(those are under <data bucket>/{table.table_id}/data/)",
                error_code=ACCESS_DENIED,
            )


def _finish(
    batches: Iterable[pa.RecordBatch], summary: Mapping[str, ValueSet], target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Applies the predicates to each batch and gives it exactly the request's columns and types."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        mask = row_mask(batch, summary)
        if mask is not None:
            batch = batch.filter(mask)
            if batch.num_rows == 0:
                continue
        columns = [to_athena_column(batch.column(name), f.type) for name, f in zip(target.names, target, strict=True)]
        yield pa.RecordBatch.from_arrays(columns, schema=target)


# --- composite -----------------------------------------------------------------------------------------------------


class CompositeHandler:
    """One Lambda serving both metadata and record requests, as Sleeper deploys each connector.

    Args:
        metadata: The metadata handler.
        records: The record handler.
    """

    def __init__(self, metadata: MetadataHandler, records: RecordHandler) -> None:
        self.metadata = metadata
        self.records = records

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """Routes a request by its ``@type``: reads to the record handler, the rest to the metadata handler."""
        kind = event.get("@type") if isinstance(event, Mapping) else None
        if kind == "ReadRecordsRequest":
            return self.records.handle(event, context)
        return self.metadata.handle(event, context)


def _connector(
    kind: ConnectorKind,
    instance: SleeperInstance,
    settings: AthenaSettings,
    spill_filesystem: pafs.FileSystem | None,
) -> CompositeHandler:
    return CompositeHandler(
        MetadataHandler(instance, settings, kind),
        RecordHandler(instance, settings, kind, spill_filesystem=spill_filesystem),
    )


def simple_connector(
    instance: SleeperInstance, settings: AthenaSettings, *, spill_filesystem: pafs.FileSystem | None = None
) -> CompositeHandler:
    """The simple connector (``<id>SimpleSleeperConnector``): one split per data file, no table processing; it refuses
    a table that sets filters, aggregations or an iterator.

    Raises:
        AthenaConnectorError: If the settings name a query-time iterator (only the iterator-applying connector applies
            one).
    """
    return _connector(ConnectorKind.SIMPLE, instance, settings, spill_filesystem)


def iterator_applying_connector(
    instance: SleeperInstance, settings: AthenaSettings, *, spill_filesystem: pafs.FileSystem | None = None
) -> CompositeHandler:
    """The iterator-applying connector (``<id>IteratorApplyingSleeperConnector``): one split per leaf, merged and
    processed like a Sleeper query."""
    return _connector(ConnectorKind.ITERATOR_APPLYING, instance, settings, spill_filesystem)
