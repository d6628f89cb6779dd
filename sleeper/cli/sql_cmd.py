"""``sleeper sql 'STATEMENT'``: a read-only SQL statement over the instance's tables, run by DuckDB
(:meth:`sleeper.api.instance.Instance.sql`), its rows written in the formats of ``sleeper query``.

Only one ``SELECT`` (or ``WITH ... SELECT``) is accepted; anything else, a table function that reads files, or a
table the instance does not have is refused with one ``error:`` line, and nothing is read. The ``WHERE`` clause's
simple predicates on one table are pushed into that table's scan. ``-`` reads the statement from standard input.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper.cli import common
from sleeper.core import SleeperError

__all__ = ["register", "sql"]


def sql(
    statement: Annotated[
        str,
        typer.Argument(
            help="One SELECT statement over the instance's tables, e.g. \"select name, count(*) from people where "
            'age > 30 group by name"; - reads it from standard input.'
        ),
    ],
    output_format: common.RowsFormatOption = "table",
    output: common.RowsOutputOption = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            help="Write at most this many rows (reading stops there). Without it every row is written; the table "
            f"format then shows the first {common.DISPLAY_ROWS} and counts the rest.",
        ),
    ] = None,
) -> None:
    """Run a read-only SQL statement (one SELECT, joins allowed) over the instance's tables with DuckDB. Rows are
    written as DuckDB returns them, so any number can go to a file or a pipe."""
    from sleeper.cli import query_output

    if limit is not None and limit < 1:
        raise SleeperError(f"--limit must be a positive number of rows, got {limit}")
    if common.is_stdin(output):
        output = None
    query_output.check_output(output_format, output)
    text = common.read_stdin_text("the statement") if common.is_stdin(statement) else statement
    reader = query_output.limited(common.open_instance().sql(text), limit)
    query_output.write(reader, output_format, output, console=common.console, limit=limit)


def register(app: typer.Typer) -> None:
    """Adds ``sql`` to the command line."""
    app.command("sql")(sql)
