"""Warm-up queries (Sleeper's ``WarmQueryExecutorLambda``): one exact row key per table, fixed by type."""

from __future__ import annotations

import json

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.query.warm import send_warm_queries, warm_query

SCHEMA = Schema(
    row_key_fields=(Field("id", PrimitiveType.STRING), Field("n", PrimitiveType.INT)),
    value_fields=(Field("value", PrimitiveType.LONG),),
)


def should_ask_for_one_exact_key_fixed_by_type() -> None:
    # When the warm-up query of a table with a string and an int row key is made
    query = warm_query("t", SCHEMA, query_id="q1")
    # Then it asks for exactly ("a", 0) in that table, with no results output, as Sleeper's do
    assert query == Query(
        query_id="q1",
        table_name="t",
        regions=(Region.exact(SCHEMA, ["a", 0]),),
        processing=QueryProcessingConfig(results_publisher_config={"destination": "NO_RESULTS_OUTPUT"}),
    )
    assert json.loads(QuerySerDe.for_schema(SCHEMA).to_json(query))["resultsPublisherConfig"] == {
        "destination": "NO_RESULTS_OUTPUT"
    }


def should_send_one_readable_query_per_table() -> None:
    # Given a queue and two tables
    queue = InMemoryQueues().queue("QueryQueue")
    ids = iter(["q1", "q2"])
    # When warm-up queries are sent
    sent = send_warm_queries([("t1", SCHEMA), ("t2", SCHEMA)], queue, id_supplier=lambda: next(ids))
    # Then each is on the queue as Sleeper's query JSON, readable back as the query sent
    bodies = [m.body for m in queue.receive(10)]
    assert [json.loads(b)["tableName"] for b in bodies] == ["t1", "t2"]
    serde = QuerySerDe.for_schema(SCHEMA)
    assert [serde.from_json(b) for b in bodies] == sent
