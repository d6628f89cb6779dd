"""Table properties: fallback to instance defaults, async commit rules, schema, validation and immutability."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import InstanceProperties, TableProperties, validate_table_update
from sleeper.core.properties.table import GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION, SCHEMA
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.table import TableStatus

SCHEMA_JSON = json.dumps(
    {
        "rowKeyFields": [{"name": "key", "type": "StringType"}],
        "sortKeyFields": [{"name": "ts", "type": "LongType"}],
        "valueFields": [{"name": "count", "type": "LongType"}],
    }
)


def _table(instance: Mapping[str, str] | None = None, values: Mapping[str, str] | None = None) -> TableProperties:
    table_values = {"sleeper.table.name": "events", "sleeper.table.id": "0a1b2c3d", "sleeper.table.schema": SCHEMA_JSON}
    table_values.update(values or {})
    return TableProperties(InstanceProperties({"sleeper.id": "inst", **(instance or {})}), table_values)


def should_fall_back_from_table_to_instance_default_to_built_in_default() -> None:
    # Given three tables: one with its own value, one whose instance sets the default, one with neither
    own = _table(values={"sleeper.table.compaction.files.batch.size": "5"})
    from_instance = _table({"sleeper.default.table.compaction.files.batch.size": "7"})
    built_in = _table()
    # When the files batch size is read
    values = [t.get_int("sleeper.table.compaction.files.batch.size") for t in (own, from_instance, built_in)]
    # Then each comes from the first place it is set
    assert values == [5, 7, 12]


def should_follow_changes_to_the_instance_default() -> None:
    # Given a table that does not set its compression codec
    table = _table()
    # When the instance default is changed afterwards
    table.instance_properties.set("sleeper.default.table.parquet.compression.codec", "snappy")
    # Then the table sees the new default
    assert table.get("sleeper.table.parquet.compression.codec") == "snappy"


def should_fall_back_to_another_table_property() -> None:
    # Given a table with a row group size of 1 MiB
    table = _table(values={"sleeper.table.parquet.rowgroup.size": "1048576"})
    # When the S3 readahead range is read (it defaults to the table's row group size)
    value = table.get_int("sleeper.table.fs.s3a.readahead.range")
    # Then it is the table's row group size
    assert value == 1048576


def should_use_the_built_in_default_of_a_property_without_instance_default() -> None:
    # Given a table that does not set whether it is online
    table = _table()
    # When it is read
    # Then it is online by default
    assert table.get_bool("sleeper.table.online") is True


def should_enable_async_commits_for_transaction_log_state_stores_by_default() -> None:
    # Given tables under the default behaviour, one with a state store without "TransactionLog" in its name
    transaction_log = _table()
    other = _table(values={"sleeper.table.statestore.classname": "SomeOtherStateStore"})
    # When whether async commits are enabled is read
    # Then they are for the transaction log store only, and the update types follow
    assert transaction_log.get_bool("sleeper.table.statestore.commit.async.enabled") is True
    assert other.get_bool("sleeper.table.statestore.commit.async.enabled") is False
    assert transaction_log.get_bool("sleeper.table.compaction.job.commit.async") is True
    assert other.get_bool("sleeper.table.compaction.job.commit.async") is False


@pytest.mark.parametrize(("behaviour", "expected"), [("DISABLED", False), ("all_implementations", True)])
def should_follow_the_instance_async_commit_behaviour(behaviour: str, expected: bool) -> None:
    # Given an instance whose default async commit behaviour is set, and a table with another state store
    table = _table(
        {"sleeper.default.table.statestore.commit.async.behaviour": behaviour},
        values={"sleeper.table.statestore.classname": "SomeOtherStateStore"},
    )
    # When async commit settings are read
    enabled = table.get_bool("sleeper.table.statestore.commit.async.enabled")
    gc_async = table.get_bool("sleeper.table.gc.commit.async")
    # Then they follow the behaviour
    assert (enabled, gc_async) == (expected, expected)


def should_combine_an_update_type_with_the_table_switch_for_async_commits() -> None:
    # Given a table that turns async commits off, but asks for async ingest commits
    off = _table(
        values={
            "sleeper.table.statestore.commit.async.enabled": "false",
            "sleeper.table.ingest.job.files.commit.async": "true",
        }
    )
    # And a table that only turns off async compaction commits, and an instance that turns off async GC by default
    partial = _table(
        {"sleeper.default.table.gc.commit.async": "false"},
        values={"sleeper.table.compaction.job.commit.async": "false"},
    )
    # When the async settings are read
    # Then the table switch wins when it is set, and each update type's own value applies otherwise
    assert off.get_bool("sleeper.table.ingest.job.files.commit.async") is False
    assert partial.get_bool("sleeper.table.compaction.job.commit.async") is False
    assert partial.get_bool("sleeper.table.gc.commit.async") is False
    assert partial.get_bool("sleeper.table.partition.splitting.commit.async") is True


def should_read_the_schema_and_status() -> None:
    # Given a table with a schema, name and id
    table = _table(values={"sleeper.table.online": "false"})
    # When the schema and status are read
    schema = table.schema
    # Then they come from the properties
    assert schema.row_key_names == ("key",)
    assert schema.sort_key_names == ("ts",)
    assert table.status() == TableStatus(table_id="0a1b2c3d", table_name="events", online=False)
    assert (table.table_name, table.table_id) == ("events", "0a1b2c3d")


def should_set_the_schema_from_a_schema_object() -> None:
    # Given a table and a new schema
    table = _table()
    schema = Schema.of(row_keys=[Field("id", PrimitiveType.LONG)])
    # When the schema is set
    table.set_schema(schema)
    # Then it reads back equal, and is held as JSON
    assert table.schema == schema
    assert json.loads(table.get(SCHEMA) or "") == json.loads(schema.to_json())


def should_reject_invalid_schema_json_naming_the_property() -> None:
    # Given a table
    table = _table()
    # When its schema is set to JSON that is not a schema
    with pytest.raises(PropertyError) as error:
        table.set("sleeper.table.schema", '{"rowKeyFields": []}')
    # Then the message names the schema property
    assert "sleeper.table.schema" in str(error.value)


def should_require_a_name_and_schema() -> None:
    # Given a table with neither name nor schema
    table = TableProperties(InstanceProperties({"sleeper.id": "inst"}), {})
    # When it is validated
    problems = table.problems()
    # Then both are reported
    assert problems == ["sleeper.table.name must be set", "sleeper.table.schema must be set"]


def should_reject_an_invalid_table_value_naming_the_property_and_value() -> None:
    # Given a table
    table = _table()
    # When an invalid batch size is set (validated as its instance default is)
    with pytest.raises(PropertyError) as error:
        table.set("sleeper.table.compaction.files.batch.size", "0")
    # Then the message names property and value
    assert "sleeper.table.compaction.files.batch.size: invalid value '0'" in str(error.value)


def should_reject_unknown_table_properties_on_set_and_instance_properties_on_a_table() -> None:
    # Given a table
    table = _table()
    # When an unknown property and an instance property are set on it
    # Then both are rejected, naming the property
    with pytest.raises(PropertyError, match="unknown table property sleeper.table.nonsense"):
        table.set("sleeper.table.nonsense", "1")
    with pytest.raises(PropertyError, match="unknown table property sleeper.gc.batch.size"):
        table.set("sleeper.gc.batch.size", "1")


def should_warn_of_a_gc_delay_against_table_cache_timeout_and_query_timeout() -> None:
    # Given a table whose query cache lasts 10 minutes, with the default 20 minute GC delay and 900 s queries
    table = _table(values={"sleeper.table.query.processor.cache.timeout.seconds": "600"})
    # When it is validated
    warnings = table.validate_all()
    # Then it is accepted with a warning naming the three properties and the least safe delay (1500 s: 26 min)
    assert len(warnings) == 1
    message = warnings[0]
    assert "sleeper.table.gc.delay.minutes (20 min)" in message
    assert "sleeper.table.query.processor.cache.timeout.seconds (600 s)" in message
    assert "sleeper.query.processor.timeout.seconds (900 s)" in message
    assert "set sleeper.table.gc.delay.minutes to 26 or more" in message


def should_accept_gc_delay_longer_than_cache_timeout_plus_query_timeout() -> None:
    # Given the same table with a 30 minute GC delay (1800 s > 600 s + 900 s)
    table = _table(
        values={
            "sleeper.table.query.processor.cache.timeout.seconds": "600",
            GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION.name: "30",
        }
    )
    # When it is validated
    problems = table.problems()
    # Then it is valid, with no warning
    assert problems == []
    assert table.warnings() == []


def should_use_instance_query_timeout_in_the_gc_rule() -> None:
    # Given an instance whose queries may take only 60 s, and a table whose GC delay is 3 minutes
    table = _table({"sleeper.query.processor.timeout.seconds": "60"}, values={"sleeper.table.gc.delay.minutes": "3"})
    # When it is validated
    problems = table.problems()
    # Then 180 s is longer than 60 s + 60 s
    assert problems == []
    assert table.warnings() == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sleeper.table.id", "ffffffff"),
        ("sleeper.table.schema", json.dumps({"rowKeyFields": [{"name": "other", "type": "IntType"}]})),
        ("sleeper.table.statestore.classname", "DynamoDBTransactionLogStateStoreNoSnapshots"),
    ],
)
def should_refuse_to_change_properties_fixed_at_creation(name: str, value: str) -> None:
    # Given an existing table and an edited copy
    old = _table()
    new = old.copy()
    new.set(name, value)
    # When the update is checked
    with pytest.raises(PropertyError) as error:
        validate_table_update(old, new)
    # Then the property is named
    assert f"{name} cannot be changed on an existing table" in str(error.value)


def should_allow_other_changes_and_a_reformatted_schema() -> None:
    # Given an existing table and a copy with the same schema written differently, a new name and a new setting
    old = _table()
    new = old.copy()
    new.set("sleeper.table.schema", json.dumps(json.loads(SCHEMA_JSON), indent=2))
    new.set("sleeper.table.name", "renamed")
    new.set("sleeper.table.compaction.files.batch.size", 20)
    # When the update is checked
    validate_table_update(old, new)
    # Then it is allowed, and the copy is independent of the original
    assert old.get("sleeper.table.name") == "events"
    assert new != old


def should_round_trip_through_properties_text_with_the_schema() -> None:
    # Given a table with a schema and other values
    table = _table(
        values={"sleeper.table.filters": "ageOff(ts,1209600000)", "sleeper.table.aggregations": "sum(count)"}
    )
    # When it is written as a .properties file and read back
    text = table.to_text()
    again = TableProperties.from_text(table.instance_properties, text)
    # Then it is equal, schema included
    assert again == table
    assert again.schema == table.schema
    assert text.splitlines()[0].startswith("sleeper.table.name=")
