"""Queries and leaf partition queries, with Sleeper's query JSON.

Query (``sleeper-<id>-QueryQueue``)::

    {"tableName", "queryId", "type": "Query", "regions": [Region, …], "requestedValueFields"?,
     "queryTimeIteratorClassName"?, "queryTimeIteratorConfig"?, "resultsPublisherConfig"?: {k: v},
     "statusReportDestinations"?: [{k: v}, …], "filter"?: "age > 30 and name starts with 'a'"}

``filter`` is beyond Sleeper: a filter in the language of :mod:`sleeper.core.filter`, on any column, applied after
the table's own filters, aggregations and iterators (so it can only narrow what a caller sees). A query without it is
exactly Sleeper's JSON; a bad filter is refused with the path ``$.filter``.

Leaf partition query (``sleeper-<id>-LeafPartitionQueryQueue``): ``"type": "LeafPartitionQuery"``, ``tableId``
instead of ``tableName``, plus ``subQueryId``, ``leafPartitionId``, ``partitionRegion`` and ``files``; beyond
Sleeper, ``"pendingDeletes"?: {file: [filter, …]}``, the filters of the table's pending row deletes that hide rows of
each of its files (docs/usage/deletes.md), present only when some do, so a table that never deleted rows sends
exactly Sleeper's JSON.

Regions are read against the table's schema, so ``QuerySerDe`` takes schema lookups by table name and id and calls
them with the table read from the message. The Python client's form is read too: ``"stringsBase64Encoded": false``
with raw strings, and ``"max": null`` for an unbounded range. Query and sub-query ids name result files, so they must
follow the safe id rule (``sleeper.core.paths.SAFE_ID_RULE``; the client's UUIDs do). Every problem raises
``QueryValidationError`` naming the JSON path, the query id and the status report destinations (where they could be
read), so the failure can be reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sleeper.core.exceptions import SleeperError
from sleeper.core.filter import Filter, FilterError, parse_filter
from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MessageError,
    QueryValidationError,
    UnknownFieldError,
)
from sleeper.core.paths import check_safe_id, check_safe_path
from sleeper.core.range import Region
from sleeper.core.schema import PrimitiveType, Schema

__all__ = [
    "DEFAULT_MAX_REGIONS",
    "LEAF_PARTITION_QUERY_TYPE",
    "QUERY_TYPE",
    "AnyQuery",
    "LeafPartitionQuery",
    "Query",
    "QueryProcessingConfig",
    "QuerySerDe",
    "QueryValidationError",
]

QUERY_TYPE = "Query"
"""The ``type`` of a query submitted by a client."""

LEAF_PARTITION_QUERY_TYPE = "LeafPartitionQuery"
"""The ``type`` of a sub-query on one leaf partition."""

DEFAULT_MAX_REGIONS = 10_000
"""The most regions a query may hold unless the serde is given another limit."""

_COMMON_FIELDS = frozenset(
    {
        "queryId",
        "type",
        "regions",
        "requestedValueFields",
        "queryTimeIteratorClassName",
        "queryTimeIteratorConfig",
        "resultsPublisherConfig",
        "statusReportDestinations",
        "filter",
    }
)
_QUERY_FIELDS = _COMMON_FIELDS | {"tableName"}
_LEAF_QUERY_FIELDS = _COMMON_FIELDS | {
    "tableId",
    "subQueryId",
    "leafPartitionId",
    "partitionRegion",
    "files",
    "pendingDeletes",
}
_STRINGS_FLAG = "stringsBase64Encoded"
_INTEGER_TYPES = (PrimitiveType.INT, PrimitiveType.LONG)
_Q = TypeVar("_Q", "Query", "LeafPartitionQuery")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryProcessingConfig:
    """How a query's results are processed and where they and its status go.

    Attributes:
        requested_value_fields: The value fields to return; None for all.
        query_time_iterator_class_name: An iterator applied at query time, after the table's own processing.
        query_time_iterator_config: That iterator's configuration.
        results_publisher_config: Where results go (``{"destination": "S3"|"SQS"|"WEBSOCKET", …}``); empty for the
            default S3 results bucket.
        status_report_destinations: Extra places to report status to (``{"destination": …, …}``).
        filter: Beyond Sleeper: the rows to return among those the table's rules give (see :mod:`sleeper.core.filter`);
            every row if None.
    """

    requested_value_fields: tuple[str, ...] | None = None
    query_time_iterator_class_name: str | None = None
    query_time_iterator_config: str | None = None
    results_publisher_config: Mapping[str, str] = field(default_factory=dict)
    status_report_destinations: tuple[Mapping[str, str], ...] = ()
    filter: Filter | None = None

    def __post_init__(self) -> None:
        if self.requested_value_fields is not None:
            object.__setattr__(self, "requested_value_fields", tuple(self.requested_value_fields))
        object.__setattr__(self, "results_publisher_config", dict(self.results_publisher_config))
        object.__setattr__(self, "status_report_destinations", tuple(dict(d) for d in self.status_report_destinations))


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A request for the rows of a table whose row keys lie in any of some regions.

    Attributes:
        query_id: The query id, unique per query; results and tracking are keyed by it (a safe id).
        table_name: The table to query.
        regions: The regions to return rows from.
        processing: How results are processed and published.

    Raises:
        UnsafeIdError: If the query id breaks the safe id rule.
    """

    query_id: str
    table_name: str
    regions: tuple[Region, ...]
    processing: QueryProcessingConfig = field(default_factory=QueryProcessingConfig)

    def __post_init__(self) -> None:
        check_safe_id(self.query_id, where="$.queryId", what="query id")
        object.__setattr__(self, "regions", tuple(self.regions))

    def leaf_query(
        self,
        *,
        table_id: str,
        sub_query_id: str,
        leaf_partition_id: str,
        partition_region: Region,
        regions: Iterable[Region],
        files: Iterable[str],
        pending_deletes: Mapping[str, tuple[str, ...]] | None = None,
    ) -> LeafPartitionQuery:
        """The sub-query of this query on one leaf partition, sharing its id and processing."""
        return LeafPartitionQuery(
            query_id=self.query_id,
            sub_query_id=sub_query_id,
            table_id=table_id,
            leaf_partition_id=leaf_partition_id,
            partition_region=partition_region,
            regions=tuple(regions),
            files=tuple(files),
            processing=self.processing,
            pending_deletes=dict(pending_deletes or {}),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LeafPartitionQuery:
    """The part of a query that reads one leaf partition.

    Attributes:
        query_id: The parent query's id.
        sub_query_id: This sub-query's id.
        table_id: The table.
        leaf_partition_id: The leaf partition read.
        partition_region: The leaf's region; rows outside it are not returned, so files shared with other leaves
            (references on ancestors) give no duplicates.
        regions: The parts of the query's regions that overlap the leaf.
        files: The files to read: those referenced on the leaf and its ancestors.
        processing: The parent query's processing.
        pending_deletes: Beyond Sleeper: the filters of the pending row deletes that hide rows of some of its files,
            by file (``sleeper.core.statestore.deletes``); the reader hides each file's matching rows before the merge.

    Raises:
        UnsafeIdError: If the query id or sub-query id breaks the safe id rule.
    """

    query_id: str
    sub_query_id: str
    table_id: str
    leaf_partition_id: str
    partition_region: Region
    regions: tuple[Region, ...]
    files: tuple[str, ...]
    processing: QueryProcessingConfig = field(default_factory=QueryProcessingConfig)
    pending_deletes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_safe_id(self.query_id, where="$.queryId", what="query id")
        check_safe_id(self.sub_query_id, where="$.subQueryId", what="sub-query id")
        object.__setattr__(self, "regions", tuple(self.regions))
        object.__setattr__(self, "files", tuple(self.files))


AnyQuery = Query | LeafPartitionQuery
"""A query or a leaf partition query, as read from a query queue."""


class QuerySerDe:
    """Reads and writes Sleeper's query JSON, finding each table's schema to read its regions.

    Args:
        schema_by_table_name: Finds a schema by table name (for queries); returns None or raises
            ``TableNotFoundError`` if there is no such table.
        schema_by_table_id: Finds a schema by table id (for leaf partition queries); if not given, leaf partition
            queries cannot be read or written.
        max_regions: The most regions a query may hold.
    """

    def __init__(
        self,
        schema_by_table_name: wire.SchemaLookup,
        schema_by_table_id: wire.SchemaLookup | None = None,
        *,
        max_regions: int = DEFAULT_MAX_REGIONS,
    ) -> None:
        self._by_name = schema_by_table_name
        self._by_id = schema_by_table_id
        self._max_regions = max_regions

    @classmethod
    def for_schema(cls, schema: Schema, *, max_regions: int = DEFAULT_MAX_REGIONS) -> QuerySerDe:
        """A serde that uses one schema whatever table a query names."""
        return cls(lambda _: schema, lambda _: schema, max_regions=max_regions)

    # ------------------------------------------------------------------------------------------------------------
    # writing
    # ------------------------------------------------------------------------------------------------------------

    def to_dict(self, query: AnyQuery) -> dict[str, Any]:
        """Sleeper's JSON for a query or leaf partition query, as a dictionary.

        Raises:
            QueryValidationError: If the query's table cannot be found.
        """
        if isinstance(query, Query):
            schema = self._schema(query.table_name, "$.tableName", by_id=False, query=query)
            out: dict[str, Any] = {"tableName": query.table_name, "queryId": query.query_id, "type": QUERY_TYPE}
        else:
            schema = self._schema(query.table_id, "$.tableId", by_id=True, query=query)
            out = {"tableId": query.table_id, "queryId": query.query_id, "type": LEAF_PARTITION_QUERY_TYPE}
        out["regions"] = [r.to_dict(schema) for r in query.regions]
        p = query.processing
        if p.requested_value_fields is not None:
            out["requestedValueFields"] = list(p.requested_value_fields)
        if p.query_time_iterator_class_name is not None:
            out["queryTimeIteratorClassName"] = p.query_time_iterator_class_name
        if p.query_time_iterator_config is not None:
            out["queryTimeIteratorConfig"] = p.query_time_iterator_config
        out["resultsPublisherConfig"] = dict(p.results_publisher_config)
        out["statusReportDestinations"] = [dict(d) for d in p.status_report_destinations]
        if p.filter is not None:
            out["filter"] = str(p.filter)
        if isinstance(query, LeafPartitionQuery):
            out["subQueryId"] = query.sub_query_id
            out["leafPartitionId"] = query.leaf_partition_id
            out["partitionRegion"] = query.partition_region.to_dict(schema)
            out["files"] = list(query.files)
            if query.pending_deletes:
                out["pendingDeletes"] = {name: list(texts) for name, texts in query.pending_deletes.items()}
        return out

    def to_json(self, query: AnyQuery, *, indent: int | None = None) -> str:
        """Sleeper's JSON for a query or leaf partition query.

        Raises:
            QueryValidationError: If the query's table cannot be found.
        """
        return wire.to_json(self.to_dict(query), indent=indent)

    # ------------------------------------------------------------------------------------------------------------
    # reading
    # ------------------------------------------------------------------------------------------------------------

    def from_json(self, text: str | bytes) -> AnyQuery:
        """Reads a query or leaf partition query, by its ``type``.

        Raises:
            QueryValidationError: If the message is not a valid query; its cause is the specific ``MessageError``.
        """
        try:
            data = wire.parse_json(text)
        except MessageError as e:
            raise QueryValidationError(e.reason, path=e.path) from e
        return self.from_dict(data)

    def query_from_json(self, text: str | bytes) -> Query:
        """Reads a query submitted by a client (``"type": "Query"``).

        Raises:
            QueryValidationError: If it is not a valid query, or is a leaf partition query.
        """
        return _expect(self.from_json(text), Query)

    def leaf_query_from_json(self, text: str | bytes) -> LeafPartitionQuery:
        """Reads a leaf partition query (``"type": "LeafPartitionQuery"``).

        Raises:
            QueryValidationError: If it is not a valid leaf partition query.
        """
        return _expect(self.from_json(text), LeafPartitionQuery)

    def from_dict(self, data: object) -> AnyQuery:
        """Reads a parsed query or leaf partition query, by its ``type``.

        Raises:
            QueryValidationError: If it is not valid; its cause is the specific ``MessageError``.
        """
        query_id, destinations = _lenient_id_and_destinations(data)
        try:
            return self._read(data)
        except MessageError as e:
            raise QueryValidationError(
                e.reason, path=e.path, query_id=query_id, status_report_destinations=destinations
            ) from e

    def _read(self, data: object) -> AnyQuery:
        obj = wire.expect_object(data)
        query_type = wire.required_str(obj, "type")
        if query_type not in (QUERY_TYPE, LEAF_PARTITION_QUERY_TYPE):
            raise InvalidFieldError(
                f'unknown query type "{query_type}"; expected {QUERY_TYPE} or {LEAF_PARTITION_QUERY_TYPE}',
                path="$.type",
            )
        leaf = query_type == LEAF_PARTITION_QUERY_TYPE
        wire.check_fields(obj, _LEAF_QUERY_FIELDS if leaf else _QUERY_FIELDS)
        query_id = wire.required_id(obj, "queryId", what="query id")
        table_key = "tableId" if leaf else "tableName"
        table = wire.required_str(obj, table_key)
        schema = self._lookup(table, f"$.{table_key}", by_id=leaf)
        regions = self._regions(obj, schema)
        processing = _processing(obj, schema)
        if not leaf:
            return Query(query_id=query_id, table_name=table, regions=regions, processing=processing)
        raw_region = obj.get("partitionRegion")
        if raw_region is None:
            raise wire.missing("$.partitionRegion")
        files = wire.str_list(obj, "files")
        for i, name in enumerate(files):
            check_safe_path(name, where=f"$.files[{i}]", allow_local=True)
        return LeafPartitionQuery(
            query_id=query_id,
            sub_query_id=wire.required_id(obj, "subQueryId", what="sub-query id"),
            table_id=table,
            leaf_partition_id=wire.required_str(obj, "leafPartitionId"),
            partition_region=_region(schema, raw_region, "$.partitionRegion"),
            regions=regions,
            files=files,
            processing=processing,
            pending_deletes=pending_deletes_from(obj, schema, files),
        )

    def _regions(self, obj: Mapping[str, Any], schema: Schema) -> tuple[Region, ...]:
        raw = obj.get("regions")
        if raw is None:
            raise wire.missing("$.regions")
        if not isinstance(raw, list):
            raise InvalidFieldError("must be a list", path="$.regions")
        if len(raw) > self._max_regions:
            raise InvalidFieldError(f"too many regions: {len(raw)}, at most {self._max_regions}", path="$.regions")
        return tuple(_region(schema, r, f"$.regions[{i}]") for i, r in enumerate(raw))

    def _lookup(self, table: str, path: str, *, by_id: bool) -> Schema:
        lookup = self._by_id if by_id else self._by_name
        if lookup is None:
            raise InvalidFieldError("this serde cannot find tables by id, so cannot read leaf queries", path=path)
        return wire.lookup_schema(lookup, table, path, by="id" if by_id else "name")

    def _schema(self, table: str, path: str, *, by_id: bool, query: AnyQuery) -> Schema:
        try:
            return self._lookup(table, path, by_id=by_id)
        except MessageError as e:
            raise QueryValidationError(
                e.reason,
                path=e.path,
                query_id=query.query_id,
                status_report_destinations=query.processing.status_report_destinations,
            ) from e


def _region(schema: Schema, raw: object, path: str) -> Region:
    """Reads a region strictly: integer keys must be JSON integers (not strings); ``Range`` refuses min > max."""
    obj = wire.expect_object(raw, path)
    for name, item in obj.items():
        if name == _STRINGS_FLAG or not schema.has_field(name) or name not in schema.row_key_names:
            continue  # the region reader rejects unknown fields and a bad flag
        if schema.field(name).primitive_type in _INTEGER_TYPES and isinstance(item, Mapping):
            for bound in ("min", "max"):
                value = item.get(bound)
                if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                    where = wire.child(wire.child(path, name), bound)
                    raise InvalidFieldError(f"must be an integer, got {value!r}", path=where)
    try:
        region = Region.from_dict(schema, obj, path=path)
    except SleeperError as e:
        error = wire.from_serde_error(e, path)
        if "is not a row key field" in error.reason:
            raise UnknownFieldError(error.reason, path=error.path) from None
        raise error from None
    for name, r in region.ranges.items():
        where = wire.child(path, name)
        for value, bound in ((r.min, "min"), (r.max, "max")):
            if isinstance(value, str):
                wire.check_text(value, wire.child(where, bound))
    return region


def _processing(obj: Mapping[str, Any], schema: Schema) -> QueryProcessingConfig:
    fields = wire.optional_str_list(obj, "requestedValueFields")
    if fields is not None:
        for i, name in enumerate(fields):
            if not schema.has_field(name):
                raise UnknownFieldError(f"table has no field {name!r}", path=f"$.requestedValueFields[{i}]")
    publisher = wire.optional_str_map(obj, "resultsPublisherConfig")
    return QueryProcessingConfig(
        requested_value_fields=fields,
        query_time_iterator_class_name=wire.optional_str(obj, "queryTimeIteratorClassName"),
        query_time_iterator_config=wire.optional_str(obj, "queryTimeIteratorConfig"),
        results_publisher_config=publisher if publisher is not None else {},
        status_report_destinations=_destinations(obj.get("statusReportDestinations")),
        filter=_filter(obj, schema),
    )


def pending_deletes_from(obj: Mapping[str, Any], schema: Schema, files: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The ``pendingDeletes`` field of a leaf message (a leaf partition query or export): the filters of the pending
    row deletes hiding rows of some of the files it reads, by file; empty when absent.

    Raises:
        InvalidFieldError: Naming the path of a file the message does not read, or of a filter that is not a filter
            of the table's schema.
    """
    raw = obj.get("pendingDeletes")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidFieldError("must be an object of filters by file", path="$.pendingDeletes")
    read = set(files)
    out: dict[str, tuple[str, ...]] = {}
    for name, texts in raw.items():
        path = f"$.pendingDeletes[{json.dumps(name)}]"
        if name not in read:
            raise InvalidFieldError("names a file the sub-query does not read (it must be one of $.files)", path=path)
        if not isinstance(texts, list) or not texts or not all(isinstance(x, str) and x for x in texts):
            raise InvalidFieldError("must be a non-empty list of filters", path=path)
        for i, text in enumerate(texts):
            try:
                parse_filter(text, schema)
            except FilterError as e:
                raise InvalidFieldError(str(e), path=f"{path}[{i}]") from None
        out[name] = tuple(texts)
    return out


def _filter(obj: Mapping[str, Any], schema: Schema) -> Filter | None:
    text = wire.optional_str(obj, "filter")
    if text is None:
        return None
    try:
        return parse_filter(text, schema)
    except FilterError as e:
        raise InvalidFieldError(str(e), path="$.filter") from None


def _destinations(raw: object) -> tuple[dict[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidFieldError("must be a list", path="$.statusReportDestinations")
    return tuple(wire.str_map(d, f"$.statusReportDestinations[{i}]") for i, d in enumerate(raw))


def _lenient_id_and_destinations(data: object) -> tuple[str | None, Sequence[Mapping[str, str]]]:
    """The query id and status destinations for reporting a failure, if they can be read at all."""
    if not isinstance(data, Mapping):
        return None, ()
    raw_id = data.get("queryId")
    query_id = raw_id if isinstance(raw_id, str) and raw_id.strip() else None
    if query_id is not None:
        try:
            wire.check_text(query_id, "$.queryId")
        except MessageError:
            query_id = None
    try:
        destinations: Sequence[Mapping[str, str]] = _destinations(data.get("statusReportDestinations"))
    except MessageError:
        destinations = ()
    return query_id, destinations


def _expect(query: AnyQuery, kind: type[_Q]) -> _Q:
    if not isinstance(query, kind):
        expected = QUERY_TYPE if kind is Query else LEAF_PARTITION_QUERY_TYPE
        raise QueryValidationError(
            f"expected a {expected}",
            path="$.type",
            query_id=query.query_id,
            status_report_destinations=query.processing.status_report_destinations,
        )
    return query
