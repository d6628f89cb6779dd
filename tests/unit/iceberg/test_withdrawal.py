"""What an edit of a table's properties says about its Iceberg view, and how a withdrawal describes itself."""

from __future__ import annotations

import pytest

from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.iceberg.withdrawal import Withdrawal, rules_refusal, view_notice

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("v", PrimitiveType.LONG),))
VIEW = {"sleeper.table.iceberg.name": "sales.rows"}
FILTER = {"sleeper.table.filters": "ageOff(key,1000)"}


def _properties(*values: dict[str, str]) -> TableProperties:
    merged = {"sleeper.table.name": "t", "sleeper.table.schema": SCHEMA.to_json()}
    for more in values:
        merged.update(more)
    return TableProperties(InstanceProperties({"sleeper.id": "i"}), merged)


@pytest.mark.parametrize(
    "rule",
    [
        {"sleeper.table.iterator.class.name": "sleeper.iterators.examples.FixedAgeOffIterator"},
        {"sleeper.table.aggregations": "sum(v)"},
        FILTER,
    ],
)
def should_name_every_rule_that_forbids_a_view(rule: dict[str, str]) -> None:
    (name,) = rule
    refusal = rules_refusal(_properties(rule))
    assert refusal is not None and refusal.startswith(f"it sets {name}:")
    assert rules_refusal(_properties(VIEW)) is None


def should_say_the_view_is_withdrawn_when_an_edit_gives_a_table_naming_a_view_rules() -> None:
    notice = view_notice(_properties(VIEW), _properties(VIEW, FILTER))
    assert notice is not None
    assert notice.startswith("Iceberg view sales.rows: withdrawn") and "sleeper.table.filters" in notice


def should_say_so_when_the_edit_renames_the_view_of_a_table_with_rules() -> None:
    notice = view_notice(_properties(VIEW, FILTER), _properties(FILTER, {"sleeper.table.iceberg.name": "sales.other"}))
    assert notice is not None and "sales.other, sales.rows" in notice


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (_properties(), _properties(FILTER)),  # no view named
        (_properties(VIEW), _properties(VIEW, {"sleeper.table.gc.delay.minutes": "30"})),  # no rules
        (_properties(VIEW, FILTER), _properties(VIEW, FILTER, {"sleeper.table.gc.delay.minutes": "30"})),  # unchanged
    ],
)
def should_say_nothing_of_the_view_otherwise(before: TableProperties, after: TableProperties) -> None:
    assert view_notice(before, after) is None


def should_describe_a_withdrawal_only_when_something_was_withdrawn() -> None:
    nothing = Withdrawal(table_name="t", reason="it sets x")
    assert not nothing.withdrew_anything and nothing.describe() == ""
    done = nothing.merged(Withdrawal(table_name="t", reason="it sets x", dropped=("a.b",), released_holds=2))
    assert done.describe() == (
        "table t: Iceberg view withdrawn (a.b dropped, 0 metadata and trimmed files deleted, 2 holds released) "
        "because it sets x"
    )
