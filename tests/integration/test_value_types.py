"""A local table made from an Arrow table with float, double, boolean, timestamp and date value columns (with nulls):
every row comes back exactly, with the same Arrow types, from a scan before and after compaction, from DuckDB, from a
queued query's results queue, from a bulk export and from the Iceberg view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.schema import Schema, TimestampType
from sleeper.iceberg import NotPublishableError
from sleeper.iceberg.catalog import load_catalog
from sleeper.iceberg.trim import write_trimmed
from sleeper.iceberg.types import view_arrow_schema

pytestmark = pytest.mark.integration

ROWS = 3000
VIEW = "values_ns.rows"

ARROW = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("f64", pa.float64()),
        pa.field("f32", pa.float32()),
        pa.field("flag", pa.bool_()),
        pa.field("at_us", pa.timestamp("us", tz="UTC")),
        pa.field("at_ms", pa.timestamp("ms")),
        pa.field("at_s", pa.timestamp("s", tz="Europe/London")),
        pa.field("day", pa.date32()),
    ]
)


def _nulls(values: np.ndarray, every: int, offset: int) -> list[Any]:
    return [None if i % every == offset else v for i, v in enumerate(values.tolist())]


def _data() -> pa.Table:
    """Rows in random key order, every value column with some nulls, and values at the edges of each type."""
    rng = np.random.default_rng(36)
    keys = [f"k{i:05d}" for i in rng.permutation(ROWS)]
    f64 = rng.normal(scale=1e6, size=ROWS)
    f64[:4] = [np.inf, -np.inf, -0.0, 5e-324]
    f32 = rng.normal(size=ROWS).astype(np.float32)
    f32[:2] = [np.float32(3.4e38), np.float32(-1e-45)]
    return pa.table(
        {
            "key": pa.array(keys, pa.string()),
            "f64": pa.array(_nulls(f64, 7, 5), pa.float64()),
            "f32": pa.array(_nulls(f32, 11, 6), pa.float32()),
            "flag": pa.array(_nulls(rng.integers(0, 2, ROWS).astype(bool), 5, 4), pa.bool_()),
            "at_us": pa.array(_nulls(rng.integers(-(2**50), 2**52, ROWS), 13, 3), pa.int64()).cast(ARROW[4].type),
            "at_ms": pa.array(_nulls(rng.integers(-(2**40), 2**42, ROWS), 6, 1), pa.int64()).cast(ARROW[5].type),
            "at_s": pa.array(_nulls(rng.integers(-(2**33), 2**33, ROWS), 9, 2), pa.int64()).cast(ARROW[6].type),
            "day": pa.array(_nulls(rng.integers(-700_000, 2_900_000, ROWS), 8, 7), pa.int32()).cast(pa.date32()),
        },
        schema=ARROW,
    )


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, pa.Table]:
    """An instance and its table made from the Arrow schema, the rows ingested in three parts, then compacted."""
    data = _data()
    schema = Schema.from_arrow(ARROW, row_keys=["key"])
    instance = sleeper.create_instance(tmp_path_factory.mktemp("value-types") / "instance")
    table = instance.create_table(
        "values", schema, split_points=["k01000", "k02000"], properties={"sleeper.table.iceberg.name": VIEW}
    )
    for start in range(0, ROWS, 1000):
        table.ingest(data.slice(start, 1000))
    return instance, table, data.sort_by("key")


def _assert_rows_equal(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema.equals(expected.schema), f"{got.schema} != {expected.schema}"
    for name in expected.column_names:
        assert got.column(name).equals(expected.column(name)), name


def should_make_a_table_of_the_arrow_types_marked_readable_by_this_port_only(loaded: tuple[Any, Any, pa.Table]) -> None:
    _, table, _ = loaded
    assert table.schema.uses_port_only_types
    assert table.schema.field("at_s").type == TimestampType("s", "Europe/London")


def should_scan_every_row_exactly_before_and_after_compaction(loaded: tuple[Any, Any, pa.Table]) -> None:
    # Given the table, its rows in three files per leaf
    instance, table, expected = loaded
    # When scanned, then every file compacted, then scanned again
    before = table.scan().to_arrow()
    instance.compact_now("values", compact_all=True)
    after = table.scan().to_arrow()
    # Then both scans equal the ingested rows with the same Arrow types, in key order
    _assert_rows_equal(before, expected)
    _assert_rows_equal(after, expected)
    assert len(table.file_references()) == 3


def should_agree_with_duckdb_over_the_scan_and_over_the_data_files(loaded: tuple[Any, Any, pa.Table]) -> None:
    # Given the table's rows, and DuckDB reading them both from the scan's Arrow table and from the data files
    _, table, expected = loaded
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.register("scanned", table.scan().to_arrow())
    columns = ", ".join(ARROW.names)
    from_arrow = connection.sql(f"SELECT {columns} FROM scanned ORDER BY key").to_arrow_table()
    files = [r.filename.removeprefix("file://") for r in table.file_references()]
    from_files = connection.sql(f"SELECT {columns} FROM read_parquet({files!r}) ORDER BY key").to_arrow_table()
    # Then DuckDB gives the same values: exactly from Arrow, and from the files as the same instants and dates
    _assert_rows_equal(from_arrow.cast(ARROW), expected)
    _assert_rows_equal(from_files.cast(ARROW), expected)
    # And DuckDB computes on them as pyarrow does
    flags, low = connection.execute("SELECT count(*) FILTER (WHERE flag), min(day) FROM scanned").fetchall()[0]
    assert flags == sum(1 for v in expected.column("flag").to_pylist() if v)
    assert low == min(d for d in expected.column("day").to_pylist() if d is not None)


def should_return_every_row_through_the_results_queue(loaded: tuple[Any, Any, pa.Table]) -> None:
    # When the table is queried through the query queue with its results as row JSON on the results queue
    _, table, expected = loaded
    rows = table.scan(via_queue=True, queue_results="sqs").to_arrow()
    # Then the rows read back from the JSON equal the table's
    _assert_rows_equal(rows, expected)


def should_export_every_row(loaded: tuple[Any, Any, pa.Table], tmp_path: Path) -> None:
    # When the table is exported
    instance, _, expected = loaded
    result = instance.export_table("values", tmp_path / "export")
    # Then the files hold every row, read back as the table's types (Parquet keeps instants in UTC and s as ms)
    exported = pa.concat_tables([pq.read_table(path, schema=ARROW) for path in result["files"]]).sort_by("key")
    _assert_rows_equal(exported, expected)


def should_publish_an_iceberg_view_of_every_row(loaded: tuple[Any, Any, pa.Table]) -> None:
    # When the table is published as an Iceberg view
    instance, table, expected = loaded
    instance.publish_iceberg("values")
    view = load_catalog(instance.runtime.data_root, None).load_table(VIEW)
    # Then its Iceberg types are the matching ones and pyiceberg's scan gives every row (instants in UTC, as us)
    types = {f.name: str(f.field_type) for f in view.schema().fields}
    assert types == {
        "key": "string",
        "f64": "double",
        "f32": "float",
        "flag": "boolean",
        "at_us": "timestamptz",
        "at_ms": "timestamp",
        "at_s": "timestamptz",
        "day": "date",
    }
    rows = view.scan().to_arrow().sort_by("key")
    _assert_rows_equal(rows.cast(ARROW), expected)


def should_write_trimmed_copies_with_the_views_types(loaded: tuple[Any, Any, pa.Table], tmp_path: Path) -> None:
    # Given a data file of the table and the partition referencing it
    _, table, expected = loaded
    reference = table.file_references()[0]
    tree = table.state_store.partition_tree()
    # When the view's trimmed copy of it is written
    location = (tmp_path / "trimmed.parquet").as_uri()
    written = write_trimmed(reference.filename, [reference.partition_id], tree, table.schema, location)
    # Then it has the view's types (every zone as UTC) and the file's rows
    copy = pq.read_table(tmp_path / "trimmed.parquet")
    view_types = view_arrow_schema(table.schema)
    assert [copy.schema.field(n).type.tz for n in ("at_us", "at_ms", "at_s")] == ["UTC", None, "UTC"]
    assert copy.cast(view_types).schema.equals(view_types)
    assert written == copy.num_rows > 0
    keys = pa.array(copy.column("key").to_pylist())
    _assert_rows_equal(copy.cast(ARROW), expected.filter(pc.is_in(expected.column("key"), keys)))


def should_ingest_and_scan_nanoseconds_and_refuse_an_iceberg_view_of_them(tmp_path: Path) -> None:
    # Given a table with a nanosecond timestamp in a fixed-offset zone
    arrow = pa.schema([pa.field("key", pa.int64(), nullable=False), pa.field("at", pa.timestamp("ns", tz="+05:30"))])
    data = pa.table(
        {"key": pa.array(range(5), pa.int64()), "at": pa.array([1, -1, None, 2**62, -(2**62)], pa.int64())}
    ).cast(arrow)
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table(
        "nanos", Schema.from_arrow(arrow, row_keys=["key"]), properties={"sleeper.table.iceberg.name": "n.rows"}
    )
    # When the rows are ingested and scanned
    table.ingest(data)
    # Then they come back to the nanosecond
    _assert_rows_equal(table.scan().to_arrow(), data)
    # And the Iceberg view is refused, naming the field
    with pytest.raises(NotPublishableError, match=r"'at' is TimestampType\(ns, \+05:30\)"):
        instance.publish_iceberg("nanos")


def should_compact_with_the_datafusion_engine_exactly(tmp_path: Path) -> None:
    # Given a table compacted by DataFusion (which reads the files' Parquet types: seconds as ms, zones as UTC)
    pytest.importorskip("datafusion")
    data = _data()
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table(
        "values",
        Schema.from_arrow(ARROW, row_keys=["key"]),
        split_points=["k01500"],
        properties={"sleeper.table.data.engine": "DATAFUSION"},
    )
    for start in range(0, ROWS, 1000):
        table.ingest(data.slice(start, 1000))
    # When every file is compacted
    instance.compact_now("values", compact_all=True)
    # Then one file per leaf holds every row, read back with the table's types
    assert len(table.file_references()) == 2
    _assert_rows_equal(table.scan().to_arrow(), data.sort_by("key"))
