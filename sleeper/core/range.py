"""Ranges over one row key field, regions over all of them, and Sleeper's region JSON."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sleeper.core.exceptions import KeyTypeError, RangeError, SerDeError
from sleeper.core.schema import Field, Key, KeyValue, PrimitiveType, Schema


def next_value(value: KeyValue) -> KeyValue:
    """The smallest value greater than the given one, in Sleeper's key order.

    Used to turn an exclusive lower bound or an inclusive upper bound into the canonical [min, max) form.
    """
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "\u0000"
    return value + b"\x00"


@dataclass(frozen=True, slots=True, kw_only=True)
class Range:
    """A range of values of one row key field.

    ``max=None`` means unbounded above, which forces ``max_inclusive=False``. A minimum greater than the maximum is
    refused (``RangeError``): queries from the CLI, the Python API and the query queue all build their ranges here.
    """

    field: Field
    min: KeyValue
    min_inclusive: bool = True
    max: KeyValue | None = None
    max_inclusive: bool = False

    def __post_init__(self) -> None:
        ptype = self.field.primitive_type
        object.__setattr__(self, "min", ptype.check(self.min, self.field.name))
        if self.max is None:
            object.__setattr__(self, "max_inclusive", False)
        else:
            object.__setattr__(self, "max", ptype.check(self.max, self.field.name))
            if self.min > self.max:  # type: ignore[operator]
                raise RangeError(
                    f"range of row key {self.field.name!r}: min {self.min!r} is greater than max {self.max!r}"
                )

    @classmethod
    def whole(cls, field: Field) -> Range:
        """The range covering every value of the field."""
        return cls(field=field, min=field.primitive_type.minimum)

    @classmethod
    def exact(cls, field: Field, value: KeyValue) -> Range:
        """The range holding exactly one value."""
        return cls(field=field, min=value, max=value, max_inclusive=True)

    @property
    def canonical_min(self) -> KeyValue:
        """The inclusive lower bound."""
        return self.min if self.min_inclusive else next_value(self.min)

    @property
    def canonical_max(self) -> KeyValue | None:
        """The exclusive upper bound, or None if unbounded."""
        if self.max is None:
            return None
        return next_value(self.max) if self.max_inclusive else self.max

    def canonical(self) -> Range:
        """This range in the form [min, max)."""
        return Range(field=self.field, min=self.canonical_min, max=self.canonical_max)

    def is_empty(self) -> bool:
        """Whether no value lies in the range."""
        high = self.canonical_max
        return high is not None and not self.canonical_min < high  # type: ignore[operator]

    def contains(self, value: KeyValue) -> bool:
        """Whether a value lies in the range."""
        if value < self.canonical_min:  # type: ignore[operator]
            return False
        high = self.canonical_max
        return high is None or value < high  # type: ignore[operator]

    def overlaps(self, other: Range) -> bool:
        """Whether the two ranges share a value."""
        this_max, other_max = self.canonical_max, other.canonical_max
        return (other_max is None or other_max > self.canonical_min) and (  # type: ignore[operator]
            this_max is None or this_max > other.canonical_min  # type: ignore[operator]
        )

    def intersection(self, other: Range) -> Range | None:
        """The canonical range of values in both, or None if they do not overlap."""
        low = max(self.canonical_min, other.canonical_min)
        a, b = self.canonical_max, other.canonical_max
        high = a if b is None else b if a is None else min(a, b)
        if high is not None and not low < high:  # type: ignore[operator]
            return None
        return Range(field=self.field, min=low, max=high)


@dataclass(frozen=True, slots=True)
class Region:
    """A range for each constrained row key field; fields without a range are unconstrained."""

    ranges: Mapping[str, Range]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", dict(self.ranges))
        for name, r in self.ranges.items():
            if r.field.name != name:
                raise RangeError(f"range for field {r.field.name!r} was given under {name!r}")

    @classmethod
    def of(cls, ranges: Iterable[Range]) -> Region:
        """Builds a region from ranges on distinct fields."""
        by_field: dict[str, Range] = {}
        for r in ranges:
            if r.field.name in by_field:
                raise RangeError(f"region has two ranges for field {r.field.name!r}")
            by_field[r.field.name] = r
        return cls(by_field)

    @classmethod
    def whole(cls, schema: Schema) -> Region:
        """The region covering every row key of the schema."""
        return cls({f.name: Range.whole(f) for f in schema.row_key_fields})

    @classmethod
    def exact(cls, schema: Schema, key: Mapping[str, object] | Sequence[object]) -> Region:
        """The region holding exactly one row key."""
        values = schema.row_key(key)
        return cls({f.name: Range.exact(f, v) for f, v in zip(schema.row_key_fields, values, strict=True)})

    def range(self, field_name: str) -> Range | None:
        """The range on a field, or None if the field is unconstrained."""
        return self.ranges.get(field_name)

    def contains(self, schema: Schema, key: Key) -> bool:
        """Whether a row key (values in row key order) lies in the region."""
        for f, value in zip(schema.row_key_fields, key, strict=True):
            r = self.ranges.get(f.name)
            if r is not None and not r.contains(value):
                return False
        return True

    def overlaps(self, other: Region) -> bool:
        """Whether every dimension constrained by both overlaps."""
        for name, r in self.ranges.items():
            o = other.ranges.get(name)
            if o is not None and not r.overlaps(o):
                return False
        return True

    def intersection(self, other: Region) -> Region | None:
        """The region of keys in both, or None if they do not overlap."""
        out: dict[str, Range] = {}
        for name in {*self.ranges, *other.ranges}:
            a, b = self.ranges.get(name), other.ranges.get(name)
            if a is None or b is None:
                chosen = (a or b).canonical()  # type: ignore[union-attr]
            else:
                inter = a.intersection(b)
                if inter is None:
                    return None
                chosen = inter
            out[name] = chosen
        return Region(out)

    def to_dict(self, schema: Schema, *, strings_base64: bool = True) -> dict[str, Any]:
        """Sleeper's region JSON as a dictionary, fields in schema order."""
        out: dict[str, Any] = {}
        for f in schema.row_key_fields:
            r = self.ranges.get(f.name)
            if r is None:
                continue
            item: dict[str, Any] = {
                "min": _value_to_json(r.min, f.primitive_type, strings_base64),
                "minInclusive": r.min_inclusive,
            }
            if r.max is not None:
                item["max"] = _value_to_json(r.max, f.primitive_type, strings_base64)
            item["maxInclusive"] = r.max_inclusive
            out[f.name] = item
        out["stringsBase64Encoded"] = strings_base64
        return out

    @classmethod
    def from_dict(cls, schema: Schema, data: object, *, path: str = "region") -> Region:
        """Reads Sleeper's region JSON, with its read defaults.

        Raises:
            SerDeError: If the document is not a valid region; the message names the path of the bad value.
        """
        if not isinstance(data, Mapping):
            raise SerDeError(f"{path} must be an object")
        b64 = data.get("stringsBase64Encoded", True)
        if not isinstance(b64, bool):
            raise SerDeError(f"{path}.stringsBase64Encoded must be a boolean")
        ranges: dict[str, Range] = {}
        for name, item in data.items():
            if name == "stringsBase64Encoded":
                continue
            where = f"{path}.{name}"
            if not schema.has_field(name) or name not in schema.row_key_names:
                raise SerDeError(f"{where}: {name!r} is not a row key field")
            f = schema.field(name)
            if not isinstance(item, Mapping):
                raise SerDeError(f"{where} must be an object")
            if "min" not in item or item["min"] is None:
                raise SerDeError(f"{where}.min is missing")
            min_inclusive = item.get("minInclusive", True)
            max_inclusive = item.get("maxInclusive", False)
            if not isinstance(min_inclusive, bool) or not isinstance(max_inclusive, bool):
                raise SerDeError(f"{where}: minInclusive and maxInclusive must be booleans")
            low = _value_from_json(item["min"], f.primitive_type, b64, f"{where}.min")
            raw_max = item.get("max")
            high = None if raw_max is None else _value_from_json(raw_max, f.primitive_type, b64, f"{where}.max")
            try:
                ranges[name] = Range(
                    field=f, min=low, min_inclusive=min_inclusive, max=high, max_inclusive=max_inclusive
                )
            except (KeyTypeError, RangeError) as e:
                raise SerDeError(f"{where}: {e}") from None
        return cls(ranges)


def _value_to_json(value: KeyValue, ptype: PrimitiveType, strings_base64: bool) -> object:
    if ptype is PrimitiveType.BYTE_ARRAY:
        return base64.b64encode(value).decode("ascii")  # type: ignore[arg-type]
    if ptype is PrimitiveType.STRING and strings_base64:
        return base64.b64encode(str(value).encode("utf-8")).decode("ascii")
    return value


def _value_from_json(raw: object, ptype: PrimitiveType, strings_base64: bool, where: str) -> KeyValue:
    if ptype in (PrimitiveType.INT, PrimitiveType.LONG):
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise SerDeError(f"{where} must be an integer, got {raw!r}")
        try:
            return int(raw)
        except ValueError:
            raise SerDeError(f"{where} must be an integer, got {raw!r}") from None
    if not isinstance(raw, str):
        raise SerDeError(f"{where} must be a string, got {raw!r}")
    if ptype is PrimitiveType.STRING and not strings_base64:
        return raw
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise SerDeError(f"{where} is not valid base64: {raw!r}") from None
    if ptype is PrimitiveType.BYTE_ARRAY:
        return decoded
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise SerDeError(f"{where} is not base64 of UTF-8 text") from None
