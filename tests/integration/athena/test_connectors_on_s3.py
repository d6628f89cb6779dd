"""The Athena connectors end to end: federation requests in the SDK's shapes against tables whose data files and
spilled blocks live on a moto S3 server, compared with Sleeper queries of the same tables."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sleeper.adapters.aws.clients import s3_client
from sleeper.api.table import Table
from sleeper.athena import (
    AthenaConnectorError,
    AthenaSettings,
    CompositeHandler,
    athena_schema,
    iterator_applying_connector,
    lambda_error_payload,
    simple_connector,
)
from sleeper.athena.exceptions import ENTITY_NOT_FOUND, OPERATION_NOT_SUPPORTED
from sleeper.athena.protocol import EncryptionKey, S3SpillLocation
from sleeper.athena.spill import read_spilled_block
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import FileSystemOptions, S3Options
from sleeper.io.parquet import SortedFileWriter
from sleeper.query.executor import table_query
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.store import StateStore
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint
from tests.unit.athena import federation_requests as fr

pytestmark = [pytest.mark.integration, pytest.mark.aws]

INSTANCE_ID = "athena-it"
SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("seq", PrimitiveType.INT)],
    values=[Field("name", PrimitiveType.STRING, nullable=True), Field("count", PrimitiveType.LONG)],
)
AGG_SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("count", PrimitiveType.LONG)])


@dataclass(frozen=True)
class World:
    instance: LocalInstance
    options: FileSystemOptions
    data_bucket: str
    spill_bucket: str

    def settings(self) -> AthenaSettings:
        return AthenaSettings(instance_id=INSTANCE_ID, spill_bucket=self.spill_bucket, options=self.options)

    def prefix(self, table: Table[LocalInstance]) -> str:
        return f"s3a://{self.data_bucket}/{table.table_id}"

    def store(self, table: Table[LocalInstance]) -> StateStore:
        """The table's state store, for files written under its prefix in the data bucket (the local instance's own
        store accepts files only under its directory)."""
        return StateStore(
            schema=table.schema,
            table_id=table.table_id,
            backend=self.instance.state_store_backend,
            data_prefix=self.prefix(table),
        )


def _rows(keys: Sequence[int], seq: int) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "key": pa.array(keys, pa.int64()),
            "seq": pa.array([seq] * len(keys), pa.int32()),
            "name": pa.array([None if k % 7 == 0 else f"n{k}" for k in keys]),
            "count": pa.array([k * 10 + seq for k in keys], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    endpoint = moto_endpoint()
    s3 = s3_client(aws_settings())
    data_bucket, spill_bucket = f"data-{uuid.uuid4().hex[:10]}", f"spill-{uuid.uuid4().hex[:10]}"
    for bucket in (data_bucket, spill_bucket):
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})  # type: ignore[typeddict-item]
    options = FileSystemOptions(
        s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing")
    )
    instance = LocalInstance.create(Path(tmp_path_factory.mktemp("athena")), instance_id=INSTANCE_ID)
    w = World(instance=instance, options=options, data_bucket=data_bucket, spill_bucket=spill_bucket)

    # A table with four leaves, two ingests (two files on most leaves), a file on the root, and a file whose
    # references remain on two leaves only (the other leaves' rows of it were compacted into other files).
    table = instance.create_table("Readings", SCHEMA, split_points=[100, 200, 300])
    for seq, keys in ((1, range(0, 400, 3)), (2, range(50, 350, 5))):
        ingest_batches(
            table.schema, table.properties, w.store(table), w.prefix(table), [_rows(keys, seq)], options=options
        )
    tree = table.state_store.partition_tree()
    root = next(p for p in tree.partitions if p.parent_id is None)
    leaves = tree.leaves
    _add_file(w, table, _rows(range(1, 400, 11), 3), [root.id])
    _add_file(w, table, _rows(range(2, 400, 4), 4), [leaves[0].id, leaves[2].id])

    # A table aggregating counts per key, ingested three times so keys repeat across files.
    agg = instance.create_table(
        "totals", AGG_SCHEMA, split_points=["g", "p"], properties={"sleeper.table.aggregations": "sum(count)"}
    )
    words = [f"{c}{i}" for c in "adhkmqtz" for i in range(30)]
    for i in range(3):
        batch = pa.record_batch(
            {"key": pa.array(words[i::2]), "count": pa.array([i + 1] * len(words[i::2]), pa.int64())}
        )
        ingest_batches(agg.schema, agg.properties, w.store(agg), w.prefix(agg), [batch], options=options)
    return w


def _add_file(w: World, table: Table[LocalInstance], batch: pa.RecordBatch, partition_ids: Sequence[str]) -> None:
    location = f"{w.prefix(table)}/data/partition_extra/{uuid.uuid4()}.parquet"
    with SortedFileWriter(location, table.schema, options=w.options) as writer:
        writer.write(batch.sort_by([("key", "ascending"), ("seq", "ascending")]))
    w.store(table).add_files(
        [FileReference(filename=location, partition_id=p, number_of_rows=batch.num_rows) for p in partition_ids]
    )


@dataclass
class AthenaRun:
    rows: pa.Table
    splits: list[dict[str, Any]]
    responses: list[dict[str, Any]]


def _athena_query(
    w: World,
    connector: CompositeHandler,
    table: str,
    summary: Mapping[str, Any] | None = None,
    *,
    columns: Sequence[str] | None = None,
    max_block_size: int = 16_000_000,
    max_inline_block_size: int = 5_000_000,
) -> AthenaRun:
    """Runs a query the way Athena drives a connector: table, layout, splits (all pages), then each split's read."""
    got = connector.handle(fr.get_table(INSTANCE_ID.lower(), table.lower()))
    full = fr.decode_schema(got["schema"])
    projected = pa.schema([full.field(c) for c in columns]) if columns else full
    layout = connector.handle(fr.get_table_layout(INSTANCE_ID, table, full, summary))
    splits: list[dict[str, Any]] = []
    token = None
    while True:
        page = connector.handle(
            fr.get_splits(INSTANCE_ID, table, layout["partitions"], summary, continuation_token=token)
        )
        splits.extend(page["splits"])
        token = page["continuationToken"]
        if token is None:
            break
    batches, responses = [], []
    for split in splits:
        response = connector.handle(
            fr.read_records(
                INSTANCE_ID,
                table,
                projected,
                split,
                summary,
                max_block_size=max_block_size,
                max_inline_block_size=max_inline_block_size,
            )
        )
        responses.append(response)
        if response["@type"] == "ReadRecordsResponse":
            batches.append(fr.decode_block(response["records"]))
        else:
            key = EncryptionKey.from_dict(response["encryptionKey"])
            schema = fr.decode_schema(response["schema"])
            for remote in response["remoteBlocks"]:
                location = S3SpillLocation.from_dict(remote)
                batches.append(read_spilled_block(location, schema, key, options=w.options))
    return AthenaRun(rows=pa.Table.from_batches(batches, schema=projected), splits=splits, responses=responses)


def _sorted(rows: pa.Table, schema: pa.Schema) -> list[dict[str, Any]]:
    table = rows.select(schema.names).cast(schema)
    return table.sort_by(
        [(n, "ascending") for n in schema.names if not pa.types.is_list(schema.field(n).type)]
    ).to_pylist()


def _key_range(schema: Schema, low: object, high: object) -> Region:
    return Region.of([Range(field=schema.field("key"), min=low, max=high)])  # type: ignore[arg-type]


KEY = pa.int64()


@pytest.mark.parametrize(
    "connector_factory", [simple_connector, iterator_applying_connector], ids=["simple", "iterator"]
)
@pytest.mark.parametrize(
    ("summary", "keys", "regions"),
    [
        ({}, None, None),
        ({"key": fr.equatable([5, 102, 250, 399, 1000], KEY)}, [[5], [102], [250], [399], [1000]], None),
        ({"key": fr.sorted_ranges([(120, "EXACTLY", 310, "BELOW")], KEY)}, None, [(120, 310)]),
        (
            {"key": fr.sorted_ranges([(None, "ABOVE", 40, "EXACTLY"), (199, "ABOVE", 205, "EXACTLY")], KEY)},
            None,
            [(-(2**63), 41), (200, 206)],
        ),
    ],
    ids=["full-scan", "exact-keys", "range", "two-ranges"],
)
def should_return_the_rows_of_a_sleeper_query(
    world: World,
    connector_factory: Any,
    summary: dict[str, Any],
    keys: list[list[int]] | None,
    regions: list[tuple[int, int]] | None,
) -> None:
    # Given
    table = world.instance.table("Readings")
    connector = connector_factory(world.instance, world.settings())
    expected = table_query(
        table,
        keys=keys,
        regions=None if regions is None else [_key_range(SCHEMA, lo, hi) for lo, hi in regions],
        options=world.options,
    )

    # When
    run = _athena_query(world, connector, "Readings", summary)

    # Then
    target = athena_schema(SCHEMA)
    assert expected.num_rows > 0 or keys is not None
    assert _sorted(run.rows, target) == _sorted(expected, target)


def should_make_one_split_per_file_in_the_simple_connector_and_per_leaf_in_the_other(world: World) -> None:
    # Given
    table = world.instance.table("Readings")
    files = {r.filename for r in table.file_references()}
    leaves = list(table.leaf_partitions())

    # When
    simple = _athena_query(world, simple_connector(world.instance, world.settings()), "Readings")
    per_leaf = _athena_query(world, iterator_applying_connector(world.instance, world.settings()), "Readings")
    pruned = _athena_query(
        world,
        iterator_applying_connector(world.instance, world.settings()),
        "Readings",
        {"key": fr.equatable([150], KEY)},
    )

    # Then
    assert sorted(s["properties"]["_SleeperRelevantFiles"] for s in simple.splits) == sorted(files)
    assert len(per_leaf.splits) == len(leaves)
    assert len(pruned.splits) == 1
    assert pruned.splits[0]["properties"]["_MinRowKey-key"] == "100"
    assert pruned.splits[0]["properties"]["_MaxRowKey-key"] == "200"
    assert all(s["encryptionKey"] is not None for s in per_leaf.splits)
    assert all(s["spillLocation"]["bucket"] == world.spill_bucket for s in per_leaf.splits)


def should_merge_and_aggregate_like_a_sleeper_query_and_the_simple_connector_refuse(world: World) -> None:
    # Given
    table = world.instance.table("totals")
    connector = iterator_applying_connector(world.instance, world.settings())
    summary = {"key": fr.sorted_ranges([("d", "EXACTLY", "m5", "EXACTLY")], pa.string())}

    # When
    full = _athena_query(world, connector, "totals")
    ranged = _athena_query(world, connector, "totals", summary)
    with pytest.raises(AthenaConnectorError, match="sleeper.table.aggregations") as refused:
        _athena_query(world, simple_connector(world.instance, world.settings()), "totals")

    # Then
    target = athena_schema(AGG_SCHEMA)
    assert _sorted(full.rows, target) == _sorted(table_query(table, options=world.options), target)
    expected_range = table_query(
        table,
        regions=[Region.of([Range(field=AGG_SCHEMA.field("key"), min="d", max="m5", max_inclusive=True)])],
        options=world.options,
    )
    assert _sorted(ranged.rows, target) == _sorted(expected_range, target)
    # And the simple connector, which would return the rows before aggregation, refuses the table
    assert refused.value.error_code == OPERATION_NOT_SUPPORTED
    assert "'totals'" in str(refused.value) and "iterator-applying connector" in str(refused.value)


def should_apply_value_predicates_after_aggregation(world: World) -> None:
    # Given
    table = world.instance.table("totals")
    connector = iterator_applying_connector(world.instance, world.settings())
    summary = {"count": fr.sorted_ranges([(4, "EXACTLY", None, "BELOW")], pa.int64())}

    # When
    run = _athena_query(world, connector, "totals", summary, columns=["key", "count"])

    # Then
    expected = [r for r in table_query(table, options=world.options).to_pylist() if r["count"] >= 4]
    assert expected
    assert sorted(run.rows.to_pylist(), key=lambda r: r["key"]) == sorted(expected, key=lambda r: r["key"])


def should_spill_large_results_encrypted_to_s3_and_read_back_equal(world: World) -> None:
    # Given
    table = world.instance.table("Readings")
    connector = iterator_applying_connector(world.instance, world.settings())
    s3 = s3_client(aws_settings())

    # When
    run = _athena_query(
        world, connector, "Readings", columns=["key", "seq", "name"], max_block_size=500, max_inline_block_size=400
    )

    # Then
    remote = [r for r in run.responses if r["@type"] == "RemoteReadRecordsResponse"]
    assert len(remote) == len(run.responses)
    assert max(len(r["remoteBlocks"]) for r in remote) > 1
    first = remote[0]["remoteBlocks"][0]
    body = s3.get_object(Bucket=first["bucket"], Key=first["key"])["Body"].read()
    key = EncryptionKey.from_dict(remote[0]["encryptionKey"])
    assert key is not None
    plain = AESGCM(key.key).decrypt(key.nonce, body, None)
    assert plain[:4] != b"\xff\xff\xff\xff"  # a legacy-format IPC message, as the SDK spills
    block = pa.ipc.read_record_batch(pa.py_buffer(plain), fr.decode_schema(remote[0]["schema"]))
    longest = max((n for n in block.column("name").to_pylist() if n), key=len).encode()
    assert len(longest) >= 3 and longest in plain and longest not in body
    target = pa.schema([athena_schema(SCHEMA).field(n) for n in ("key", "seq", "name")])
    assert _sorted(run.rows, target) == _sorted(table_query(table, options=world.options), target)


def should_list_schemas_and_tables_and_describe_a_table(world: World) -> None:
    # Given
    connector = simple_connector(world.instance, world.settings())

    # When
    ping = connector.handle(fr.ping())
    schemas = connector.handle(fr.list_schemas())
    first_page = connector.handle(fr.list_tables(INSTANCE_ID, page_size=1))
    second_page = connector.handle(fr.list_tables(INSTANCE_ID, next_token=first_page["nextToken"], page_size=1))
    described = connector.handle(fr.get_table(INSTANCE_ID, "Readings"))

    # Then
    assert ping["@type"] == "PingResponse" and ping["serDeVersion"] == 4
    assert schemas == {"@type": "ListSchemasResponse", "catalogName": fr.CATALOG, "schemas": [INSTANCE_ID]}
    assert [t["tableName"] for t in first_page["tables"] + second_page["tables"]] == ["Readings", "totals"]
    assert second_page["nextToken"] is None
    schema = fr.decode_schema(described["schema"])
    assert [(f.name, f.type) for f in schema] == [
        ("key", pa.int64()),
        ("seq", pa.int32()),
        ("name", pa.string()),
        ("count", pa.int64()),
    ]
    assert described["partitionColumns"] == []


@pytest.mark.parametrize(
    "event",
    [fr.get_table(INSTANCE_ID, "nope"), fr.get_table("other-instance", "Readings")],
    ids=["unknown-table", "unknown-schema"],
)
def should_fail_with_entity_not_found_for_unknown_tables(world: World, event: dict[str, Any]) -> None:
    # Given
    connector = iterator_applying_connector(world.instance, world.settings())

    # When
    with pytest.raises(AthenaConnectorError) as caught:
        connector.handle(event)

    # Then
    assert caught.value.error_code == ENTITY_NOT_FOUND
    payload = lambda_error_payload(caught.value)
    assert payload["errorType"] == "AthenaConnectorError"
    assert payload["errorMessage"].startswith("ENTITY_NOT_FOUND_EXCEPTION")
