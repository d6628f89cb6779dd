"""``sleeper upsert TABLE PATHS...``: rows of Parquet files written to a table that keeps one row per row key, the last
written (``sleeper.table.upsert``; :meth:`sleeper.api.table.Table.upsert`, docs/usage/upserts.md).

On a table without the setting it is refused with one ``error:`` line and nothing is written.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper.cli import common
from sleeper.core import counted

__all__ = ["register", "upsert"]


def upsert(
    table: Annotated[str, typer.Argument(help="The table (it must set sleeper.table.upsert=true).")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories (local paths or s3a:// URIs).")],
    as_json: common.ChangeJsonOption = False,
) -> None:
    """Upsert the rows of Parquet files into a table that keeps one row per row key: each replaces the row of its key
    (with a sort key, the greatest sort key wins; without one, the last committed). Written in this process."""
    common.refuse_stdin(
        paths, "a path to upsert", "Parquet files are read by path (write the rows to a Parquet file and give its path)"
    )
    numbers = common.open_instance().table(table).upsert(list(paths))
    if as_json:
        common.print_json({"table": table, "transactions": numbers})
        return
    common.console.print(
        f"Upserted {counted(len(paths), 'path')} into table {table}: "
        f"{counted(len(numbers), 'files transaction')} {', '.join(str(n) for n in numbers)}".rstrip()
    )


def register(app: typer.Typer) -> None:
    """Adds ``upsert`` to the command line."""
    app.command("upsert")(upsert)
