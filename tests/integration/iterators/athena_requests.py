"""Drives an Athena connector as Athena does (table, layout, splits, reads), as a caller with given principal tags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sleeper.api.table import Table
from sleeper.athena.handlers import CompositeHandler
from sleeper.runtime.local.instance import LocalInstance
from tests.unit.athena import federation_requests as fr


def _as(request: dict[str, Any], principal_tags: Mapping[str, str]) -> dict[str, Any]:
    request["identity"] = {**fr.identity(), "principalTags": dict(principal_tags)}
    return request


def read_all_rows(
    connector: CompositeHandler, table: Table[LocalInstance], *, principal_tags: Mapping[str, str]
) -> pa.Table:
    """Every row the connector returns for the whole table, read inline, for a caller with these tags."""
    schema_name = str(table.instance.properties.get("sleeper.id"))
    got = connector.handle(_as(fr.get_table(schema_name.lower(), table.name.lower()), principal_tags))
    full = fr.decode_schema(got["schema"])
    layout = connector.handle(_as(fr.get_table_layout(schema_name, table.name, full), principal_tags))
    page = connector.handle(_as(fr.get_splits(schema_name, table.name, layout["partitions"]), principal_tags))
    assert page["continuationToken"] is None
    batches = []
    for split in page["splits"]:
        response = connector.handle(_as(fr.read_records(schema_name, table.name, full, split), principal_tags))
        assert response["@type"] == "ReadRecordsResponse"
        batches.append(fr.decode_block(response["records"]))
    return pa.Table.from_batches(batches, schema=full)
