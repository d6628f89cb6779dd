"""``Table.scan(filter=...)`` on a local instance: the rows equal DuckDB's over the same input for every operator;
the filter applies after the table's rules (so it never widens what they give, nor changes what an aggregation
gives); row key predicates plan only the leaves that can match; value predicates skip row groups by statistics; the
queued door returns the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.core.filter import Compare, FilterError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.filesystem import filesystem_path
from sleeper.io.parquet_reader import SortedFileReader

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

# (filter, the same predicate in DuckDB's SQL)
CASES = [
    ("age > 90", "age > 90"),
    ("age >= 10 and age <= 12", "age >= 10 and age <= 12"),
    ("age = 5 or name = 'n7'", "age = 5 or name = 'n7'"),
    ("age != 5", "age != 5"),
    ("not (age > 3)", "not (age > 3)"),
    ("age in (1, 2, 3)", "age in (1, 2, 3)"),
    ("age not in (1, 2)", "age not in (1, 2)"),
    ("age between 2 and 8", "age between 2 and 8"),
    ("age not between 2 and 98", "age not between 2 and 98"),
    ("name is null", "name is null"),
    ("name is not null and age < 2", "name is not null and age < 2"),
    ("name starts with 'n9'", "starts_with(name, 'n9')"),
    ("name like 'n1_'", "name like 'n1_'"),
    ("name not like '%3%'", "name not like '%3%'"),
    ("raw = x'0102'", "raw = '\\x01\\x02'::blob"),
    ("key < 10", "key < 10"),
    ("key between 990 and 1010 and age < 50", "key between 990 and 1010 and age < 50"),
    ("key in (5, 1500, 2999) or key > 2995", "key in (5, 1500, 2999) or key > 2995"),
    ("key > 5000", "key > 5000"),
    ("key > 10 and key < 5", "key > 10 and key < 5"),
]


def _input(rows: int = ROWS) -> pa.Table:
    keys = pa.array(range(rows), pa.int64())
    return pa.table(
        {
            "key": keys,
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(rows)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(rows)], pa.string()),
            "raw": pa.array([bytes([i % 3, i % 5]) for i in range(rows)], pa.binary()),
        }
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    directory = tmp_path_factory.mktemp("filter") / "instance"
    table = sleeper.create_instance(directory).create_table(
        "people", SCHEMA, split_points=SPLITS, properties={"sleeper.table.parquet.rowgroup.rows.max": "100"}
    )
    data = _input()
    table.ingest(data.slice(0, ROWS // 2))
    table.ingest(data.slice(ROWS // 2))
    return table


@pytest.mark.parametrize(("row_filter", "sql"), CASES, ids=[c[0] for c in CASES])
def should_return_the_rows_duckdb_selects(table: Table, row_filter: str, sql: str) -> None:
    connection = duckdb.connect()
    connection.register("data", _input())
    expected = connection.sql(f"select * from data where {sql} order by key").to_arrow_table()
    got = table.scan(filter=row_filter).to_arrow()
    assert got.num_rows == expected.num_rows
    assert got.equals(expected.cast(got.schema))


@pytest.mark.parametrize(("row_filter", "sql"), CASES[:6] + CASES[-4:], ids=[c[0] for c in CASES[:6] + CASES[-4:]])
def should_return_the_same_rows_through_the_query_queue(table: Table, row_filter: str, sql: str) -> None:
    direct = table.scan(filter=row_filter, columns=["key", "age"]).to_arrow()
    queued = table.scan(filter=row_filter, columns=["key", "age"], via_queue=True).to_arrow()
    assert queued.sort_by("key").equals(direct)


def should_take_a_model_and_combine_with_keys_ranges_columns_and_limit(table: Table) -> None:
    got = table.scan(ranges={"key": (100, 400)}, filter=Compare("age", "<", 3), columns=["age", "key"], limit=5)
    rows = got.to_arrow()
    assert rows.column_names == ["age", "key"]
    assert rows["key"].to_pylist() == [100, 101, 102, 200, 201]
    assert table.scan(keys=[[7], [8]], filter="age = 8").to_arrow()["key"].to_pylist() == [8]


def should_plan_only_the_leaves_a_row_key_predicate_can_match(tmp_path: Path) -> None:
    # Given a table of three leaves whose last leaf's file has gone from disk
    table = sleeper.create_instance(tmp_path / "instance").create_table(
        "t", SCHEMA, split_points=SPLITS, properties={"sleeper.table.ingest.file.writing.strategy": "one_file_per_leaf"}
    )
    table.ingest(_input())
    last = next(p.id for p in table.leaf_partitions() if p.region.ranges["key"].min == SPLITS[-1])
    gone = next(r.filename for r in table.file_references() if r.partition_id == last)
    Path(filesystem_path(gone)).unlink()
    # When rows of the first leaves are filtered by row key, Then the last leaf is not read
    assert table.scan(filter="key < 1500 and age = 1").count() == 14
    assert table.scan(filter="key in (3, 1999)").count() == 2
    # While a value predicate must read every leaf
    with pytest.raises(Exception, match="No such file|not exist|MissingFile|no file"):
        table.scan(filter="age = 1").count()


def should_skip_row_groups_a_value_predicate_rules_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table whose value column "ts" rises with the key, in files of 100-row row groups
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("ts", PrimitiveType.LONG)])
    table = sleeper.create_instance(tmp_path / "instance").create_table(
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
    # When the whole table is scanned, and then scanned for the rows of the last 1% of "ts"
    table.scan().count()
    every = len(read)
    read.clear()
    matched = table.scan(filter="ts >= 29700").to_arrow()
    # Then the filtered scan decodes the row groups that can hold them only
    assert matched["key"].to_pylist() == list(range(2970, ROWS))
    assert every == 30
    assert len(read) == 1


def _with_rules(tmp_path: Path, properties: dict[str, str], data: pa.Table, schema: Schema) -> Table:
    table = sleeper.create_instance(tmp_path / "instance").create_table("t", schema, properties=properties)
    table.ingest(data)
    table.ingest(data)  # a second file: each key's rows are merged from two files
    return table


def should_filter_what_an_aggregation_gives_not_what_the_files_hold(tmp_path: Path) -> None:
    # Given a table summing counts, whose every stored row has count 1 (each file's statistics say count <= 1)
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("count", PrimitiveType.LONG)])
    data = pa.table({"key": pa.array(range(100), pa.int64()), "count": pa.array([1] * 100, pa.int64())})
    table = _with_rules(tmp_path, {"sleeper.table.aggregations": "sum(count)"}, data, schema)
    # When rows whose aggregated count is 2 are asked for, Then every key comes back, summed
    rows = table.scan(filter="count >= 2").to_arrow()
    assert rows["count"].to_pylist() == [2] * 100
    assert table.scan(filter="count = 1").count() == 0


def should_never_widen_what_a_security_filter_hides(tmp_path: Path) -> None:
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("visibility", PrimitiveType.STRING, True)]
    )
    data = pa.table(
        {"key": pa.array(range(100), pa.int64()), "visibility": pa.array(["A" if i % 2 else "B" for i in range(100)])}
    )
    properties = {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.SecurityFilteringIterator",
        "sleeper.table.iterator.config": "visibility,A",
    }
    table = _with_rules(tmp_path, properties, data, schema)
    visible = table.scan().to_arrow()
    for row_filter in ["visibility = 'B'", "visibility is null or visibility = 'B'", "not (visibility = 'A')"]:
        assert table.scan(filter=row_filter).count() == 0
    assert table.scan(filter="visibility = 'A' or key >= 0").to_arrow().equals(visible)
    assert set(pc.unique(visible["visibility"]).to_pylist()) == {"A"}


@pytest.mark.parametrize(
    ("row_filter", "message"),
    [("agee > 3", "no column 'agee'"), ("age > 'x'", "compare it with an integer"), ("age >", "expected a value")],
)
def should_refuse_a_bad_filter_before_reading(table: Table, row_filter: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        table.scan(filter=row_filter)
    with pytest.raises(FilterError, match=message):
        table.scan(filter=row_filter, via_queue=True)


def should_hand_a_filtered_scan_to_arrow_duckdb_and_polars_lazily(table: Table) -> None:
    scan = table.scan(filter="age > 95")
    expected = scan.to_arrow()
    assert pa.table(scan).equals(expected)
    connection = scan.to_duckdb("people")
    assert connection.sql("select count(*) from people").fetchall() == [(expected.num_rows,)]
    assert connection.sql("select max(age) from people").fetchall() == [(99,)]
    assert duckdb.sql("select count(*) from scan").fetchall() == [(expected.num_rows,)]
    polars = pytest.importorskip("polars")
    assert polars.DataFrame(scan).height == expected.num_rows
    assert scan.to_polars().height == expected.num_rows


KEY_CASES: dict[PrimitiveType, tuple[list[Any], list[tuple[str, str]]]] = {
    PrimitiveType.INT: (
        [-5, 0, 7, 2**31 - 1],
        [("key >= 0 and key != 7", "key >= 0 and key != 7"), ("key in (-5, 2147483647)", "key in (-5, 2147483647)")],
    ),
    PrimitiveType.LONG: (
        [-(2**63), 0, 7, 2**63 - 1],
        [
            ("key <= 9223372036854775807 and key > 0", "key > 0"),
            ("key in (-9223372036854775808, 7)", "key <= 7 and key != 0"),
        ],
    ),
    PrimitiveType.STRING: (
        ["", "a", "ab", "b\u00e9"],
        [
            ("key >= 'a' and key != 'ab'", "key >= 'a' and key != 'ab'"),
            ("key starts with 'a'", "starts_with(key, 'a')"),
        ],
    ),
    PrimitiveType.BYTE_ARRAY: (
        [b"", b"\x00", b"\x00\x01", b"\xff"],
        [
            ("key > x'00'", "key > '\\x00'::blob"),
            ("key starts with x'00'", "key in ('\\x00'::blob, '\\x00\\x01'::blob)"),
        ],
    ),
}


@pytest.mark.parametrize("key_type", list(KEY_CASES), ids=lambda t: t.value)
def should_filter_every_row_key_type_directly_and_through_the_queue(tmp_path: Path, key_type: PrimitiveType) -> None:
    keys, filters = KEY_CASES[key_type]
    schema = Schema.of(row_keys=[Field("key", key_type)], values=[Field("n", PrimitiveType.LONG, True)])
    table = sleeper.create_instance(tmp_path / "instance").create_table("t", schema, split_points=[keys[2]])
    data = pa.table({"key": keys, "n": [1, None, 3, 4]}, schema=arrow_schema(schema))
    table.ingest(data)
    connection = duckdb.connect()
    connection.register("data", data)
    for text, sql in [*filters, ("n is null", "n is null"), ("n > 100", "n > 100")]:
        expected = connection.sql(f"select * from data where {sql} order by key").to_arrow_table()
        direct = table.scan(filter=text).to_arrow()
        queued = table.scan(filter=text, via_queue=True).to_arrow()
        assert direct.num_rows == expected.num_rows, text
        assert direct.equals(expected.cast(direct.schema)), text
        assert queued.equals(direct), text
