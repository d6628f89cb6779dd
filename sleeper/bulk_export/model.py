"""Bulk export queries and their leaf partition exports, in Sleeper's JSON (``BulkExportQuerySerDe`` and
``BulkExportLeafPartitionQuerySerDe``).

A :class:`BulkExportQuery` names its table by ``tableName`` or ``tableId`` (exactly one) and may carry an
``exportId`` (a UUID is drawn when it does not). A :class:`LeafPartitionExport` is what the planner sends for one leaf:
the table id, the export and sub-export ids, the regions (the leaf's region), the leaf id, its region and the files to
read (those referenced on the leaf and its ancestors). Field order on the wire is Sleeper's (Gson's declaration order),
checked by the approval tests. Ids are safe ids (:func:`sleeper.core.paths.check_safe_id`): they become part of
the output path ``<export root>/<tableId>/<exportId>/<subExportId>.parquet``.

Beyond Sleeper, both messages may carry ``filter``: text in the filter language of :mod:`sleeper.core.filter`, on any
column, applied to each leaf's rows after the table's rules (so it only narrows what an export holds). A message
without it is exactly Sleeper's JSON. The query holds the text (its table's schema is not known until the table is
found); planning parses it against the schema, refusing a bad one as ``$.filter``, and each leaf export carries the
parsed filter.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sleeper.bulk_export.exceptions import BulkExportQueryError
from sleeper.core import (
    Filter,
    FilterError,
    Region,
    Schema,
    SleeperError,
    check_safe_id,
    check_safe_path,
    filter_of,
    join_under,
    parse_filter,
    pending_deletes_from,
)
from sleeper.core.jobs import MessageError, wire

__all__ = [
    "BulkExportQuery",
    "LeafPartitionExport",
    "LeafPartitionExportSerDe",
    "export_output_path",
    "read_bulk_export_query",
]

_QUERY_FIELDS = frozenset({"exportId", "tableId", "tableName", "filter"})
_LEAF_FIELDS = frozenset(
    {
        "tableId",
        "exportId",
        "subExportId",
        "regions",
        "leafPartitionId",
        "partitionRegion",
        "files",
        "filter",
        "pendingDeletes",
    }
)


@dataclass(frozen=True, slots=True)
class BulkExportQuery:
    """A request to export every row of a table (or those a filter selects), one Parquet file per leaf partition.

    Built as Sleeper's Python client builds its ``sleeper.bulk_export.BulkExportQuery``: ``BulkExportQuery(export_id,
    table_name=...)`` or by keywords, the export id optional (None or left out: a new UUID); a query naming neither or
    both tables raises :class:`~sleeper.bulk_export.exceptions.BulkExportQueryError`, a ``ValueError`` as Sleeper's.

    Attributes:
        export_id: The export's id (a UUID unless given).
        table_name: The table's name, or None when it is named by id.
        table_id: The table's id, or None when it is named by name.
        filter: Beyond Sleeper: the rows to export among those the table's rules give, as filter text (a
            :mod:`sleeper.core.filter` model given here is kept as its canonical text); None exports every row.
            Checked against the table's schema when the export is planned (:meth:`parsed_filter`).

    Raises:
        BulkExportQueryError: If the table is named neither or twice, the export id is not a safe id, or the filter is
            neither text nor a filter model.
    """

    export_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    table_name: str | None = None
    table_id: str | None = None
    filter: str | None = None

    def __post_init__(self) -> None:
        if self.export_id is None:  # Sleeper's client draws an id for None too
            object.__setattr__(self, "export_id", str(uuid.uuid4()))
        if self.filter is not None and not isinstance(self.filter, str):
            text = _filter_text(self.filter)
            if text is None:
                raise BulkExportQueryError(
                    f'$.filter: a filter must be text such as "age > 30" or a sleeper.core.filter model, got '
                    f"{type(self.filter).__name__}",
                    export_id=self.export_id,
                )
            object.__setattr__(self, "filter", text)
        if self.table_name is None and self.table_id is None:
            raise BulkExportQueryError("tableId or tableName field must be provided", export_id=self.export_id)
        if self.table_name is not None and self.table_id is not None:
            raise BulkExportQueryError(
                "tableId or tableName field must be provided, not both", export_id=self.export_id
            )
        try:
            check_safe_id(self.export_id, where="$.exportId", what="export id")
        except MessageError as e:
            raise BulkExportQueryError(str(e), export_id=None) from e

    @classmethod
    def for_table(
        cls, *, table_name: str | None = None, table_id: str | None = None, filter: str | Filter | None = None
    ) -> BulkExportQuery:
        """A query with a new random export id."""
        return cls(export_id=str(uuid.uuid4()), table_name=table_name, table_id=table_id, filter=filter)  # type: ignore[arg-type]

    def parsed_filter(self, schema: Schema) -> Filter | None:
        """The query's filter parsed against its table's schema; None if it has none.

        Raises:
            BulkExportQueryError: If the filter has bad syntax, names a column the table lacks or compares one with a
                value of another type; the message starts ``$.filter:`` and gives the place.
        """
        if self.filter is None:
            return None
        try:
            return parse_filter(self.filter, schema)
        except FilterError as e:
            raise BulkExportQueryError(f"$.filter: {e}", export_id=self.export_id) from None

    def to_json(self) -> str:
        """Sleeper's JSON: ``exportId``, then ``tableId`` or ``tableName``, then ``filter`` if there is one."""
        out: dict[str, Any] = {"exportId": self.export_id}
        if self.table_id is not None:
            out["tableId"] = self.table_id
        if self.table_name is not None:
            out["tableName"] = self.table_name
        if self.filter is not None:
            out["filter"] = self.filter
        return wire.to_json(out)


def _filter_text(value: object) -> str | None:
    """A filter model's canonical text; None if the value is not a filter model."""
    return str(value) if isinstance(value, Filter) else None


def read_bulk_export_query(body: str | bytes) -> BulkExportQuery:
    """Reads a bulk export query message.

    Raises:
        BulkExportQueryError: If the message is not a valid bulk export query (with the export id, where known).
    """
    export_id: str | None = None
    try:
        obj = wire.expect_object(wire.parse_json(body))
        raw = obj.get("exportId")
        export_id = raw if isinstance(raw, str) and raw.strip() else None
        wire.check_fields(obj, _QUERY_FIELDS)
        table_name = wire.optional_str(obj, "tableName")
        table_id = wire.optional_str(obj, "tableId")
        given = wire.optional_str(obj, "exportId")
        row_filter = wire.optional_str(obj, "filter")
    except MessageError as e:
        raise BulkExportQueryError(str(e), export_id=export_id) from e
    return BulkExportQuery(
        export_id=given or str(uuid.uuid4()), table_name=table_name, table_id=table_id, filter=row_filter
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class LeafPartitionExport:
    """The export of one leaf partition (Sleeper's ``BulkExportLeafPartitionQuery``).

    Attributes:
        table_id: The table's id.
        export_id: The export this belongs to.
        sub_export_id: This leaf's export id; its output file is ``<subExportId>.parquet``.
        regions: The regions to export (the leaf's region).
        leaf_partition_id: The leaf partition.
        partition_region: The leaf's region; every file is read limited to it.
        files: The files to read: those referenced on the leaf and its ancestors.
        filter: Beyond Sleeper: the export's filter, applied to the leaf's rows after the table's rules; None for
            every row.
        pending_deletes: Beyond Sleeper: the filters of the table's pending row deletes that hide rows of some of
            its files, by file (``pendingDeletes``, written only when there are some); each file's matching rows
            are left out as it is read, before the merge and the table's rules.
    """

    table_id: str
    export_id: str
    sub_export_id: str
    regions: tuple[Region, ...]
    leaf_partition_id: str
    partition_region: Region
    files: tuple[str, ...]
    filter: Filter | None = None
    pending_deletes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def export_output_path(root: str, export: LeafPartitionExport) -> str:
    """Where a leaf partition export's rows go: ``<root>/<tableId>/<exportId>/<subExportId>.parquet``.

    Raises:
        UnsafePathError: If an id could leave the root.
    """
    return join_under(root, export.table_id, export.export_id, f"{export.sub_export_id}.parquet")


class LeafPartitionExportSerDe:
    """Reads and writes leaf partition exports, finding each table's schema by id to read its regions.

    Args:
        schema_by_table_id: The schema of a table by id; returns None or raises ``TableNotFoundError`` if there is
            none.
    """

    def __init__(self, schema_by_table_id: Callable[[str], Schema | None]) -> None:
        self._schema_by_id = schema_by_table_id

    def _schema(self, table_id: str, export_id: str | None) -> Schema:
        try:
            schema = self._schema_by_id(table_id)
        except SleeperError:
            schema = None
        if schema is None:
            raise BulkExportQueryError(f'Table could not be found with ID: "{table_id}"', export_id=export_id)
        return schema

    def to_dict(self, export: LeafPartitionExport) -> dict[str, Any]:
        """Sleeper's JSON for a leaf partition export, as a dictionary."""
        schema = self._schema(export.table_id, export.export_id)
        out: dict[str, Any] = {
            "tableId": export.table_id,
            "exportId": export.export_id,
            "subExportId": export.sub_export_id,
            "regions": [r.to_dict(schema) for r in export.regions],
            "leafPartitionId": export.leaf_partition_id,
            "partitionRegion": export.partition_region.to_dict(schema),
            "files": list(export.files),
        }
        if export.filter is not None:
            out["filter"] = str(export.filter)
        if export.pending_deletes:
            out["pendingDeletes"] = {name: list(texts) for name, texts in export.pending_deletes.items()}
        return out

    def to_json(self, export: LeafPartitionExport, *, indent: int | None = None) -> str:
        """Sleeper's JSON for a leaf partition export."""
        return wire.to_json(self.to_dict(export), indent=indent)

    def from_json(self, body: str | bytes) -> LeafPartitionExport:
        """Reads a leaf partition export.

        Raises:
            BulkExportQueryError: If it is not valid, names a table that does not exist, or an unsafe id or path.
        """
        export_id: str | None = None
        try:
            obj = wire.expect_object(wire.parse_json(body))
            raw = obj.get("exportId")
            export_id = raw if isinstance(raw, str) and raw.strip() else None
            wire.check_fields(obj, _LEAF_FIELDS)
            return self._read(obj)
        except MessageError as e:
            raise BulkExportQueryError(str(e), export_id=export_id) from e
        except SleeperError as e:
            if isinstance(e, BulkExportQueryError):
                raise
            raise BulkExportQueryError(str(e), export_id=export_id) from e

    def _read(self, obj: Mapping[str, Any]) -> LeafPartitionExport:
        export_id = wire.required_id(obj, "exportId", what="export id")
        for name in ("tableId", "subExportId", "regions", "leafPartitionId", "partitionRegion", "files"):
            if obj.get(name) is None:
                raise BulkExportQueryError(f"{name} field must be provided", export_id=export_id)
        table_id = wire.required_str(obj, "tableId")
        schema = self._schema(table_id, export_id)
        raw_regions = obj["regions"]
        if not isinstance(raw_regions, list):
            raise BulkExportQueryError("$.regions: must be a list", export_id=export_id)
        regions = tuple(Region.from_dict(schema, r, path=f"$.regions[{i}]") for i, r in enumerate(raw_regions))
        files = wire.str_list(obj, "files")
        for i, name in enumerate(files):
            check_safe_path(name, where=f"$.files[{i}]", allow_local=True)
        return LeafPartitionExport(
            table_id=table_id,
            export_id=export_id,
            sub_export_id=wire.required_id(obj, "subExportId", what="sub-export id"),
            regions=regions,
            leaf_partition_id=check_safe_id(wire.required_str(obj, "leafPartitionId"), where="$.leafPartitionId"),
            partition_region=Region.from_dict(schema, obj["partitionRegion"], path="$.partitionRegion"),
            files=tuple(files),
            filter=_leaf_filter(obj, schema, export_id),
            pending_deletes=_pending_deletes(obj, schema, files, export_id),
        )


def _pending_deletes(
    obj: Mapping[str, Any], schema: Schema, files: Sequence[str], export_id: str
) -> dict[str, tuple[str, ...]]:
    try:
        return pending_deletes_from(obj, schema, files)
    except MessageError as e:
        raise BulkExportQueryError(str(e), export_id=export_id) from None


def _leaf_filter(obj: Mapping[str, Any], schema: Schema, export_id: str) -> Filter | None:
    text = wire.optional_str(obj, "filter")
    if text is None:
        return None
    try:
        return filter_of(text, schema)
    except FilterError as e:
        raise BulkExportQueryError(f"$.filter: {e}", export_id=export_id) from None
