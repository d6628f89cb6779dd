"""Operator commands of the ``sleeper`` CLI: pause/resume, table upkeep (reinit, add-column, truncate), dead letters
(the properties commands are in :mod:`sleeper.cli.properties_cmd`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from sleeper.cli.common import (
    ChangeJsonOption,
    JsonOption,
    console,
    instance_location,
    is_stdin,
    open_instance,
    print_json,
    read_split_points_file,
)
from sleeper.core import SleeperError, counted

dead_letters_app = typer.Typer(help="Dead-letter queues.", no_args_is_help=True)


def pause(as_json: ChangeJsonOption = False) -> None:
    """Pause the system: the scheduler triggers no periodic operation until resumed (queued work still runs).

    On AWS: disable the instance's EventBridge rules."""
    said = open_instance().pause()
    if as_json:
        print_json({"instance": instance_location(), "paused": True})
        return
    for line in said.splitlines():
        console.print(line)


def resume(as_json: ChangeJsonOption = False) -> None:
    """Resume the system's scheduled operations (on AWS: enable the instance's EventBridge rules)."""
    open_instance().resume()
    if as_json:
        print_json({"instance": instance_location(), "paused": False})
    else:
        console.print("Resumed")


def table_reinit(
    name: Annotated[str, typer.Argument(help="The table.")],
    split_points: Annotated[
        Path | None,
        typer.Option(
            "--split-points", help="Repartition from these split points, one per line (- reads standard input)."
        ),
    ] = None,
    base64: Annotated[bool, typer.Option("--base64", help="String split points are base64 encoded.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: ChangeJsonOption = False,
) -> None:
    """Reinitialise a table: delete every file (and, with split points, repartition); the table stays."""
    admin = open_instance()
    table = admin.table(name)
    points = read_split_points_file(split_points, table.schema, base64=base64) if split_points else None
    if not yes and not typer.confirm(f"Delete every file of table {name}?"):
        raise SleeperError("not confirmed; nothing changed")
    table = admin.reinitialise_table(name, points)
    leaves = len(table.leaf_partitions())
    if as_json:
        print_json({"tableName": table.name, "tableId": table.table_id, "leafPartitions": leaves, "files": 0})
    else:
        console.print(f"Reinitialised table {name}: {counted(leaves, 'leaf partition')}, no files")


def table_add_column(
    name: Annotated[str, typer.Argument(help="The table.")],
    column: Annotated[str, typer.Argument(help="The new column's name.")],
    column_type: Annotated[
        str,
        typer.Argument(
            metavar="TYPE",
            help="Its type: a schema JSON type name (LongType, DoubleType...), a short name (long, double, "
            "timestamp...) or a JSON type object.",
        ),
    ],
    as_json: ChangeJsonOption = False,
) -> None:
    """Add a nullable value column: files written before read it as nulls; nothing is rewritten until compaction."""
    from sleeper.api import add_column, parse_field_type
    from sleeper.core import describe_type

    field_type = parse_field_type(column_type)
    table = add_column(open_instance().table(name), column, field_type)
    if as_json:
        print_json({"tableName": table.name, "tableId": table.table_id, "schema": table.schema.to_dict()})
    else:
        console.print(f"Added column {column} ({describe_type(field_type)}, nullable) to table {table.name}")


def table_truncate(
    name: Annotated[str, typer.Argument(help="The table.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: ChangeJsonOption = False,
) -> None:
    """Remove every row of a table in one commit, keeping its partitions; the cleared files are deleted."""
    from sleeper.api import truncate

    table = open_instance().table(name)
    if not yes and not typer.confirm(f"Remove every row of table {name}?"):
        raise SleeperError("not confirmed; nothing changed")
    table = truncate(table)
    leaves = len(table.leaf_partitions())
    if as_json:
        print_json({"tableName": table.name, "tableId": table.table_id, "leafPartitions": leaves, "rows": 0})
    else:
        console.print(f"Truncated table {name}: no rows, {counted(leaves, 'leaf partition')} kept")


def table_offline_all(as_json: ChangeJsonOption = False) -> None:
    """Take every table offline."""
    inst = open_instance()
    changed = [t for t in inst.tables() if t.online]
    for status in changed:
        inst.set_table_online(status.table_name, False)
    if as_json:
        print_json([{"tableName": t.table_name, "tableId": t.table_id, "online": False} for t in changed])
    else:
        console.print(f"Took {counted(len(changed), 'table')} offline" if changed else "Every table is already offline")


def table_estimate_split_points(
    name: Annotated[str, typer.Argument(help="The table.")],
    partitions: Annotated[int, typer.Option("--partitions", "-n", help="How many partitions to cut into.")] = 2,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the split points to a file (- for standard output).")
    ] = None,
    base64: Annotated[
        bool,
        typer.Option("--base64", help="Write string split points base64 encoded (as table create --base64 reads)."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Estimate split points that cut a table's rows evenly, from its files' sketches.

    Split points are written one per line; a string holding a line break needs --base64 to be written."""
    from sleeper.cli.query_args import format_value
    from sleeper.core import PartitionTreeError, write_split_points

    if is_stdin(output):
        output = None  # -o - is standard output, where the split points go without --output
    admin = open_instance()
    schema = admin.table(name).schema
    points = admin.estimate_split_points(name, partitions)
    if as_json and output is None and not base64:
        print_json([format_value(p) for p in points])  # JSON escapes line breaks
        return
    try:
        lines = write_split_points(schema, points, strings_base64=base64)
    except PartitionTreeError as e:
        raise SleeperError(f"{e} (pass --base64; table create --base64 reads them back)") from None
    if output is not None:
        output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if as_json:
        print_json(lines)
    else:
        for line in lines:
            console.print(line, markup=False, highlight=False)


@dead_letters_app.command("retry")
def dead_letters_retry(
    queues: Annotated[list[str] | None, typer.Argument(help="Queues to re-drive (default: every queue).")] = None,
    as_json: ChangeJsonOption = False,
) -> None:
    """Move messages from dead-letter queues back to their queues, reporting how many."""
    moved = open_instance().retry_dead_letters(queues)
    if as_json:
        print_json(dict(sorted(moved.items())))
        return
    if not moved:
        console.print("No dead letters to retry")
        return
    for queue, count in sorted(moved.items()):
        console.print(f"{queue}: {counted(count, 'message')} moved back")


def admin_menu(run_command: Callable[[list[str]], int]) -> Callable[[], None]:
    """The ``admin`` command: the interactive menu, running commands through ``run_command``."""

    def admin() -> None:
        """Interactive menu over the admin commands (reports, properties, tables, pause/resume, dead letters)."""
        from sleeper.cli.menu import run_menu

        admin = open_instance()
        location = admin.location
        run_menu(console, lambda argv: run_command(["--instance", location, *argv]))

    return admin


def register(
    app: typer.Typer, instance_app: typer.Typer, table_app: typer.Typer, run_command: Callable[[list[str]], int]
) -> None:
    """Adds the operator commands to the CLI."""
    app.command("admin")(admin_menu(run_command))
    app.command("pause")(pause)
    app.command("resume")(resume)
    table_app.command("reinit")(table_reinit)
    table_app.command("add-column")(table_add_column)
    table_app.command("truncate")(table_truncate)
    table_app.command("offline-all")(table_offline_all)
    table_app.command("estimate-split-points")(table_estimate_split_points)
    app.add_typer(dead_letters_app, name="dead-letters")
