"""``sleeper delete TABLE --where '...'`` and ``sleeper purge TABLE``: row deletes by filter and their purge
(:meth:`sleeper.api.table.Table.delete`, :meth:`sleeper.api.table.Table.purge`; docs/usage/deletes.md).

A delete without ``--where`` is refused (``sleeper table truncate`` removes every row); a bad filter is one
``error:`` line giving its position, and nothing is committed.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper.cli import common
from sleeper.core import counted

__all__ = ["delete", "purge", "register"]


def delete(
    table: Annotated[str, typer.Argument(help="The table.")],
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="The filter the deleted rows match, in the filter language of 'sleeper query --where' (keys, "
            "ranges and any column), e.g. \"key < 100 and name = 'x'\".",
        ),
    ] = None,
    as_json: common.ChangeJsonOption = False,
) -> None:
    """Delete the rows of a table matching a filter, in one atomic commit: every read stops returning them at once,
    rows written later are never deleted, and compaction (or 'sleeper purge') removes them from the files."""
    from sleeper.api import delete as delete_rows

    number = delete_rows(common.open_instance().table(table), where)
    if as_json:
        common.print_json({"table": table, "transaction": number})
        return
    common.console.print(f"Deleted the rows of table {table} matching the filter: files transaction {number}")


def purge(
    table: Annotated[str, typer.Argument(help="The table.")],
    as_json: common.ChangeJsonOption = False,
) -> None:
    """Compact every file of a table still holding rows a delete hides (for erasure requests), and report the
    deletes left: none holding rows once done, after which deletes cost nothing at read time."""
    from sleeper.api import purge as purge_table

    result = purge_table(common.open_instance().table(table))
    if as_json:
        common.print_json({"table": table, **result.to_dict()})
        return
    common.console.print(f"Table {table}: ran {counted(len(result.jobs), 'compaction job')}")
    for left in result.left:
        common.console.print(
            f"  delete at transaction {left.number} ({left.filter}): "
            f"{counted(left.files_with_rows, 'file')} still holding its rows, "
            f"{counted(left.files_awaiting_gc, 'file')} awaiting garbage collection"
        )
    if result.done:
        common.console.print("No file a read plans holds a deleted row.")


def register(app: typer.Typer) -> None:
    """Adds ``delete`` and ``purge`` to the command line."""
    app.command("delete")(delete)
    app.command("purge")(purge)
