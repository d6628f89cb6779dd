"""A configuration directory read as Sleeper lays it out: the instance, its tags and its tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleeper.core.deploy.configuration import ConfigurationError, load_configuration_dir, load_properties_file
from sleeper.core.deploy.plan import planned_stacks
from sleeper.core.properties import InstanceProperties

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "valueFields": [{"name": "value", "type": "StringType"}],
}


def _table(folder: Path, name: str, *, splits: str | None = None, extra: str = "") -> None:
    folder.mkdir(parents=True)
    (folder / "table.properties").write_text(f"sleeper.table.name={name}\n{extra}", encoding="utf-8")
    (folder / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    if splits is not None:
        (folder / "splits.txt").write_text(splits, encoding="utf-8")


@pytest.fixture
def configuration(tmp_path: Path) -> Path:
    (tmp_path / "instance.properties").write_text("sleeper.id=mine\nsleeper.optional.stacks=QueryStack\n", "utf-8")
    (tmp_path / "tags.properties").write_text("project=sleeper\nowner=me\n", encoding="utf-8")
    _table(
        tmp_path / "tables" / "b", "second", splits="10\n20\n", extra="sleeper.table.parquet.compression.codec=snappy\n"
    )
    _table(tmp_path / "tables" / "a", "first")
    return tmp_path


def should_read_the_instance_its_tags_and_its_tables(configuration: Path) -> None:
    # When
    loaded = load_configuration_dir(configuration)

    # Then
    assert loaded.properties.get("sleeper.id") == "mine"
    assert loaded.properties.tags() == {"project": "sleeper", "owner": "me"}
    assert [t.name for t in loaded.tables] == ["first", "second"]
    second = loaded.tables[1]
    assert second.split_points == ("10", "20")
    assert second.properties == {"sleeper.table.parquet.compression.codec": "snappy"}
    assert json.loads(second.schema_json) == SCHEMA


def should_take_the_instance_properties_file_as_its_directory(configuration: Path) -> None:
    # When
    loaded = load_configuration_dir(configuration / "instance.properties")

    # Then
    assert len(loaded.tables) == 2


def should_read_no_tables_from_a_properties_file(configuration: Path) -> None:
    # When
    loaded = load_properties_file(configuration / "instance.properties")

    # Then
    assert loaded.tables == ()
    assert loaded.properties.tags()["owner"] == "me"


def should_name_the_file_of_an_invalid_table_property(configuration: Path) -> None:
    # Given
    _table(configuration / "tables" / "c", "third", extra="sleeper.table.parquet.compression.codec=rar\n")

    # When / Then
    with pytest.raises(ConfigurationError, match=r"tables/c/table.properties.*compression.codec"):
        load_configuration_dir(configuration)


def should_name_the_file_of_unsorted_split_points(configuration: Path) -> None:
    # Given
    _table(configuration / "tables" / "c", "third", splits="20\n10\n")

    # When / Then
    with pytest.raises(ConfigurationError, match=r"tables/c/splits.txt"):
        load_configuration_dir(configuration)


def should_refuse_a_table_defined_twice(configuration: Path) -> None:
    # Given
    _table(configuration / "tables" / "c", "first")

    # When / Then
    with pytest.raises(ConfigurationError, match="'first' is defined twice"):
        load_configuration_dir(configuration)


def should_name_a_missing_instance_properties_file(tmp_path: Path) -> None:
    # When / Then
    with pytest.raises(ConfigurationError, match="instance.properties does not exist"):
        load_configuration_dir(tmp_path)


def should_plan_the_dashboard_when_it_is_wanted() -> None:
    # Given
    with_dashboard = InstanceProperties({"sleeper.id": "x", "sleeper.optional.stacks": "QueryStack,DashboardStack"})
    without = InstanceProperties({"sleeper.id": "x", "sleeper.optional.stacks": "QueryStack"})

    # When
    planned = [s.name for s in planned_stacks(with_dashboard)]

    # Then
    assert planned[-3:] == ["TableDefiner", "Alarms", "Dashboard"]
    assert "Dashboard" not in [s.name for s in planned_stacks(without)]
    assert "Networking" not in planned and "Query" in planned
