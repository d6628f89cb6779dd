"""The configuration a deployment is built from, read from local files as Sleeper lays them out
(``SleeperInstanceConfiguration``, ``LoadLocalProperties``):

```
<configurationDir>/instance.properties
<configurationDir>/tags.properties                  optional: one tag per line, key=value
<configurationDir>/table.properties                 optional: a table (with schema.json, splits.txt beside it)
<configurationDir>/tables/<any>/table.properties    one directory per table
<configurationDir>/tables/<any>/schema.json         the table's schema (or sleeper.table.schema in table.properties)
<configurationDir>/tables/<any>/splits.txt          optional split points, one per line
```

A properties file alone (``propertiesFile``) gives the instance and its tags, no tables. Everything is checked here,
when the app synthesizes, so a mistake fails the synthesis naming its file instead of the deployment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sleeper.core.exceptions import SleeperError
from sleeper.core.partition import partitions_from_split_points, read_split_points
from sleeper.core.properties import InstanceProperties, javaprops, new_table_properties
from sleeper.core.properties import instance_common as common
from sleeper.core.properties import table as table_props
from sleeper.core.schema import Schema
from sleeper.core.table import new_table_id

INSTANCE_PROPERTIES_FILE = "instance.properties"
TAGS_FILE = "tags.properties"
TABLE_PROPERTIES_FILE = "table.properties"
SCHEMA_FILE = "schema.json"
SPLITS_FILE = "splits.txt"
TABLES_DIR = "tables"

FIXED_AT_CREATION = (table_props.TABLE_NAME.name, table_props.SCHEMA.name)
"""Table properties a configuration gives that are not passed on as property values: the name and the schema are
what the table is created with."""


class ConfigurationError(SleeperError):
    """A deployment configuration cannot be read or is invalid; the message names the file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TableConfiguration:
    """One table to deploy.

    Attributes:
        name: ``sleeper.table.name``.
        schema_json: The schema (from ``schema.json`` or ``sleeper.table.schema``).
        properties: The other table properties given, as text.
        split_points: The split points file's lines, as written (base64 when ``sleeper.table.splits.base64.encoded``).
        source: The ``table.properties`` file it was read from.
    """

    name: str
    schema_json: str
    properties: dict[str, str]
    split_points: tuple[str, ...] = ()
    source: Path | None = None

    def to_json(self) -> dict[str, object]:
        """The table as the table definer receives it (``sleeper/lambdas/table_definer.py``)."""
        return {
            "name": self.name,
            "schema": self.schema_json,
            "properties": self.properties,
            "splitPoints": list(self.split_points),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceConfiguration:
    """An instance and the tables to deploy with it."""

    properties: InstanceProperties
    tables: tuple[TableConfiguration, ...] = field(default_factory=tuple)


def load_properties_file(path: Path) -> InstanceConfiguration:
    """``propertiesFile``: the instance properties and an adjacent ``tags.properties``; no tables (as Sleeper).

    Raises:
        ConfigurationError: If a file cannot be read.
    """
    return InstanceConfiguration(properties=_instance_properties(path))


def load_configuration_dir(path: Path) -> InstanceConfiguration:
    """``configurationDir``: the instance and every table of a configuration directory (or of the directory holding
    the given ``instance.properties``).

    Raises:
        ConfigurationError: If a file cannot be read, a table is invalid or two tables share a name.
    """
    if path.is_dir():
        directory, instance_file = path, path / INSTANCE_PROPERTIES_FILE
    else:
        directory, instance_file = path.parent, path
    properties = _instance_properties(instance_file)
    folders = [directory]
    tables_dir = directory / TABLES_DIR
    if tables_dir.is_dir():
        folders.extend(sorted(p for p in tables_dir.iterdir() if p.is_dir()))
    tables = [_table(properties, folder / TABLE_PROPERTIES_FILE) for folder in folders]
    found = [t for t in tables if t is not None]
    seen: dict[str, Path | None] = {}
    for table in found:
        if table.name in seen:
            raise ConfigurationError(f"table {table.name!r} is defined twice: in {seen[table.name]} and {table.source}")
        seen[table.name] = table.source
    return InstanceConfiguration(properties=properties, tables=tuple(found))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{path} does not exist") from None
    except OSError as error:
        raise ConfigurationError(f"cannot read {path}: {error.strerror}") from None


def _instance_properties(path: Path) -> InstanceProperties:
    properties = InstanceProperties.from_text(_read(path))
    tags_file = path.parent / TAGS_FILE
    if tags_file.is_file():
        tags = {**properties.tags(), **javaprops.load(_read(tags_file))}
        for key, value in tags.items():
            if "," in key or "," in value:
                raise ConfigurationError(f"{tags_file}: tag {key}={value} holds a comma, which sleeper.tags cannot")
        properties.set(common.TAGS, ",".join(f"{k},{v}" for k, v in tags.items()))
    return properties


def _table(instance: InstanceProperties, path: Path) -> TableConfiguration | None:
    if not path.is_file():
        return None
    values = javaprops.load(_read(path))
    folder = path.parent
    schema_file = folder / SCHEMA_FILE
    if schema_file.is_file():
        values[table_props.SCHEMA.name] = _read(schema_file)
    name = values.get(table_props.TABLE_NAME.name)
    if not name:
        raise ConfigurationError(f"{path}: {table_props.TABLE_NAME.name} must be set")
    schema_json = values.get(table_props.SCHEMA.name)
    if not schema_json:
        raise ConfigurationError(f"{path}: no schema: write {schema_file} or set {table_props.SCHEMA.name}")
    try:
        schema = Schema.from_json(schema_json)
    except SleeperError as error:
        raise ConfigurationError(f"{schema_file if schema_file.is_file() else path}: {error}") from None
    given = {k: v for k, v in values.items() if k not in FIXED_AT_CREATION}
    try:  # the check the table definer makes when it creates the table (the id is generated then)
        new_table_properties(instance, name=name, table_id=new_table_id(), schema=schema, values=given)
    except SleeperError as error:
        raise ConfigurationError(f"{path}: {error}") from None
    split_lines = _split_points(path, values, schema)
    return TableConfiguration(
        name=name, schema_json=schema_json, properties=given, split_points=split_lines, source=path
    )


def _split_points(path: Path, values: dict[str, str], schema: Schema) -> tuple[str, ...]:
    splits_file = path.parent / SPLITS_FILE
    named = values.get(table_props.SPLIT_POINTS_FILE.name)
    if splits_file.is_file() and named:
        raise ConfigurationError(
            f"{path}: both {splits_file} and {table_props.SPLIT_POINTS_FILE.name}={named} give split points: keep one"
        )
    if named:
        splits_file = Path(named) if Path(named).is_absolute() else path.parent / named
    elif not splits_file.is_file():
        return ()
    lines = tuple(line for line in _read(splits_file).splitlines() if line.strip())
    base64 = values.get(table_props.SPLIT_POINTS_BASE64_ENCODED.name, "false").lower() == "true"
    try:
        partitions_from_split_points(schema, read_split_points(schema, lines, strings_base64=base64))
    except SleeperError as error:
        raise ConfigurationError(f"{splits_file}: {error}") from None
    return lines
