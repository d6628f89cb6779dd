"""``sleeper table publish-iceberg TABLE``: publish a table's current state as a new snapshot of its Iceberg view, in
this process, on a local instance (the instance's SQL catalog) or on AWS (the Glue Data Catalog; this machine needs
S3 and Glue access). The table names its view in ``sleeper.table.iceberg.name``. See docs/usage/iceberg.md."""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper.cli.common import JsonOption, console, open_instance, print_json, progress
from sleeper.core import counted

__all__ = ["publish_iceberg", "register"]


def publish_iceberg(
    name: Annotated[str, typer.Argument(help="The table.")],
    as_json: JsonOption = False,
) -> None:
    """Publish a table as an Apache Iceberg view over its Parquet files, for DuckDB, Spark, Athena and pyiceberg."""
    with progress(f"Publishing table {name} to Iceberg"):
        result = open_instance().publish_iceberg(name)
    if as_json:
        print_json(
            {
                "table": result.table_name,
                "icebergTable": result.iceberg_name,
                "changed": result.changed,
                "snapshotId": result.snapshot_id,
                "metadataLocation": result.metadata_location,
                "files": result.files,
                "trimmedFiles": result.trimmed_files,
                "addedFiles": result.added,
                "removedFiles": result.removed,
                "rows": result.rows,
                "expiredSnapshots": result.retention.expired_snapshots,
            }
        )
        return
    what = "Published" if result.changed else "Unchanged:"
    console.print(
        f"{what} {result.table_name} as Iceberg table {result.iceberg_name}: snapshot {result.snapshot_id}, "
        f"{counted(result.files, 'file')} ({counted(result.trimmed_files, 'trimmed copy', 'trimmed copies')}), "
        f"{counted(result.rows, 'row')}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"metadata: {result.metadata_location}", highlight=False, soft_wrap=True)


def register(table_app: typer.Typer) -> None:
    """Adds ``publish-iceberg`` to the ``table`` commands."""
    table_app.command("publish-iceberg")(publish_iceberg)
