"""Adding a nullable value column and truncating, on a local instance, through every door: a column added after rows
were written reads as nulls for them (scan, filtered scan, queued scan with S3 and SQS results, bulk export, Athena,
the Iceberg view, compaction by both engines), rows ingested afterwards carry its values, refused changes leave the
schema as it was; a truncate empties every door in one CLEAR_FILES commit and keeps the partitions."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.schema_change import add_column, parse_field_type, truncate
from sleeper.athena import AthenaSettings, simple_connector
from sleeper.compaction.execution import compaction_batches
from sleeper.core.exceptions import PropertyError, SchemaError
from sleeper.core.schema import Field, ListType, PrimitiveType, Schema, TimestampType, ValueType
from sleeper.iceberg.catalog import load_catalog
from sleeper.io.exceptions import SchemaMismatchError
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("name", PrimitiveType.STRING)])
VIEW = "evolve.rows"
OLD = 300
"""Rows ingested before the column is added (two ingests: two files on each leaf)."""


def _old_rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "name": [f"n{k}" for k in keys]})


def _new_rows() -> pa.Table:
    keys = list(range(1000, 1100))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "name": [f"m{k}" for k in keys],
            "score": pa.array([None if k % 10 == 0 else k / 4 for k in keys], pa.float64()),
            "note": pa.array([None if k % 3 == 0 else f"note {k}" for k in keys], pa.string()),
        }
    )


def _expected() -> pa.Table:
    old = _old_rows(0, OLD)
    old = old.append_column(pa.field("score", pa.float64()), pa.nulls(OLD, pa.float64()))
    old = old.append_column(pa.field("note", pa.string()), pa.nulls(OLD, pa.string()))
    return pa.concat_tables([old, _new_rows()])


def _make(instance: Any, name: str, properties: dict[str, str] | None = None) -> Any:
    """A table with rows written before a column ``score`` is added, then rows with values for it."""
    table = instance.create_table(name, SCHEMA, split_points=[150, 1050], properties=properties)
    table.ingest(_old_rows(0, 200))
    table.ingest(_old_rows(200, OLD))
    return table


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[str]]:
    """An instance and its table: old rows, a first Iceberg publish, the column added, new rows ingested."""
    instance = sleeper.create_instance(tmp_path_factory.mktemp("add-column") / "instance")
    table = _make(instance, "evolving", {"sleeper.table.iceberg.name": VIEW})
    instance.publish_iceberg("evolving")
    old_files = sorted({r.filename for r in table.file_references()})
    table = add_column(table, "score", ValueType.DOUBLE)
    table = add_column(table, "note", PrimitiveType.STRING)
    table.ingest(_new_rows())
    return instance, table, old_files


def _equal(got: pa.Table, expected: pa.Table) -> None:
    got = got.sort_by("key")
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name


def should_add_the_column_to_the_saved_schema_without_rewriting_a_file(evolved: tuple[Any, Any, list[str]]) -> None:
    instance, table, old_files = evolved
    saved = instance.table("evolving").schema
    assert saved.value_fields[-2:] == (
        Field("score", ValueType.DOUBLE, nullable=True),
        Field("note", PrimitiveType.STRING, nullable=True),
    )
    assert set(old_files) <= {r.filename for r in table.file_references()}
    for filename in old_files:
        assert pq.read_schema(filename.removeprefix("file://")).names == ["key", "name"]


def should_read_nulls_for_old_rows_and_values_for_new_ones_in_a_scan(evolved: tuple[Any, Any, list[str]]) -> None:
    _, table, _ = evolved
    rows = table.scan().to_arrow()
    assert rows.schema.field("score").type == pa.float64()
    _equal(rows, _expected())
    _equal(
        table.scan(columns=["key", "score"], ranges={"key": (100, 200)}).to_arrow(),
        _expected().slice(100, 100).select(["key", "score"]),
    )
    _equal(table.scan(keys=[[5]]).to_arrow(), _expected().slice(5, 1))


def should_filter_on_the_new_column(evolved: tuple[Any, Any, list[str]]) -> None:
    _, table, _ = evolved
    expected = _expected()
    nulls = table.scan(filter="score is null").to_arrow()
    above = table.scan(filter="score > 260").to_arrow()
    _equal(nulls, expected.filter(pc.is_null(expected.column("score"))))
    _equal(above, expected.filter(pc.greater(expected.column("score"), 260)))


@pytest.mark.parametrize("results", ["s3", "sqs"])
def should_read_nulls_for_old_rows_in_a_queued_scan(evolved: tuple[Any, Any, list[str]], results: str) -> None:
    _, table, _ = evolved
    _equal(table.scan(via_queue=True, queue_results=results).to_arrow(), _expected())


def should_export_nulls_for_old_rows(evolved: tuple[Any, Any, list[str]], tmp_path: Path) -> None:
    instance, _, _ = evolved
    result = instance.export_table("evolving", tmp_path / "export")
    exported = pa.concat_tables([pq.read_table(path) for path in result["files"]])
    _equal(exported, _expected())


def should_read_nulls_for_old_rows_through_athena(evolved: tuple[Any, Any, list[str]]) -> None:
    instance, _, _ = evolved
    runtime = instance.runtime
    schema_name = str(runtime.properties.get("sleeper.id"))
    connector = simple_connector(runtime, AthenaSettings(instance_id=schema_name, spill_bucket="spill"))
    full = fr.decode_schema(connector.handle(fr.get_table(schema_name, "evolving"))["schema"])
    assert "note" in full.names
    layout = connector.handle(fr.get_table_layout(schema_name, "evolving", full))
    page = connector.handle(fr.get_splits(schema_name, "evolving", layout["partitions"]))
    batches = [
        fr.decode_block(connector.handle(fr.read_records(schema_name, "evolving", full, split))["records"])
        for split in page["splits"]
    ]
    _equal(pa.Table.from_batches(batches, schema=full), _expected().select(full.names))


def should_give_the_iceberg_view_the_column_with_nulls_for_old_files(evolved: tuple[Any, Any, list[str]]) -> None:
    # Given a view published before the column was added
    instance, _, _ = evolved
    # When it is published again
    instance.publish_iceberg("evolving")
    view = load_catalog(instance.runtime.data_root, None).load_table(VIEW)
    # Then its schema has the column, optional, and its scan reads nulls from the old files
    assert [f.name for f in view.schema().fields] == ["key", "name", "score", "note"]
    assert not view.schema().find_field("score").required
    _equal(view.scan().to_arrow(), _expected())


@pytest.mark.parametrize("engine", ["ARROW", "DATAFUSION"])
def should_write_the_column_into_compaction_output(tmp_path: Path, engine: str) -> None:
    # Given a table of the engine with old files and new rows
    instance = sleeper.create_instance(tmp_path / "instance")
    table = _make(instance, "compacted", {"sleeper.table.data.engine": engine})
    table = add_column(add_column(table, "score", "DoubleType"), "note", "string")
    table.ingest(_new_rows())
    # When every file is compacted
    instance.compact_now("compacted", compact_all=True)
    # Then each leaf has one file, holding the column (nulls for old rows), and the scan is unchanged
    table = instance.table("compacted")
    files = sorted({r.filename for r in table.file_references()})
    assert len(files) == len(table.leaf_partitions()) == 3
    for filename in files:
        assert pq.read_schema(filename.removeprefix("file://")).names == ["key", "name", "score", "note"]
    written = pa.concat_tables([pq.read_table(f.removeprefix("file://")) for f in files])
    _equal(written, _expected())
    _equal(table.scan().to_arrow(), _expected())


def should_refuse_to_compact_a_file_holding_a_column_the_schema_read_lacks(
    evolved: tuple[Any, Any, list[str]],
) -> None:
    # Given a file written with the new column, and the schema as read before the column was added
    _, table, old_files = evolved
    new_file = next(r.filename for r in table.file_references() if r.filename not in old_files)
    # When a compaction merges it with that stale schema
    with ExitStack() as stack, pytest.raises(SchemaMismatchError, match="'score'.*older than the file"):
        list(compaction_batches([new_file], SCHEMA, None, stack=stack))


@pytest.mark.parametrize(
    ("column", "type_", "nullable", "error", "message"),
    [
        ("key", "LongType", True, SchemaError, "already has a row key field 'key'"),
        ("name", "StringType", True, SchemaError, "already has a value field 'name'"),
        ("count", "LongType", False, SchemaError, "must be nullable"),
        ("count", "Decimal", True, SchemaError, "unknown column type 'Decimal'"),
        ("", "LongType", True, SchemaError, "needs a name"),
    ],
)
def should_refuse_a_column_that_cannot_be_added_and_change_nothing(
    tmp_path: Path, column: str, type_: str, nullable: bool, error: type[Exception], message: str
) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA)
    table.ingest(_old_rows(0, 10))
    saved = dict(instance.table("t").properties.items())
    with pytest.raises(error, match=message):
        add_column(table, column, type_, nullable=nullable)
    assert dict(instance.table("t").properties.items()) == saved
    assert instance.table("t").scan().to_arrow().column_names == ["key", "name"]


def should_refuse_a_column_the_tables_aggregations_do_not_cover(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("count", PrimitiveType.LONG)])
    table = instance.create_table("totals", schema, properties={"sleeper.table.aggregations": "sum(count)"})
    with pytest.raises(PropertyError):
        add_column(table, "extra", "LongType")
    assert instance.table("totals").schema == schema


def should_refuse_a_nanosecond_timestamp_on_a_table_with_an_iceberg_view(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.iceberg.name": "v.t"})
    with pytest.raises(SchemaError, match="Iceberg view"):
        add_column(table, "at", TimestampType("ns"))
    assert instance.table("t").schema == SCHEMA


def should_parse_column_types_by_name_short_name_and_json() -> None:
    assert parse_field_type("LongType") is PrimitiveType.LONG
    assert parse_field_type("double") is ValueType.DOUBLE
    assert parse_field_type("timestamp") == TimestampType("us")
    assert parse_field_type('{"ListType": {"elementType": "StringType"}}') == ListType(PrimitiveType.STRING)
    with pytest.raises(SchemaError, match="TimestampType unit"):
        parse_field_type('{"TimestampType": {"unit": "h"}}')


def should_truncate_every_door_in_one_commit_keeping_partitions(tmp_path: Path) -> None:
    # Given a published table with rows on three leaves
    instance = sleeper.create_instance(tmp_path / "instance")
    table = _make(instance, "t", {"sleeper.table.iceberg.name": "trunc.t"})
    instance.publish_iceberg("t")
    leaves = [p.id for p in table.leaf_partitions()]
    files = [Path(f.removeprefix("file://")) for f in {r.filename for r in table.file_references()}]
    head = table.history().num_rows
    # When it is truncated
    table = truncate(table)
    # Then one CLEAR_FILES transaction emptied it, its partitions are kept and its files deleted
    history = table.history()
    assert history.num_rows == head + 1
    assert history.column("type").to_pylist()[-1] == "CLEAR_FILES"
    assert [p.id for p in table.leaf_partitions()] == leaves
    assert table.file_references() == [] and not any(f.exists() for f in files)
    # And every door returns no rows
    assert table.scan().to_arrow().num_rows == 0
    assert table.scan(via_queue=True).to_arrow().num_rows == 0
    assert instance.export_table("t", tmp_path / "export")["files"] == []
    assert load_catalog(instance.runtime.data_root, None).load_table("trunc.t").scan().to_arrow().num_rows == 0
    # And later ingests are read as usual
    table.ingest(_old_rows(0, 50))
    _equal(table.scan().to_arrow(), _old_rows(0, 50))


def should_truncate_an_offline_table(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    _make(instance, "t")
    instance.set_table_online("t", False)
    assert truncate(instance.table("t")).scan().to_arrow().num_rows == 0


def should_delete_a_file_added_while_the_truncate_ran_with_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table, and another writer that ingests rows just before the truncate appends CLEAR_FILES
    instance = sleeper.create_instance(tmp_path / "instance")
    table = _make(instance, "t")
    other = sleeper.connect(tmp_path / "instance")
    store = table.state_store
    append = store.add_transaction

    def racing_append(transaction: Any, **kwargs: Any) -> Any:
        other.table("t").ingest(_old_rows(500, 510))
        return append(transaction, **kwargs)

    monkeypatch.setattr(store, "add_transaction", racing_append)
    # When the table is truncated
    truncate(table)
    monkeypatch.undo()
    # Then the racing writer's file was cleared with the rest and deleted, leaving no data file behind
    assert instance.table("t").scan().to_arrow().num_rows == 0
    data = tmp_path / "instance" / "data" / table.table_id / "data"
    assert sorted(data.rglob("*.parquet")) == []


def should_read_nulls_for_the_column_when_travelling_to_before_it_was_added(
    evolved: tuple[Any, Any, list[str]],
) -> None:
    # Given the files transaction of the last ingest before the column was added
    _, table, _ = evolved
    history = table.history().to_pylist()
    before = [r["transaction_number"] for r in history if r["log"] == "files" and r["type"] == "ADD_FILES"][1]
    # When the table is read as of then
    rows = table.scan(as_of=before).to_arrow()
    # Then the old rows come back with the column, null
    _equal(rows, _expected().slice(0, OLD))
