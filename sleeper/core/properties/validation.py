"""Checks on the text value of a property, and parsers for typed values.

Every property value is held as text, as in a Java ``.properties`` file. A validator says whether a text value is
acceptable and describes what it accepts, for error messages and the generated docs. The rules follow Sleeper's
``SleeperPropertyValueUtils``: integers are Java ``int`` (or ``long``) decimals, booleans are ``true``/``false`` in any
case, sizes are digits with an optional ``K``/``M``/``G``/``T``/``P``/``E`` suffix (powers of 1024), lists are
comma-separated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Schema

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BYTES = re.compile(r"([0-9]+)([KMGTPE]?)")
_BYTE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}


class Validator(Protocol):
    """Decides whether the text value of a property is acceptable."""

    def problem(self, value: str) -> str | None:
        """Returns what is wrong with a value, or None if it is acceptable."""
        ...

    def describe(self) -> str:
        """Describes the accepted values, e.g. ``a positive integer``."""
        ...


@dataclass(frozen=True, slots=True)
class AnyText:
    """Accepts any value."""

    def problem(self, value: str) -> str | None:
        """Accepts everything."""
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        return "any text"


@dataclass(frozen=True, slots=True)
class NonEmptyText:
    """Accepts a non-empty value, optionally no longer than a maximum length."""

    max_length: int | None = None

    def problem(self, value: str) -> str | None:
        """Rejects empty or over-long values."""
        if not value:
            return f"expected {self.describe()}"
        if self.max_length is not None and len(value) > self.max_length:
            return f"expected {self.describe()}"
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        if self.max_length is None:
            return "non-empty text"
        return f"non-empty text of at most {self.max_length} characters"


@dataclass(frozen=True, slots=True)
class IntegerValue:
    """Accepts a decimal integer within the range of a Java ``int`` (or ``long``) and optional bounds.

    Attributes:
        minimum: The least value accepted, or None for no bound.
        maximum: The greatest value accepted, or None for no bound.
        long: Whether the range is a Java ``long``'s rather than an ``int``'s.
        note: Added to the message when a value is out of bounds, e.g. what to set instead of a value Sleeper
            accepts but this port does not.
    """

    minimum: int | None = None
    maximum: int | None = None
    long: bool = False
    note: str | None = None

    def problem(self, value: str) -> str | None:
        """Rejects values that are not integers in range."""
        number = parse_integer(value, long=self.long)
        if number is None:
            return f"expected {self.describe()}"
        if (self.minimum is not None and number < self.minimum) or (self.maximum is not None and number > self.maximum):
            return f"expected {self.describe()}" + ("" if self.note is None else f" ({self.note})")
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        if self.minimum == 1 and self.maximum is None:
            return "a positive integer"
        if self.minimum == 0 and self.maximum is None:
            return "a non-negative integer"
        if self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum is not None:
            return f"an integer of at least {self.minimum}"
        if self.maximum is not None:
            return f"an integer of at most {self.maximum}"
        return "an integer"


@dataclass(frozen=True, slots=True)
class DecimalValue:
    """Accepts a decimal number, optionally required to be greater than zero or within inclusive bounds.

    Attributes:
        positive: Whether the number must be greater than zero.
        minimum: The least value accepted, or None for no bound.
        maximum: The greatest value accepted, or None for no bound.
    """

    positive: bool = False
    minimum: float | None = None
    maximum: float | None = None

    def problem(self, value: str) -> str | None:
        """Rejects values that are not decimal numbers, or are out of bounds."""
        if not _DECIMAL.fullmatch(value):
            return f"expected {self.describe()}"
        number = float(value)
        if self.positive and number <= 0:
            return f"expected {self.describe()}"
        if (self.minimum is not None and number < self.minimum) or (self.maximum is not None and number > self.maximum):
            return f"expected {self.describe()}"
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        if self.minimum is not None and self.maximum is not None:
            return f"a number from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None:
            return f"a number of at least {self.minimum:g}"
        if self.maximum is not None:
            return f"a number of at most {self.maximum:g}"
        return "a positive number" if self.positive else "a number"


@dataclass(frozen=True, slots=True)
class BooleanValue:
    """Accepts ``true`` or ``false`` in any case."""

    def problem(self, value: str) -> str | None:
        """Rejects anything but true or false."""
        if value.lower() in ("true", "false"):
            return None
        return f"expected {self.describe()}"

    def describe(self) -> str:
        """Describes the accepted values."""
        return "true or false"


@dataclass(frozen=True, slots=True)
class ChoiceValue:
    """Accepts one of a fixed set of values, ignoring case unless told otherwise."""

    choices: tuple[str, ...]
    case_sensitive: bool = False

    def problem(self, value: str) -> str | None:
        """Rejects values outside the set."""
        return None if self.canonical(value) is not None else f"expected {self.describe()}"

    def canonical(self, value: str) -> str | None:
        """The choice a value names, spelled as in the definition, or None if it names none."""
        for choice in self.choices:
            if choice == value or (not self.case_sensitive and choice.lower() == value.lower()):
                return choice
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        listed = ", ".join(self.choices)
        return f"one of {listed}" + ("" if self.case_sensitive else " (any case)")


@dataclass(frozen=True, slots=True)
class ClassNameValue:
    """Accepts one of a fixed set of classes named by Sleeper's Java class name: a class's simple name, in one of
    the packages Sleeper has kept it in (the current one first) or alone.

    Sleeper loads any class such a property names; this port runs only the classes it implements, so a value naming
    another class is refused when it is set rather than failing when it is first used.
    """

    simple_names: tuple[str, ...]
    packages: tuple[str, ...]

    def simple_name(self, value: str) -> str | None:
        """The simple name of the class a value names, or None if it names none of the classes."""
        package, _, simple = value.strip().rpartition(".")
        if simple not in self.simple_names or (package and f"{package}." not in self.packages):
            return None
        return simple

    def problem(self, value: str) -> str | None:
        """Rejects values naming another class."""
        return None if self.simple_name(value) is not None else f"expected {self.describe()}"

    def describe(self) -> str:
        """Describes the accepted values."""
        listed = " or ".join(f"{self.packages[0]}{name}" for name in self.simple_names)
        return f"{listed} (in that package or an earlier one, or the class name alone)"


@dataclass(frozen=True, slots=True)
class ListValue:
    """Accepts a comma-separated list whose items each pass another validator."""

    item: Validator = AnyText()
    max_items: int | None = None
    key_value_pairs: bool = False

    def problem(self, value: str) -> str | None:
        """Rejects lists with a bad item, too many items or (for pairs) an odd number of items."""
        items = parse_list(value)
        if self.max_items is not None and len(items) > self.max_items:
            return f"expected {self.describe()}"
        if self.key_value_pairs and len(items) % 2 != 0:
            return f"expected {self.describe()}"
        for item in items:
            problem = self.item.problem(item)
            if problem is not None:
                return f"item {item!r}: {problem}"
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        if self.key_value_pairs:
            return "a comma-separated list of key,value pairs"
        text = "a comma-separated list"
        if not isinstance(self.item, AnyText):
            text += f" of {self.item.describe()}"
        if self.max_items is not None:
            text += f", at most {self.max_items} items"
        return text


@dataclass(frozen=True, slots=True)
class ByteSizeValue:
    """Accepts a number of bytes: digits with an optional K, M, G, T, P or E suffix (powers of 1024)."""

    def problem(self, value: str) -> str | None:
        """Rejects values that are not sizes."""
        return None if _BYTES.fullmatch(value) else f"expected {self.describe()}"

    def describe(self) -> str:
        """Describes the accepted values."""
        return "a number of bytes, optionally suffixed K, M, G, T, P or E (e.g. 128M)"


@dataclass(frozen=True, slots=True)
class SchemaValue:
    """Accepts Sleeper's schema JSON."""

    def problem(self, value: str) -> str | None:
        """Rejects text that is not a valid schema."""
        try:
            Schema.from_json(value)
        except SleeperError as error:
            return f"invalid schema: {error}"
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        return "Sleeper schema JSON"


@dataclass(frozen=True, slots=True)
class InstanceTypesValue:
    """Accepts EC2 instance types for EMR, each optionally followed by an integer weight, e.g. ``m7i.xlarge,5``."""

    def problem(self, value: str) -> str | None:
        """Rejects a weight with no instance type before it, and a type listed twice."""
        seen: set[str] = set()
        previous_was_type = False
        for item in parse_list(value):
            if _INTEGER.fullmatch(item):
                if not previous_was_type or int(item) < 1:
                    return f"expected {self.describe()}"
                previous_was_type = False
                continue
            if not item or item in seen:
                return f"expected {self.describe()}"
            seen.add(item)
            previous_was_type = True
        return None

    def describe(self) -> str:
        """Describes the accepted values."""
        return "distinct EC2 instance types, each optionally followed by a positive weight"


def parse_integer(value: str, *, long: bool = False) -> int | None:
    """Parses a decimal integer as Java's ``Integer.parseInt`` (or ``Long.parseLong``) would.

    Returns:
        The number, or None if the text is not an integer in range.
    """
    if not _INTEGER.fullmatch(value):
        return None
    number = int(value)
    low, high = (LONG_MIN, LONG_MAX) if long else (INT_MIN, INT_MAX)
    return number if low <= number <= high else None


def parse_bytes(value: str) -> int | None:
    """Parses a size such as ``128M`` into a number of bytes, or returns None if it is not a size."""
    match = _BYTES.fullmatch(value)
    if match is None:
        return None
    return int(match.group(1)) * _BYTE_UNITS[match.group(2)]


def parse_list(value: str) -> list[str]:
    """Splits a comma-separated value into trimmed items, as Sleeper's ``readList`` does.

    An empty value is an empty list. Trailing empty items are dropped, as Java's ``String.split`` drops them.
    """
    if not value:
        return []
    raw = value.split(",")
    while raw and raw[-1] == "":
        raw.pop()
    return [item.strip() for item in raw]


ANY_TEXT = AnyText()
NON_EMPTY = NonEmptyText()
BOOLEAN = BooleanValue()
INTEGER = IntegerValue()
POSITIVE_INT = IntegerValue(minimum=1)
NON_NEGATIVE_INT = IntegerValue(minimum=0)
POSITIVE_LONG = IntegerValue(minimum=1, long=True)
POSITIVE_INT_MAX_10 = IntegerValue(minimum=1, maximum=10)
LAMBDA_TIMEOUT = IntegerValue(minimum=1, maximum=900)
SQS_LAMBDA_CONCURRENCY = IntegerValue(minimum=2)
"""An SQS event source's maximum concurrency (at least 2; unset means no limit)."""
QUEUE_WAIT_SECONDS = IntegerValue(minimum=0, maximum=20)
POSITIVE_DECIMAL = DecimalValue(positive=True)
DECIMAL = DecimalValue()
FRACTION = DecimalValue(minimum=0, maximum=1)
"""A fraction, such as Spark's ``spark.memory.fraction``: a number from 0 to 1."""
BYTE_SIZE = ByteSizeValue()
SCHEMA_JSON = SchemaValue()
INSTANCE_TYPES = InstanceTypesValue()
LIST = ListValue()
