"""Sleeper's own example configurations load here with every property at the value they show.

The fixtures under ``tests/fixtures/sleeper_examples`` are written from gchq/sleeper's ``example/full`` and
``example/basic`` (``instance.properties``, ``table.properties``, ``schema.json``, ``splits.txt``,
``tags.properties``): every property the example shows, uncommented, at the value shown. Where this port's safety
rule is stricter than Sleeper (the garbage collection delay against the query timeouts), the value is accepted with a
warning that names the risk and the value that removes it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sleeper.core.deploy.configuration import load_configuration_dir
from sleeper.core.properties import InstanceProperties, TableProperties, new_table_properties
from sleeper.core.schema import Schema

EXAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "sleeper_examples"

GC_WARNING = (
    "sleeper.table.gc.delay.minutes (15 min) is not longer than sleeper.table.query.processor.cache.timeout.seconds "
    "(60 s) plus sleeper.query.processor.timeout.seconds (900 s): a query planned before a garbage collection may "
    "find a file it reads already deleted; set sleeper.table.gc.delay.minutes to 17 or more to remove the risk"
)


def _instance(example: str) -> InstanceProperties:
    return InstanceProperties.from_text((EXAMPLES / example / "instance.properties").read_text(encoding="utf-8"))


def _table(example: str, instance: InstanceProperties) -> TableProperties:
    folder = EXAMPLES / example
    values = TableProperties.from_text(instance, (folder / "table.properties").read_text(encoding="utf-8")).to_dict()
    name = values.pop("sleeper.table.name")
    schema = Schema.from_json((folder / "schema.json").read_text(encoding="utf-8"))
    return new_table_properties(instance, name=name, table_id="0a1b2c3d", schema=schema, values=values)


@pytest.mark.parametrize("example", ["full", "basic"])
def should_load_sleepers_example_configuration(example: str) -> None:
    # Given one of Sleeper's example configurations, every property at the value it shows
    folder = EXAMPLES / example
    # When it is read as a deployment reads it
    configuration = load_configuration_dir(folder)
    # Then the instance and its one table load with no problem and nothing unknown
    assert configuration.properties.problems() == []
    configuration.properties.validate_all()
    assert configuration.properties.unknown_properties() == {}
    assert [t.name for t in configuration.tables] == ["example-table"]
    table = _table(example, _instance(example))
    assert table.problems() == []
    assert table.unknown_properties() == {}


def should_load_every_property_the_full_example_shows() -> None:
    # Given the full example's instance and table properties
    instance = _instance("full")
    table = _table("full", instance)
    # When the values are read back
    # Then every value shown is kept as shown, among them Sleeper's GC delay and snapshot batch sizes
    assert len(instance.to_dict()) > 300
    assert len(table.to_dict()) > 70
    assert instance.get("sleeper.default.table.gc.delay.minutes") == "15"
    assert table.get("sleeper.table.gc.delay.minutes") == "15"
    assert table.get_int("sleeper.table.statestore.transactionlog.files.snapshot.batch.size") == 1000
    assert len(load_configuration_dir(EXAMPLES / "full").tables[0].split_points) == 13


def should_warn_that_sleepers_gc_delay_is_shorter_than_a_query_may_take(caplog: pytest.LogCaptureFixture) -> None:
    # Given the full example, whose GC delay is Sleeper's 15 minutes against 60 s of cache and 900 s of query
    instance = _instance("full")
    # When its table is created and validated
    with caplog.at_level(logging.WARNING, logger="sleeper.core.properties"):
        table = _table("full", instance)
    # Then it is accepted, with a warning naming the risk and the delay that removes it, logged at WARNING
    assert table.warnings() == [GC_WARNING]
    assert GC_WARNING in [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # And the instance default warns the same way
    assert [w.split(" is not longer")[0] for w in instance.warnings()] == [
        "sleeper.default.table.gc.delay.minutes (15 min)"
    ]


def should_not_warn_of_this_ports_own_defaults() -> None:
    # Given the basic example, which leaves the GC delay and the query timeouts at this port's defaults
    instance = _instance("basic")
    # When it is validated
    warnings = instance.validate_all()
    # Then there is no warning: 20 minutes is longer than 60 s plus 900 s
    assert warnings == []
    assert _table("basic", instance).warnings() == []
