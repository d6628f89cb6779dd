"""The Athena connectors obey a table's rules on a local instance: the simple connector, which returns stored rows as
they are, refuses a table with filters, aggregations or an iterator at every step that touches rows, and the
iterator-applying connector returns a Sleeper query's rows, with authorisations from its settings only (never from
the request's identity, which whoever invokes the function writes)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.athena import AthenaConnectorError, AthenaSettings, iterator_applying_connector, simple_connector
from sleeper.athena.exceptions import ACCESS_DENIED, INVALID_INPUT, OPERATION_NOT_SUPPORTED
from sleeper.athena.handlers import CompositeHandler
from sleeper.athena.protocol import parse_request
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.lambdas.athena import athena_settings
from sleeper.runtime.local.instance import LocalInstance
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("count", PrimitiveType.LONG),
        Field("ts", PrimitiveType.LONG),
        Field("visibility", PrimitiveType.STRING, nullable=True),
    ],
)
AGG_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("count", PrimitiveType.LONG), Field("ts", PrimitiveType.LONG)],
)
SECURITY = "sleeper.iterators.examples.SecurityFilteringIterator"
NOW_MS = 10_000_000_000_000
"""Far enough ahead of every row's ``ts`` that an age-off of one day drops the old half."""
INGESTED = 120
"""Rows ingested into each table (two ingests of 60), before its rules."""

RULES = {
    "security-iterator": {
        "sleeper.table.iterator.class.name": SECURITY,
        "sleeper.table.iterator.config": "visibility,A",
    },
    "age-off": {"sleeper.table.filters": "ageOff(ts,86400000)"},
    "aggregation": {"sleeper.table.aggregations": "sum(count),max(ts)"},
    "user-iterator": {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.FixedAgeOffIterator",
        "sleeper.table.iterator.config": "ts,5000",
    },
}
"""A table's rules, by the property each sets."""


def _rows(start: int, n: int) -> pa.Table:
    keys = list(range(start, start + n))
    return pa.table(
        {
            "key": pa.array([k % 40 for k in keys], pa.int64()),
            "count": pa.array([k % 7 for k in keys], pa.int64()),
            "ts": pa.array([k * 100 if k % 2 else NOW_MS for k in keys], pa.int64()),
            "visibility": pa.array([["A", "B", None][k % 3] for k in keys], pa.string()),
        }
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> LocalInstance:
    instance = LocalInstance.create(Path(tmp_path_factory.mktemp("athena-rules")) / "instance")
    for name, properties in {"plain": {}, **RULES}.items():
        schema = AGG_SCHEMA if name == "aggregation" else SCHEMA
        table = instance.create_table(name.replace("-", "_"), schema, split_points=[20], properties=properties)
        for i in range(2):
            table.ingest(_rows(i * 60, 60).select(schema.field_names))
    return instance


def _settings(instance: LocalInstance, **values: Any) -> AthenaSettings:
    return AthenaSettings(instance_id=str(instance.properties.get("sleeper.id")), spill_bucket="spill", **values)


def _with_tags(request: dict[str, Any], tags: dict[str, str]) -> dict[str, Any]:
    request["identity"] = {**fr.identity(), "principalTags": tags}
    return request


def _read(connector: CompositeHandler, instance: LocalInstance, table: str, tags: dict[str, str]) -> pa.Table:
    """Every row of a table as Athena reads it through the connector, with these principal tags in each request."""
    schema_name = str(instance.properties.get("sleeper.id"))
    full = fr.decode_schema(connector.handle(_with_tags(fr.get_table(schema_name, table), tags))["schema"])
    layout = connector.handle(_with_tags(fr.get_table_layout(schema_name, table, full), tags))
    page = connector.handle(_with_tags(fr.get_splits(schema_name, table, layout["partitions"]), tags))
    batches = []
    for split in page["splits"]:
        response = connector.handle(_with_tags(fr.read_records(schema_name, table, full, split), tags))
        batches.append(fr.decode_block(response["records"]))
    return pa.Table.from_batches(batches, schema=full)


def _keyed(rows: pa.Table) -> list[dict[str, Any]]:
    return rows.sort_by([(n, "ascending") for n in ("key", "count", "ts")]).to_pylist()


@pytest.mark.parametrize("rule", list(RULES))
def should_refuse_a_table_with_rules_in_the_simple_connector(instance: LocalInstance, rule: str) -> None:
    # Given a table whose rules change its rows as they are read, and a split of one of its files
    table = instance.table(rule.replace("-", "_"))
    schema_name = str(instance.properties.get("sleeper.id"))
    connector = simple_connector(instance, _settings(instance))
    full = fr.decode_schema(connector.handle(fr.get_table(schema_name, table.name))["schema"])
    file = table.file_references()[0].filename
    split = {
        "spillLocation": {"@type": "S3SpillLocation", "bucket": "spill", "key": "k", "directory": True},
        "encryptionKey": None,
        "properties": {"_SleeperRelevantFiles": file, "_SleeperFileRegions": json.dumps([{"key": [-(2**63), None]}])},
    }
    requests = {
        "layout": fr.get_table_layout(schema_name, table.name, full),
        "splits": fr.get_splits(schema_name, table.name, _layout_of(table)),
        "read": fr.read_records(schema_name, table.name, full, split),
    }
    for step, request in requests.items():
        # When the simple connector is asked for its rows at any step
        with pytest.raises(AthenaConnectorError) as refused:
            connector.handle(request)
        # Then it refuses, naming the table, the property and the connector to use instead
        message = str(refused.value)
        assert refused.value.error_code == OPERATION_NOT_SUPPORTED, step
        assert repr(table.name) in message and "iterator-applying connector" in message, step
        assert next(iter(RULES[rule])) in message, step


def _layout_of(table: Table[LocalInstance]) -> dict[str, Any]:
    """A layout block naming every file of a table on one unbounded row (as a forged or replayed request would)."""
    files = json.dumps(sorted({r.filename for r in table.file_references()}))
    batch = pa.record_batch(
        {
            "_SleeperRelevantFiles": pa.array([files]),
            "_MinRowKey-key": pa.array([-(2**63)], pa.int64()),
            "_MaxRowKey-key": pa.array([None], pa.int64()),
        }
    )
    return fr.block(batch)


@pytest.mark.parametrize("rule", list(RULES))
def should_return_a_sleeper_querys_rows_in_the_iterator_applying_connector(instance: LocalInstance, rule: str) -> None:
    # Given a table with rules
    table = instance.table(rule.replace("-", "_"))
    connector = iterator_applying_connector(instance, _settings(instance))
    # When it is read through the iterator-applying connector
    rows = _read(connector, instance, table.name, {})
    # Then the rows are those of a Sleeper query of the table
    assert _keyed(rows) == _keyed(table.query())
    assert 0 < rows.num_rows < INGESTED


def should_serve_a_table_without_rules_in_the_simple_connector(instance: LocalInstance) -> None:
    table = instance.table("plain")
    rows = _read(simple_connector(instance, _settings(instance)), instance, "plain", {})
    assert _keyed(rows) == _keyed(table.query())


def should_ignore_forged_principal_tags_in_the_iterator_applying_connector(instance: LocalInstance) -> None:
    # Given the connector filtering every read with the authorisations its settings give (A)
    settings = _settings(instance, query_time_iterator_class_name=SECURITY, query_time_iterator_config="visibility,A")
    connector = iterator_applying_connector(instance, settings)
    table = instance.table("plain")
    expected = table.query(iterator=SECURITY, iterator_config="visibility,A")
    # When requests claim principal tags that would grant more
    forged = _read(connector, instance, "plain", {"sleeper-auths": "A:B", "auths": "A,B"})
    # Then the rows are those of authorisation A alone
    assert _keyed(forged) == _keyed(expected)
    assert "B" not in forged.column("visibility").to_pylist()
    # And the parsed request holds no principal tags to be used
    assert not hasattr(parse_request(_with_tags(fr.ping(), {"auths": "B"})), "principal_tags")


def should_refuse_settings_taking_authorisations_from_the_request(instance: LocalInstance) -> None:
    # When the Lambda's environment asks for each caller's authorisations from a principal tag
    aws = SimpleNamespace(instance_id="inst", filesystem_options=None)
    environ = {
        "query_time_iterator_class_name": SECURITY,
        "query_time_iterator_config": "visibility,{auths}",
        "auths_principal_tag": "sleeper-auths",
    }
    # Then the connector refuses to start, naming the variable and what to do instead
    with pytest.raises(AthenaConnectorError, match="auths_principal_tag='sleeper-auths' is set") as refused:
        athena_settings(aws, environ)  # type: ignore[arg-type]
    assert refused.value.error_code == INVALID_INPUT
    # And a per-caller placeholder in the config is refused on its own too
    with pytest.raises(AthenaConnectorError, match="asks for each caller's authorisations"):
        _settings(instance, query_time_iterator_class_name=SECURITY, query_time_iterator_config="visibility,{auths}")


def should_refuse_a_query_time_iterator_on_the_simple_connector(instance: LocalInstance) -> None:
    # When the simple connector, which applies no iterator, is given a security filter
    settings = _settings(instance, query_time_iterator_class_name=SECURITY, query_time_iterator_config="visibility,A")
    # Then it refuses to be built rather than return unfiltered rows
    with pytest.raises(AthenaConnectorError, match="simple connector applies no iterator"):
        simple_connector(instance, settings)


@pytest.mark.parametrize(
    "connector_factory", [simple_connector, iterator_applying_connector], ids=["simple", "iterator"]
)
def should_refuse_a_split_naming_another_tables_file(instance: LocalInstance, connector_factory: Any) -> None:
    # Given a read request for a table without rules whose split names a file of a table with a security filter
    # (a request written by someone invoking the function directly, not one Athena sent)
    schema_name = str(instance.properties.get("sleeper.id"))
    connector = connector_factory(instance, _settings(instance))
    secret = instance.table("security_iterator").file_references()[0].filename
    plain = instance.table("plain").file_references()[0].filename
    escaped = plain.replace("/data/", f"/data/../../{instance.table('security_iterator').table_id}/data/", 1)
    full = fr.decode_schema(connector.handle(fr.get_table(schema_name, "plain"))["schema"])
    for file in (secret, escaped):
        names = file if connector_factory is simple_connector else json.dumps([file])
        split = {
            "spillLocation": {"@type": "S3SpillLocation", "bucket": "spill", "key": "k", "directory": True},
            "encryptionKey": None,
            "properties": {"_SleeperRelevantFiles": names, "_MinRowKey-key": str(-(2**63))},
        }
        # When it is read
        with pytest.raises(AthenaConnectorError) as refused:
            connector.handle(fr.read_records(schema_name, "plain", full, split))
        # Then it is refused, naming the file and the table, and nothing is read
        assert refused.value.error_code == ACCESS_DENIED
        assert repr(file) in str(refused.value) and "'plain'" in str(refused.value)
