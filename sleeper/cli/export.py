"""``sleeper export TABLE [DIR]``: a bulk export, one sorted Parquet file per leaf partition.

On a local instance the export runs in this process and writes ``DIR/<tableId>/<exportId>/<subExportId>.parquet``;
DIR may be an ``s3://`` URI (:func:`sleeper.bulk_export.local.export_root` says what is accepted).
On AWS (``--instance aws:ID``) the query is sent to the bulk export queue, as Sleeper's clients send it; the command
waits until the query tracker records the export finished and lists the files in the bulk export bucket.
``--where`` exports only the rows a filter selects (the filter language of docs/usage/filters.md), after the table's
rules; a bad filter is refused with one line before anything is sent or written.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from sleeper.cli.common import JsonOption, console, open_instance, print_json, progress, refuse_stdin
from sleeper.core import SleeperError, counted

__all__ = ["export", "register"]

DEFAULT_WAIT_SECONDS = 900.0


def export(
    name: Annotated[str, typer.Argument(help="The table.")],
    directory: Annotated[
        str | None,
        typer.Argument(
            help="Where to write the files (a local instance): a directory, or an s3:// URI (reached with the standard "
            "AWS configuration, as local ingest reads s3:// inputs); on AWS they go to the bulk export bucket."
        ),
    ] = None,
    export_id: Annotated[str | None, typer.Option("--export-id", help="The export id (default: a new UUID).")] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help='Export only the rows this filter selects, on any column, such as "age > 30 and name starts with '
            "'a'\" (applied after the table's rules).",
        ),
    ] = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="On AWS: send the export and return.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="On AWS: how long to wait for the export, in seconds.")
    ] = DEFAULT_WAIT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Export every row of a table: one sorted Parquet file per leaf partition, through the table's iterators."""
    refuse_stdin([directory], "the export directory", "an export writes one Parquet file per leaf into a directory")
    with progress(f"Exporting table {name}"):
        result = open_instance().export_table(
            name, directory, export_id=export_id, wait=not no_wait, timeout=timeout, filter=where
        )
    _report(result, as_json)


def _report(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    state = result["state"]
    if state == "SENT":
        console.print(f"Bulk export {result['exportId']} sent")
        return
    if state == "ALREADY_FINISHED":
        console.print(f"Bulk export {result['exportId']} already finished; no file was added")
        return
    console.print(f"Bulk export {result['exportId']}: {state}, {counted(result.get('rows', 0), 'row')}")
    for name in result.get("files", []):
        console.print(f"  {name}")
    if state != "COMPLETED":
        raise SleeperError(f"bulk export {result['exportId']} {state}: {result.get('error', 'see the query tracker')}")


def register(app: typer.Typer) -> None:
    """Adds ``export`` to the CLI."""
    app.command("export")(export)
