"""``sleeper query --where`` (direct, through the query queue, with a query-time iterator) and ``sleeper sql`` on a
local instance: the rows equal the Python API's, in every output format; a bad filter or a refused statement is one
``error:`` line, exit code 1, and nothing is sent or written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.cli.main import run

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "valueFields": [
        {"name": "age", "type": "IntType"},
        {"name": "name", "type": "StringType"},
        {"name": "visibility", "type": "StringType"},
    ],
}
ROWS = 300


@pytest.fixture
def people(instance: Path, tmp_path: Path) -> Path:
    """A table ``people`` of 300 rows over three leaves, and a table ``pets`` naming some of them."""
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    splits = tmp_path / "splits.txt"
    splits.write_text("100\n200\n")
    assert run(["table", "create", "people", "--schema", str(schema), "--split-points", str(splits)]) == 0
    rows = tmp_path / "people.parquet"
    pq.write_table(
        pa.table(
            {
                "key": pa.array(range(ROWS), pa.int64()),
                "age": pa.array([i % 90 for i in range(ROWS)], pa.int32()),
                "name": [f"n{i % 30}" for i in range(ROWS)],
                "visibility": ["A" if i % 2 else "B" for i in range(ROWS)],
            }
        ),
        rows,
    )
    assert run(["ingest", "people", str(rows)]) == 0
    pets_schema = tmp_path / "pets.json"
    pets_schema.write_text(
        json.dumps(
            {
                "rowKeyFields": [{"name": "owner", "type": "LongType"}],
                "valueFields": [{"name": "pet", "type": "StringType"}],
            }
        )
    )
    assert run(["table", "create", "pets", "--schema", str(pets_schema)]) == 0
    pets = tmp_path / "pets.parquet"
    pq.write_table(
        pa.table({"owner": pa.array([3, 40, 41, 250], pa.int64()), "pet": ["cat", "dog", "eel", "cat"]}), pets
    )
    assert run(["ingest", "pets", str(pets)]) == 0
    return instance


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert run(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _json_rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(_out(capsys, [*argv, "--format", "json"]))["rows"]
    return rows


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert run(argv) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err
    assert captured.out == ""
    return err


@pytest.mark.parametrize(
    ("where", "extra"),
    [
        ("age > 80", []),
        ("age between 10 and 12 or name = 'n7'", []),
        ("name starts with 'n2' and not (age < 50)", ["--fields", "name"]),
        ("key in (5, 150, 299) or key > 295", []),
        ("age < 20", ["--range", "key=[100,200)"]),
        ("age = 7", ["--exact", "key=7", "--exact", "key=8"]),
        ("age > 1000", []),
    ],
)
def should_query_with_a_filter_as_the_python_api_does(
    people: Path, capsys: pytest.CaptureFixture[str], where: str, extra: list[str]
) -> None:
    # When the table is queried with --where, directly and through the query queue
    direct = _json_rows(capsys, ["query", "people", "--where", where, *extra])
    queued = _json_rows(capsys, ["query", "people", "--where", where, "--via-queue", *extra])
    # Then both give the rows Table.scan gives with the same filter
    table = sleeper.connect(str(people)).table("people")
    regions = {"ranges": {"key": (100, 200)}} if "--range" in extra else {}
    keys = {"keys": [[7], [8]]} if "--exact" in extra else {}
    columns = {"columns": ["key", "name"]} if "--fields" in extra else {}
    expected = table.scan(filter=where, **regions, **keys, **columns).to_arrow().to_pylist()  # type: ignore[arg-type]
    assert direct == expected
    assert queued == expected


def should_filter_after_a_query_time_iterator(people: Path, capsys: pytest.CaptureFixture[str]) -> None:
    iterator = [
        "--iterator",
        "sleeper.iterators.examples.SecurityFilteringIterator",
        "--iterator-config",
        "visibility,A",
    ]
    rows = _json_rows(capsys, ["query", "people", "--where", "age < 10", *iterator])
    assert rows and all(r["visibility"] == "A" and r["age"] < 10 for r in rows)
    assert len(rows) == sum(1 for i in range(ROWS) if i % 2 and i % 90 < 10)


@pytest.mark.parametrize("queue", [[], ["--via-queue"]])
@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("agee > 3", "bad filter at position 0: the table has no column 'agee'"),
        ("age > 'x'", "bad filter at position 6: column 'age' is IntType: compare it with an integer"),
        ("age > 3 and", "bad filter at position 11: expected a column, found the end"),
    ],
)
def should_refuse_a_bad_filter_in_one_line_sending_nothing(
    people: Path, capsys: pytest.CaptureFixture[str], queue: list[str], where: str, message: str
) -> None:
    err = _refused(capsys, ["query", "people", "--where", where, *queue])
    assert message in err
    assert sleeper.connect(str(people)).queries_report().num_rows == 0


def should_run_sql_in_every_output_format(people: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    statement = "select p.name, x.pet from people p join pets x on p.key = x.owner where p.age < 60 order by p.key"
    expected = sleeper.connect(str(people)).sql(statement).read_all().to_pylist()
    assert expected == [{"name": "n3", "pet": "cat"}, {"name": "n10", "pet": "dog"}, {"name": "n11", "pet": "eel"}]
    # JSON, NDJSON and CSV on standard output
    assert _json_rows(capsys, ["sql", statement]) == expected
    assert [
        json.loads(line) for line in _out(capsys, ["sql", statement, "--format", "ndjson"]).splitlines()
    ] == expected
    assert _out(capsys, ["sql", statement, "--format", "csv"]).splitlines() == [
        '"name","pet"',
        '"n3","cat"',
        '"n10","dog"',
        '"n11","eel"',
    ]
    # a table on the terminal, and Parquet to a file
    shown = _out(capsys, ["sql", statement])
    assert "n10" in shown and "dog" in shown and "3 rows" in shown
    out = tmp_path / "pets.parquet"
    assert "3 rows written" in _out(capsys, ["sql", statement, "--format", "parquet", "-o", str(out)])
    assert pq.read_table(out).to_pylist() == expected
    # and --limit
    assert _json_rows(capsys, ["sql", statement, "--limit", "2"]) == expected[:2]


def should_run_aggregations_and_read_the_statement_from_standard_input(
    people: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    statement = "select name, count(*) as n from people where name in ('n1', 'n2') group by name order by name"
    monkeypatch.setattr("sys.stdin", io.StringIO(statement))
    assert _json_rows(capsys, ["sql", "-"]) == [{"name": "n1", "n": 10}, {"name": "n2", "n": 10}]
    assert _json_rows(capsys, ["sql", "select * from people where age > 1000"]) == []


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("delete from people", "error: SQL here is read-only: only one SELECT (or WITH ... SELECT) statement is "),
        ("copy people to 'out.csv'", "not COPY"),
        ("select 1; select 2", "give one SELECT statement at a time, not 2"),
        ("select * from read_csv('rows.csv')", "the table function read_csv(...) is refused"),
        ("select * from nobody", "no table 'nobody' in the instance (tables: people, pets)"),
        ("selec 1", "bad SQL at position 0"),
    ],
)
def should_refuse_a_statement_in_one_line_changing_nothing(
    people: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    statement: str,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert message in _refused(capsys, ["sql", statement])
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sleeper.connect(str(people)).table("people").scan().count() == ROWS


def should_refuse_bad_sql_options(people: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--limit must be a positive number" in _refused(capsys, ["sql", "select 1", "--limit", "0"])
    assert "--format parquet needs --output FILE" in _refused(capsys, ["sql", "select 1", "--format", "parquet"])
    assert "--format must be one of" in _refused(capsys, ["sql", "select 1", "--format", "xml"])


def should_write_what_sql_computes_as_json(people: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given values JSON has no type for: a decimal sum, a date and time, a struct
    statement = (
        "select sum(age) as total, 1.5 as half, date '2020-01-02' as day, timestamp '2020-01-02 03:04:05' as at, "
        "{'n': count(*), 'names': list(distinct name order by name)[1:2]} as summary from people where key < 4"
    )
    # When they are written as JSON and NDJSON, Then each is the JSON value that means it
    expected = {
        "total": 6,
        "half": 1.5,
        "day": "2020-01-02",
        "at": "2020-01-02T03:04:05",
        "summary": {"n": 4, "names": ["n0", "n1"]},
    }
    assert _json_rows(capsys, ["sql", statement]) == [expected]
    assert json.loads(_out(capsys, ["sql", statement, "--format", "ndjson"])) == expected


def should_refuse_a_nested_column_as_csv_naming_what_to_do(people: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, ["sql", "select key, [age, age] as pair from people", "--format", "csv"])
    assert "--format csv cannot hold the column pair" in err
    assert "from the select list in sql" in err
