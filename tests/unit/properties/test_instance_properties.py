"""Instance properties: defaults and fallbacks, typed reads, validated writes, unknown properties, rules."""

from __future__ import annotations

import logging

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import (
    InstanceProperties,
    config_bucket_name,
    property_changes,
    table_properties_key,
    validate_instance_update,
)
from sleeper.core.properties.instance_cdk import DATA_BUCKET
from sleeper.core.properties.instance_compaction import GARBAGE_COLLECTOR_BATCH_SIZE


def _valid_instance(**extra: str) -> InstanceProperties:
    return InstanceProperties({"sleeper.id": "my-instance", **extra})


def should_fall_back_to_another_instance_property_then_its_default() -> None:
    # Given instance properties where the table state Lambda memory default is changed
    properties = _valid_instance(**{"sleeper.default.lambda.table.state.memory.mb": "2048"})
    # When Lambda memory settings that fall back to it are read, one set explicitly
    properties.set("sleeper.query.processor.memory.mb", 8192)
    # Then the unset one takes the other property's value and the set one keeps its own
    assert properties.get_int("sleeper.gc.memory.mb") == 2048
    assert properties.get_int("sleeper.query.processor.memory.mb") == 8192
    assert InstanceProperties().get_int("sleeper.gc.memory.mb") == 4096


def should_follow_a_chain_of_fallbacks() -> None:
    # Given only the instance id
    properties = _valid_instance()
    # When the ECR prefix is read (it falls back to the artefacts deployment, which falls back to the id)
    prefix = properties.get("sleeper.ecr.repository.prefix")
    # Then it is the instance id
    assert prefix == "my-instance"


def should_read_typed_values() -> None:
    # Given properties with values of several types
    properties = _valid_instance(
        **{
            "sleeper.run.gc.offline": "TRUE",
            "sleeper.ingest.source.bucket": "a, b,c",
            "sleeper.statestore.provider.min.heap.target.amount": "3M",
            "sleeper.bulk.import.spark.speculation.quantile": "0.5",
            "sleeper.statestore.committer.platform": "ec2",
        }
    )
    # When they are read as their types
    # Then each is parsed as Sleeper would
    assert properties.get_bool("sleeper.run.gc.offline") is True
    assert properties.get_list("sleeper.ingest.source.bucket") == ["a", "b", "c"]
    assert properties.get_bytes("sleeper.statestore.provider.min.heap.target.amount") == 3 * 1024 * 1024
    assert properties.get_float("sleeper.bulk.import.spark.speculation.quantile") == 0.5
    assert properties.get_enum("sleeper.statestore.committer.platform") == "EC2"
    assert properties.get_int(GARBAGE_COLLECTOR_BATCH_SIZE) == 10000
    assert properties.get_list("sleeper.userjars") == []


def should_read_sizes_larger_than_a_java_int() -> None:
    # Given the default Arrow local store size of 2 GiB
    properties = InstanceProperties()
    # When it is read as an integer
    value = properties.get_int("sleeper.ingest.arrow.max.local.store.bytes")
    # Then it is not limited to 32 bits
    assert value == 2**31


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sleeper.gc.batch.size", "lots"),
        ("sleeper.gc.batch.size", "0"),
        ("sleeper.run.gc.offline", "yes"),
        ("sleeper.task.runner.timeout.seconds", "901"),
        ("sleeper.log.retention.days", "2"),
        ("sleeper.optional.stacks", "CompactionStack,NoSuchStack"),
        ("sleeper.default.table.ingest.batcher.job.min.size", "1GB"),
        ("sleeper.tags", "a,b,c"),
        ("sleeper.id", "an-id-longer-than-twenty"),
        ("sleeper.default.table.data.engine", "spark"),
        ("sleeper.default.table.parquet.writer.version", "V2"),
    ],
)
def should_reject_an_invalid_value_naming_the_property_and_value(name: str, value: str) -> None:
    # Given instance properties
    properties = _valid_instance()
    before = properties.to_dict()
    # When an invalid value is set
    with pytest.raises(PropertyError) as error:
        properties.set(name, value)
    # Then the one-line message names the property and the value, and nothing changed
    message = str(error.value)
    assert name in message
    assert repr(value) in message
    assert "\n" not in message
    assert properties.to_dict() == before


def should_accept_choices_in_any_case_where_sleeper_does() -> None:
    # Given instance properties
    properties = _valid_instance()
    # When enumerated values are set in other cases
    properties.set("sleeper.default.table.data.engine", "datafusion_experimental")
    properties.set("sleeper.optional.stacks", "compactionstack,QUERYSTACK")
    properties.set("sleeper.default.table.parquet.compression.codec", "SNAPPY")
    # Then they are kept as written and read back in canonical form
    assert properties.get("sleeper.default.table.data.engine") == "datafusion_experimental"
    assert properties.get_enum("sleeper.default.table.data.engine") == "DATAFUSION_EXPERIMENTAL"
    assert properties.get_enum("sleeper.default.table.parquet.compression.codec") == "snappy"
    assert properties.problems() == []


def should_accept_arrow_as_a_data_engine() -> None:
    # Given instance properties
    properties = _valid_instance()
    # When this port's own engine is chosen
    properties.set("sleeper.default.table.data.engine", "arrow")
    # Then it is valid
    assert properties.get_enum("sleeper.default.table.data.engine") == "ARROW"


def should_reject_setting_an_unknown_property_naming_it() -> None:
    # Given instance properties
    properties = _valid_instance()
    # When an undefined property is set
    with pytest.raises(PropertyError, match="sleeper.gc.no.such.thing"):
        properties.set("sleeper.gc.no.such.thing", "1")
    # Then it was not stored
    assert properties.unknown_properties() == {}


def should_keep_and_report_unknown_properties_read_from_a_file() -> None:
    # Given a file from another version of Sleeper with properties this port does not define
    text = "sleeper.id=abc\nsleeper.future.feature=on\nsleeper.bulk.import.eks.repo=repo\n"
    # When it is read and written again
    properties = InstanceProperties.from_text(text)
    written = InstanceProperties.from_text(properties.to_text())
    # Then the unknown properties are reported and survive the round trip
    assert properties.unknown_properties() == {"sleeper.bulk.import.eks.repo": "repo", "sleeper.future.feature": "on"}
    assert written == properties
    assert properties.problems() == []


def should_treat_an_empty_value_as_unset_except_where_empty_means_something() -> None:
    # Given a file with empty values
    properties = InstanceProperties.from_text("sleeper.id=abc\nsleeper.gc.batch.size=\nsleeper.optional.stacks=\n")
    # When they are read
    # Then an empty number falls back to its default, but empty optional stacks means none
    assert properties.get("sleeper.gc.batch.size") == "10000"
    assert not properties.is_set("sleeper.gc.batch.size")
    assert properties.get_list("sleeper.optional.stacks") == []


def should_unset_a_property_back_to_its_default() -> None:
    # Given a property set explicitly
    properties = _valid_instance(**{"sleeper.gc.batch.size": "5"})
    # When it is unset, by unset or by setting None
    properties.unset("sleeper.gc.batch.size")
    properties.set("sleeper.gc.files.maximum", 10)
    properties.set("sleeper.gc.files.maximum", None)
    # Then both read as their defaults and are no longer listed
    assert properties.get_int("sleeper.gc.batch.size") == 10000
    assert properties.get_int("sleeper.gc.files.maximum") == 750000
    assert dict(properties.items()) == {"sleeper.id": "my-instance"}


def should_format_python_values_as_sleeper_writes_them() -> None:
    # Given instance properties
    properties = _valid_instance()
    # When booleans, integers and lists are set
    properties.set("sleeper.run.gc.offline", True)
    properties.set("sleeper.gc.batch.size", 50)
    properties.set("sleeper.subnets", ["subnet-1", "subnet-2"])
    # Then they are stored as Sleeper's text
    values = properties.to_dict()
    assert values["sleeper.run.gc.offline"] == "true"
    assert values["sleeper.gc.batch.size"] == "50"
    assert values["sleeper.subnets"] == "subnet-1,subnet-2"


def should_set_deployment_properties_by_constant() -> None:
    # Given instance properties
    properties = _valid_instance()
    # When a deployment sets a bucket name through its constant
    properties.set(DATA_BUCKET, "sleeper-my-instance-table-data")
    # Then it reads back by name
    assert properties.get("sleeper.data.bucket") == "sleeper-my-instance-table-data"


def should_list_explicit_values_in_definition_order_then_unknown_ones() -> None:
    # Given values given out of order, with an unknown one
    properties = InstanceProperties(
        {"sleeper.zzz.unknown": "1", "sleeper.data.bucket": "data", "sleeper.id": "x", "sleeper.aaa.unknown": "2"}
    )
    # When they are listed
    names = [name for name, _ in properties.items()]
    # Then the known ones come first in definition order, then the unknown ones sorted
    assert names == ["sleeper.id", "sleeper.data.bucket", "sleeper.aaa.unknown", "sleeper.zzz.unknown"]


def should_report_every_problem_when_validating() -> None:
    # Given properties read from a file with two bad values and no instance id
    properties = InstanceProperties({"sleeper.gc.batch.size": "-1", "sleeper.run.gc.offline": "maybe"})
    # When they are validated
    with pytest.raises(PropertyError) as error:
        properties.validate_all()
    # Then the message names each problem on one line
    message = str(error.value)
    assert "sleeper.id must be set" in message
    assert "sleeper.gc.batch.size: invalid value '-1'" in message
    assert "sleeper.run.gc.offline: invalid value 'maybe'" in message
    assert "\n" not in message


def should_accept_the_defaults_as_valid() -> None:
    # Given instance properties with only the id set
    properties = _valid_instance()
    # When they are validated
    properties.validate_all()
    # Then there is no problem
    assert properties.problems() == []


def should_accept_sleepers_default_gc_delay_with_a_warning_naming_the_risk_and_the_safe_value() -> None:
    # Given Sleeper's default GC delay of 15 minutes with the default query timeouts (60 s + 900 s)
    properties = _valid_instance(**{"sleeper.default.table.gc.delay.minutes": "15"})
    # When the properties are validated
    warnings = properties.validate_all()
    # Then they are accepted, with one warning naming the three properties, the risk and the delay that removes it
    assert properties.problems() == []
    assert properties.warnings() == warnings
    assert len(warnings) == 1
    message = warnings[0]
    assert "sleeper.default.table.gc.delay.minutes (15 min)" in message
    assert "sleeper.default.table.query.processor.cache.timeout.seconds (60 s)" in message
    assert "sleeper.query.processor.timeout.seconds (900 s)" in message
    assert "may find a file it reads already deleted" in message
    assert "set sleeper.default.table.gc.delay.minutes to 17 or more" in message


def should_accept_a_short_gc_delay_when_queries_are_short() -> None:
    # Given a 5 minute GC delay, a 30 s cache and 120 s queries
    properties = _valid_instance(
        **{
            "sleeper.default.table.gc.delay.minutes": "5",
            "sleeper.default.table.query.processor.cache.timeout.seconds": "30",
            "sleeper.query.processor.timeout.seconds": "120",
        }
    )
    # When the properties are validated
    warnings = properties.validate_all()
    # Then 300 s is longer than 150 s, so there is no problem and no warning
    assert properties.problems() == []
    assert warnings == []


def should_warn_of_a_gc_delay_exactly_equal_to_the_query_window() -> None:
    # Given a GC delay of 16 minutes against a 60 s cache and 900 s queries (960 s in all)
    properties = _valid_instance(**{"sleeper.default.table.gc.delay.minutes": "16"})
    # When validated
    warnings = properties.warnings()
    # Then equal is not longer: one warning, and the least safe delay is 17 minutes
    assert len(warnings) == 1
    assert "sleeper.default.table.gc.delay.minutes (16 min)" in warnings[0]
    assert "to 17 or more" in warnings[0]


def should_log_each_warning_when_validating(caplog: pytest.LogCaptureFixture) -> None:
    # Given instance properties with Sleeper's 15 minute GC delay
    properties = _valid_instance(**{"sleeper.default.table.gc.delay.minutes": "15"})
    # When they are validated
    with caplog.at_level(logging.WARNING, logger="sleeper.core.properties"):
        properties.validate_all()
    # Then the warning is logged at WARNING level
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "sleeper.default.table.gc.delay.minutes (15 min)" in caplog.records[0].getMessage()


def should_refuse_to_change_the_instance_id_of_a_deployed_instance() -> None:
    # Given a deployed instance and an edited copy with a new id and a new GC batch size
    old = _valid_instance()
    new = old.copy()
    new.set("sleeper.gc.batch.size", 5)
    validate_instance_update(old, new)
    new.set("sleeper.id", "other")
    # When the update is checked
    with pytest.raises(PropertyError) as error:
        validate_instance_update(old, new)
    # Then the id is named
    assert "sleeper.id cannot be changed" in str(error.value)


def should_list_changes_between_two_versions() -> None:
    # Given two versions of instance properties
    old = _valid_instance(**{"sleeper.gc.batch.size": "5", "sleeper.run.gc.offline": "true"})
    new = old.copy()
    new.set("sleeper.gc.batch.size", 6)
    new.unset("sleeper.run.gc.offline")
    new.set("sleeper.data.bucket", "data")
    # When they are compared
    changes = [(c.name, c.before, c.after) for c in property_changes(old, new)]
    # Then each changed property is listed in definition order
    assert changes == [
        ("sleeper.run.gc.offline", "true", None),
        ("sleeper.gc.batch.size", "5", "6"),
        ("sleeper.data.bucket", None, "data"),
    ]


def should_read_tags_as_a_dict() -> None:
    # Given tags in Sleeper's key,value list form
    properties = _valid_instance(**{"sleeper.tags": "owner,me,project,sleeper"})
    # When they are read
    tags = properties.tags()
    # Then each key maps to its value
    assert tags == {"owner": "me", "project": "sleeper"}


def should_derive_config_locations_as_sleeper_does() -> None:
    # Given an instance id with capitals and dots, and an account
    # When the config bucket and object keys are derived
    bucket = config_bucket_name("My.Instance", "123456789012")
    # Then they follow Sleeper's layout
    assert bucket == "sleeper-my-instance-config-123456789012"
    assert table_properties_key("0a1b2c3d") == "tables/table-0a1b2c3d.properties"


def should_fail_to_read_a_missing_value_without_default() -> None:
    # Given instance properties without a data bucket
    properties = _valid_instance()
    # When it is read as text and as a number
    # Then text is None, and a typed read names the property
    assert properties.get("sleeper.data.bucket") is None
    with pytest.raises(PropertyError, match="sleeper.data.bucket is not set"):
        properties.get_int("sleeper.data.bucket")


def should_reject_an_invalid_value_when_read_as_its_type() -> None:
    # Given a file with a bad number, which is kept until validation
    properties = InstanceProperties({"sleeper.id": "x", "sleeper.gc.batch.size": "ten"})
    # When it is read as a number
    with pytest.raises(PropertyError) as error:
        properties.get_int("sleeper.gc.batch.size")
    # Then the message names the property and the value
    assert "sleeper.gc.batch.size" in str(error.value)
    assert "'ten'" in str(error.value)
