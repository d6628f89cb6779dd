"""The metadata handler's layout and splits over an in-memory table (no data files are read)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from sleeper.athena import AthenaConnectorError, AthenaSettings, ConnectorKind, MetadataHandler
from sleeper.athena.exceptions import INVALID_INPUT
from sleeper.athena.handlers import MAX_SPLITS_PER_RESPONSE
from sleeper.athena.splits import FILE_REGIONS_FIELD, RELEVANT_FILES_FIELD
from sleeper.core.partition import PartitionTree, partitions_from_split_points
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.deletes import PendingDelete
from sleeper.core.statestore.references import FileReference
from tests.unit.athena import federation_requests as fr

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.BYTE_ARRAY)], values=[Field("v", PrimitiveType.LONG)])


@dataclass
class FakeStateStore:
    tree: PartitionTree
    references: list[FileReference]

    def partition_tree(self) -> PartitionTree:
        return self.tree

    def file_references(self) -> list[FileReference]:
        return self.references

    def pending_deletes(self) -> tuple[PendingDelete, ...]:
        return ()

    def holds_deleted_rows(self) -> bool:
        return False


@dataclass
class FakeTable:
    name: str
    schema: Schema
    state_store: FakeStateStore
    properties: TableProperties = field(default_factory=lambda: TableProperties(InstanceProperties()))
    table_id: str = "t-id"


@dataclass
class Listing:
    table_name: str


class FakeInstance:
    def __init__(self, table: FakeTable) -> None:
        self._table = table

    def tables(self) -> list[Listing]:
        return [Listing(self._table.name)]

    def table(self, name: str) -> FakeTable:
        from sleeper.core.exceptions import TableNotFoundError

        if name != self._table.name:
            raise TableNotFoundError(name)
        return self._table


def _table(files_per_leaf: int = 1) -> FakeTable:
    tree = PartitionTree(SCHEMA, partitions_from_split_points(SCHEMA, [b"g", b"p"]))
    leaves = tree.leaves
    references = [
        FileReference(filename=f"s3a://d/{leaf.id}-{i}.parquet", partition_id=leaf.id, number_of_rows=1)
        for leaf in leaves
        for i in range(files_per_leaf)
    ]
    shared = "s3a://d/shared.parquet"
    references += [FileReference(filename=shared, partition_id=p.id, number_of_rows=1) for p in (leaves[0], leaves[2])]
    return FakeTable(name="t", schema=SCHEMA, state_store=FakeStateStore(tree, references))


def _handler(kind: ConnectorKind, table: FakeTable, **settings: Any) -> MetadataHandler:
    values: dict[str, Any] = {"instance_id": "inst", "spill_bucket": "spill", **settings}
    return MetadataHandler(FakeInstance(table), AthenaSettings(**values), kind, new_id=lambda: "split-id")


def _splits(handler: MetadataHandler, summary: dict[str, Any] | None = None, **identity: str) -> list[dict[str, Any]]:
    full = pa.schema([pa.field("key", pa.binary()), pa.field("v", pa.int64())])
    layout = handler.handle(fr.get_table_layout("inst", "t", full, summary))
    request = fr.get_splits("inst", "t", layout["partitions"], summary)
    request["identity"] = fr.identity(identity)
    splits: list[dict[str, Any]] = []
    while True:
        page = handler.handle(request)
        splits.extend(page["splits"])
        if page["continuationToken"] is None:
            return splits
        request["continuationToken"] = page["continuationToken"]


def should_limit_a_shared_file_to_the_leaves_that_reference_it_in_simple_splits() -> None:
    # Given
    handler = _handler(ConnectorKind.SIMPLE, _table())

    # When
    splits = _splits(handler)

    # Then
    by_file = {s["properties"][RELEVANT_FILES_FIELD]: s["properties"] for s in splits}
    assert len(by_file) == len(splits) == 4
    regions = json.loads(by_file["s3a://d/shared.parquet"][FILE_REGIONS_FIELD])
    assert regions == [{"key": ["", fr.b64(b"g")]}, {"key": [fr.b64(b"p"), None]}]


def should_prune_leaves_by_row_key_and_write_byte_bounds_as_base64() -> None:
    # Given
    table = _table()
    handler = _handler(ConnectorKind.ITERATOR_APPLYING, table)
    summary = {"key": fr.equatable([b"k"], pa.binary())}
    middle = table.state_store.tree.leaves[1]

    # When
    splits = _splits(handler, summary)

    # Then
    assert len(splits) == 1
    properties = splits[0]["properties"]
    assert properties["_MinRowKey-key"] == fr.b64(b"g")
    assert properties["_MaxRowKey-key"] == fr.b64(b"p")
    assert json.loads(properties[RELEVANT_FILES_FIELD]) == [f"s3a://d/{middle.id}-0.parquet"]


def should_page_splits_with_a_continuation_token() -> None:
    # Given
    handler = _handler(ConnectorKind.SIMPLE, _table(files_per_leaf=MAX_SPLITS_PER_RESPONSE // 2))

    # When
    splits = _splits(handler)

    # Then
    files = [s["properties"][RELEVANT_FILES_FIELD] for s in splits]
    assert len(files) == len(set(files)) == 3 * (MAX_SPLITS_PER_RESPONSE // 2) + 1


def should_take_spill_bucket_from_identity_and_leave_keys_out_when_encryption_is_off() -> None:
    # Given
    handler = _handler(ConnectorKind.ITERATOR_APPLYING, _table(), encrypt_spills=False, spill_prefix="pre")

    # When
    splits = _splits(handler, spill_bucket="other")

    # Then
    assert {s["encryptionKey"] is None for s in splits} == {True}
    assert splits[0]["spillLocation"] == {
        "@type": "S3SpillLocation",
        "bucket": "other",
        "key": f"pre/{fr.QUERY_ID}/split-id",
        "directory": True,
    }


def should_refuse_splits_without_a_spill_bucket() -> None:
    # Given
    handler = _handler(ConnectorKind.SIMPLE, _table(), spill_bucket=None)

    # When / Then
    with pytest.raises(AthenaConnectorError) as caught:
        _splits(handler)
    assert caught.value.error_code == INVALID_INPUT


def should_give_encryption_keys_of_aes_256_with_12_byte_nonces() -> None:
    # Given
    handler = _handler(ConnectorKind.SIMPLE, _table())

    # When
    splits = _splits(handler)

    # Then
    keys = {
        (len(base64.b64decode(s["encryptionKey"]["key"])), len(base64.b64decode(s["encryptionKey"]["nonce"])))
        for s in splits
    }
    assert keys == {(32, 12)}
    assert len({s["encryptionKey"]["key"] for s in splits}) == len(splits)


@pytest.mark.parametrize("kind", [ConnectorKind.SIMPLE, ConnectorKind.ITERATOR_APPLYING])
def should_refuse_a_layout_when_a_file_is_referenced_on_a_partition_the_tree_does_not_hold(kind: ConnectorKind) -> None:
    # Given a table whose references name a partition its tree does not hold (files and partitions not fitting)
    table = _table()
    table.state_store.references.append(
        FileReference(filename="s3a://d/gone.parquet", partition_id="gone", number_of_rows=1)
    )
    full = pa.schema([pa.field("key", pa.binary()), pa.field("v", pa.int64())])

    # When the layout is asked for, Then it is refused naming the partition, rather than served without its rows
    with pytest.raises(AthenaConnectorError, match=r"table t-id has files referenced on partitions .*\(gone\)"):
        _handler(kind, table).handle(fr.get_table_layout("inst", "t", full, None))
