"""Every numeric and enum property has a valid range in its definition, and a value outside it is refused when it is
set, naming the property, the value and what is accepted, instead of breaking the next run that reads it.
The ranges follow Sleeper's own validation (``SleeperPropertyValueUtils`` in gchq/sleeper) and what the
code using each property needs."""

from __future__ import annotations

import json
import re

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import (
    INSTANCE_PROPERTY_INDEX,
    TABLE_PROPERTY_INDEX,
    InstanceProperties,
    PropertyDefinition,
    TableProperties,
    edited_table_properties,
)
from sleeper.core.properties.validation import (
    INT_MAX,
    LONG_MAX,
    BooleanValue,
    ChoiceValue,
    DecimalValue,
    IntegerValue,
)

SCHEMA_JSON = json.dumps({"rowKeyFields": [{"name": "key", "type": "StringType"}]})

UNBOUNDED_INTEGERS = {
    "sleeper.statestore.provider.cache.size": "0 keeps no table and a negative value disables the limit",
}
"""Integer properties with no least value, and why every integer means something."""


def _instance() -> InstanceProperties:
    return InstanceProperties({"sleeper.id": "inst"})


def _table() -> TableProperties:
    return TableProperties(
        _instance(),
        {"sleeper.table.name": "events", "sleeper.table.id": "0a1b2c3d", "sleeper.table.schema": SCHEMA_JSON},
    )


def _properties_of(definition: PropertyDefinition) -> InstanceProperties | TableProperties:
    return _table() if definition.name in TABLE_PROPERTY_INDEX else _instance()


def _user_definitions() -> list[PropertyDefinition]:
    return [d for index in (INSTANCE_PROPERTY_INDEX, TABLE_PROPERTY_INDEX) for d in index if not d.set_by_cdk]


def _out_of_range(definition: PropertyDefinition) -> list[str]:
    """Values the definition's own range says are invalid."""
    validation = definition.validation
    if isinstance(validation, IntegerValue):
        values = ["1.5", "ten", str((LONG_MAX if validation.long else INT_MAX) + 1)]
        if validation.minimum is not None:
            values.append(str(validation.minimum - 1))
        if validation.maximum is not None:
            values.append(str(validation.maximum + 1))
        return values
    if isinstance(validation, DecimalValue):
        values = ["ten"]
        if validation.positive:
            values.append("0")
        if validation.minimum is not None:
            values.append(repr(validation.minimum - 0.5))
        if validation.maximum is not None:
            values.append(repr(validation.maximum + 0.5))
        return values
    if isinstance(validation, ChoiceValue):
        return ["not-one-of-the-choices"]
    if isinstance(validation, BooleanValue):
        return ["yes"]
    return []


NUMERIC = [d for d in _user_definitions() if isinstance(d.validation, IntegerValue | DecimalValue)]
ENUMS = [d for d in _user_definitions() if isinstance(d.validation, ChoiceValue | BooleanValue) and not d.refused]


def should_refuse_a_snapshot_batch_size_of_zero_when_it_is_set() -> None:
    # Given a table, and the name of its files snapshot batch size
    table = _table()
    name = "sleeper.table.statestore.transactionlog.files.snapshot.batch.size"
    # When 0 is set, as `table properties --set` does
    with pytest.raises(PropertyError) as refused:
        edited_table_properties(table, {name: "0"})
    # Then it is refused, naming the property, the value, what is accepted and what to set instead
    message = str(refused.value)
    assert message.startswith(f"{name}: invalid value '0', expected a positive integer")
    assert "set 1" in message
    # And the table keeps the default, while 1 is accepted
    assert table.get_int(name) == 1000
    assert edited_table_properties(table, {name: "1"}).get_int(name) == 1


@pytest.mark.parametrize(
    "name",
    [
        "sleeper.table.statestore.transactionlog.partitions.snapshot.batch.size",
        "sleeper.default.table.statestore.transactionlog.files.snapshot.batch.size",
        "sleeper.default.table.statestore.transactionlog.partitions.snapshot.batch.size",
    ],
)
def should_refuse_a_snapshot_batch_size_of_zero_for_partitions_and_instance_defaults(name: str) -> None:
    # Given the properties the name belongs to
    properties = _table() if name.startswith("sleeper.table.") else _instance()
    # When 0 is set
    with pytest.raises(PropertyError, match=re.escape(f"{name}: invalid value '0', expected a positive integer")):
        properties.set(name, "0")
    # Then nothing changed
    assert not properties.is_set(name)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sleeper.table.gc.delay.minutes", "0"),
        ("sleeper.table.compaction.files.batch.size", "0"),
        ("sleeper.table.partition.splitting.min.distribution.percent", "101"),
        ("sleeper.table.time.travel.retention.minutes", "-1"),
        ("sleeper.table.query.processor.cache.timeout.seconds", "0"),
        ("sleeper.table.data.engine", "spark"),
        ("sleeper.table.parquet.writer.version", "v3"),
        ("sleeper.gc.batch.size", "0"),
        ("sleeper.query.processor.timeout.seconds", "901"),
        ("sleeper.ingest.job.queue.wait.time", "21"),
        ("sleeper.compaction.task.scaling.overhead.percentage", "100"),
        ("sleeper.default.lambda.concurrency.max", "1"),
        ("sleeper.log.retention.days", "2"),
        ("sleeper.bulk.import.emr.serverless.autostop.timeout", "0"),
        ("sleeper.bulk.import.emr.serverless.autostop.timeout", "10081"),
        ("sleeper.bulk.import.emr.spark.memory.fraction", "80"),
        ("sleeper.bulk.import.emr.serverless.spark.memory.storage.fraction", "1.5"),
        ("sleeper.bulk.import.spark.speculation.quantile", "-0.1"),
        ("sleeper.bulk.import.eks.spark.executor.instances", "0"),
        ("sleeper.bulk.import.eks.spark.executor.cores", "five"),
        ("sleeper.bulk.import.eks.spark.memory.fraction", "2"),
        ("sleeper.bulk.import.eks.spark.dynamic.allocation.enabled", "yes"),
        ("sleeper.bulk.import.eks.spark.rdd.compress", "1"),
    ],
)
def should_refuse_these_out_of_range_values(name: str, value: str) -> None:
    # Given the properties the name belongs to
    properties = _table() if name in TABLE_PROPERTY_INDEX else _instance()
    # When the value is set
    with pytest.raises(PropertyError) as refused:
        properties.set(name, value)
    # Then the error names the property, the value and what is accepted
    assert str(refused.value).startswith(f"{name}: invalid value '{value}', expected ")


@pytest.mark.parametrize("definition", NUMERIC, ids=lambda d: d.name)
def should_refuse_a_value_outside_every_numeric_propertys_range(definition: PropertyDefinition) -> None:
    # Given a numeric property's own range, and its properties
    bad_values = _out_of_range(definition)
    properties = _properties_of(definition)
    # When each value outside it is set
    for value in bad_values:
        with pytest.raises(PropertyError) as refused:
            properties.set(definition, value)
        # Then it is refused, naming the property and the value
        assert str(refused.value).startswith(f"{definition.name}: invalid value {value!r}, expected ")
    # And its default is inside the range
    assert definition.default is None or definition.problem(definition.default) is None


@pytest.mark.parametrize("definition", ENUMS, ids=lambda d: d.name)
def should_refuse_a_value_outside_every_enum_propertys_choices(definition: PropertyDefinition) -> None:
    # Given a property taking one of a set of values, and its properties
    properties = _properties_of(definition)
    # When a value outside the set is set
    with pytest.raises(PropertyError) as refused:
        properties.set(definition, _out_of_range(definition)[0])
    # Then it is refused, naming the property; and its default is one of the set
    assert str(refused.value).startswith(f"{definition.name}: invalid value ")
    assert definition.default is None or definition.problem(definition.default) is None


def should_give_every_integer_property_a_least_value_unless_every_integer_means_something() -> None:
    # Given every integer property a user sets
    integers = [(d.name, d.validation) for d in NUMERIC if isinstance(d.validation, IntegerValue)]
    # When those with no least value are found
    unbounded = {name for name, validation in integers if validation.minimum is None}
    # Then they are only those whose every integer is documented to mean something
    assert unbounded == set(UNBOUNDED_INTEGERS)
    assert len(integers) > 200


def should_give_every_decimal_property_a_range() -> None:
    # Given every decimal property a user sets
    decimals = [(d.name, d.validation) for d in NUMERIC if isinstance(d.validation, DecimalValue)]
    # When those that accept any number are found
    unbounded = [
        name
        for name, validation in decimals
        if not validation.positive and validation.minimum is None and validation.maximum is None
    ]
    # Then there are none
    assert unbounded == []
    assert len(decimals) >= 7


def should_validate_every_property_with_a_number_or_boolean_default_as_one() -> None:
    # Given every property a user sets whose default is a number, or true or false
    numbers = [d for d in _user_definitions() if d.default is not None and re.fullmatch(r"-?\d+(\.\d+)?", d.default)]
    booleans = [d for d in _user_definitions() if d.default is not None and d.default.lower() in ("true", "false")]
    # When their validations are checked
    untyped_numbers = [
        d.name for d in numbers if not isinstance(d.validation, IntegerValue | DecimalValue | ChoiceValue)
    ]
    untyped_booleans = [d.name for d in booleans if not isinstance(d.validation, BooleanValue)]
    # Then each is validated as what its default is
    assert untyped_numbers == []
    assert untyped_booleans == []
