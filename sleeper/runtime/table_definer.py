"""The tables of a deployed configuration (``configurationDir``), created at deployment and kept on redeploys.

The CDK app passes each table (name, schema, properties, split point lines: ``sleeper.core.deploy.configuration``)
to the table definer (``sleeper/lambdas/table_definer.py``, a CloudFormation custom resource), which calls
:func:`define_tables` on every deployment that changes them: a table not yet in the instance is created with its
split points; a table that exists keeps its data and partitions, and gets the configuration's property values (its
schema must not have changed, and split points apply only when a table is created, as in Sleeper).

As Sleeper's declared configurations do, a table newly added to the configuration must not exist yet unless its
``sleeper.table.reuse.existing`` is true, which takes over the table of that name (and then it must exist); a table
removed from the configuration is taken offline when its ``sleeper.table.retain.after.removal`` is true (the default)
and deleted with all its data when it is false. A rename in the configuration is a removal and an addition.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sleeper.api import Instance
from sleeper.core import Schema, SleeperError, TableNotFoundError, read_split_points
from sleeper.core.properties import instance_common as instance_props
from sleeper.core.properties import table as table_props


class TableDefinitionError(SleeperError):
    """A table of the configuration cannot be created or updated as given."""


@dataclass(frozen=True, slots=True)
class TableDefined:
    """What happened to one table: ``created``, ``updated``, ``unchanged``, ``taken offline`` or ``deleted``."""

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


def define_tables(
    instance: Instance,
    tables: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]] | None = None,
) -> list[TableDefined]:
    """Creates the tables that do not exist and updates the properties of those that do; with the previous
    deployment's tables, also applies ``sleeper.table.reuse.existing`` to the tables added since and
    ``sleeper.table.retain.after.removal`` to the tables removed since.

    Args:
        instance: The instance (its admin: tables are created, updated, taken offline and deleted).
        tables: The configuration's tables.
        previous: The tables of the deployment before (None on the first deployment: every table is added).

    Raises:
        TableDefinitionError: If an existing table's schema differs from the configuration's, an added table exists
            and does not say ``sleeper.table.reuse.existing=true``, or says it and does not exist.
        SleeperError: If a table or property is invalid (``PropertyError``, ``PartitionTreeError``, ...).
    """
    before = {str(t["name"]) for t in previous or ()}
    done = []
    for table in tables:
        name = str(table["name"])
        schema = Schema.from_json(str(table["schema"]))
        properties = {str(k): str(v) for k, v in dict(table.get("properties") or {}).items()}
        added = name not in before
        reuse = _flag(properties, table_props.TABLE_REUSE_EXISTING.name, _reuse_default(instance))
        try:
            existing = instance.table(name)
        except TableNotFoundError:
            if added and reuse:
                raise TableDefinitionError(
                    f"table {name!r} says sleeper.table.reuse.existing=true but no table of that name exists: "
                    "set it false to create the table"
                ) from None
            base64 = properties.get(table_props.SPLIT_POINTS_BASE64_ENCODED.name, "false").lower() == "true"
            lines = [str(line) for line in table.get("splitPoints") or []]
            split_points = read_split_points(schema, lines, strings_base64=base64)
            instance.create_table(name, schema, split_points=split_points, properties=properties)
            done.append(TableDefined(name, "created"))
            continue
        if added and not reuse:
            raise TableDefinitionError(
                f"table {name!r} is added to the configuration but a table of that name exists: set "
                "sleeper.table.reuse.existing=true in its properties to take it over, or choose another name"
            )
        if existing.schema != schema:
            raise TableDefinitionError(
                f"table {name!r} exists with another schema: a table's schema cannot change; "
                "create a table under a new name instead"
            )
        changed = {k: v for k, v in properties.items() if existing.properties.get(k) != v}
        if changed:
            instance.update_table_properties(name, changed)
        done.append(TableDefined(name, "updated" if changed else "unchanged"))
    kept = {str(t["name"]) for t in tables}
    for name in sorted(before - kept):
        try:
            existing = instance.table(name)
        except TableNotFoundError:
            continue  # already gone (deleted by hand): nothing to do
        if existing.properties.get_bool(table_props.RETAIN_TABLE_AFTER_REMOVAL):
            instance.set_table_online(name, False)
            done.append(TableDefined(name, "taken offline"))
        else:
            instance.delete_table(name)
            done.append(TableDefined(name, "deleted"))
    return done


def _flag(properties: Mapping[str, str], name: str, default: bool) -> bool:
    value = properties.get(name)
    return default if value is None else value.strip().lower() == "true"


def _reuse_default(instance: Instance) -> bool:
    """The instance's ``sleeper.default.table.reuse.existing``."""
    return instance.properties.get_bool(instance_props.DEFAULT_TABLE_REUSE_EXISTING)
