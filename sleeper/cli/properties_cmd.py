"""``instance properties`` and ``table properties``: show the properties (all that are set, or one group with every
value in effect), or edit them (validated before anything is saved).

An edit of a property this port does not use, or of one that takes effect only when the instance is deployed again,
prints a line saying so on standard error (:func:`sleeper.core.properties.notices.property_notices`), on both
runtimes; so does a value that carries a risk (``warnings()`` of the properties, e.g. a GC delay shorter than a query
may take) and, on AWS, when running processes see the change (:func:`sleeper.core.properties.notices.change_notice`).
So does an edit that withdraws the table's Iceberg view (an iterator, aggregations or filters set on a table
naming a view: :mod:`sleeper.iceberg.withdrawal`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from sleeper.cli.common import JsonOption, console, err_console, open_instance, parse_assignments, print_json
from sleeper.core import SleeperError

if TYPE_CHECKING:
    from sleeper.core.properties import InstanceProperties, PropertyGroup, PropertyIndex, TableProperties

__all__ = ["group_rows", "instance_properties", "register", "table_properties"]

PROPERTIES_LOGGER = "sleeper.core.properties.properties"
"""The logger property validation logs its warnings to (``validate_all``)."""

GroupOption = Annotated[
    str | None,
    typer.Option(
        "--group",
        "-g",
        help="Show one group of properties (e.g. compaction, ingest), every one with the value in effect.",
    ),
]


def _find_group(index: PropertyIndex, name: str, kind: str) -> PropertyGroup:
    wanted = name.strip().lower().replace("-", "_").replace(" ", "_")
    for group in index.groups:
        if wanted in (group.slug, group.title.lower().replace(" ", "_")):
            return group
    names = ", ".join(g.slug for g in index.groups)
    raise SleeperError(f"no {kind} property group {name!r}: the groups are {names}")


def group_rows(properties: InstanceProperties | TableProperties, group: PropertyGroup) -> list[dict[str, Any]]:
    """Every property of a group with the value in effect: its own (``set``), else its default or the property it
    falls back to; with whether this port uses it and whether a change takes effect only at deployment."""
    rows = []
    for definition in properties.index.in_group(group):
        rows.append(
            {
                "property": definition.name,
                "value": properties.get(definition),
                "set": properties.is_set(definition),
                "used": definition.used,
                "redeploy": definition.redeploy,
                "setByDeployment": definition.set_by_cdk,
            }
        )
    return rows


def _group_table(title: str, rows: list[dict[str, Any]]) -> Table:
    out = Table(title=title)
    out.add_column("Property", style="bold", overflow="fold")
    out.add_column("Value", overflow="fold")
    out.add_column("Notes", overflow="fold")
    for row in rows:
        notes = []
        if not row["set"] and row["value"] is not None:
            notes.append("default")
        if row["setByDeployment"]:
            notes.append("set by deployment")
        if not row["used"]:
            notes.append("not used by this port")
        if row["redeploy"]:
            notes.append("needs sleeper deploy")
        out.add_row(row["property"], "" if row["value"] is None else str(row["value"]), ", ".join(notes))
    return out


def _print_notices(
    index: PropertyIndex,
    names: list[str],
    *,
    local: bool,
    before: InstanceProperties | TableProperties,
    after: InstanceProperties | TableProperties,
    instance: InstanceProperties,
) -> None:
    """Says on standard error what the user should know of a saved change: properties that do nothing or wait for a
    deployment, values that carry a risk (``warnings()``) new with this edit, and when running AWS processes see it."""
    if not names:
        return
    from sleeper.core.properties import TableProperties, change_notice, property_notices

    earlier = set(before.warnings())
    lines = property_notices(index, names, local=local)
    lines += [f"warning: {w}" for w in after.warnings() if w not in earlier]
    note = change_notice(instance, table=isinstance(after, TableProperties), local=local)
    if note is not None:
        lines.append(note)
    for line in lines:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)


@contextmanager
def _warnings_shown_by_the_command() -> Iterator[None]:
    """Keeps property validation's logged warnings off standard error while the command prints them itself, once,
    as ``warning: ...`` lines (with no logging configured, Python would print each bare)."""
    logger = logging.getLogger(PROPERTIES_LOGGER)
    handler = logging.NullHandler()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.propagate = propagate
        logger.removeHandler(handler)


def _print_view_notice(before: TableProperties, after: TableProperties) -> None:
    """Says on standard error that the edit withdrew the table's Iceberg view (the runtime's update withdrew it:
    :mod:`sleeper.iceberg.withdrawal`)."""
    from sleeper.iceberg import view_notice

    notice = view_notice(before, after)
    if notice is not None:
        err_console.print(notice, markup=False, highlight=False, soft_wrap=True)


def instance_properties(
    set_: Annotated[list[str] | None, typer.Option("--set", help="Set a property name=value.")] = None,
    unset: Annotated[list[str] | None, typer.Option("--unset", help="Unset a property.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the diff without saving.")] = False,
    group: GroupOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the instance properties that are set (or one group's, with defaults), or edit them: validated, shown as
    a diff, then saved."""
    from sleeper.cli import render

    inst = open_instance()
    updates = parse_assignments(set_, "--set")
    if group is not None and (updates or unset):
        raise SleeperError("--group shows properties; it cannot be given with --set or --unset")
    if group is not None:
        chosen = _find_group(inst.properties.index, group, "instance")
        rows = group_rows(inst.properties, chosen)
        if as_json:
            print_json(rows)
        else:
            console.print(_group_table(f"Instance properties: {chosen.title}", rows))
        return
    if not updates and not unset:
        values = dict(inst.properties.items())
        if as_json:
            print_json(values)
        else:
            console.print(render.properties_table("Instance properties", values))
        return
    before_edit = inst.properties
    with _warnings_shown_by_the_command():
        changes = inst.update_instance_properties(updates, unset or [], dry_run=dry_run)
    from sleeper.core.properties import InstanceProperties

    edited = InstanceProperties(dict(before_edit.items()))
    for change in changes:
        if change.after is None:
            edited.unset(change.name)
        else:
            edited.set(change.name, change.after)
    _print_notices(
        edited.index,
        [c.name for c in changes],
        local=not inst.deployed,
        before=before_edit,
        after=edited,
        instance=edited,
    )
    if as_json:
        print_json([{"property": c.name, "before": c.before, "after": c.after} for c in changes])
        return
    if not changes:
        console.print("No change: the properties already have these values")
        return
    diff = Table(title="Instance properties " + ("that would change" if dry_run else "changed"))
    for column in ("Property", "Before", "After"):
        diff.add_column(column, overflow="fold")
    for change in changes:
        diff.add_row(change.name, change.before or "(unset)", change.after or "(unset)")
    console.print(diff)
    if dry_run:
        console.print("Dry run: nothing saved")


def table_properties(
    name: Annotated[str, typer.Argument(help="The table.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Set a property name=value.")] = None,
    unset: Annotated[
        list[str] | None, typer.Option("--unset", help="Unset a property, so it takes its default again.")
    ] = None,
    group: GroupOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a table's properties (every value in effect, or one group's), or set and unset some (validated before
    anything is saved)."""
    from sleeper.cli import render

    inst = open_instance()
    table = inst.table(name)
    updates: dict[str, str | None] = dict(parse_assignments(set_, "--set"))
    for prop in unset or []:
        if prop in updates:
            raise SleeperError(f"{prop} is both set and unset: give it once")
        updates[prop] = None
    if group is not None and updates:
        raise SleeperError("--group shows properties; it cannot be given with --set or --unset")
    if group is not None:
        chosen = _find_group(table.properties.index, group, "table")
        rows = group_rows(table.properties, chosen)
        if as_json:
            print_json(rows)
        else:
            console.print(_group_table(f"Properties of table {name}: {chosen.title}", rows))
        return
    if updates:
        previous = table.properties
        before = dict(previous.items())
        with _warnings_shown_by_the_command():
            table = inst.update_table_properties(name, updates)
        after = dict(table.properties.items())
        changed = [key for key in updates if before.get(key) != after.get(key)]
        _print_notices(
            table.properties.index,
            changed,
            local=not inst.deployed,
            before=previous,
            after=table.properties,
            instance=table.properties.instance_properties,
        )
        _print_view_notice(previous, table.properties)
        if as_json:
            result: dict[str, Any] = {
                "tableName": table.name,
                "tableId": table.table_id,
                "set": {k: v for k, v in updates.items() if v is not None},
            }
            if unset:
                result["unset"] = [k for k, v in updates.items() if v is None]
            print_json(result)
            return
        for key, value in updates.items():
            console.print(f"{key} = {value}" if value is not None else f"{key} unset (now {_shown(table, key)})")
        return
    values = render.effective_table_properties(table.properties)
    if as_json:
        print_json(values)
    else:
        console.print(render.properties_table(f"Properties of table {name}", values))


def _shown(table: Any, key: str) -> str:
    value = table.properties.get(key)
    return "no value" if value is None else f"{value}, its default"


def register(instance_app: typer.Typer, table_app: typer.Typer) -> None:
    """Adds ``instance properties`` and ``table properties`` to the CLI."""
    instance_app.command("properties")(instance_properties)
    table_app.command("properties")(table_properties)
