"""The names of a table's Iceberg view (beyond Sleeper, :mod:`sleeper.iceberg`): the rule for the identifier a table
is published as, and the keys the view's metadata carries. Standard library only: the table property's validation
and the publisher share them."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ICEBERG_NAME_RULE",
    "SLEEPER_TABLE_ID_KEY",
    "SNAPSHOT_HOLD_KEY",
    "IcebergIdentifier",
    "IcebergNameValue",
    "parse_iceberg_name",
]

ICEBERG_NAME_RULE = (
    "<namespace>.<table>, each 1 to 128 lowercase letters, digits or '_' (as AWS Glue and Athena name databases and "
    "tables)"
)
"""The rule an Iceberg identifier follows, in words."""

_PART = r"[a-z0-9_]{1,128}"
_NAME = re.compile(rf"^({_PART})\.({_PART})$")

SLEEPER_TABLE_ID_KEY = "sleeper.table.id"
"""The Iceberg table property naming the Sleeper table a view belongs to: a publish refuses an Iceberg table that
does not carry its own table's id."""

SNAPSHOT_HOLD_KEY = "sleeper.hold.id"
"""The snapshot summary key naming the hold (:mod:`sleeper.core.held_files`) written for the snapshot's files."""


@dataclass(frozen=True, slots=True)
class IcebergIdentifier:
    """An Iceberg table identifier: a namespace (a Glue database) and a table name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}"


def parse_iceberg_name(value: str) -> IcebergIdentifier | None:
    """The identifier a value names, or None if it breaks :data:`ICEBERG_NAME_RULE`."""
    match = _NAME.match(value)
    return None if match is None else IcebergIdentifier(match.group(1), match.group(2))


@dataclass(frozen=True, slots=True)
class IcebergNameValue:
    """Validates ``sleeper.table.iceberg.name``: an identifier following :data:`ICEBERG_NAME_RULE`."""

    def problem(self, value: str) -> str | None:
        """Rejects a value that is not ``namespace.table`` in lowercase letters, digits and underscores."""
        return None if parse_iceberg_name(value) is not None else f"expected {self.describe()}"

    def describe(self) -> str:
        """Describes the accepted values."""
        return ICEBERG_NAME_RULE
