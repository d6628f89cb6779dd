"""The tables of a deployed configuration (``configurationDir``), created at deployment and kept on redeploys.

The CDK app passes each table (name, schema, properties, split point lines: ``sleeper.core.deploy.configuration``)
to the table definer (``lambdas/table_definer.py``, a CloudFormation custom resource), which calls
:func:`define_tables` on every deployment that changes them: a table not yet in the instance is created with its
split points; a table that exists keeps its data and partitions, and gets the configuration's property values (its
schema must not have changed, and split points apply only when a table is created, as in Sleeper). A table removed
from the configuration is left as it is: deleting a table is ``sleeper table delete``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sleeper.core.exceptions import SleeperError, TableNotFoundError
from sleeper.core.partition import read_split_points
from sleeper.core.properties import table as table_props
from sleeper.core.schema import KeyValue, Schema


class TableDefinitionError(SleeperError):
    """A table of the configuration cannot be created or updated as given."""


class DefinableInstance(Protocol):
    """What the table definer needs of an instance (``AwsInstance``, ``LocalInstance``)."""

    def table(self, name: str) -> Any: ...

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Any: ...

    def update_table_properties(self, name: str, values: Mapping[str, str]) -> Any: ...


@dataclass(frozen=True, slots=True)
class TableDefined:
    """What happened to one table: ``created`` or ``updated``."""

    name: str
    action: str


def parse_tables(text: str) -> list[dict[str, Any]]:
    """The tables as the CDK app passes them (a JSON list of objects).

    Raises:
        TableDefinitionError: If the text is not such a list.
    """
    try:
        tables = json.loads(text)
    except json.JSONDecodeError as error:
        raise TableDefinitionError(f"the tables are not JSON: {error}") from None
    if not isinstance(tables, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tables):
        raise TableDefinitionError("the tables must be a JSON list of objects with a name")
    return tables


def define_tables(instance: DefinableInstance, tables: Sequence[Mapping[str, Any]]) -> list[TableDefined]:
    """Creates the tables that do not exist and updates the properties of those that do.

    Raises:
        TableDefinitionError: If an existing table's schema differs from the configuration's.
        SleeperError: If a table or property is invalid (``PropertyError``, ``PartitionTreeError``, ...).
    """
    done = []
    for table in tables:
        name = str(table["name"])
        schema = Schema.from_json(str(table["schema"]))
        properties = {str(k): str(v) for k, v in dict(table.get("properties") or {}).items()}
        try:
            existing = instance.table(name)
        except TableNotFoundError:
            base64 = properties.get(table_props.SPLIT_POINTS_BASE64_ENCODED.name, "false").lower() == "true"
            lines = [str(line) for line in table.get("splitPoints") or []]
            split_points = read_split_points(schema, lines, strings_base64=base64)
            instance.create_table(name, schema, split_points=split_points, properties=properties)
            done.append(TableDefined(name, "created"))
            continue
        if existing.schema != schema:
            raise TableDefinitionError(
                f"table {name!r} exists with another schema: a table's schema cannot change; "
                "create a table under a new name instead"
            )
        changed = {k: v for k, v in properties.items() if existing.properties.get(k) != v}
        if changed:
            instance.update_table_properties(name, changed)
        done.append(TableDefined(name, "updated" if changed else "unchanged"))
    return done
