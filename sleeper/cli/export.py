"""``sleeper export TABLE [DIR]``: a bulk export, one sorted Parquet file per leaf partition.

On a local instance the export runs in this process and writes ``DIR/<tableId>/<exportId>/<subExportId>.parquet``;
DIR may be an ``s3://`` URI (:func:`sleeper.bulk_export.local.export_root` says what is accepted).
On AWS (``--instance aws:ID``) the query is sent to the bulk export queue, as Sleeper's clients send it; the command
waits until the query tracker records the export finished and lists the files in the bulk export bucket.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from sleeper.cli.common import JsonOption, console, open_instance, print_json
from sleeper.core.exceptions import SleeperError

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
    no_wait: Annotated[bool, typer.Option("--no-wait", help="On AWS: send the export and return.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="On AWS: how long to wait for the export, in seconds.")
    ] = DEFAULT_WAIT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Export every row of a table: one sorted Parquet file per leaf partition, through the table's iterators."""
    from sleeper.bulk_export.model import BulkExportQuery

    admin = open_instance()
    instance: Any = getattr(admin, "instance", None)
    table = admin.table(name)
    query = BulkExportQuery(export_id=export_id, table_name=name) if export_id else BulkExportQuery.for_table(
        table_name=name
    )  # fmt: skip
    if _is_aws(instance):
        if directory is not None:
            raise SleeperError(
                "on AWS a bulk export is written to the instance's bulk export bucket; leave out DIR "
                "(DIR is where a local instance's export goes)"
            )
        result = _export_on_aws(instance, query, table.table_id, wait=not no_wait, timeout=timeout)
    else:
        if directory is None:
            raise SleeperError("give the directory to export to: sleeper export TABLE DIR")
        from sleeper.bulk_export.local import export_table

        summary = export_table(instance, query, directory)
        result = {
            "exportId": summary.export_id,
            "tableId": summary.table_id,
            "state": "ALREADY_FINISHED" if summary.already_finished else "COMPLETED",
            "rows": summary.rows_written,
            "files": list(summary.files),
        }
    _report(result, as_json)


def _is_aws(instance: object) -> bool:
    return type(instance).__name__ == "AwsInstance"


def _export_on_aws(instance: Any, query: Any, table_id: str, *, wait: bool, timeout: float) -> dict[str, Any]:
    from sleeper.core.operations import BULK_EXPORT_Q
    from sleeper.core.paths import join_under
    from sleeper.io.filesystem import resolve

    instance.queue(BULK_EXPORT_Q).send(query.to_json())
    result: dict[str, Any] = {"exportId": query.export_id, "tableId": table_id, "state": "SENT"}
    if not wait:
        return result
    tracker = instance.query_tracker
    deadline = time.monotonic() + timeout
    while True:
        status = tracker.status(query.export_id)
        if status is not None and status.last_known_state.is_finished:
            break
        if time.monotonic() > deadline:
            raise SleeperError(
                f"bulk export {query.export_id} did not finish within {timeout:.0f} s; "
                f"see 'sleeper report queries' (the export is tracked as a query)"
            )
        time.sleep(2.0)
    from pyarrow import fs as pafs

    root = join_under(instance.bulk_export_uri, table_id, query.export_id)
    filesystem, path = resolve(root, instance.filesystem_options)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    files = sorted(f"s3://{info.path}" for info in infos if info.type == pafs.FileType.File)
    result.update(state=status.last_known_state.value, rows=status.row_count, files=files)
    if status.error_message:
        result["error"] = status.error_message
    return result


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
    console.print(f"Bulk export {result['exportId']}: {state}, {result.get('rows', 0):,} rows")
    for name in result.get("files", []):
        console.print(f"  {name}")
    if state != "COMPLETED":
        raise SleeperError(f"bulk export {result['exportId']} {state}: {result.get('error', 'see the query tracker')}")


def register(app: typer.Typer) -> None:
    """Adds ``export`` to the CLI."""
    app.command("export")(export)
