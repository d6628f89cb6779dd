"""Command-line values for queries, typed by the table schema.

``--exact key=value`` names one row key (``k1=a,k2=5`` for a table with several row key fields).
``--range 'key=[min,max)'`` names a range of one row key field: ``[`` / ``]`` include a bound, ``(`` / ``)`` exclude
it; an empty minimum is the lowest value, an empty maximum is unbounded. Byte arrays are base64.
"""

from __future__ import annotations

import base64
import binascii

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


def format_value(value: KeyValue) -> str:
    """A key value as text that :func:`parse_value` reads back (base64 for byte arrays)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _row_key(schema: Schema, name: str) -> Field:
    for field in schema.row_key_fields:
        if field.name == name:
            return field
    names = ", ".join(f.name for f in schema.row_key_fields)
    raise SleeperError(f"{name!r} is not a row key field; the row keys are {names}")


def parse_exact(schema: Schema, text: str) -> dict[str, KeyValue]:
    """A whole row key from ``field=value[,field=value...]``.

    Raises:
        SleeperError: If a part is not ``field=value``, names no row key field, or a row key field is missing.
    """
    values: dict[str, KeyValue] = {}
    fields = schema.row_key_fields
    parts = [text] if len(fields) == 1 else text.split(",")
    for part in parts:
        name, sep, value = part.partition("=")
        if not sep:
            raise SleeperError(f"--exact {text!r} must look like field=value")
        field = _row_key(schema, name.strip())
        values[field.name] = parse_value(field, value)
    missing = [f.name for f in fields if f.name not in values]
    if missing:
        raise SleeperError(f"--exact {text!r} gives no value for row key {', '.join(missing)}")
    return values


def parse_range(schema: Schema, text: str) -> Region:
    """A region of one row key field from ``field=[min,max)`` (other row key fields unbounded).

    Raises:
        SleeperError: If the text is not of that form, or a bound is not a value of the field's type.
    """
    name, sep, spec = text.partition("=")
    spec = spec.strip()
    if not sep or len(spec) < 3 or spec[0] not in "[(" or spec[-1] not in "])" or "," not in spec:
        raise SleeperError(f"--range {text!r} must look like field=[min,max) (brackets include, parentheses exclude)")
    field = _row_key(schema, name.strip())
    low_text, _, high_text = spec[1:-1].partition(",")
    low = parse_value(field, low_text) if low_text else Range.whole(field).min
    high = parse_value(field, high_text) if high_text else None
    return Region.of(
        [Range(field=field, min=low, min_inclusive=spec[0] == "[", max=high, max_inclusive=spec[-1] == "]")]
    )
