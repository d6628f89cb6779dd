"""The Iceberg publisher's runtime-neutral entry: one ``IcebergPublishQ.fifo`` message (a table id), in either
runtime. The schedule sends every online table; one that names no Iceberg view has nothing to publish, and one whose
rules (an iterator, aggregations or filters) forbid a view has whatever view it still has withdrawn."""

from __future__ import annotations

from sleeper.statestore import SleeperRuntime

__all__ = ["handle_publish_iceberg"]


def handle_publish_iceberg(instance: SleeperRuntime, body: str) -> str:
    """Publishes the table's Iceberg view if it names one (see :func:`sleeper.iceberg.publisher.publish_table`).

    A table with an iterator, aggregations or filters is never published: any view it still has (whatever name it
    gave) is withdrawn and the withdrawal reported, and the message succeeds, so such a table does not fail the
    schedule for ever (:mod:`sleeper.iceberg.withdrawal`).

    Returns:
        A line for the log (empty for a table that names no view and had none to withdraw).

    Raises:
        TableNotFoundError: If there is no such table.
        IcebergPublishError: If the table cannot be published (the message is retried, then dead-lettered, with
            the reason), or its view cannot be withdrawn.
    """
    from sleeper.iceberg.exceptions import RulesRefusedError
    from sleeper.iceberg.publisher import iceberg_identifier, publish_table
    from sleeper.iceberg.withdrawal import rules_refusal, withdraw_views

    table = instance.table_by_id(body.strip())
    refusal = rules_refusal(table.properties)
    if refusal is not None:
        return withdraw_views(instance, table, refusal).describe()
    if iceberg_identifier(table.properties) is None:
        return ""
    try:
        return publish_table(instance, table).describe()
    except RulesRefusedError as e:
        return str(e)
