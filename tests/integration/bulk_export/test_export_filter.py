"""Bulk export with a filter, on a local instance: the exported rows equal ``Table.scan(filter=...)`` for every kind
of predicate, through the Python API, the queues' entries and ``sleeper export --where``; row key predicates plan only
the leaves they reach, value predicates skip row groups by statistics, the filter applies after the table's rules;
a bad filter is refused (``FilterError`` at the API, tracked FAILED with ``$.filter`` from the queue) and writes
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.instance import Instance
from sleeper.bulk_export.entry import handle_bulk_export, handle_leaf_partition_export
from sleeper.bulk_export.exceptions import BulkExportQueryError
from sleeper.bulk_export.model import BulkExportQuery, LeafPartitionExportSerDe
from sleeper.cli.main import run
from sleeper.core.filter import FilterError, InList
from sleeper.core.operations import LEAF_PARTITION_BULK_EXPORT_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.io.parquet_reader import SortedFileReader
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
    ],
)
ROWS = 3_000
SPLITS = [1_000, 2_000]
FILTERS = [
    "age > 90",
    "age = 5 or name = 'n7'",
    "not (age > 3)",
    "age in (1, 2, 3)",
    "age not between 2 and 98",
    "name is null",
    "name starts with 'n9'",
    "name like 'n1_'",
    "raw = x'0102'",
    "key between 990 and 1010 and age < 50",
    "key in (5, 1500, 2999) or key > 2995",
    "key > 5000",
]


def _input() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(ROWS)], pa.string()),
            "raw": pa.array([bytes([i % 3, i % 5]) for i in range(ROWS)], pa.binary()),
        }
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    local = sleeper.create_instance(tmp_path_factory.mktemp("export-filter") / "instance")
    table = local.create_table(
        "people", SCHEMA, split_points=SPLITS, properties={"sleeper.table.parquet.rowgroup.rows.max": "100"}
    )
    data = _input()
    table.ingest(data.slice(0, ROWS // 2))
    table.ingest(data.slice(ROWS // 2))
    return local


def _exported(files: list[str]) -> pa.Table:
    parts = [pq.read_table(f) for f in files]
    return pa.concat_tables(parts) if parts else pa.table({})


@pytest.mark.parametrize("row_filter", FILTERS)
def should_export_the_rows_a_filtered_scan_returns(instance: Instance, tmp_path: Path, row_filter: str) -> None:
    expected = instance.table("people").scan(filter=row_filter).to_arrow()
    result = instance.export_table("people", tmp_path, filter=row_filter)
    assert result["state"] == "COMPLETED" and result["rows"] == expected.num_rows
    if expected.num_rows:
        exported = _exported(result["files"])
        assert exported.select(expected.column_names).equals(expected.cast(exported.schema))
    else:
        assert all(pq.read_metadata(f).num_rows == 0 for f in result["files"])


def should_take_a_filter_model(instance: Instance, tmp_path: Path) -> None:
    result = instance.export_table("people", tmp_path, filter=InList("age", (1, 2)))
    expected = instance.table("people").scan(filter="age in (1, 2)").to_arrow()
    assert _exported(result["files"])["key"].to_pylist() == expected["key"].to_pylist()


def should_export_only_the_leaves_a_row_key_predicate_reaches(instance: Instance, tmp_path: Path) -> None:
    every = instance.export_table("people", tmp_path / "all")
    assert len(every["files"]) == 3
    first = instance.export_table("people", tmp_path / "first", filter="key < 500 and age = 1")
    assert len(first["files"]) == 1 and _exported(first["files"])["key"].to_pylist() == [1, 101, 201, 301, 401]
    two = instance.export_table("people", tmp_path / "two", filter="key in (3, 2999)")
    assert len(two["files"]) == 2 and two["rows"] == 2
    none = instance.export_table("people", tmp_path / "none", filter="key > 10 and key < 5")
    assert none["files"] == [] and none["rows"] == 0


def should_skip_row_groups_a_value_predicate_rules_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table whose value column "ts" rises with the key, in files of 100-row row groups
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("ts", PrimitiveType.LONG)])
    local = sleeper.create_instance(tmp_path / "instance")
    table = local.create_table(
        "t", schema, split_points=SPLITS, properties={"sleeper.table.parquet.rowgroup.rows.max": "100"}
    )
    table.ingest(pa.table({"key": pa.array(range(ROWS), pa.int64()), "ts": pa.array(range(0, ROWS * 10, 10))}))
    # And a reader that records the row groups each read decodes
    read: list[int] = []
    original = SortedFileReader.read_plan

    def recording(self: SortedFileReader, plan: object, **kwargs: object) -> object:
        read.extend(plan.row_groups)  # type: ignore[attr-defined]
        return original(self, plan, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SortedFileReader, "read_plan", recording)
    # When the table is exported whole, and then only its last 1% of "ts"
    local.export_table("t", tmp_path / "all")
    every = len(read)
    read.clear()
    result = local.export_table("t", tmp_path / "last", filter="ts >= 29700")
    # Then the filtered export decodes only the row group that can hold them
    assert every == 30 and len(read) == 1
    assert _exported(result["files"])["key"].to_pylist() == list(range(2970, ROWS))


def should_filter_what_the_tables_rules_give(tmp_path: Path) -> None:
    # Given a table summing counts, whose every stored row has count 1, ingested twice (each key's sum is 2)
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("count", PrimitiveType.LONG)])
    local = sleeper.create_instance(tmp_path / "instance")
    table = local.create_table("t", schema, properties={"sleeper.table.aggregations": "sum(count)"})
    data = pa.table({"key": pa.array(range(100), pa.int64()), "count": pa.array([1] * 100, pa.int64())})
    table.ingest(data)
    table.ingest(data)
    # When the rows whose aggregated count is 2 are exported, Then every key is, summed; and none has count 1
    summed = local.export_table("t", tmp_path / "two", filter="count >= 2")
    assert _exported(summed["files"])["count"].to_pylist() == [2] * 100
    assert local.export_table("t", tmp_path / "one", filter="count = 1")["rows"] == 0


@pytest.mark.parametrize(
    ("row_filter", "message"),
    [("agee > 3", "no column 'agee'"), ("age > 'x'", "compare it with an integer"), ("age >", "expected a value")],
)
def should_refuse_a_bad_filter_and_write_nothing(
    instance: Instance, tmp_path: Path, row_filter: str, message: str
) -> None:
    with pytest.raises(FilterError, match=message):
        instance.export_table("people", tmp_path, filter=row_filter, export_id="bad-api")
    assert not tmp_path.exists() or list(tmp_path.rglob("*")) == []
    assert instance.query_tracker.status("bad-api") is None


def _local(instance: Instance) -> LocalInstance:
    runtime = instance.runtime
    assert isinstance(runtime, LocalInstance)
    return runtime


def _drain_leaves(local: LocalInstance) -> int:
    queue = local.queue(LEAF_PARTITION_BULK_EXPORT_Q)
    handled = 0
    while messages := queue.receive(10):
        for message in messages:
            handle_leaf_partition_export(local, message.body)
            queue.delete(message.receipt_handle)
            handled += 1
    return handled


def should_export_the_filtered_rows_through_the_queues(instance: Instance) -> None:
    # Given an export message with a filter, as a client sends it to the bulk export queue
    local = _local(instance)
    body = json.dumps({"exportId": "queued-filter", "tableName": "people", "filter": "key >= 1990 and age < 20"})
    # When the planner handles it and the leaf exports run
    handle_bulk_export(local, body)
    assert _drain_leaves(local) == 2
    # Then the files written hold the filtered scan's rows, and the export is tracked COMPLETED
    table_id = instance.table("people").table_id
    directory = Path(local.bulk_export_uri.removeprefix("file://")) / table_id / "queued-filter"
    exported = _exported(sorted(str(p) for p in directory.glob("*.parquet"))).sort_by("key")
    expected = instance.table("people").scan(filter="key >= 1990 and age < 20").to_arrow()
    assert exported["key"].to_pylist() == expected["key"].to_pylist()
    status = local.query_tracker.status("queued-filter")
    assert status is not None and status.last_known_state is QueryState.COMPLETED
    assert status.row_count == expected.num_rows


def should_track_a_queued_export_with_a_bad_filter_failed_and_send_nothing(instance: Instance) -> None:
    local = _local(instance)
    body = json.dumps({"exportId": "queued-bad", "tableName": "people", "filter": "nope = 1"})
    line = handle_bulk_export(local, body)
    assert "$.filter" in line and "no column 'nope'" in line
    status = local.query_tracker.status("queued-bad")
    assert status is not None and status.last_known_state is QueryState.FAILED
    assert status.error_message is not None and "$.filter" in status.error_message
    assert local.queue(LEAF_PARTITION_BULK_EXPORT_Q).receive(10) == []
    # A filter that is not text is refused the same way
    line = handle_bulk_export(local, json.dumps({"exportId": "queued-number", "tableName": "people", "filter": 3}))
    assert "$.filter" in line
    status = local.query_tracker.status("queued-number")
    assert status is not None and status.last_known_state is QueryState.FAILED


def should_carry_the_filter_in_each_leaf_message_and_refuse_a_bad_one(instance: Instance) -> None:
    local = _local(instance)
    table = instance.table("people")
    serde = LeafPartitionExportSerDe(lambda table_id: local.table_by_id(table_id).schema)
    query = BulkExportQuery(export_id="leaf-filter", table_name="people", filter="age = 3")
    handle_bulk_export(local, query.to_json())
    messages = local.queue(LEAF_PARTITION_BULK_EXPORT_Q).receive(10)
    assert len(messages) == 3
    for message in messages:
        leaf = serde.from_json(message.body)
        assert str(leaf.filter) == "age = 3" and json.loads(message.body)["filter"] == "age = 3"
        local.queue(LEAF_PARTITION_BULK_EXPORT_Q).delete(message.receipt_handle)
    bad = json.loads(messages[0].body) | {"filter": "age = 'three'"}
    with pytest.raises(BulkExportQueryError, match=r"\$\.filter: .*compare it with an integer"):
        serde.from_json(json.dumps(bad))
    assert table.table_id == leaf.table_id


def should_export_with_where_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table on a local instance the command line names
    directory = tmp_path / "instance"
    local = sleeper.create_instance(directory)
    local.create_table("people", SCHEMA, split_points=SPLITS).ingest(_input())
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    # When it is exported with --where, Then the files hold the filtered scan's rows
    capsys.readouterr()
    assert run(["export", "people", str(tmp_path / "out"), "--where", "age between 10 and 12", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    expected = local.table("people").scan(filter="age between 10 and 12").to_arrow()
    assert result["rows"] == expected.num_rows
    assert _exported(result["files"])["key"].to_pylist() == expected["key"].to_pylist()
    # And a bad filter is one line naming the place, not a traceback, and writes nothing
    assert run(["export", "people", str(tmp_path / "bad"), "--where", "age >"]) != 0
    err = capsys.readouterr().err
    assert "expected a value" in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()
