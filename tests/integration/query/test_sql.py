"""``instance.sql`` on a local instance: results equal DuckDB's over the same rows held as plain Arrow tables, for
every operator, joins, aggregation, ordering and empty results; the WHERE clause's simple predicates reach the scans
(only matching rows are handed to DuckDB) and never change a result; anything but one read-only SELECT over the
instance's tables is refused with a one-line SqlError, changing nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import sleeper
from sleeper.api.instance import Instance
from sleeper.api.scan import Scan
from sleeper.api.sql import SqlError
from sleeper.api.table import Table
from sleeper.core.extras import MissingExtraError
from sleeper.core.filter import Filter
from sleeper.core.schema import Field, PrimitiveType, Schema, ValueType

pytestmark = pytest.mark.integration

PEOPLE = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("score", ValueType.DOUBLE, True),
        Field("member", ValueType.BOOLEAN, True),
    ],
)
PETS = Schema.of(row_keys=[Field("owner", PrimitiveType.LONG)], values=[Field("pet", PrimitiveType.STRING)])
ROWS = 2_000


def _people() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 90 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 40}" for i in range(ROWS)], pa.string()),
            "score": pa.array([None if i % 7 == 0 else i / 8 for i in range(ROWS)], pa.float64()),
            "member": pa.array([None if i % 17 == 0 else i % 3 == 0 for i in range(ROWS)], pa.bool_()),
        }
    )


def _pets() -> pa.Table:
    owners = list(range(0, ROWS, 37))
    return pa.table(
        {"owner": pa.array(owners, pa.int64()), "pet": pa.array([("cat", "dog", "eel")[o % 3] for o in owners])}
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    created = sleeper.create_instance(tmp_path_factory.mktemp("sql") / "instance")
    people = created.create_table(
        "people", PEOPLE, split_points=[700, 1400], properties={"sleeper.table.parquet.rowgroup.rows.max": "100"}
    )
    data = _people()
    people.ingest(data.slice(0, ROWS // 2))
    people.ingest(data.slice(ROWS // 2))
    created.create_table("pets", PETS).ingest(_pets())
    return created


STATEMENTS = [
    "select * from people where age > 80",
    "select * from people where age >= 10 and age <= 12",
    "select * from people where age = 5 or name = 'n7'",
    "select * from people where age != 5 and age <> 6",
    "select * from people where 30 < age",
    "select * from people where not (age > 3)",
    "select * from people where age in (1, 2, 3)",
    "select * from people where age not in (1, 2)",
    "select * from people where age between 2 and 8",
    "select * from people where age not between 2 and 88",
    "select * from people where name is null",
    "select * from people where name is not null and age < 2",
    "select * from people where name like 'n3%'",
    "select * from people where name like 'n1_'",
    "select * from people where name not like '%3%'",
    "select * from people where starts_with(name, 'n2')",
    "select * from people where member = true and age < 20",
    "select * from people where score > 100.5",
    "select * from people where score is null",
    "select * from people where key < 10",
    "select * from people where key between 690 and 710 and age < 50",
    "select * from people where key in (5, 1500, 1999) or key > 1995",
    "select * from people where key > 5000",
    "select * from people where key > 10 and key < 5",
    "select * from people where age + 1 > 50 and name = 'n9'",
    "select name, count(*) as n, avg(age) as mean from people where age > 40 group by name order by name",
    "select p.key, p.name, x.pet from people p join pets x on p.key = x.owner where p.age < 60 and x.pet <> 'cat'",
    "select p.key, x.pet from people p left join pets x on p.key = x.owner where p.key < 100 and x.pet is null",
    "select * from people a join people b on a.key = b.key + 1 where a.age = 3",
    "with young as (select * from people where age < 5) select count(*) as n from young where name = 'n1'",
    "select * from (select key, age as years from people) s where s.years = 7",
    "select age as a from people where a > 85",
    "select * from people where age > (select max(age) - 2 from people)",
    "select max(key) as top from people",
    "select * from people order by age desc nulls last, key limit 5",
    "select 1 as one",
    "select count(*) as n from people",
    "select people.age, name from people where key < 20",
    "select p from people p where p.key < 3",
    "select count(b.name) as n, max(key) as top from people a join people b using (key) where a.age < 3",
    "select x.pet, count(p.name) as named from pets x join people p on x.owner = p.key group by x.pet",
    "select #2 from people where key < 3",
]


def _expected(statement: str) -> list[dict[str, Any]]:
    connection = duckdb.connect()
    connection.register("people", _people())
    connection.register("pets", _pets())
    return _rows(connection.sql(statement).to_arrow_table(), statement)


def _rows(table: pa.Table, statement: str) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    return rows if "order by" in statement else sorted(rows, key=repr)


@pytest.mark.parametrize("statement", STATEMENTS)
def should_return_what_duckdb_returns_over_the_same_rows(instance: Instance, statement: str) -> None:
    # When a statement is run over the instance's tables
    reader = instance.sql(statement)
    # Then it streams, and gives the rows DuckDB gives over the same rows as Arrow tables
    assert isinstance(reader, pa.RecordBatchReader)
    assert _rows(reader.read_all(), statement) == _expected(statement)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """What each scan DuckDB reads is given (filters) and hands over (rows), by table."""
    seen: dict[str, list[Any]] = {"filters": [], "columns": [], "rows": []}
    original_scan = Table.scan

    def scan(self: Table[Any], **kwargs: Any) -> Scan:
        made = original_scan(self, **kwargs)
        seen["filters"].append((self.name, made.filter))
        seen["columns"].append((self.name, made.columns))
        return made

    def stream(self: Scan, requested_schema: object | None = None) -> object:
        reader = self.to_arrow_batch_reader()
        name = getattr(self.table, "name", "")

        def counted() -> Iterator[pa.RecordBatch]:
            for batch in reader:
                seen["rows"].append((name, batch.num_rows))
                yield batch

        return pa.RecordBatchReader.from_batches(reader.schema, counted()).__arrow_c_stream__(requested_schema)

    monkeypatch.setattr(Table, "scan", scan)
    monkeypatch.setattr(Scan, "__arrow_c_stream__", stream)
    yield seen


def _filters(seen: dict[str, list[Any]]) -> dict[str, str | None]:
    return {name: None if f is None else str(f) for name, f in seen["filters"]}


def _rows_read(seen: dict[str, list[Any]], name: str) -> int:
    return sum(n for table, n in seen["rows"] if table == name)


def should_push_the_where_clause_into_the_scan(instance: Instance, scans: dict[str, list[Any]]) -> None:
    # When a statement's WHERE holds simple predicates on the table
    statement = "select key from people where age between 10 and 12 and name like 'n1%' and key >= 100"
    got = instance.sql(statement).read_all()
    # Then the scan is given them as a filter, and hands DuckDB only the rows that match
    assert _filters(scans) == {"people": "age between 10 and 12 and name starts with 'n1' and key >= 100"}
    assert _rows_read(scans, "people") == got.num_rows > 0
    assert _rows(got, statement) == _expected(statement)


def should_push_each_tables_predicates_into_its_own_scan(instance: Instance, scans: dict[str, list[Any]]) -> None:
    statement = (
        "select p.name, x.pet from people p join pets x on p.key = x.owner "
        "where p.age < 30 and x.pet in ('dog', 'eel') and (p.name = 'n1' or p.name is null)"
    )
    got = instance.sql(statement).read_all()
    assert _filters(scans) == {
        "people": "age < 30 and (name = 'n1' or name is null)",
        "pets": "pet in ('dog', 'eel')",
    }
    assert _rows_read(scans, "pets") == sum(1 for p in _pets()["pet"].to_pylist() if p != "cat")
    assert _rows(got, "") == _expected(statement)


def should_read_only_the_columns_the_statement_names(instance: Instance, scans: dict[str, list[Any]]) -> None:
    statement = "select x.pet, avg(p.age) as mean from people p join pets x on p.key = x.owner group by x.pet"
    got = instance.sql(statement).read_all()
    assert dict(scans["columns"]) == {"people": ("key", "age"), "pets": None}  # pets has only those columns
    assert _rows(got, statement) == _expected(statement)
    scans["columns"].clear()
    assert instance.sql("select count(*) as n from people").read_all()["n"].to_pylist() == [ROWS]
    assert dict(scans["columns"]) == {"people": ("key",)}
    scans["columns"].clear()
    instance.sql("select * from people where key < 3").read_all()
    assert dict(scans["columns"]) == {"people": None}


@pytest.mark.parametrize(
    "statement",
    [
        # the same table twice: one filter would narrow both
        "select * from people a join people b on a.key = b.key where a.age = 3",
        # the nullable side of an outer join: a pushed filter would make unmatched rows
        "select * from pets x left join people p on p.key = x.owner where p.age is null",
        # a name the select list gives
        "select age + 1 as age from people where age > 3",
        # both tables in one predicate, or a column in both tables
        "select * from people p join pets x on p.key = x.owner where p.age = 3 or x.pet = 'cat'",
        "select * from people, pets where key = owner",
        # floating point (DuckDB orders NaN above every number), expressions, a WITH name shadowing the table
        "select * from people where score > 3",
        "select * from people where age + 1 > 3",
        "with people as (select * from pets) select * from people where pet = 'cat'",
    ],
)
def should_push_nothing_it_cannot_be_sure_of(instance: Instance, scans: dict[str, list[Any]], statement: str) -> None:
    got = instance.sql(statement).read_all()
    assert set(_filters(scans).values()) == {None}
    assert _rows(got, statement) == _expected(statement)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("insert into people values (1, 2, 'x', 1.0, true)", "read-only: only one SELECT .* not INSERT"),
        ("delete from people", "not DELETE"),
        ("copy people to 'out.csv'", "not COPY"),
        ("attach 'other.db'", "not ATTACH"),
        ("pragma version", "not PRAGMA"),
        ("set threads = 1", "not SET"),
        ("create table t as select * from people", "not CREATE"),
        ("select 1; select 2", "one SELECT statement at a time, not 2"),
        ("select * from people; drop table people", "one SELECT statement at a time, not 2"),
        ("select * from read_parquet('x.parquet')", r"table function read_parquet\(...\) is refused"),
        ("select * from read_csv('/etc/passwd')", r"table function read_csv\(...\) is refused"),
        ("select * from people where key in (select * from read_json('x'))", r"read_json\(...\) is refused"),
        ("select * from 'rows.parquet'", r"no table 'rows.parquet' in the instance \(tables: people, pets\)"),
        ("select * from nobody", r"no table 'nobody' in the instance \(tables: people, pets\)"),
        ("select * from other.main.people", "no table 'other.main.people'"),
        ("describe people", "not SHOW, DESCRIBE or SUMMARIZE"),
        ("selec * from people", "bad SQL at position 0: syntax error"),
        ("select nothing from people", 'cannot run the statement: Binder Error: .*"nothing"'),
        ("select nme from people", 'Binder Error: Referenced column "nme" not found .*Candidate bindings: "name"'),
        ("", "give a SELECT statement"),
    ],
)
def should_refuse_anything_but_one_select_over_the_tables(
    instance: Instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    before = instance.table("people").scan().count()
    with pytest.raises(SqlError, match=message) as refused:
        instance.sql(statement)
    assert "\n" not in str(refused.value)
    assert instance.table("people").scan().count() == before
    assert list(tmp_path.iterdir()) == []


def should_read_the_tables_as_they_are_when_the_rows_are_read(tmp_path: Path) -> None:
    # Given a reader made before rows were ingested
    created = sleeper.create_instance(tmp_path / "instance")
    table = created.create_table("t", PETS)
    table.ingest(_pets().slice(0, 10))
    reader = created.sql("select count(*) as n from t where pet = 'dog'")
    # Then it gives the rows when read, and a later statement sees the new rows
    assert reader.read_all()["n"].to_pylist() == [sum(1 for p in _pets()["pet"].to_pylist()[:10] if p == "dog")]
    table.ingest(_pets().slice(10))
    assert created.sql("select count(*) as n from t").read_all()["n"].to_pylist() == [len(_pets())]


def should_name_the_extra_when_duckdb_is_missing(instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(MissingExtraError, match=r"Instance.sql needs the dataframes extra \(duckdb is not installed\)"):
        instance.sql("select * from people")


def should_take_the_filter_model_a_scan_takes(instance: Instance) -> None:
    # The pushed filters are the filter language's own model: the scan re-checks them against the schema
    from sleeper.api.sql import plan_sql

    plan = plan_sql(
        "select * from people where age = 3 and name >= 'n2'", ["people", "pets"], lambda n: instance.table(n).schema
    )
    pushed: Filter = plan.filters["people"]
    assert plan.tables == ("people",)
    assert (
        instance.table("people")
        .scan(filter=pushed)
        .to_arrow()
        .equals(instance.table("people").scan(filter="age = 3 and name >= 'n2'").to_arrow())
    )


KEY_CASES = [
    # (row key type, keys, SQL predicate, the same as a filter)
    (
        PrimitiveType.INT,
        list(range(-50, 50)),
        "k between -3 and 4 or k in (40, 41)",
        "k between -3 and 4 or k in (40, 41)",
    ),
    (PrimitiveType.LONG, [i * 2**40 for i in range(100)], f"k >= {50 * 2**40} and k < {53 * 2**40}", None),
    (
        PrimitiveType.STRING,
        [f"s{i:03d}" for i in range(100)],
        "k like 's01%' or k = 's099'",
        "k starts with 's01' or k = 's099'",
    ),
    (
        PrimitiveType.BYTE_ARRAY,
        [bytes([i, 7]) for i in range(100)],
        "k >= '\\x10'::blob and k < '\\x12'::blob",
        "k >= x'10' and k < x'12'",
    ),
]


@pytest.mark.parametrize(("key_type", "keys", "where", "row_filter"), KEY_CASES, ids=[c[0].value for c in KEY_CASES])
def should_select_by_every_key_type_as_the_scan_filter_does(
    tmp_path: Path, key_type: PrimitiveType, keys: list[Any], where: str, row_filter: str | None
) -> None:
    # Given a table of each row key type, over three leaves, with a nullable value
    schema = Schema.of(row_keys=[Field("k", key_type)], values=[Field("v", PrimitiveType.LONG, True)])
    created = sleeper.create_instance(tmp_path / "instance")
    table = created.create_table("t", schema, split_points=[keys[30], keys[60]])
    table.ingest([{"k": k, "v": None if i % 4 == 0 else i} for i, k in enumerate(keys)])
    # When it is selected by SQL, Then the rows are those the same filter on a scan returns (in key order)
    got = created.sql(f"select * from t where {where} order by k").read_all()
    expected = table.scan(filter=row_filter or where).to_arrow()
    assert got.num_rows > 0
    assert got.to_pylist() == expected.to_pylist()
    assert created.sql(f"select * from t where ({where}) and v is null order by k").read_all().to_pylist() == [
        r for r in expected.to_pylist() if r["v"] is None
    ]
