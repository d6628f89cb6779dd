"""The filter language: predicates on any column of a table, parsed once into one typed model.

A filter selects rows by their row keys, sort keys and value fields. Every door that returns rows takes the same
text (``Table.scan(filter=...)``, ``sleeper query --where``, the ``filter`` field of a query message, bulk export,
SQL, the Spark source), parses it here against the table's schema, and hands the model on. Nothing is ever evaluated
as code. The grammar (keywords are case-insensitive; docs/usage/filters.md has it with examples)::

    filter     := or
    or         := and ("or" and)*
    and        := unary ("and" unary)*
    unary      := "not" unary | "(" filter ")" | predicate
    predicate  := column op literal                     op: = == != <> < <= > >=
                | column ["not"] "in" "(" literal ("," literal)* ")"
                | column ["not"] "between" literal "and" literal
                | column "is" ["not"] "null"
                | column "starts" "with" string
                | column ["not"] "like" string          % any characters, _ one character
    column     := name | "quoted name"
    literal    := 'string' ('' for a quote) | integer | decimal | true | false | x'hex bytes'

Comparisons follow SQL: a null value satisfies no comparison (and neither its negation), so ``not (age > 3)``
returns no row whose age is null; ``is null`` tests for nulls.

The model is frozen dataclasses (:class:`Compare`, :class:`InList`, :class:`Between`, :class:`IsNull`,
:class:`StartsWith`, :class:`Like`, :class:`And`, :class:`Or`, :class:`Not`); ``str(model)`` is canonical text that
parses back to an equal model, which is how a filter travels in a query message. :func:`key_regions` turns what a
filter says of the row keys into regions (so only the leaves that can match are planned), and :func:`may_match`
tells from column statistics whether a file's row group can hold a matching row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from sleeper.core.exceptions import SleeperError
from sleeper.core.range import Range, Region
from sleeper.core.schema import (
    INT_MAX,
    LONG_MAX,
    Field,
    ListType,
    MapType,
    PrimitiveType,
    Schema,
    TimestampType,
    ValueType,
    describe_type,
)

__all__ = [
    "MAX_KEY_REGIONS",
    "And",
    "Between",
    "ColumnStats",
    "Compare",
    "Filter",
    "FilterError",
    "InList",
    "IsNull",
    "Like",
    "Not",
    "Or",
    "StartsWith",
    "check_literal",
    "columns_of",
    "filter_of",
    "key_regions",
    "like",
    "may_match",
    "parse_filter",
]

Literal = int | float | str | bytes | bool
"""A value a filter compares a column with."""

MAX_KEY_REGIONS = 1_000
"""The most regions a filter's row key predicates are planned as; a filter asking more is planned as the whole table
(and still applied to every row)."""


class FilterError(SleeperError):
    """A filter cannot be used: bad syntax, an unknown column or a literal of the wrong type. The message names the
    place (a character position for text) and what to write instead."""


@dataclass(frozen=True, slots=True)
class Compare:
    """``column op value``, op one of ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``."""

    column: str
    op: str
    value: Literal

    def __str__(self) -> str:
        return f"{_name(self.column)} {self.op} {_literal(self.value)}"


@dataclass(frozen=True, slots=True)
class InList:
    """``column in (v1, v2, ...)``, or ``not in`` when negated."""

    column: str
    values: tuple[Literal, ...]
    negated: bool = False

    def __str__(self) -> str:
        items = ", ".join(_literal(v) for v in self.values)
        return f"{_name(self.column)} {'not in' if self.negated else 'in'} ({items})"


@dataclass(frozen=True, slots=True)
class Between:
    """``column between low and high`` (both inclusive), or ``not between`` when negated."""

    column: str
    low: Literal
    high: Literal
    negated: bool = False

    def __str__(self) -> str:
        word = "not between" if self.negated else "between"
        return f"{_name(self.column)} {word} {_literal(self.low)} and {_literal(self.high)}"


@dataclass(frozen=True, slots=True)
class IsNull:
    """``column is null``, or ``is not null`` when negated."""

    column: str
    negated: bool = False

    def __str__(self) -> str:
        return f"{_name(self.column)} is {'not null' if self.negated else 'null'}"


@dataclass(frozen=True, slots=True)
class StartsWith:
    """``column starts with 'prefix'`` on a string or byte array column (``like 'prefix%'`` parses to this)."""

    column: str
    prefix: str | bytes

    def __str__(self) -> str:
        return f"{_name(self.column)} starts with {_literal(self.prefix)}"


@dataclass(frozen=True, slots=True)
class Like:
    """``column like 'pattern'`` on a string column (``%`` any characters, ``_`` one), or ``not like``."""

    column: str
    pattern: str
    negated: bool = False

    def __str__(self) -> str:
        return f"{_name(self.column)} {'not like' if self.negated else 'like'} {_literal(self.pattern)}"


@dataclass(frozen=True, slots=True)
class And:
    """Every part holds."""

    parts: tuple[Filter, ...]

    def __str__(self) -> str:
        return " and ".join(_grouped(p) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Or:
    """Some part holds."""

    parts: tuple[Filter, ...]

    def __str__(self) -> str:
        return " or ".join(_grouped(p) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Not:
    """The part does not hold (and is not null)."""

    part: Filter

    def __str__(self) -> str:
        return f"not {_grouped(self.part)}"


Predicate = Compare | InList | Between | IsNull | StartsWith | Like
Filter = Predicate | And | Or | Not
"""A parsed filter: one predicate, or predicates joined by ``and``, ``or`` and ``not``."""

_PREDICATES = (Compare, InList, Between, IsNull, StartsWith, Like)


def columns_of(node: Filter) -> list[str]:
    """The columns a filter reads, each once, in order of first use."""
    seen: dict[str, None] = {}
    for predicate in _predicates(node):
        seen.setdefault(predicate.column, None)
    return list(seen)


def _predicates(node: Filter) -> Iterable[Predicate]:
    if isinstance(node, (And, Or)):
        for part in node.parts:
            yield from _predicates(part)
    elif isinstance(node, Not):
        yield from _predicates(node.part)
    else:
        yield node


# ----------------------------------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<bytes>[xX]'(?P<hex>[^']*)')
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<punct>[(),])
    """,
    re.VERBOSE,
)
_KEYWORDS = frozenset({"and", "or", "not", "in", "between", "is", "null", "like", "starts", "with", "true", "false"})
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_NEGATED_OP = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # word, keyword, name, string, bytes, number, op, punct, end
    text: str
    value: object
    at: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise FilterError(f"bad filter at position {at}: unexpected {text[at]!r} in {text!r}")
        kind = match.lastgroup or ""
        raw = match.group(0)
        if kind == "hex":
            kind = "bytes"
        if kind == "bytes":
            digits = match.group("hex")
            try:
                value: object = bytes.fromhex(digits)
            except ValueError:
                raise FilterError(
                    f"bad filter at position {at}: x'{digits}' is not hexadecimal bytes (write e.g. x'00ff')"
                ) from None
            out.append(_Token("bytes", raw, value, at))
        elif kind == "string":
            out.append(_Token("string", raw, raw[1:-1].replace("''", "'"), at))
        elif kind == "quoted":
            out.append(_Token("name", raw, raw[1:-1].replace('""', '"'), at))
        elif kind == "number":
            number: object = float(raw) if any(c in raw for c in ".eE") else int(raw)
            out.append(_Token("number", raw, number, at))
        elif kind == "word":
            lowered = raw.lower()
            out.append(
                _Token("keyword", lowered, lowered, at) if lowered in _KEYWORDS else _Token("name", raw, raw, at)
            )
        elif kind != "space":
            out.append(_Token(kind, raw, raw, at))
        at = match.end()
    out.append(_Token("end", "", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str, schema: Schema) -> None:
        self.text = text
        self.schema = schema
        self.tokens = _tokens(text)
        self.i = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, message: str, token: _Token | None = None) -> FilterError:
        where = self.token if token is None else token
        return FilterError(f"bad filter at position {where.at}: {message} (in {self.text!r})")

    def _describe(self, token: _Token) -> str:
        return "the end" if token.kind == "end" else repr(token.text)

    def keyword(self, *words: str) -> bool:
        if self.token.kind == "keyword" and self.token.value in words:
            self.i += 1
            return True
        return False

    def expect_keyword(self, word: str) -> None:
        if not self.keyword(word):
            raise self.fail(f"expected {word!r}, found {self._describe(self.token)}")

    def punct(self, mark: str) -> bool:
        if self.token.kind == "punct" and self.token.value == mark:
            self.i += 1
            return True
        return False

    def parse(self) -> Filter:
        if self.token.kind == "end":
            raise self.fail("the filter is empty (write e.g. age > 30)")
        node = self.or_()
        if self.token.kind != "end":
            raise self.fail(f"unexpected {self._describe(self.token)} (join conditions with 'and' or 'or')")
        return node

    def or_(self) -> Filter:
        parts = [self.and_()]
        while self.keyword("or"):
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_(self) -> Filter:
        parts = [self.unary()]
        while self.keyword("and"):
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Filter:
        if self.keyword("not"):
            return Not(self.unary())
        if self.punct("("):
            node = self.or_()
            if not self.punct(")"):
                raise self.fail(f"expected ')', found {self._describe(self.token)}")
            return node
        return self.predicate()

    def predicate(self) -> Filter:
        token = self.token
        if token.kind != "name":
            if token.kind == "keyword":
                raise self.fail(
                    f'expected a column, found the keyword {token.text!r} (quote a column so named: "{token.text}")'
                )
            raise self.fail(f"expected a column, found {self._describe(token)}")
        self.i += 1
        column = token.value
        assert isinstance(column, str)
        field = _column(self.schema, column, lambda m: self.fail(m, token))
        if self.token.kind == "op":
            op = _OPS[str(self.token.value)]
            self.i += 1
            return Compare(column, op, self.literal(field))
        if self.keyword("is"):
            negated = self.keyword("not")
            self.expect_keyword("null")
            return IsNull(column, negated)
        if self.keyword("starts"):
            self.expect_keyword("with")
            at = self.token
            prefix = self.literal(field)
            if not isinstance(prefix, (str, bytes)):
                raise self.fail("starts with needs a string or bytes prefix", at)
            return StartsWith(column, prefix)
        negated = self.keyword("not")
        if self.keyword("in"):
            if not self.punct("("):
                raise self.fail(f"expected '(' after in, found {self._describe(self.token)}")
            values = [self.literal(field)]
            while self.punct(","):
                values.append(self.literal(field))
            if not self.punct(")"):
                raise self.fail(f"expected ',' or ')' in the list, found {self._describe(self.token)}")
            return InList(column, tuple(values), negated)
        if self.keyword("between"):
            low = self.literal(field)
            self.expect_keyword("and")
            return Between(column, low, self.literal(field), negated)
        if self.keyword("like"):
            at = self.token
            if at.kind != "string" or field.type is not PrimitiveType.STRING:
                raise self.fail(
                    f"like needs a string pattern on a string column ({column!r} is {_type_name(field)})", at
                )
            self.i += 1
            pattern = str(at.value)
            return like(column, pattern, negated=negated)
        if negated:
            raise self.fail(f"expected in, between or like after not, found {self._describe(self.token)}")
        raise self.fail(
            f"expected a comparison after {column!r} (=, !=, <, <=, >, >=, in, between, is null, starts with, like), "
            f"found {self._describe(self.token)}"
        )

    def literal(self, field: Field) -> Literal:
        token = self.token
        if token.kind in ("string", "bytes", "number"):
            raw: object = token.value
        elif token.kind == "keyword" and token.value in ("true", "false"):
            raw = token.value == "true"
        elif token.kind == "keyword" and token.value == "null":
            raise self.fail(f"compare with null using '{field.name} is null' or 'is not null'")
        else:
            raise self.fail(f"expected a value for {field.name!r}, found {self._describe(token)}")
        self.i += 1
        return check_literal(field, raw, lambda m: self.fail(m, token))


def like(column: str, pattern: str, *, negated: bool = False) -> Filter:
    """The predicate ``column like pattern``: a pattern that is a plain prefix followed by ``%`` becomes
    :class:`StartsWith` (which prunes by statistics), any other a :class:`Like`."""
    body = pattern[:-1] if pattern.endswith("%") else None
    if body is not None and not any(c in body for c in "%_\\"):
        starts = StartsWith(column, body)
        return Not(starts) if negated else starts
    return Like(column, pattern, negated)


def parse_filter(text: str, schema: Schema) -> Filter:
    """Parses filter text against a table's schema.

    Raises:
        FilterError: On bad syntax, an unknown column, a list or map column, or a literal that does not suit its
            column's type; the message gives the character position.
    """
    if not isinstance(text, str):
        raise FilterError(f"a filter must be text, got {type(text).__name__}")
    return _Parser(text, schema).parse()


def filter_of(value: str | Filter, schema: Schema) -> Filter:
    """A filter given as text or as a model, checked against the schema (columns and literal types).

    Raises:
        FilterError: If it is neither, or does not suit the schema.
    """
    if isinstance(value, str):
        return parse_filter(value, schema)
    if isinstance(value, (*_PREDICATES, And, Or, Not)):
        _check(value, schema)
        return value
    raise FilterError(
        f'a filter must be text such as "age > 30" or a sleeper.core.filter model, got {type(value).__name__}'
    )


def _check(node: Filter, schema: Schema) -> None:
    def fail(message: str) -> FilterError:
        return FilterError(f"bad filter {str(node)!r}: {message}")

    for predicate in _predicates(node):
        field = _column(schema, predicate.column, fail)
        if isinstance(predicate, Compare):
            if predicate.op not in _NEGATED_OP:
                raise fail(f"unknown comparison {predicate.op!r} (use =, !=, <, <=, >, >=)")
            check_literal(field, predicate.value, fail)
        elif isinstance(predicate, InList):
            if not predicate.values:
                raise fail("in needs at least one value")
            for value in predicate.values:
                check_literal(field, value, fail)
        elif isinstance(predicate, Between):
            check_literal(field, predicate.low, fail)
            check_literal(field, predicate.high, fail)
        elif isinstance(predicate, StartsWith):
            check_literal(field, predicate.prefix, fail)
        elif isinstance(predicate, Like) and field.type is not PrimitiveType.STRING:
            raise fail(f"like needs a string column ({predicate.column!r} is {_type_name(field)})")


def _column(schema: Schema, name: str, fail: Callable[[str], FilterError]) -> Field:
    if not schema.has_field(name):
        raise fail(f"the table has no column {name!r} (columns: {', '.join(schema.field_names)})")
    field = schema.field(name)
    if isinstance(field.type, (ListType, MapType)):
        raise fail(f"column {name!r} is a {_type_name(field)}: filters compare primitive columns only")
    return field


def _type_name(field: Field) -> str:
    t = field.type
    if isinstance(t, PrimitiveType):
        return t.value
    return type(t).__name__


def check_literal(field: Field, raw: object, fail: Callable[[str], FilterError]) -> Literal:
    """A literal checked against its column's type, typed as the column's values are.

    Raises:
        FilterError: If the literal does not suit the column (through ``fail``, which names the place).
    """
    t = field.type
    name = field.name
    if t in (PrimitiveType.INT, PrimitiveType.LONG):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise fail(f"column {name!r} is {_type_name(field)}: compare it with an integer, not {_shown(raw)}")
        return raw
    if t is PrimitiveType.STRING:
        if not isinstance(raw, str):
            raise fail(
                f"column {name!r} is StringType: compare it with a quoted string such as 'abc', not {_shown(raw)}"
            )
        return raw
    if t is PrimitiveType.BYTE_ARRAY:
        if not isinstance(raw, (bytes, bytearray)):
            raise fail(f"column {name!r} is ByteArrayType: compare it with bytes such as x'00ff', not {_shown(raw)}")
        return bytes(raw)
    if isinstance(t, ValueType | TimestampType):  # numbers, true/false, ISO 8601 date and timestamp strings
        try:
            return t.literal(raw)
        except ValueError as e:
            raise fail(f"column {name!r} is {describe_type(t)}: {e}") from None
    if isinstance(raw, float) and not math.isfinite(raw):
        raise fail(f"column {name!r}: {raw!r} is not a finite number")
    if isinstance(raw, (bool, int, float, str, bytes)):
        return raw
    raise fail(f"column {name!r} cannot be compared with {_shown(raw)}")


def _shown(raw: object) -> str:
    if isinstance(raw, str):
        return f"the string {raw!r}"
    if isinstance(raw, bool):
        return f"the boolean {str(raw).lower()}"
    return f"{type(raw).__name__} {raw!r}"


def _name(column: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column) and column.lower() not in _KEYWORDS:
        return column
    return '"' + column.replace('"', '""') + '"'


def _literal(value: Literal) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"x'{value.hex()}'"
    return repr(value)


def _grouped(node: Filter) -> str:
    return f"({node})" if isinstance(node, (And, Or)) else str(node)


# ----------------------------------------------------------------------------------------------------------------
# row key regions
# ----------------------------------------------------------------------------------------------------------------

_Box = dict[str, Range]
"""Ranges on some row key fields that must all hold; a field not named is unconstrained."""


def key_regions(node: Filter, schema: Schema) -> list[Region] | None:
    """The regions of row keys that hold every row the filter can select, or None if the filter does not narrow the
    row keys (or would need more than :data:`MAX_KEY_REGIONS` regions). The rows in them must still be filtered.

    An empty list means no row can match (such as ``key > 5 and key < 3``).
    """
    boxes = _boxes(node, schema)
    if boxes is None:
        return None
    regions = [Region.of(box.values()) if box else Region.whole(schema) for box in boxes]
    return regions


def _boxes(node: Filter, schema: Schema) -> list[_Box] | None:
    """Boxes whose union holds every matching row; None for no narrowing."""
    if isinstance(node, Or):
        out: list[_Box] = []
        for part in node.parts:
            boxes = _boxes(part, schema)
            if boxes is None:
                return None
            out.extend(boxes)
        return out if len(out) <= MAX_KEY_REGIONS else None
    if isinstance(node, And):
        result: list[_Box] | None = None
        for part in node.parts:
            boxes = _boxes(part, schema)
            if boxes is None:
                continue
            if result is None:
                result = boxes
                continue
            if len(result) * len(boxes) > MAX_KEY_REGIONS:
                return None
            result = [box for a, b in product(result, boxes) if (box := _intersect(a, b)) is not None]
        return result
    if isinstance(node, Not) or node.column not in schema.row_key_names:
        return None
    field = schema.field(node.column)
    try:
        ranges = _predicate_ranges(node, field)
    except SleeperError:
        return None  # a literal beyond the key type's range: no narrowing, the filter still applies
    return None if ranges is None else [{field.name: r} for r in ranges]


def _intersect(a: _Box, b: _Box) -> _Box | None:
    out = dict(a)
    for name, r in b.items():
        if name in out:
            both = out[name].intersection(r)
            if both is None:
                return None
            out[name] = both
        else:
            out[name] = r
    return out


def _predicate_ranges(node: Predicate, field: Field) -> list[Range] | None:
    if isinstance(node, Compare):
        v = node.value
        if node.op == "=":
            return [_up_to(field, v, v)]
        if node.op == ">":
            return [Range(field=field, min=v, min_inclusive=False)]  # type: ignore[arg-type]
        if node.op == ">=":
            return [Range(field=field, min=v)]  # type: ignore[arg-type]
        low = field.primitive_type.minimum
        if node.op in ("<", "<="):
            if v < low or (v == low and node.op == "<"):  # type: ignore[operator]
                return []
            if node.op == "<=":
                return [_up_to(field, low, v)]
            return [Range(field=field, min=low, max=v)]  # type: ignore[arg-type]
        return None
    if isinstance(node, InList) and not node.negated:
        return [_up_to(field, v, v) for v in sorted(set(node.values))]
    if isinstance(node, Between) and not node.negated:
        if node.low > node.high:  # type: ignore[operator]
            return []
        return [_up_to(field, node.low, node.high)]
    if isinstance(node, StartsWith):
        return [Range(field=field, min=node.prefix, max=_prefix_end(node.prefix))]
    return None


_TYPE_MAXIMA = {PrimitiveType.INT: INT_MAX, PrimitiveType.LONG: LONG_MAX}


def _up_to(field: Field, low: Literal, high: Literal) -> Range:
    """The range ``[low, high]``; unbounded above when ``high`` is its integer type's largest value (whose canonical,
    exclusive bound the type cannot hold)."""
    if _TYPE_MAXIMA.get(field.primitive_type) == high:
        return Range(field=field, min=low)  # type: ignore[arg-type]
    return Range(field=field, min=low, max=high, max_inclusive=True)  # type: ignore[arg-type]


def _prefix_end(prefix: str | bytes) -> str | bytes | None:
    """The smallest value greater than every value starting with the prefix, or None if there is none."""
    if isinstance(prefix, bytes):
        trimmed = prefix.rstrip(b"\xff")
        return None if not trimmed else trimmed[:-1] + bytes([trimmed[-1] + 1])
    chars = prefix.rstrip("\U0010ffff")
    return None if not chars else chars[:-1] + chr(ord(chars[-1]) + 1)


# ----------------------------------------------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What a file or row group's statistics say of one column: its smallest and largest non-null values (None when
    unknown), its null count (None when unknown) and its number of rows."""

    min: object
    max: object
    null_count: int | None
    rows: int


def may_match(node: Filter, stats: Mapping[str, ColumnStats]) -> bool:
    """Whether some row described by the statistics may satisfy the filter. False only when none can; a column with
    no statistics is assumed to hold anything."""
    return _may(node, stats, True)


def _may(node: Filter, stats: Mapping[str, ColumnStats], want: bool) -> bool:
    """Whether some row may make the node evaluate to ``want`` (nulls make a predicate neither true nor false)."""
    if isinstance(node, Not):
        return _may(node.part, stats, not want)
    if isinstance(node, (And, Or)):
        every = isinstance(node, And) == want
        results = (_may(p, stats, want) for p in node.parts)
        return all(results) if every else any(results)
    s = stats.get(node.column)
    if s is None:
        return True
    if isinstance(node, IsNull):
        nulls_possible = s.null_count is None or s.null_count > 0
        values_possible = s.null_count is None or s.null_count < s.rows
        has_nulls = values_possible if node.negated else nulls_possible
        lacks = nulls_possible if node.negated else values_possible
        return has_nulls if want else lacks
    if s.null_count is not None and s.null_count >= s.rows:
        return False  # every value null: no comparison is true or false
    if s.min is None or s.max is None:
        return True
    try:
        return _may_values(node, s.min, s.max, want)
    except TypeError:
        return True  # statistics of another type than the literal: assume anything


def _may_values(node: Predicate, low: Any, high: Any, want: bool) -> bool:
    if isinstance(node, Compare):
        return _may_compare(node.op if want else _NEGATED_OP[node.op], node.value, low, high)
    if isinstance(node, InList):
        inside = any(low <= v <= high for v in node.values)
        outside = not (low == high and low in node.values)
        return (inside if want else outside) if not node.negated else (outside if want else inside)
    if isinstance(node, Between):
        inside = not (high < node.low or low > node.high)
        outside = low < node.low or high > node.high
        return (inside if want else outside) if not node.negated else (outside if want else inside)
    if isinstance(node, StartsWith):
        end = _prefix_end(node.prefix)
        inside = not (high < node.prefix or (end is not None and low >= end))
        outside = not (low >= node.prefix and (end is None or high < end))
        return inside if want else outside
    return True  # like: any


def _may_compare(op: str, v: Any, low: Any, high: Any) -> bool:
    if op == "=":
        return bool(low <= v <= high)
    if op == "!=":
        return not (low == high == v)
    if op == "<":
        return bool(low < v)
    if op == "<=":
        return bool(low <= v)
    if op == ">":
        return bool(high > v)
    return bool(high >= v)


def conjoin(parts: Sequence[Filter]) -> Filter | None:
    """The filter holding when every one of ``parts`` holds; None for no parts."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))
