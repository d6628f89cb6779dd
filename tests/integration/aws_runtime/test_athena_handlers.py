"""The Athena connector Lambdas on an AWS instance (moto): built from the environment as deployed (the instance from
``CONFIG_BUCKET``, the spill location from the SDK's ``spill_bucket`` / ``spill_prefix``), they answer Athena's
requests from ping to read records, and an unknown table gets the protocol's error."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import s3_client
from sleeper.api.table import Table
from sleeper.athena.exceptions import AthenaConnectorError
from sleeper.core import operations
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.lambdas import athena
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import aws_settings
from tests.unit.athena import federation_requests as fr

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)


@pytest.fixture
def table(instance: AwsInstance, monkeypatch: pytest.MonkeyPatch) -> Iterator[Table[AwsInstance]]:
    """A table of two leaves holding 40 rows, and connectors spilling to a bucket of their own."""
    spill_bucket = f"spill-{uuid.uuid4().hex[:10]}"
    s3_client(aws_settings()).create_bucket(
        Bucket=spill_bucket, CreateBucketConfiguration={"LocationConstraint": aws_settings().region}
    )
    monkeypatch.setenv(athena.SPILL_BUCKET_ENV, spill_bucket)
    monkeypatch.setenv(athena.SPILL_PREFIX_ENV, "spill")
    created = instance.create_table(
        f"athena-{uuid.uuid4().hex[:8]}",
        SCHEMA,
        split_points=[20],
        properties={"sleeper.table.ingest.job.files.commit.async": "false"},  # committed by the task itself
    )
    rows = pa.table({"key": pa.array(range(40), pa.int64()), "value": [f"v{k}" for k in range(40)]})
    source = f"{instance.data_bucket}/athena-source/{uuid.uuid4()}.parquet"
    pq.write_table(rows, source, filesystem=instance.filesystem)
    job = {"id": str(uuid.uuid4()), "tableName": created.name, "files": [source]}
    instance.queue(operations.INGEST_JOB_Q).send(json.dumps(job))
    run_task(instance, wait_seconds=0)
    athena.reset()
    yield created
    athena.reset()


def _read_all(handler: Any, schema_name: str, table_name: str, summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Drives a connector as Athena does: table, layout, splits, then each split's records."""
    full = fr.decode_schema(handler(fr.get_table(schema_name, table_name))["schema"])
    layout = handler(fr.get_table_layout(schema_name, table_name, full, summary))
    splits = handler(fr.get_splits(schema_name, table_name, layout["partitions"], summary))["splits"]
    rows: list[dict[str, Any]] = []
    for split in splits:
        response = handler(fr.read_records(schema_name, table_name, full, split, summary))
        assert response["@type"] == "ReadRecordsResponse"
        rows += fr.decode_block(response["records"]).to_pylist()
    return sorted(rows, key=lambda r: r["key"])


@pytest.mark.parametrize("handler", [athena.simple, athena.iterator_applying], ids=["simple", "iterator"])
def should_answer_athena_from_ping_to_records_as_a_sleeper_query_does(
    instance: AwsInstance, table: Table[AwsInstance], handler: Any
) -> None:
    # Given the instance's id as Athena's schema, and a range predicate on the row key
    schema_name = instance.instance_id.lower()
    summary = {"key": fr.sorted_ranges([(5, "EXACTLY", 30, "BELOW")], pa.int64())}  # 5 <= key < 30
    # When Athena pings, lists schemas and tables, and reads the table whole and over the range
    ping = handler(fr.ping())
    schemas = handler(fr.list_schemas())["schemas"]
    tables = handler(fr.list_tables(schema_name))["tables"]
    everything = _read_all(handler, schema_name, table.name, None)
    in_range = _read_all(handler, schema_name, table.name, summary)
    # Then it answers as a Sleeper connector, and the rows equal a Sleeper query of the same regions
    assert ping["sourceType"] == "Sleeper"
    assert schemas == [schema_name]
    assert {"schemaName": schema_name, "tableName": table.name.lower()} in tables
    assert everything == table.query(regions=[Region.whole(SCHEMA)]).sort_by("key").to_pylist()
    key_range = Range(field=SCHEMA.row_key_fields[0], min=5, max=30)
    expected = table.query(regions=[Region({"key": key_range})]).sort_by("key").to_pylist()
    assert in_range == expected and len(expected) == 25


def should_give_the_protocol_error_for_an_unknown_table(instance: AwsInstance, table: Table[AwsInstance]) -> None:
    # When Athena asks for a table the instance does not have
    with pytest.raises(AthenaConnectorError, match="ENTITY_NOT_FOUND_EXCEPTION"):
        athena.iterator_applying(fr.get_table(instance.instance_id.lower(), "no-such-table"))
