"""Command-line values for queries, typed by the table schema.

``--exact key=value`` names one row key (``k1=a,k2=5`` for a table with several row key fields).
``--range 'key=[min,max)'`` names a range of one row key field: ``[`` / ``]`` include a bound, ``(`` / ``)`` exclude
it; an empty minimum is the lowest value, an empty maximum is unbounded. Byte arrays are base64.

A value holding a comma is written as a JSON string in double quotes (``key="a,b"``, ``key=["a,b","a,c")``), so a comma
always separates; a minimum greater than the maximum is refused.
"""

from __future__ import annotations

import base64
import binascii
import json

from sleeper.core import Field, KeyValue, PrimitiveType, Range, RangeError, Region, Schema, SleeperError

EXACT_QUOTING = 'write a value holding a comma in double quotes, as a JSON string: key="a,b"'
RANGE_QUOTING = 'write a bound holding a comma in double quotes, as a JSON string: key=["a,b","a,c")'


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


_DECODER = json.JSONDecoder()


def _read_value(text: str, start: int, stop: str, what: str) -> tuple[str, int, bool]:
    """One value from ``text[start:]``: a JSON string in double quotes, or bare text up to the first character of
    ``stop`` (or the end). Returns the value, the index just after it, and whether it was quoted."""
    if text.startswith('"', start):
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as e:
            raise SleeperError(f"{what}: {text[start:]!r} does not start with a whole JSON string ({e.msg})") from None
        return str(value), end, True
    end = start
    while end < len(text) and text[end] not in stop:
        end += 1
    return text[start:end], end, False


def parse_exact(schema: Schema, text: str) -> dict[str, KeyValue]:
    """A whole row key from ``field=value[,field=value...]``; a value holding a comma is written in double quotes.

    Raises:
        SleeperError: If a part is not ``field=value``, names no row key field or one twice, or a row key field is
            missing.
    """
    what = f"--exact {text!r}"
    values: dict[str, KeyValue] = {}
    position = 0
    while True:
        name_end = position
        while name_end < len(text) and text[name_end] not in "=,":
            name_end += 1
        if name_end == len(text) or text[name_end] == ",":
            part = text[position:name_end]
            raise SleeperError(f"{what}: {part!r} is not field=value; {EXACT_QUOTING}")
        try:
            field = _row_key(schema, text[position:name_end].strip())
        except SleeperError as e:
            raise SleeperError(f"{what}: {e}" + (f"; {EXACT_QUOTING}" if position else "")) from None
        if field.name in values:
            raise SleeperError(f"{what} names row key {field.name} twice; {EXACT_QUOTING}")
        raw, end, _ = _read_value(text, name_end + 1, ",", what)
        values[field.name] = parse_value(field, raw)
        if end == len(text):
            break
        if text[end] != ",":
            raise SleeperError(f"{what}: expected ',' after the quoted value of {field.name}")
        position = end + 1
    missing = [f.name for f in schema.row_key_fields if f.name not in values]
    if missing:
        raise SleeperError(f"{what} gives no value for row key {', '.join(missing)}")
    return values


def parse_range(schema: Schema, text: str) -> Region:
    """A region of one row key field from ``field=[min,max)`` (other row key fields unbounded); a bound holding a
    comma is written in double quotes.

    Raises:
        SleeperError: If the text is not of that form, a bound is not a value of the field's type, or the minimum is
            greater than the maximum.
    """
    what = f"--range {text!r}"
    name, sep, spec = text.partition("=")
    spec = spec.strip()
    if not sep or len(spec) < 3 or spec[0] not in "[(" or spec[-1] not in "])":
        raise SleeperError(f"{what} must look like field=[min,max) (brackets include, parentheses exclude)")
    field = _row_key(schema, name.strip())
    body = spec[1:-1]
    low_text, end, low_quoted = _read_value(body, 0, ",", what)
    if end == len(body):
        raise SleeperError(f"{what} must look like field=[min,max) (brackets include, parentheses exclude)")
    if body[end] != ",":
        raise SleeperError(f"{what}: expected ',' after the quoted minimum")
    high_text, end, high_quoted = _read_value(body, end + 1, "", what)
    if end != len(body):
        raise SleeperError(f"{what}: expected the closing bracket after the quoted maximum")
    if not high_quoted and "," in high_text:
        raise SleeperError(f"{what} has more than one bare ',' between its brackets; {RANGE_QUOTING}")
    low = parse_value(field, low_text) if low_text or low_quoted else Range.whole(field).min
    high = parse_value(field, high_text) if high_text or high_quoted else None
    try:
        ranges = [Range(field=field, min=low, min_inclusive=spec[0] == "[", max=high, max_inclusive=spec[-1] == "]")]
    except RangeError as e:
        raise RangeError(f"{what}: {e}") from None
    return Region.of(ranges)
