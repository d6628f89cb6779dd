"""Table schemas: row key, sort key and value fields, and Sleeper's schema JSON.

Row keys and sort keys have Sleeper's types (:class:`PrimitiveType`). Value fields may also have the types of
:class:`ValueType` (float, double, boolean, date) and :class:`TimestampType`, which Sleeper itself does not have: a
schema using them is readable by this port only (:attr:`Schema.uses_port_only_types`), and a schema that does not
writes exactly Sleeper's schema JSON.

Key values are plain Python values: ``int`` for ``IntType`` and ``LongType``, ``str`` for ``StringType`` and
``bytes`` for ``ByteArrayType``. Python compares ``str`` by code point (the same order as UTF-8 bytes) and ``bytes``
as unsigned bytes, which is the order Sleeper's default engine and Parquet statistics use, so tuples of key
values sort correctly with the built-in comparison.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date as _date
from datetime import datetime as _datetime
from datetime import timedelta as _timedelta
from enum import Enum
from typing import Any

from sleeper.core.exceptions import KeyTypeError, SchemaError

KeyValue = int | str | bytes
"""A value of a row key or sort key field."""

Key = tuple[KeyValue, ...]
"""The values of the row key fields of a row, in schema order."""

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


class PrimitiveType(Enum):
    """A primitive field type, named as in Sleeper's schema JSON."""

    INT = "IntType"
    LONG = "LongType"
    STRING = "StringType"
    BYTE_ARRAY = "ByteArrayType"

    @property
    def minimum(self) -> KeyValue:
        """The smallest value of the type, used as the lower bound of an unbounded range."""
        return _TYPE_MINIMA[self]

    def check(self, value: object, field_name: str) -> KeyValue:
        """Checks that a value belongs to this type.

        Args:
            value: The value to check.
            field_name: The field the value is for, named in the error.

        Returns:
            The value, typed.

        Raises:
            KeyTypeError: If the value does not belong to the type.
        """
        if self in (PrimitiveType.INT, PrimitiveType.LONG):
            if isinstance(value, bool) or not isinstance(value, int):
                raise KeyTypeError(f"field {field_name!r} of type {self.value} needs an integer, got {value!r}")
            low, high = (INT_MIN, INT_MAX) if self is PrimitiveType.INT else (LONG_MIN, LONG_MAX)
            if not low <= value <= high:
                raise KeyTypeError(f"field {field_name!r} of type {self.value}: {value} is out of range")
            return value
        if self is PrimitiveType.STRING:
            if not isinstance(value, str):
                raise KeyTypeError(f"field {field_name!r} of type StringType needs a string, got {value!r}")
            return value
        if not isinstance(value, bytes | bytearray):
            raise KeyTypeError(f"field {field_name!r} of type ByteArrayType needs bytes, got {value!r}")
        return bytes(value)


KEY_TYPES_MESSAGE = "row keys and sort keys must be IntType, LongType, StringType or ByteArrayType"
"""Why a key field of another type is refused."""


class ValueType(Enum):
    """A value field type beyond Sleeper's own, named in the schema JSON as below (value fields only).

    Arrow types: ``FLOAT`` float32, ``DOUBLE`` float64, ``BOOLEAN`` bool, ``DATE`` date32 (days since the epoch).
    """

    FLOAT = "FloatType"
    DOUBLE = "DoubleType"
    BOOLEAN = "BooleanType"
    DATE = "DateType"

    def literal(self, raw: object) -> float | int | bool | str:
        """A literal to compare values of this type with (as in a filter), checked: a finite number for ``FLOAT``
        and ``DOUBLE``, ``True``/``False`` for ``BOOLEAN``, an ISO 8601 date string (``2024-05-31``) for ``DATE``,
        given back as the canonical ``YYYY-MM-DD``.

        Raises:
            ValueError: If the literal does not suit the type; the message says what would.
        """
        if self is ValueType.BOOLEAN:
            if not isinstance(raw, bool):
                raise ValueError(f"compare it with true or false, not {_shown_literal(raw)}")
            return raw
        if self is ValueType.DATE:
            if not isinstance(raw, str):
                raise ValueError(f"compare it with a date string such as '2024-05-31', not {_shown_literal(raw)}")
            problem = f"{raw!r} is not a date: write it as 'YYYY-MM-DD', such as '2024-05-31'"
            if not _DATE.fullmatch(raw.strip()):
                raise ValueError(problem)
            try:
                return _date.fromisoformat(raw.strip()).isoformat()
            except ValueError:
                raise ValueError(problem) from None
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ValueError(f"compare it with a number such as 1.5, not {_shown_literal(raw)}")
        if isinstance(raw, float) and not math.isfinite(raw):
            raise ValueError(f"{raw!r} is not a finite number")
        return raw


TIMESTAMP_UNITS = ("s", "ms", "us", "ns")
"""The units of a :class:`TimestampType`: seconds, milliseconds, microseconds, nanoseconds since the epoch."""


@dataclass(frozen=True, slots=True)
class TimestampType:
    """A point in time as a count of ``unit`` since the Unix epoch (value fields only); Arrow ``timestamp``.

    Without a time zone the value is a wall-clock time in no particular zone (Arrow's naive timestamp, Parquet's
    ``isAdjustedToUTC=false``); with one, it is an instant (counted from the epoch in UTC) shown in that zone. The
    schema JSON is ``{"TimestampType": {"unit": "us", "timeZone": "UTC"}}``, ``timeZone`` left out when there is none.

    Attributes:
        unit: ``s``, ``ms``, ``us`` or ``ns``.
        time_zone: An IANA zone name (``UTC``, ``Europe/London``) or a fixed offset (``+01:00``); None for none.

    Raises:
        SchemaError: If the unit is not one of those, or the time zone is empty.
    """

    unit: str = "us"
    time_zone: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in TIMESTAMP_UNITS:
            raise SchemaError(f"TimestampType unit must be one of {', '.join(TIMESTAMP_UNITS)}, got {self.unit!r}")
        if self.time_zone is not None and (not isinstance(self.time_zone, str) or not self.time_zone.strip()):
            raise SchemaError(f"TimestampType time zone must be a zone name or offset, got {self.time_zone!r}")

    def literal(self, raw: object) -> str:
        """A literal to compare values of this type with (as in a filter), checked and given back as the canonical
        ISO 8601 text Arrow reads as this type: ``YYYY-MM-DDTHH:MM:SS`` with the unit's fraction digits, and ``Z``
        when the type has a time zone.

        The literal is an ISO 8601 date (midnight) or date and time, ``T`` or a space between them, seconds and a
        fraction of up to 9 digits optional. With a time zone it is an instant: an offset (``+01:00``) or ``Z`` is
        applied, and a literal with neither is read as UTC. Without one it is a wall-clock time and may not name a
        zone.

        Raises:
            ValueError: If the literal is not such text, names a zone for a type without one, or is finer than the
                unit (such as milliseconds for a type of unit ``s``).
        """
        if not isinstance(raw, str):
            raise ValueError(
                f"compare it with a date and time string such as '2024-05-31T12:30:00', not {_shown_literal(raw)}"
            )
        match = _TIMESTAMP.fullmatch(raw.strip())
        if match is None:
            raise ValueError(
                f"{raw!r} is not an ISO 8601 date and time: write it as 'YYYY-MM-DDTHH:MM:SS[.fraction][Z|+HH:MM]'"
            )
        day, hour, minute, second, fraction, zone = match.groups()
        if zone is not None and self.time_zone is None:
            raise ValueError(f"{raw!r} names a time zone, and the column holds wall-clock times: leave the zone out")
        try:
            moment = _datetime.fromisoformat(day).replace(
                hour=int(hour or 0), minute=int(minute or 0), second=int(second or 0)
            )
            if zone not in (None, "Z"):
                sign = 1 if zone[0] == "+" else -1
                moment -= sign * _timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        except (ValueError, OverflowError) as e:
            raise ValueError(f"{raw!r} is not a date and time: {e}") from None
        digits = _UNIT_DIGITS[self.unit]
        nanos = (fraction or "").ljust(9, "0")
        if nanos[digits:].strip("0"):
            raise ValueError(f"{raw!r} is finer than the column's unit ({self.unit})")
        text = moment.strftime("%Y-%m-%dT%H:%M:%S") if moment.year >= 1000 else _padded(moment)
        return text + ("." + nanos[:digits] if digits else "") + ("Z" if self.time_zone is not None else "")

    @property
    def value(self) -> str:
        """The type as shown in messages, e.g. ``TimestampType(us, UTC)``."""
        zone = f", {self.time_zone}" if self.time_zone else ""
        return f"TimestampType({self.unit}{zone})"


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIMESTAMP = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?"
)


def _padded(moment: _datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment:%H:%M:%S}"


def _shown_literal(raw: object) -> str:
    if isinstance(raw, str):
        return f"the string {raw!r}"
    if isinstance(raw, bool):
        return f"the boolean {str(raw).lower()}"
    return f"{type(raw).__name__} {raw!r}"


_TYPE_MINIMA: dict[PrimitiveType, KeyValue] = {
    PrimitiveType.INT: INT_MIN,
    PrimitiveType.LONG: LONG_MIN,
    PrimitiveType.STRING: "",
    PrimitiveType.BYTE_ARRAY: b"",
}


@dataclass(frozen=True, slots=True)
class ListType:
    """A list of primitive values (value fields only)."""

    element_type: PrimitiveType

    def __post_init__(self) -> None:
        if not isinstance(self.element_type, PrimitiveType):
            raise SchemaError(f"{_COLLECTIONS_MESSAGE}, not {describe_type(self.element_type)}")


_COLLECTIONS_MESSAGE = "lists and maps hold IntType, LongType, StringType or ByteArrayType values only"


@dataclass(frozen=True, slots=True)
class MapType:
    """A map from primitive keys to primitive values (value fields only)."""

    key_type: PrimitiveType
    value_type: PrimitiveType

    def __post_init__(self) -> None:
        for part in (self.key_type, self.value_type):
            if not isinstance(part, PrimitiveType):
                raise SchemaError(f"{_COLLECTIONS_MESSAGE}, not {describe_type(part)}")


FieldType = PrimitiveType | ValueType | TimestampType | ListType | MapType
"""The type of a field. Lists and maps hold Sleeper's types (:class:`PrimitiveType`) only."""

PORT_ONLY_TYPES = (ValueType, TimestampType)
"""The classes of the value types Sleeper itself does not have."""


def is_port_only_type(field_type: FieldType) -> bool:
    """Whether a field type is one of the value types beyond Sleeper's (readable by this port only)."""
    return isinstance(field_type, PORT_ONLY_TYPES)


def describe_type(field_type: FieldType) -> str:
    """A field type as shown in messages: ``LongType``, ``TimestampType(us, UTC)``, ``ListType<StringType>``."""
    if isinstance(field_type, ListType):
        return f"ListType<{field_type.element_type.value}>"
    if isinstance(field_type, MapType):
        return f"MapType<{field_type.key_type.value},{field_type.value_type.value}>"
    return field_type.value


@dataclass(frozen=True, slots=True)
class Field:
    """A named, typed column of a table."""

    name: str
    type: FieldType
    nullable: bool = False

    @property
    def primitive_type(self) -> PrimitiveType:
        """The field's type, which must be primitive (as for every key field)."""
        if not isinstance(self.type, PrimitiveType):
            raise SchemaError(f"field {self.name!r} is not of a primitive type ({KEY_TYPES_MESSAGE})")
        return self.type


@dataclass(frozen=True, slots=True)
class Schema:
    """The fields of a table. Immutable once the table is created.

    Raises:
        SchemaError: If there is no row key, a key field is not primitive or is nullable, or names repeat.
    """

    row_key_fields: tuple[Field, ...]
    sort_key_fields: tuple[Field, ...] = ()
    value_fields: tuple[Field, ...] = ()
    _by_name: Mapping[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_key_fields", tuple(self.row_key_fields))
        object.__setattr__(self, "sort_key_fields", tuple(self.sort_key_fields))
        object.__setattr__(self, "value_fields", tuple(self.value_fields))
        if not self.row_key_fields:
            raise SchemaError("schema needs at least one row key field")
        by_name: dict[str, Field] = {}
        for group, fields in (("row key", self.row_key_fields), ("sort key", self.sort_key_fields)):
            for f in fields:
                if is_port_only_type(f.type):
                    raise SchemaError(
                        f"{group} field {f.name!r} is {describe_type(f.type)}, a value type: {KEY_TYPES_MESSAGE}"
                    )
                if not isinstance(f.type, PrimitiveType):
                    raise SchemaError(f"{group} field {f.name!r} must be of a primitive type ({KEY_TYPES_MESSAGE})")
                if f.nullable:
                    raise SchemaError(f"{group} field {f.name!r} must not be nullable")
        for f in self.all_fields:
            if not f.name:
                raise SchemaError("field names must not be empty")
            if f.name in by_name:
                raise SchemaError(f"field name {f.name!r} is used more than once")
            by_name[f.name] = f
        object.__setattr__(self, "_by_name", by_name)

    @classmethod
    def of(
        cls,
        *,
        row_keys: Iterable[Field],
        sort_keys: Iterable[Field] = (),
        values: Iterable[Field] = (),
    ) -> Schema:
        """Builds a schema from groups of fields."""
        return cls(tuple(row_keys), tuple(sort_keys), tuple(values))

    @property
    def all_fields(self) -> tuple[Field, ...]:
        """Row keys, then sort keys, then values: the column order of data files."""
        return self.row_key_fields + self.sort_key_fields + self.value_fields

    @property
    def uses_port_only_types(self) -> bool:
        """Whether a value field has a type Sleeper itself does not have (:class:`ValueType`, :class:`TimestampType`).

        Such a table is readable by this port only: Sleeper's Java and Rust code refuse its schema JSON. A table
        without them keeps exactly Sleeper's schema JSON and file formats.
        """
        return any(is_port_only_type(f.type) for f in self.value_fields)

    @property
    def key_fields(self) -> tuple[Field, ...]:
        """Row keys then sort keys: the order rows are sorted in."""
        return self.row_key_fields + self.sort_key_fields

    @property
    def row_key_names(self) -> tuple[str, ...]:
        """Names of the row key fields in order."""
        return tuple(f.name for f in self.row_key_fields)

    @property
    def sort_key_names(self) -> tuple[str, ...]:
        """Names of the sort key fields in order."""
        return tuple(f.name for f in self.sort_key_fields)

    @property
    def key_names(self) -> tuple[str, ...]:
        """Names of the row key then sort key fields."""
        return tuple(f.name for f in self.key_fields)

    @property
    def value_names(self) -> tuple[str, ...]:
        """Names of the value fields in order."""
        return tuple(f.name for f in self.value_fields)

    @property
    def field_names(self) -> tuple[str, ...]:
        """Names of all fields in column order."""
        return tuple(f.name for f in self.all_fields)

    def field(self, name: str) -> Field:
        """Finds a field by name.

        Raises:
            SchemaError: If there is no such field.
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"schema has no field {name!r}") from None

    def has_field(self, name: str) -> bool:
        """Whether the schema has a field of that name."""
        return name in self._by_name

    def row_key(self, values: Mapping[str, object] | Sequence[object]) -> Key:
        """Validates and orders the row key values of a row.

        Args:
            values: Either a mapping from field name to value, or the values in row key order.

        Raises:
            KeyTypeError: If a value is missing or of the wrong type.
        """
        if isinstance(values, Mapping):
            missing = [f.name for f in self.row_key_fields if f.name not in values]
            if missing:
                raise KeyTypeError(f"row key field {missing[0]!r} has no value")
            seq = [values[f.name] for f in self.row_key_fields]
        else:
            seq = list(values)
            if len(seq) != len(self.row_key_fields):
                raise KeyTypeError(f"expected {len(self.row_key_fields)} row key values, got {len(seq)}")
        return tuple(f.primitive_type.check(v, f.name) for f, v in zip(self.row_key_fields, seq, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's schema JSON as a dictionary."""
        return {
            "rowKeyFields": [_field_to_dict(f) for f in self.row_key_fields],
            "sortKeyFields": [_field_to_dict(f) for f in self.sort_key_fields],
            "valueFields": [_field_to_dict(f) for f in self.value_fields],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """Sleeper's schema JSON."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: object) -> Schema:
        """Reads Sleeper's schema JSON from a parsed dictionary.

        Raises:
            SchemaError: If the document is not a valid schema; the message names the field.
        """
        if not isinstance(data, Mapping):
            raise SchemaError("schema JSON must be an object")
        unknown = set(data) - {"rowKeyFields", "sortKeyFields", "valueFields"}
        if unknown:
            raise SchemaError(f"schema JSON has unknown keys: {', '.join(sorted(unknown))}")
        groups = []
        for key in ("rowKeyFields", "sortKeyFields", "valueFields"):
            raw = data.get(key, [])
            if raw is None:
                raw = []
            if not isinstance(raw, list):
                raise SchemaError(f"schema JSON {key} must be a list")
            groups.append(tuple(_field_from_dict(item, key) for item in raw))
        return cls(groups[0], groups[1], groups[2])

    @classmethod
    def from_json(cls, text: str) -> Schema:
        """Reads Sleeper's schema JSON.

        Raises:
            SchemaError: If the text is not JSON or not a valid schema.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema is not valid JSON: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def from_arrow(
        cls,
        arrow_schema: Iterable[Any],
        *,
        row_keys: Sequence[str],
        sort_keys: Sequence[str] = (),
    ) -> Schema:
        """A schema from an Arrow schema (``pyarrow.Schema``, e.g. ``pyarrow.parquet.read_schema(path)``).

        Every column becomes a field, in the Arrow schema's order within its group: the named row keys, then the named
        sort keys, then every other column as a value field. Arrow ``int32`` (and the narrower integers) is
        ``IntType``, ``int64`` (and ``uint32``) ``LongType``, strings ``StringType``, binaries ``ByteArrayType``; lists
        and maps of those are ``ListType`` and ``MapType``. Value fields may also be ``float32`` (``FloatType``),
        ``float64`` (``DoubleType``), ``bool`` (``BooleanType``), ``date32`` (``DateType``) or ``timestamp`` of any
        unit and time zone (:class:`TimestampType`), types this port adds to Sleeper's (see
        :attr:`Schema.uses_port_only_types`). Key fields are not nullable; a value field is nullable when its Arrow
        field is.

        Args:
            arrow_schema: The Arrow schema: its fields each have ``name``, ``type`` and ``nullable``.
            row_keys: The names of the row key fields, in order (at least one).
            sort_keys: The names of the sort key fields, in order.

        Raises:
            SchemaError: If a named key is not a column, a name is given twice, or columns have Arrow types with no
                Sleeper type (every such column is listed with its type).
        """
        fields = list(arrow_schema)
        by_name = {str(f.name): f for f in fields}
        named = [*row_keys, *sort_keys]
        missing = [name for name in named if name not in by_name]
        if missing:
            raise SchemaError(
                f"no column named {', '.join(map(repr, missing))} in the Arrow schema (columns: {', '.join(by_name)})"
            )
        repeated = sorted({name for name in named if named.count(name) > 1})
        if repeated:
            raise SchemaError(f"{', '.join(map(repr, repeated))} named more than once as a key")
        types: dict[str, FieldType] = {}
        unsupported: list[str] = []
        for f in fields:
            sleeper_type = _type_from_arrow(f.type)
            if sleeper_type is None:
                unsupported.append(f"{f.name!r} ({f.type})")
            else:
                types[str(f.name)] = sleeper_type
        if unsupported:
            raise SchemaError(
                f"Arrow types with no Sleeper type: {', '.join(unsupported)}; Sleeper stores {ARROW_TYPES_SUPPORTED}"
                " (cast or drop these columns first)"
            )
        keys = set(named)
        return cls(
            tuple(Field(name, types[name]) for name in row_keys),
            tuple(Field(name, types[name]) for name in sort_keys),
            tuple(Field(str(f.name), types[str(f.name)], bool(f.nullable)) for f in fields if f.name not in keys),
        )


ARROW_TYPES_SUPPORTED = (
    "int8, int16, int32, uint8, uint16 (IntType), int64, uint32 (LongType), string, large_string, string_view "
    "(StringType), binary, large_binary, binary_view (ByteArrayType), and lists and maps of those (value fields); "
    "and as value fields only, float (FloatType), double (DoubleType), bool (BooleanType), date32 (DateType) and "
    "timestamp of any unit and time zone (TimestampType)"
)
"""The Arrow types :meth:`Schema.from_arrow` maps to a Sleeper type, as named in its error."""

_ARROW_PRIMITIVES: dict[str, PrimitiveType] = {
    **dict.fromkeys(("int8", "int16", "int32", "uint8", "uint16"), PrimitiveType.INT),
    **dict.fromkeys(("int64", "uint32"), PrimitiveType.LONG),
    **dict.fromkeys(("string", "large_string", "string_view"), PrimitiveType.STRING),
    **dict.fromkeys(("binary", "large_binary", "binary_view"), PrimitiveType.BYTE_ARRAY),
}
"""Arrow primitive types by their name (``str(pyarrow type)``), each read as its Sleeper type without loss."""

_ARROW_VALUE_TYPES: dict[str, ValueType] = {
    "float": ValueType.FLOAT,
    "double": ValueType.DOUBLE,
    "bool": ValueType.BOOLEAN,
    "date32[day]": ValueType.DATE,
}
"""Arrow types of the value types beyond Sleeper's, by name."""


def _type_from_arrow(arrow_type: Any) -> FieldType | None:
    """The Sleeper type of an Arrow type, read from its name and parts (so core needs no pyarrow); None if none."""
    name = str(arrow_type)
    if name in _ARROW_PRIMITIVES:
        return _ARROW_PRIMITIVES[name]
    if name in _ARROW_VALUE_TYPES:
        return _ARROW_VALUE_TYPES[name]
    if name.startswith("timestamp["):
        zone = getattr(arrow_type, "tz", None)
        return TimestampType(str(arrow_type.unit), None if zone is None else str(zone))
    if name.startswith(("list<", "large_list<")):
        element = _ARROW_PRIMITIVES.get(str(arrow_type.value_type))
        return None if element is None else ListType(element)
    if name.startswith("map<"):
        key = _ARROW_PRIMITIVES.get(str(arrow_type.key_type))
        value = _ARROW_PRIMITIVES.get(str(arrow_type.item_type))
        return None if key is None or value is None else MapType(key, value)
    return None


def _type_to_json(t: FieldType) -> object:
    if isinstance(t, PrimitiveType | ValueType):
        return t.value
    if isinstance(t, TimestampType):
        body = {"unit": t.unit}
        if t.time_zone is not None:
            body["timeZone"] = t.time_zone
        return {"TimestampType": body}
    if isinstance(t, ListType):
        return {"ListType": {"elementType": t.element_type.value}}
    return {"MapType": {"keyType": t.key_type.value, "valueType": t.value_type.value}}


def _field_to_dict(f: Field) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "type": _type_to_json(f.type)}
    if f.nullable:
        out["nullable"] = True
    return out


_VALUE_TYPE_NAMES = frozenset(t.value for t in ValueType)


def _primitive_from_json(raw: object, where: str) -> PrimitiveType:
    try:
        return PrimitiveType(raw)
    except ValueError:
        if raw in _VALUE_TYPE_NAMES:
            raise SchemaError(f"{where} has {raw}, a value type: {_COLLECTIONS_MESSAGE}") from None
        names = ", ".join(t.value for t in PrimitiveType)
        raise SchemaError(f"{where} has unknown type {raw!r} (expected one of {names})") from None


def _type_from_json(raw: object, where: str) -> FieldType:
    if isinstance(raw, str):
        if raw in _VALUE_TYPE_NAMES:
            return ValueType(raw)
        return _primitive_from_json(raw, where)
    if isinstance(raw, Mapping) and len(raw) == 1:
        ((kind, body),) = raw.items()
        if kind == "TimestampType" and isinstance(body, Mapping):
            unknown = set(body) - {"unit", "timeZone"}
            if unknown:
                raise SchemaError(f"{where} TimestampType has unknown keys: {', '.join(sorted(unknown))}")
            try:
                return TimestampType(body.get("unit"), body.get("timeZone"))  # type: ignore[arg-type]
            except SchemaError as e:
                raise SchemaError(f"{where}: {e}") from None
        if kind == "ListType" and isinstance(body, Mapping):
            return ListType(_primitive_from_json(body.get("elementType"), where))
        if kind == "MapType" and isinstance(body, Mapping):
            return MapType(
                _primitive_from_json(body.get("keyType"), where),
                _primitive_from_json(body.get("valueType"), where),
            )
    raise SchemaError(f"{where} has unknown type {json.dumps(raw)}")


def _field_from_dict(item: object, group: str) -> Field:
    if not isinstance(item, Mapping):
        raise SchemaError(f"{group} entries must be objects, got {item!r}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise SchemaError(f"a field in {group} has no name")
    where = f"field {name!r}"
    if "type" not in item:
        raise SchemaError(f"{where} has no type")
    nullable = item.get("nullable", False)
    if not isinstance(nullable, bool):
        raise SchemaError(f"{where} has a non-boolean nullable flag")
    return Field(name, _type_from_json(item["type"], where), nullable)
