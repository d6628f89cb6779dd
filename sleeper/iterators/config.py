"""Table filters and aggregations: reading and checking ``sleeper.table.filters`` and ``sleeper.table.aggregations``.

The two properties hold comma-separated function calls, as in Sleeper:

- ``sleeper.table.filters``: ``ageOff(field,maxAgeMs)``, any number of times. A row is kept when the long field is not
  null and ``now - value < maxAgeMs``.
- ``sleeper.table.aggregations``: ``op(field)`` with ``op`` one of ``sum``, ``min``, ``max``, ``map_sum``, ``map_min``,
  ``map_max``. Rows with equal row and sort keys are combined into one.

Function and operation names are case-insensitive and whitespace between tokens is ignored. Names and parameters are
made of letters, digits, ``_`` and ``-``; a parameter made of an optional ``-`` and ASCII digits is a number.

Aggregation rules (the stricter of Sleeper's two engines, so a configuration accepted here works in both):

- when any aggregation is set, every value field is aggregated exactly once, and no key field is;
- no value field may be nullable;
- ``sum`` needs an ``IntType`` or ``LongType`` field; ``min`` and ``max`` take any primitive field (strings compare by
  code point, byte arrays as unsigned bytes);
- of the value types beyond Sleeper's, ``sum``, ``min`` and ``max`` take ``FloatType`` and ``DoubleType`` (a sum
  in the field's precision; NaN propagates through a sum, while ``min`` and ``max`` skip it unless every value is
  NaN), ``min`` and ``max`` take ``TimestampType``, ``DateType`` and ``BooleanType`` (``false`` is less than
  ``true``); a sum of timestamps, dates or booleans is refused (this port only: Sleeper has none of these types);
- ``map_sum``, ``map_min`` and ``map_max`` need a map field whose values are ``IntType`` or ``LongType``; they combine
  the values of equal map keys.

Sums wrap around on overflow, as both of Sleeper's engines do. The age-off field must be a ``LongType`` field (key or
value, nullable or not).

This module imports only the standard library and ``sleeper.core``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from sleeper.core import (
    LONG_MAX,
    LONG_MIN,
    FieldType,
    ListType,
    MapType,
    PrimitiveType,
    Schema,
    TimestampType,
    ValueType,
    describe_type,
)
from sleeper.iterators.exceptions import IteratorConfigError

FILTERS_PROPERTY = "sleeper.table.filters"
"""The table property holding the filter configuration."""

AGGREGATIONS_PROPERTY = "sleeper.table.aggregations"
"""The table property holding the aggregation configuration."""

UPSERT_PROPERTY = "sleeper.table.upsert"
"""The table property keeping one row per row key, the last written (beyond Sleeper)."""

AGE_OFF = "ageOff"
"""The name of the age-off filter, as written by ``to_string``."""

_INTEGER_TYPES = (PrimitiveType.INT, PrimitiveType.LONG)
_SUMMABLE_TYPES = (*_INTEGER_TYPES, ValueType.FLOAT, ValueType.DOUBLE)
_NUMBER = re.compile(r"-?[0-9]+")


class AggregationOp(Enum):
    """An aggregation operation, named as in ``sleeper.table.aggregations``."""

    SUM = "sum"
    MIN = "min"
    MAX = "max"
    MAP_SUM = "map_sum"
    MAP_MIN = "map_min"
    MAP_MAX = "map_max"

    @property
    def is_map(self) -> bool:
        """Whether the operation combines the values of a map field key by key."""
        return self in (AggregationOp.MAP_SUM, AggregationOp.MAP_MIN, AggregationOp.MAP_MAX)

    @property
    def element_op(self) -> AggregationOp:
        """The operation applied to single values: ``SUM``, ``MIN`` or ``MAX`` (map operations map to these)."""
        return _ELEMENT_OPS[self]


_ELEMENT_OPS = {
    AggregationOp.SUM: AggregationOp.SUM,
    AggregationOp.MIN: AggregationOp.MIN,
    AggregationOp.MAX: AggregationOp.MAX,
    AggregationOp.MAP_SUM: AggregationOp.SUM,
    AggregationOp.MAP_MIN: AggregationOp.MIN,
    AggregationOp.MAP_MAX: AggregationOp.MAX,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterConfig:
    """An age-off filter: keeps rows whose long field is not null and less than ``max_age_ms`` old.

    Attributes:
        field: The name of the ``LongType`` field holding a timestamp in milliseconds since the epoch.
        max_age_ms: The maximum age in milliseconds; a row exactly this old is removed.
    """

    field: str
    max_age_ms: int

    def to_string(self) -> str:
        """The filter as written in ``sleeper.table.filters``, e.g. ``ageOff(timestamp,1209600000)``."""
        return f"{AGE_OFF}({self.field},{self.max_age_ms})"

    def min_kept_value(self, now_ms: int) -> int:
        """The smallest timestamp the filter keeps at the given time (``now_ms - max_age_ms + 1``).

        Args:
            now_ms: The current time in milliseconds since the epoch.
        """
        return now_ms - self.max_age_ms + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregationConfig:
    """One aggregation: how the values of one value field are combined for rows with equal keys.

    Attributes:
        op: The operation.
        field: The name of the value field.
    """

    op: AggregationOp
    field: str

    def to_string(self) -> str:
        """The aggregation as written in ``sleeper.table.aggregations``, e.g. ``sum(count)``."""
        return f"{self.op.value}({self.field})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessingConfig:
    """The filters and aggregations of a table, applied whenever its data is read or written.

    Construct with ``parse`` (which validates), or directly and then call ``validate``.

    Attributes:
        filters: The age-off filters, all of which a row must pass.
        aggregations: The aggregations; empty to keep rows with equal keys separate.
        upsert: Whether only the last row of each row key is kept (``sleeper.table.upsert``, beyond Sleeper): of rows
            sorted by row keys then sort keys, the last of each run of equal row keys, so the greatest sort key wins.
            Applied before the filters, so a newest row the filters drop hides the older ones too.
    """

    filters: tuple[FilterConfig, ...] = ()
    aggregations: tuple[AggregationConfig, ...] = ()
    upsert: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple(self.filters))
        object.__setattr__(self, "aggregations", tuple(self.aggregations))

    @classmethod
    def parse(cls, filters: str | None, aggregations: str | None, schema: Schema) -> ProcessingConfig:
        """Reads and validates the values of ``sleeper.table.filters`` and ``sleeper.table.aggregations``.

        Args:
            filters: The filter property value; ``None``, empty or blank for no filters.
            aggregations: The aggregation property value; ``None``, empty or blank for no aggregation.
            schema: The table schema to validate against.

        Returns:
            The validated configuration.

        Raises:
            IteratorConfigError: If either value cannot be read or does not suit the schema.
        """
        return cls(filters=parse_filters(filters, schema), aggregations=parse_aggregations(aggregations, schema))

    @property
    def is_empty(self) -> bool:
        """Whether there is nothing to apply: rows pass through unchanged."""
        return not self.filters and not self.aggregations and not self.upsert

    def validate(self, schema: Schema) -> None:
        """Checks the configuration against a schema.

        Raises:
            IteratorConfigError: If a filter or aggregation does not suit the schema.
        """
        _validate_filters(self.filters, schema)
        _validate_aggregations(self.aggregations, schema)
        if self.upsert and self.aggregations:
            raise IteratorConfigError(
                f"{UPSERT_PROPERTY} cannot be set with {AGGREGATIONS_PROPERTY}: an upsert table keeps the last row of "
                "each row key, an aggregating table combines them, and a table can do only one of the two"
            )

    def filters_to_string(self) -> str:
        """The value of ``sleeper.table.filters`` for these filters; empty if there are none."""
        return ",".join(f.to_string() for f in self.filters)

    def aggregations_to_string(self) -> str:
        """The value of ``sleeper.table.aggregations`` for these aggregations; empty if there are none."""
        return ",".join(a.to_string() for a in self.aggregations)

    def required_value_fields(self, schema: Schema) -> tuple[str, ...]:
        """The value fields a reader must load for the filters and aggregations, in schema order.

        Key fields are always read, so they are not listed. Aggregation needs every value field.
        """
        if self.aggregations:
            return schema.value_names
        wanted = {f.field for f in self.filters}
        return tuple(name for name in schema.value_names if name in wanted)


def parse_filters(text: str | None, schema: Schema) -> tuple[FilterConfig, ...]:
    """Reads and validates a value of ``sleeper.table.filters``.

    Args:
        text: The property value; ``None``, empty or blank for no filters.
        schema: The table schema.

    Raises:
        IteratorConfigError: If the text cannot be read, names an unknown filter, or a field that is not a long field.
    """
    filters = []
    for call in _read_calls(text, FILTERS_PROPERTY):
        if call.name.lower() != AGE_OFF.lower():
            raise IteratorConfigError(
                f"{FILTERS_PROPERTY}: unknown filter {call.name!r} in {call.text!r} (the only filter is "
                f"{AGE_OFF}(field,maxAgeMs))",
                part=call.text,
            )
        call.expect_parameters(("field", "max age"), FILTERS_PROPERTY)
        field = call.word(0, "field", FILTERS_PROPERTY)
        max_age = call.number(1, "max age", FILTERS_PROPERTY)
        filters.append(FilterConfig(field=field, max_age_ms=max_age))
    result = tuple(filters)
    _validate_filters(result, schema)
    return result


def parse_aggregations(text: str | None, schema: Schema) -> tuple[AggregationConfig, ...]:
    """Reads and validates a value of ``sleeper.table.aggregations``.

    Args:
        text: The property value; ``None``, empty or blank for no aggregation.
        schema: The table schema.

    Raises:
        IteratorConfigError: If the text cannot be read or breaks one of the aggregation rules.
    """
    aggregations = []
    for call in _read_calls(text, AGGREGATIONS_PROPERTY):
        try:
            op = AggregationOp(call.name.lower())
        except ValueError:
            names = ", ".join(o.value for o in AggregationOp)
            raise IteratorConfigError(
                f"{AGGREGATIONS_PROPERTY}: unknown aggregation operation {call.name!r} in {call.text!r} "
                f"(expected one of {names})",
                part=call.text,
            ) from None
        call.expect_parameters(("field",), AGGREGATIONS_PROPERTY)
        aggregations.append(AggregationConfig(op=op, field=call.word(0, "field", AGGREGATIONS_PROPERTY)))
    result = tuple(aggregations)
    _validate_aggregations(result, schema)
    return result


def _validate_filters(filters: Sequence[FilterConfig], schema: Schema) -> None:
    for f in filters:
        text = f.to_string()
        if not schema.has_field(f.field):
            raise IteratorConfigError(f"{FILTERS_PROPERTY}: unknown field {f.field!r} in {text!r}", part=f.field)
        field_type = schema.field(f.field).type
        if field_type is not PrimitiveType.LONG:
            raise IteratorConfigError(
                f"{FILTERS_PROPERTY}: {text!r} needs a LongType field, {f.field!r} is {_describe(field_type)}",
                part=f.field,
            )
        if not LONG_MIN <= f.max_age_ms <= LONG_MAX:
            raise IteratorConfigError(
                f"{FILTERS_PROPERTY}: the max age in {text!r} does not fit in a long", part=str(f.max_age_ms)
            )


def _validate_aggregations(aggregations: Sequence[AggregationConfig], schema: Schema) -> None:
    if not aggregations:
        return
    key_names = set(schema.key_names)
    seen: set[str] = set()
    for agg in aggregations:
        text = agg.to_string()
        if not schema.has_field(agg.field):
            raise IteratorConfigError(
                f"{AGGREGATIONS_PROPERTY}: unknown field {agg.field!r} in {text!r}", part=agg.field
            )
        if agg.field in key_names:
            raise IteratorConfigError(
                f"{AGGREGATIONS_PROPERTY}: {text!r} aggregates key field {agg.field!r}; only value fields may be "
                "aggregated (rows are combined when all row and sort keys are equal)",
                part=agg.field,
            )
        if agg.field in seen:
            raise IteratorConfigError(
                f"{AGGREGATIONS_PROPERTY}: field {agg.field!r} is aggregated more than once", part=agg.field
            )
        seen.add(agg.field)
        problem = _type_problem(agg.op, schema.field(agg.field).type)
        if problem:
            raise IteratorConfigError(f"{AGGREGATIONS_PROPERTY}: {text!r} {problem}", part=agg.field)
    nullable = [f.name for f in schema.value_fields if f.nullable]
    if nullable:
        raise IteratorConfigError(
            f"{AGGREGATIONS_PROPERTY}: aggregation is not supported with nullable value fields: {', '.join(nullable)}",
            part=nullable[0],
        )
    missing = [name for name in schema.value_names if name not in seen]
    if missing:
        raise IteratorConfigError(
            f"{AGGREGATIONS_PROPERTY}: every value field needs an aggregation; missing: {', '.join(missing)}",
            part=missing[0],
        )


def _type_problem(op: AggregationOp, field_type: FieldType) -> str | None:
    described = _describe(field_type)
    if op.is_map:
        if not isinstance(field_type, MapType):
            return f"needs a MapType field, the field is {described}"
        if field_type.value_type not in _INTEGER_TYPES:
            return f"needs a map with IntType or LongType values, the field is {described}"
        return None
    if isinstance(field_type, MapType):
        return f"cannot aggregate a map field ({described}); use map_{op.value}"
    if isinstance(field_type, ListType):
        return f"cannot aggregate a list field ({described})"
    if op is AggregationOp.SUM and (isinstance(field_type, TimestampType) or field_type in _ORDER_ONLY_TYPES):
        return f"cannot sum {described} values: use min or max (sum takes IntType, LongType, FloatType or DoubleType)"
    if op is AggregationOp.SUM and field_type not in _SUMMABLE_TYPES:
        return f"needs an IntType or LongType field, the field is {described}"
    return None


_ORDER_ONLY_TYPES = (ValueType.BOOLEAN, ValueType.DATE)
"""Value types that min and max take but sum does not (as do timestamps)."""


def _describe(field_type: FieldType) -> str:
    return describe_type(field_type)


@dataclass(frozen=True, slots=True)
class _Call:
    """A function call read from a configuration string."""

    name: str
    parameters: tuple[str, ...]
    text: str

    def expect_parameters(self, names: tuple[str, ...], prop: str) -> None:
        if len(self.parameters) != len(names):
            plural = "" if len(names) == 1 else "s"
            raise IteratorConfigError(
                f"{prop}: {self.name} expects {len(names)} argument{plural} ({', '.join(names)}), found "
                f"{len(self.parameters)} in {self.text!r}",
                part=self.text,
            )

    def word(self, index: int, name: str, prop: str) -> str:
        value = self.parameters[index]
        if _NUMBER.fullmatch(value):
            raise IteratorConfigError(
                f"{prop}: {self.name} parameter {index} ({name}) must be a field name, found {value!r} in "
                f"{self.text!r}",
                part=value,
            )
        return value

    def number(self, index: int, name: str, prop: str) -> int:
        value = self.parameters[index]
        if not _NUMBER.fullmatch(value):
            raise IteratorConfigError(
                f"{prop}: {self.name} parameter {index} ({name}) must be a whole number, found {value!r} in "
                f"{self.text!r}",
                part=value,
            )
        number = int(value)
        if not LONG_MIN <= number <= LONG_MAX:
            raise IteratorConfigError(
                f"{prop}: {self.name} parameter {index} ({name}) does not fit in a long: {value} in {self.text!r}",
                part=value,
            )
        return number


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c in "_-"


class _Reader:
    """Reads ``name(param, ...)`` calls separated by commas, ignoring whitespace between tokens."""

    def __init__(self, text: str, prop: str) -> None:
        self.text = text
        self.prop = prop
        self.pos = 0

    def error(self, expected: str) -> IteratorConfigError:
        found = repr(self.text[self.pos]) if self.pos < len(self.text) else "the end"
        return IteratorConfigError(
            f"{self.prop}: expected {expected} at position {self.pos} of {self.text!r}, found {found}",
            part=self.text[self.pos :],
        )

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_whitespace(self) -> None:
        while not self.at_end() and self.text[self.pos].isspace():
            self.pos += 1

    def read_char(self, expected: str) -> bool:
        self.skip_whitespace()
        if not self.at_end() and self.text[self.pos] == expected:
            self.pos += 1
            return True
        return False

    def read_word(self) -> str | None:
        self.skip_whitespace()
        start = self.pos
        while not self.at_end() and _is_word_char(self.text[self.pos]):
            self.pos += 1
        return self.text[start : self.pos] if self.pos > start else None

    def read_calls(self) -> list[_Call]:
        calls: list[_Call] = []
        while True:
            self.skip_whitespace()
            if calls:
                if self.at_end():
                    return calls
                if not self.read_char(","):
                    raise self.error("a comma")
                self.skip_whitespace()
                if self.at_end():
                    raise self.error("a function call")
            elif self.at_end():
                return calls
            calls.append(self.read_call())

    def read_call(self) -> _Call:
        start = self.pos
        name = self.read_word()
        if name is None:
            raise self.error("a function name")
        if not self.read_char("("):
            raise self.error("an open parenthesis")
        parameters: list[str] = []
        if not self.read_char(")"):
            while True:
                word = self.read_word()
                if word is None:
                    raise self.error("a parameter or close parenthesis")
                parameters.append(word)
                if self.read_char(","):
                    continue
                if self.read_char(")"):
                    break
                if self.at_end():
                    raise self.error("a close parenthesis")
                raise self.error("a comma or close parenthesis")
        return _Call(name, tuple(parameters), self.text[start : self.pos])


def _read_calls(text: str | None, prop: str) -> list[_Call]:
    if text is None:
        return []
    return _Reader(text, prop).read_calls()
