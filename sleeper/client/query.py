"""The request shapes of Sleeper's Python client: :class:`Range`, :class:`Region` and :class:`Query` (its
``sleeper.query`` module, which is our query feature's name here, so they live in ``sleeper.client.query``) and
:class:`BulkExportQuery` (its ``sleeper.bulk_export``), with the same constructors, static builders and JSON.

They hold the values as given; the client checks a query against the table's schema with the query queue's own reader
(:class:`sleeper.core.query.QuerySerDe`) before sending it. Byte array keys given as ``bytes`` are written base64
encoded, the form Sleeper's query JSON gives them (Sleeper's own client cannot send them).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sleeper.client.errors import ClientArgumentError

__all__ = ["BulkExportQuery", "Query", "Range", "Region"]


def _json_value(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def _check_bool(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise ClientArgumentError(f"{name} must be a bool, got {value!r}")


class Range:
    """The range of one row key field: from ``min`` (required) to ``max`` (None: no maximum).

    Args:
        min: The minimum.
        min_inclusive: Whether the minimum is in the range.
        max: The maximum, or None for no maximum.
        max_inclusive: Whether the maximum is in the range.

    Raises:
        ClientArgumentError: If ``min`` is None or an inclusive flag is not a bool.
    """

    def __init__(
        self, min: Any = None, min_inclusive: bool = True, max: Any = None, max_inclusive: bool = False
    ) -> None:
        if min is None:
            raise ClientArgumentError("min must be specified")
        _check_bool(min_inclusive, "min_inclusive")
        _check_bool(max_inclusive, "max_inclusive")
        self.min = min
        self.min_inclusive = min_inclusive
        self.max = max
        self.max_inclusive = max_inclusive

    @staticmethod
    def exact_value(value: Any) -> Range:
        """The range holding one value."""
        return Range(min=value, min_inclusive=True, max=value, max_inclusive=True)

    @staticmethod
    def from_tuple(value: Sequence[Any]) -> Range:
        """A range from ``(min, max)`` (min inclusive, max exclusive) or ``(min, min_inclusive, max, max_inclusive)``.

        Raises:
            ClientArgumentError: If the tuple has another length.
        """
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise ClientArgumentError(f"expected a tuple of length 2 or 4, got {value!r}")
        if len(value) == 2:
            return Range(min=value[0], max=value[1])
        if len(value) == 4:
            return Range(min=value[0], min_inclusive=value[1], max=value[2], max_inclusive=value[3])
        raise ClientArgumentError(f"expected a tuple of length 2 or 4, got {len(value)} values: {value!r}")

    @staticmethod
    def from_dict(value: Mapping[str, Any], min_inclusive: bool = True, max_inclusive: bool = True) -> Range:
        """A range from ``{"min": ..., "max": ...}``.

        Raises:
            ClientArgumentError: If ``min`` or ``max`` is missing.
        """
        if not isinstance(value, Mapping) or "min" not in value or "max" not in value:
            raise ClientArgumentError(f"expected a dict with 'min' and 'max', got {value!r}")
        return Range(value["min"], min_inclusive, value["max"], max_inclusive)

    def to_dict(self) -> dict[str, Any]:
        """The range in Sleeper's query JSON."""
        return {
            "min": _json_value(self.min),
            "minInclusive": self.min_inclusive,
            "max": _json_value(self.max),
            "maxInclusive": self.max_inclusive,
        }


class Region:
    """A region: one range per row key field named (fields not named are unbounded).

    Args:
        row_key_field_to_range: The range of each row key field.
        strings_base64_encoded: Whether string values are given base64 encoded.

    Raises:
        ClientArgumentError: If there is no range, or an argument has the wrong type.
    """

    def __init__(
        self, row_key_field_to_range: Mapping[str, Range] | None = None, strings_base64_encoded: bool = False
    ) -> None:
        if not isinstance(row_key_field_to_range, Mapping):
            raise ClientArgumentError("row_key_field_to_range must be a dictionary")
        if not row_key_field_to_range:
            raise ClientArgumentError("Must provide at least one range")
        for field, value in row_key_field_to_range.items():
            if not isinstance(field, str) or not isinstance(value, Range):
                raise ClientArgumentError(f"expected a field name and a Range, got {field!r}: {value!r}")
        _check_bool(strings_base64_encoded, "strings_base64_encoded")
        self.row_key_field_to_range = dict(row_key_field_to_range)
        self.strings_base64_encoded = strings_base64_encoded

    @staticmethod
    def exact_value(field: str, value: Any, strings_base64_encoded: bool = False) -> Region:
        """The region where one field equals one value."""
        return Region({field: Range.exact_value(value)}, strings_base64_encoded)

    @staticmethod
    def from_field_to_exact_value(field_to_value: Mapping[str, Any], strings_base64_encoded: bool = False) -> Region:
        """The region where each field named equals its value (one row key, all of its fields)."""
        _check_mapping(field_to_value, "a dict of row key field to value")
        return Region({f: Range.exact_value(v) for f, v in field_to_value.items()}, strings_base64_encoded)

    @staticmethod
    def list_from_field_to_exact_values(
        field_to_values: Mapping[str, Sequence[Any]], strings_base64_encoded: bool = False
    ) -> list[Region]:
        """One region per value: ``{"key": ["a", "b"]}`` gives the regions ``key == "a"`` and ``key == "b"``.

        Raises:
            ClientArgumentError: If a field's values are not a list.
        """
        _check_mapping(field_to_values, "a dict of row key field to a list of values")
        regions: list[Region] = []
        for field, values in field_to_values.items():
            if isinstance(values, str | bytes) or not isinstance(values, Sequence):
                raise ClientArgumentError(f"the values of {field!r} must be a list, got {values!r}")
            regions.extend(Region.exact_value(field, value, strings_base64_encoded) for value in values)
        return regions

    @staticmethod
    def from_field_to_tuple(
        field_to_tuple: Mapping[str, Sequence[Any]], strings_base64_encoded: bool = False
    ) -> Region:
        """A region from ``{field: (min, max)}`` or ``{field: (min, min_inclusive, max, max_inclusive)}``."""
        _check_mapping(field_to_tuple, "a dict of row key field to a tuple")
        return Region({f: Range.from_tuple(v) for f, v in field_to_tuple.items()}, strings_base64_encoded)

    @staticmethod
    def from_field_to_dict(
        field_to_dict: Mapping[str, Mapping[str, Any]],
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        strings_base64_encoded: bool = False,
    ) -> Region:
        """A region from ``{field: {"min": ..., "max": ...}}``."""
        _check_mapping(field_to_dict, "a dict of row key field to {'min', 'max'}")
        ranges = {f: Range.from_dict(v, min_inclusive, max_inclusive) for f, v in field_to_dict.items()}
        return Region(ranges, strings_base64_encoded)

    def to_dict(self) -> dict[str, Any]:
        """The region in Sleeper's query JSON."""
        out: dict[str, Any] = {field: r.to_dict() for field, r in self.row_key_field_to_range.items()}
        out["stringsBase64Encoded"] = self.strings_base64_encoded
        return out


def _check_mapping(value: object, what: str) -> None:
    if not isinstance(value, Mapping):
        raise ClientArgumentError(f"expected {what}, got {value!r}")


class Query:
    """A query of a table: the rows in any of its regions.

    Args:
        query_id: The query id (default: a new UUID).
        table_name: The table.
        regions: At least one region.

    Raises:
        ClientArgumentError: If an argument is missing or has the wrong type.
    """

    def __init__(
        self, query_id: str | None = None, table_name: str | None = None, regions: list[Region] | None = None
    ) -> None:
        if query_id is None:
            query_id = str(uuid.uuid4())
        elif not isinstance(query_id, str):
            raise ClientArgumentError("query_id must be a string")
        if not isinstance(table_name, str):
            raise ClientArgumentError("table_name must be a string")
        if not isinstance(regions, list):
            raise ClientArgumentError("regions must be a list")
        if not regions:
            raise ClientArgumentError("Must provide at least one region")
        if not all(isinstance(region, Region) for region in regions):
            raise ClientArgumentError("regions must hold Region objects")
        self.query_id = query_id
        self.table_name = table_name
        self.regions = regions

    def to_dict(self) -> dict[str, Any]:
        """The query in Sleeper's query JSON."""
        return {
            "tableName": self.table_name,
            "queryId": self.query_id,
            "type": "Query",
            "regions": [region.to_dict() for region in self.regions],
        }

    def to_json(self) -> str:
        """The query as Sleeper's query JSON."""
        return json.dumps(self.to_dict())


class BulkExportQuery:
    """A request to export a whole table (Sleeper's ``sleeper.bulk_export.BulkExportQuery``).

    Args:
        export_id: The export id (default: a new UUID).
        table_name: The table's name; give it or ``table_id``, not both.
        table_id: The table's id.

    Raises:
        ClientArgumentError: If neither or both of the table name and id are given.
    """

    def __init__(self, export_id: str | None = None, table_name: str | None = None, table_id: str | None = None):
        if table_name is None and table_id is None:
            raise ClientArgumentError("Either table_name or table_id must be specified")
        if table_name is not None and table_id is not None:
            raise ClientArgumentError("Only one of table_name or table_id must be specified")
        self.export_id = str(uuid.uuid4()) if export_id is None else export_id
        self.table_name = table_name
        self.table_id = table_id

    def to_dict(self) -> dict[str, Any]:
        """The request in Sleeper's bulk export JSON."""
        out: dict[str, Any] = {"exportId": self.export_id}
        if self.table_name is not None:
            out["tableName"] = self.table_name
        if self.table_id is not None:
            out["tableId"] = self.table_id
        return out

    def to_json(self) -> str:
        """The request as Sleeper's bulk export JSON."""
        return json.dumps(self.to_dict())
