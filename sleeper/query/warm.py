"""Warm-up queries (Sleeper's ``WarmQueryExecutorLambda``): on a schedule, one small query per table is sent to the
query queue so the query and leaf partition query functions stay warm for real queries.

Each query asks for one exact row key whose value is fixed by type (0 for ints and longs, ``"a"`` for strings,
``b"a"`` for byte arrays), as Sleeper's do, and asks for no results output (``{"destination": "NO_RESULTS_OUTPUT"}``):
the leaf queries read their rows and publish nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from sleeper.core import KeyValue, PrimitiveType, Query, QueryProcessingConfig, QuerySerDe, Queue, Region, Schema
from sleeper.query.queued import NO_RESULTS_OUTPUT

__all__ = ["WARM_KEY_VALUES", "send_warm_queries", "warm_query"]

WARM_KEY_VALUES: dict[PrimitiveType, KeyValue] = {
    PrimitiveType.INT: 0,
    PrimitiveType.LONG: 0,
    PrimitiveType.STRING: "a",
    PrimitiveType.BYTE_ARRAY: b"a",
}
"""The row key value a warm-up query asks for, by type."""


def warm_query(table_name: str, schema: Schema, *, query_id: str | None = None) -> Query:
    """The warm-up query of a table: one exact row key."""
    key = [WARM_KEY_VALUES[f.primitive_type] for f in schema.row_key_fields]
    return Query(
        query_id=query_id or str(uuid.uuid4()),
        table_name=table_name,
        regions=(Region.exact(schema, key),),
        processing=QueryProcessingConfig(results_publisher_config={"destination": NO_RESULTS_OUTPUT}),
    )


def send_warm_queries(
    tables: Iterable[tuple[str, Schema]], queue: Queue, *, id_supplier: Callable[[], str] | None = None
) -> list[Query]:
    """Sends a warm-up query for each (table name, schema) to the query queue; returns the queries sent."""
    sent: list[Query] = []
    for name, schema in tables:
        query = warm_query(name, schema, query_id=id_supplier() if id_supplier else None)
        queue.send(QuerySerDe.for_schema(schema).to_json(query))
        sent.append(query)
    return sent
