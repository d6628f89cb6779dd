"""A small reader and writer of Thrift's compact protocol, enough for Parquet's footer and page index.

Parquet stores its footer (``FileMetaData``) and its page index (``ColumnIndex``, ``OffsetIndex``) as Thrift structs
in the compact protocol. pyarrow reads them but exposes neither the page index nor a way to change a footer, so
:mod:`sleeper.io.page_index` decodes them with this module, and writes modified footers with it.

Structs are decoded generically, by field id, into :class:`Struct`: no Parquet field is named here. A struct decoded
from bytes keeps those bytes, and is written back by copying them unless it was changed, so a footer is re-encoded
by copying everything but the few structs that differ. Nested structs are decoded lazily, when their fields are
first read: decoding a footer only walks past the row groups' statistics, and a read decodes the row groups it
uses.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Iterator
from typing import Any

__all__ = [
    "BINARY",
    "STOP",
    "BOOL",
    "I16",
    "I32",
    "I64",
    "LIST",
    "STRUCT",
    "Struct",
    "ThriftError",
    "decode_list",
    "decode_struct",
    "encode_fields",
    "encode_struct",
]

STOP = 0
"""The byte ending a struct."""
BOOL = 1
"""A boolean (written as type 1 when true and 2 when false)."""
_BOOL_FALSE = 2
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
SET = 10
MAP = 11
STRUCT = 12

_DOUBLE = _struct.Struct("<d")


class ThriftError(ValueError):
    """Bytes that are not a valid compact-protocol struct (a corrupt footer or page index)."""


class Struct:
    """A Thrift struct: its fields by id, each as (type, value), and the bytes it was decoded from.

    Values are ints, bools, floats, bytes, nested :class:`Struct`, lists as ``(element type, [values])`` and maps as
    ``(key type, value type, [(key, value)])``. A struct made from bytes alone decodes them when its fields are first
    read.
    """

    __slots__ = ("_fields", "raw")

    def __init__(self, fields: dict[int, tuple[int, Any]] | None = None, raw: bytes | None = None) -> None:
        if fields is None and raw is None:
            raise ValueError("a struct needs its fields or its bytes")
        self._fields = fields
        self.raw = raw

    @property
    def fields(self) -> dict[int, tuple[int, Any]]:
        """The fields by id, each as (type, value)."""
        if self._fields is None:
            assert self.raw is not None
            try:
                self._fields = _Decoder(self.raw).fields(0)[0]
            except (IndexError, _struct.error) as e:
                raise ThriftError(f"truncated Thrift struct: {e}") from None
        return self._fields

    def get(self, field_id: int, default: Any = None) -> Any:
        """A field's value, or ``default`` if the struct does not have it."""
        entry = self.fields.get(field_id)
        return default if entry is None else entry[1]

    def replaced(self, updates: dict[int, tuple[int, Any] | None]) -> Struct:
        """A copy with some fields set (a ``(type, value)``) or removed (None); it is encoded afresh."""
        fields = dict(self.fields)
        for field_id, entry in updates.items():
            if entry is None:
                fields.pop(field_id, None)
            else:
                fields[field_id] = entry
        return Struct(fields)


def decode_struct(data: bytes, offset: int = 0) -> tuple[Struct, int]:
    """Decodes the struct starting at ``offset``; returns it and the offset just after it.

    Raises:
        ThriftError: If the bytes end early or hold an unknown type.
    """
    try:
        return _Decoder(data).struct(offset)
    except (IndexError, _struct.error) as e:
        raise ThriftError(f"truncated Thrift struct: {e}") from None


def decode_list(data: bytes, offset: int = 0) -> tuple[tuple[int, list[Any]], int]:
    """Decodes a list (as a struct field's value is encoded) starting at ``offset``.

    Raises:
        ThriftError: If the bytes end early or hold an unknown type.
    """
    try:
        return _Decoder(data).value(LIST, offset)
    except (IndexError, _struct.error) as e:
        raise ThriftError(f"truncated Thrift list: {e}") from None


def encode_struct(value: Struct) -> bytes:
    """The compact-protocol bytes of a struct (a struct's kept bytes are copied when it was not changed)."""
    out = bytearray()
    _encode_struct(out, value)
    return bytes(out)


class _Decoder:
    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def varint(self, pos: int) -> tuple[int, int]:
        data = self._data
        result = 0
        shift = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7

    def zigzag(self, pos: int) -> tuple[int, int]:
        n, pos = self.varint(pos)
        return (n >> 1) ^ -(n & 1), pos

    def struct(self, start: int) -> tuple[Struct, int]:
        """A struct decoded now (its nested structs lazily)."""
        fields, end = self.fields(start)
        return Struct(fields, bytes(self._data[start:end])), end

    def lazy_struct(self, start: int) -> tuple[Struct, int]:
        """A struct whose fields are decoded when first read: here its bytes are only walked to find its end."""
        end = self.skip(STRUCT, start)
        return Struct(None, bytes(self._data[start:end])), end

    def skip(self, kind: int, pos: int) -> int:
        """The position after a value, found without decoding it."""
        data = self._data
        if kind in (I16, I32, I64):
            while data[pos] & 0x80:
                pos += 1
            return pos + 1
        if kind == BINARY:
            size, pos = self.varint(pos)
            return pos + size
        if kind == STRUCT:
            while True:
                header = data[pos]
                pos += 1
                if header == STOP:
                    return pos
                field_kind = header & 0x0F
                if not header >> 4:
                    _, pos = self.varint(pos)
                if field_kind != BOOL and field_kind != _BOOL_FALSE:
                    pos = self.skip(field_kind, pos)
        if kind in (LIST, SET):
            header = data[pos]
            pos += 1
            size = header >> 4
            element = header & 0x0F
            if size == 15:
                size, pos = self.varint(pos)
            if element in (BOOL, _BOOL_FALSE, BYTE):
                return pos + size
            if element == DOUBLE:
                return pos + 8 * size
            for _ in range(size):
                pos = self.skip(element, pos)
            return pos
        if kind == MAP:
            size, pos = self.varint(pos)
            if not size:
                return pos
            types = data[pos]
            pos += 1
            for _ in range(size):
                pos = self.skip(types >> 4, pos)
                pos = self.skip(types & 0x0F, pos)
            return pos
        if kind == BYTE:
            return pos + 1
        if kind == DOUBLE:
            return pos + 8
        raise ThriftError(f"unknown Thrift compact type {kind}")

    def fields(self, start: int) -> tuple[dict[int, tuple[int, Any]], int]:
        data = self._data
        fields: dict[int, tuple[int, Any]] = {}
        last = 0
        pos = start
        while True:
            header = data[pos]
            pos += 1
            if header == STOP:
                return fields, pos
            kind = header & 0x0F
            delta = header >> 4
            if delta:
                field_id = last + delta
            else:
                field_id, pos = self.zigzag(pos)
            last = field_id
            if kind == BOOL or kind == _BOOL_FALSE:
                fields[field_id] = (BOOL, kind == BOOL)
                continue
            value, pos = self.value(kind, pos)
            fields[field_id] = (kind, value)

    def value(self, kind: int, pos: int) -> tuple[Any, int]:
        data = self._data
        if kind in (I16, I32, I64):
            return self.zigzag(pos)
        if kind == BINARY:
            size, pos = self.varint(pos)
            end = pos + size
            if end > len(data):
                raise ThriftError("truncated Thrift binary value")
            return bytes(data[pos:end]), end
        if kind == STRUCT:
            return self.lazy_struct(pos)
        if kind in (LIST, SET):
            header = data[pos]
            pos += 1
            size = header >> 4
            element = header & 0x0F
            if size == 15:
                size, pos = self.varint(pos)
            items: list[Any] = []
            if element in (BOOL, _BOOL_FALSE):
                items = [b == BOOL for b in data[pos : pos + size]]
                return (BOOL, items), pos + size
            for _ in range(size):
                item, pos = self.value(element, pos)
                items.append(item)
            return (element, items), pos
        if kind == MAP:
            size, pos = self.varint(pos)
            if not size:
                return (0, 0, []), pos
            types = data[pos]
            pos += 1
            key_kind, value_kind = types >> 4, types & 0x0F
            pairs: list[tuple[Any, Any]] = []
            for _ in range(size):
                key, pos = self.value(key_kind, pos)
                item, pos = self.value(value_kind, pos)
                pairs.append((key, item))
            return (key_kind, value_kind, pairs), pos
        if kind == BYTE:
            b = data[pos]
            return b - 256 if b > 127 else b, pos + 1
        if kind == DOUBLE:
            return _DOUBLE.unpack_from(data, pos)[0], pos + 8
        raise ThriftError(f"unknown Thrift compact type {kind}")


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def encode_fields(fields: dict[int, tuple[int, Any]], after: int = 0) -> bytes:
    """Some fields of a struct as they are encoded following the field ``after`` (0: first), without the struct's
    end: pieces of a struct that is written many times with only some fields changed."""
    out = bytearray()
    _encode_fields(out, fields, after)
    return bytes(out)


def _encode_struct(out: bytearray, value: Struct) -> None:
    if value.raw is not None:
        out += value.raw
        return
    _encode_fields(out, value.fields, 0)
    out.append(STOP)


def _encode_fields(out: bytearray, fields: dict[int, tuple[int, Any]], last: int) -> None:
    for field_id in sorted(fields):
        kind, item = fields[field_id]
        wire = (BOOL if item else _BOOL_FALSE) if kind == BOOL else kind
        delta = field_id - last
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, field_id)
        last = field_id
        if kind != BOOL:
            _encode_value(out, kind, item)


def _encode_value(out: bytearray, kind: int, item: Any) -> None:
    if kind in (I16, I32, I64):
        _zigzag(out, item)
    elif kind == BINARY:
        _varint(out, len(item))
        out += item
    elif kind == STRUCT:
        _encode_struct(out, item)
    elif kind in (LIST, SET):
        element, items = item
        if len(items) < 15:
            out.append((len(items) << 4) | element)
        else:
            out.append(0xF0 | element)
            _varint(out, len(items))
        if element == BOOL:
            out += bytes(BOOL if b else _BOOL_FALSE for b in items)
        else:
            for each in items:
                _encode_value(out, element, each)
    elif kind == MAP:
        key_kind, value_kind, pairs = item
        _varint(out, len(pairs))
        if pairs:
            out.append((key_kind << 4) | value_kind)
            for key, each in pairs:
                _encode_value(out, key_kind, key)
                _encode_value(out, value_kind, each)
    elif kind == BYTE:
        out.append(item & 0xFF)
    elif kind == DOUBLE:
        out += _DOUBLE.pack(item)
    else:
        raise ThriftError(f"unknown Thrift compact type {kind}")


def iter_list(value: tuple[int, list[Any]] | None) -> Iterator[Any]:
    """The items of a decoded list (none if the field was missing)."""
    if value is not None:
        yield from value[1]
