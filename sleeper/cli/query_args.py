"""Command-line values for queries: row keys and ranges typed by the table schema."""

from __future__ import annotations

import base64
import binascii
import json

from sleeper.core.exceptions import SleeperError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema


def parse_value(field: Field, text: str) -> KeyValue:
    """A key value from text: integers for int and long keys, base64 for byte arrays, text for strings.

    Raises:
        SleeperError: If the text is not a value of the field's type, naming the field.
    """
    kind = field.primitive_type
    if kind in (PrimitiveType.INT, PrimitiveType.LONG):
        try:
            return int(text)
        except ValueError:
            raise SleeperError(f"row key {field.name} is {kind.value}: {text!r} is not an integer") from None
    if kind is PrimitiveType.BYTE_ARRAY:
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise SleeperError(f"row key {field.name} is a byte array: {text!r} is not base64") from None
    return text


def parse_key(schema: Schema, text: str) -> list[KeyValue]:
    """A whole row key: one value, or a JSON list of values for tables with several row key fields.

    Raises:
        SleeperError: If the number or type of values does not suit the row key fields.
    """
    fields = schema.row_key_fields
    if len(fields) == 1:
        return [parse_value(fields[0], text)]
    try:
        values = json.loads(text)
    except json.JSONDecodeError:
        values = None
    if not isinstance(values, list) or len(values) != len(fields):
        names = ", ".join(f.name for f in fields)
        raise SleeperError(f"the table has row keys {names}: give --key as a JSON list of {len(fields)} values")
    return [parse_value(f, str(v)) for f, v in zip(fields, values, strict=True)]


def parse_range(schema: Schema, low: str | None, high: str | None) -> Region:
    """A region on the first row key from a minimum (inclusive, default the lowest value) and maximum (exclusive)."""
    field = schema.row_key_fields[0]
    minimum = parse_value(field, low) if low is not None else Range.whole(field).min
    maximum = parse_value(field, high) if high is not None else None
    return Region.of([Range(field=field, min=minimum, max=maximum)])


def format_value(value: KeyValue) -> str:
    """A key value as text that :func:`parse_value` reads back (base64 for byte arrays)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)
