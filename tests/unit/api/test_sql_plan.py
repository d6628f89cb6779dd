"""``plan_sql``: which tables a statement reads and which of its WHERE predicates are pushed into each table's scan,
from DuckDB's syntax tree; only predicates certain to mean the same to the scan as to DuckDB are pushed."""

from __future__ import annotations

import pytest

from sleeper.api.sql import SqlError, SqlPlan, _literal, plan_sql
from sleeper.core.schema import Field, PrimitiveType, Schema, ValueType

PEOPLE = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("score", ValueType.DOUBLE, True),
        Field("member", ValueType.BOOLEAN, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
    ],
)
PETS = Schema.of(row_keys=[Field("owner", PrimitiveType.LONG)], values=[Field("pet", PrimitiveType.STRING)])
SCHEMAS = {"people": PEOPLE, "pets": PETS}


def _plan(statement: str, tables: dict[str, Schema] = SCHEMAS) -> SqlPlan:
    return plan_sql(statement, list(tables), tables.__getitem__)


def _pushed(statement: str) -> dict[str, str]:
    return {name: str(f) for name, f in _plan(statement).filters.items()}


@pytest.mark.parametrize(
    ("where", "pushed"),
    [
        ("age = 3", "age = 3"),
        ("age != 3", "age != 3"),
        ("age <> 3", "age != 3"),
        ("age < -3", "age < -3"),
        ("age <= 3", "age <= 3"),
        ("age > 3", "age > 3"),
        ("age >= 3", "age >= 3"),
        ("3 < age", "age > 3"),
        ("'n' <= name", "name >= 'n'"),
        ("age in (1, 2)", "age in (1, 2)"),
        ("age not in (1, 2)", "not age in (1, 2)"),
        ("age between 1 and 5", "age between 1 and 5"),
        ("age not between 1 and 5", "not age between 1 and 5"),
        ("name is null", "name is null"),
        ("name is not null", "name is not null"),
        ("score is null", "score is null"),
        ("name like 'ab%'", "name starts with 'ab'"),
        ("name like 'a_c'", "name like 'a_c'"),
        ("name not like 'ab%'", "not name starts with 'ab'"),
        ("starts_with(name, 'it''s')", "name starts with 'it''s'"),
        ("member = true", "member = true"),
        ("key = 9223372036854775807", "key = 9223372036854775807"),
        ("age = 1 or name = 'x'", "age = 1 or name = 'x'"),
        ("not (age = 1 and name = 'x')", "not (age = 1 and name = 'x')"),
        (
            "age > 1 and (name = 'x' or name is null) and key < 10",
            "age > 1 and (name = 'x' or name is null) and key < 10",
        ),
        ("AGE > 3", "age > 3"),
        ("people.age > 3", "age > 3"),
    ],
)
def should_push_each_operator(where: str, pushed: str) -> None:
    assert _pushed(f"select * from people where {where}") == {"people": pushed}


@pytest.mark.parametrize(
    "where",
    [
        "age = 1.5",  # a decimal for an integer column
        "age = '3'",  # a string for an integer column
        "name = 5",
        "age = 3000000000",  # beyond an int column's range
        "key = 99999999999999999999",
        "age = null",
        "age = 3::bigint",  # a cast
        "age = abs(-3)",  # an expression
        "age + 1 > 3",
        "score > 1",  # floating point: DuckDB orders NaN above every number
        "score in (1, 2)",
        "member = 1",
        "raw = '\\x01'::blob",
        "name like 'a\\_b'",  # DuckDB reads the backslash as itself
        "name ilike 'a%'",
        "name similar to 'a.*'",
        "age is distinct from 3",
        "age = key",
        "age in (1, key)",
        "age = (select 1)",
        "age in (select 1)",
        "exists (select 1)",
        "nobody.age = 3",
        "people.nothing = 3",
        "member",
        "age > 3 or score > 1",  # one part not pushable
    ],
)
def should_push_nothing_it_cannot_be_sure_of(where: str) -> None:
    assert _pushed(f"select * from people where {where}") == {}


def should_push_the_conjuncts_it_can_and_leave_the_rest() -> None:
    assert _pushed("select * from people where age > 3 and age + 1 < 9 and name = 'a'") == {
        "people": "age > 3 and name = 'a'"
    }


def should_push_into_each_joined_table_by_qualifier_or_unique_name() -> None:
    statement = (
        "select * from people p join pets on p.key = pets.owner "
        "where p.age > 3 and pet = 'cat' and owner < 10 and pets.pet != 'dog' and name is not null"
    )
    assert _pushed(statement) == {
        "people": "age > 3 and name is not null",
        "pets": "pet = 'cat' and owner < 10 and pet != 'dog'",
    }


@pytest.mark.parametrize(
    ("statement", "pushed"),
    [
        # outer joins: only the side every row of which is kept
        ("select * from people p left join pets x on p.key = x.owner where p.age = 1 and x.pet = 'a'", {"people"}),
        ("select * from people p right join pets x on p.key = x.owner where p.age = 1 and x.pet = 'a'", {"pets"}),
        ("select * from people p full join pets x on p.key = x.owner where p.age = 1 and x.pet = 'a'", set()),
        ("select * from people p positional join pets x where p.age = 1 and x.pet = 'a'", set()),
        # a table named twice, or a WITH name that hides it
        ("select * from people a join people b on a.key = b.key where a.age = 1", set()),
        ("select * from people where age = 1 union all select * from people where age = 2", set()),
        ("with people as (select * from pets) select * from people where pet = 'a'", set()),
        # a subquery in FROM makes an unqualified column uncertain, not a qualified one
        ("select * from people p, (select 1 as age) s where age = 1", set()),
        ("select * from people p, (select 1 as age) s where p.age = 1", {"people"}),
        # a WHERE inside a subquery or WITH pushes into its own tables; an outer column is not its
        ("with c as (select * from pets where pet = 'a') select * from c", {"pets"}),
        ("select * from people where key in (select owner from pets where pet = 'a')", {"pets"}),
        ("select * from people p where exists (select 1 from pets x where x.owner = p.key and p.age = 1)", set()),
        # a name the select list gives
        ("select age as name from people where name = 'a'", set()),
    ],
)
def should_push_only_where_a_filter_cannot_change_the_result(statement: str, pushed: set[str]) -> None:
    assert set(_pushed(statement)) == pushed


def should_name_the_tables_read_and_ask_only_their_schemas() -> None:
    asked: list[str] = []
    tables = {"people": PEOPLE, "pets": PETS, "other": PETS}

    def schema_of(name: str) -> Schema:
        asked.append(name)
        return tables[name]

    plan = plan_sql("select * from Pets x join people on true join pets y on true", list(tables), schema_of)
    assert plan.tables == ("pets", "people")
    assert sorted(asked) == ["people", "pets"]
    assert _plan("select 1 + 1").tables == ()
    assert _plan("select * from range(3)").tables == ()
    assert _plan("select * from main.people").tables == ("people",)


def should_refuse_tables_differing_only_in_case() -> None:
    tables = {"t": PETS, "T": PETS}
    assert _plan("select * from t", tables).tables == ("t",)
    with pytest.raises(SqlError, match="the tables T, t differ only in case"):
        _plan('select * from t, "T"', tables)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("update people set age = 1", "not UPDATE"),
        ("with x as (select 1) insert into people select * from x", "not INSERT"),
        ("explain select 1", "not EXPLAIN"),
        ("select * from glob('*')", r"glob\(...\) is refused"),
        ("select * from people, read_parquet('x')", r"read_parquet\(...\) is refused"),
        ("select * from query('select 1')", r"query\(...\) is refused"),
        ("summarize people", "not SHOW, DESCRIBE or SUMMARIZE"),
        ("show tables", "not SHOW, DESCRIBE or SUMMARIZE"),
        ("select * from people join nobody on true", r"no table 'nobody' in the instance \(tables: people, pets\)"),
        ("select * from system.main.people", "no table 'system.main.people'"),
        ("select (", "bad SQL at position"),
        ("   ", "give a SELECT statement"),
        (";", "give a SELECT statement"),
    ],
)
def should_refuse(statement: str, message: str) -> None:
    with pytest.raises(SqlError, match=message):
        _plan(statement)


@pytest.mark.parametrize(
    ("node", "field", "value"),
    [
        ({"class": "CONSTANT", "literal": {"kind": "INTEGER", "text": "7"}}, Field("a", PrimitiveType.LONG), 7),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "INTEGER"}, "is_null": False, "value": 7}},
            Field("a", PrimitiveType.INT),
            7,
        ),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "VARCHAR"}, "is_null": False, "value": "x"}},
            Field("a", PrimitiveType.STRING),
            "x",
        ),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "BOOLEAN"}, "is_null": False, "value": True}},
            Field("a", ValueType.BOOLEAN),
            True,
        ),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "INTEGER"}, "is_null": True, "value": None}},
            Field("a", PrimitiveType.INT),
            None,
        ),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "DECIMAL"}, "is_null": False, "value": 15}},
            Field("a", PrimitiveType.INT),
            None,
        ),
        (
            {"class": "CONSTANT", "value": {"type": {"id": "VARCHAR"}, "is_null": False, "value": "7"}},
            Field("a", PrimitiveType.INT),
            None,
        ),
    ],
)
def should_read_constants_in_either_form_duckdb_serialises(
    node: dict[str, object], field: Field, value: object
) -> None:
    # DuckDB 2 writes a constant's literal text; DuckDB 1 its typed value
    assert _literal(node, field) == value


@pytest.mark.parametrize(
    ("statement", "columns"),
    [
        ("select name, count(*) from people where age > 3 group by name", {"people": ("age", "name")}),
        ("select count(*) from people", {"people": ("key",)}),
        ("select p.name, x.pet from people p join pets x on p.key = x.owner", {"people": ("key", "name")}),
        ("select NAME from people order by Score", {"people": ("name", "score")}),
        ("select count(*) from people a join people b using (key, raw)", {"people": ("key", "raw")}),
        ("select list_transform([age], member -> member + 1) from people", {"people": ("age", "member")}),
        # anything that may read a column it does not name reads every column
        ("select * from people", {}),
        ("select p.* from people p", {}),
        ("select columns('a.*') from people", {}),
        ("select #1 from people", {}),
        ("select count(*) from people natural join pets", {}),
        ("select p from people p", {}),
        ("select count(people) from people", {}),
    ],
)
def should_read_only_the_columns_named(statement: str, columns: dict[str, tuple[str, ...]]) -> None:
    assert dict(_plan(statement).columns) == columns
