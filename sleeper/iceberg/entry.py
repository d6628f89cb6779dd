"""The Iceberg publisher's runtime-neutral entry: one ``IcebergPublishQ.fifo`` message (a table id), in either
runtime. The schedule sends every online table; one that names no Iceberg view has nothing to publish."""

from __future__ import annotations

from sleeper.iceberg.ports import IcebergRuntime

__all__ = ["handle_publish_iceberg"]


def handle_publish_iceberg(instance: IcebergRuntime, body: str) -> str:
    """Publishes the table's Iceberg view if it names one (see :func:`sleeper.iceberg.publisher.publish_table`).

    Returns:
        A line for the log (empty for a table that names no view).

    Raises:
        TableNotFoundError: If there is no such table.
        IcebergPublishError: If the table cannot be published (the message is retried, then dead-lettered, with
            the reason).
    """
    from sleeper.iceberg.publisher import iceberg_identifier, publish_table

    table = instance.table_by_id(body.strip())
    if iceberg_identifier(table.properties) is None:
        return ""
    return publish_table(instance, table).describe()
