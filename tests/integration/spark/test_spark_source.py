"""``spark.read.format("sleeper")`` on a local instance with local Spark: the rows equal ``table.scan()``'s (every
type, one Spark partition per leaf), with the DataFrame's filters pushed and with the ``filter`` option they equal
``table.scan(filter=...)``'s, a row key filter plans only the leaves it can match, the table's aggregation and
security filter apply as a scan applies them, and bad options are refused with the filter language's message."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper
import sleeper.spark
from sleeper.api.table import Table
from sleeper.core.filter import Compare, FilterError
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema, TimestampType, ValueType
from sleeper.query.exceptions import QueryExecutionError

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark.sql.datasource")

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("sort", PrimitiveType.STRING)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
        Field("tags", ListType(PrimitiveType.STRING)),
        Field("counts", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
        Field("score", ValueType.DOUBLE, True),
        Field("ratio", ValueType.FLOAT, True),
        Field("flag", ValueType.BOOLEAN, True),
        Field("born", ValueType.DATE, True),
        Field("seen", TimestampType("us", "UTC"), True),
        Field("local", TimestampType("ns"), True),
    ],
)
ROWS = 600
SPLITS = [200, 400]
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)


def _rows() -> pa.Table:
    index = range(ROWS)
    return pa.table(
        {
            "key": pa.array(index, pa.int64()),
            "sort": pa.array([f"s{i % 7}" for i in index], pa.string()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in index], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in index], pa.string()),
            "raw": pa.array([bytes([i % 3, i % 5]) for i in index], pa.binary()),
            "tags": pa.array(
                [[f"t{i % 4}"] * (i % 3) for i in index], pa.list_(pa.field("element", pa.string(), False))
            ),
            "counts": pa.array([[("c", i)] for i in index], pa.map_(pa.string(), pa.field("value", pa.int64(), False))),
            "score": pa.array([i / 4 for i in index], pa.float64()),
            "ratio": pa.array([None if i % 5 == 0 else i / 8 for i in index], pa.float32()),
            "flag": pa.array([i % 2 == 0 for i in index], pa.bool_()),
            "born": pa.array([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in index], pa.date32()),
            "seen": pa.array([EPOCH + datetime.timedelta(seconds=i) for i in index], pa.timestamp("us", "UTC")),
            "local": pa.array([1_700_000_000_000_000_000 + i * 1_001 for i in index], pa.timestamp("ns")),
        }
    )


@pytest.fixture(scope="module")
def spark() -> Any:
    """The process's Spark session (Spark takes seconds to start), left running: other test modules in this process
    (the bulk import tests' session-wide fixture) get the same session from ``getOrCreate``, so stopping it here
    would stop theirs."""
    from sleeper.bulk_import import spark_session

    session = spark_session(app_name="sleeper-spark-source-tests", shuffle_partitions=2)
    sleeper.spark.register(session)
    return session


@pytest.fixture(scope="module")
def instance_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark-source") / "instance"


@pytest.fixture(scope="module")
def table(instance_dir: Path) -> Table:
    table = sleeper.create_instance(instance_dir).create_table(
        "people", SCHEMA, split_points=SPLITS, properties={"sleeper.table.parquet.rowgroup.rows.max": "50"}
    )
    rows = _rows()
    table.ingest(rows.slice(0, ROWS // 2))
    table.ingest(rows.slice(ROWS // 2))
    return table


def _read(spark: Any, instance_dir: Path, name: str, **options: str) -> Any:
    return spark.read.format("sleeper").option("instance", str(instance_dir)).option("table", name).options(**options)


def _same(frame: Any, expected: pa.Table) -> None:
    """The DataFrame's rows equal the scan's, compared as Arrow of Spark's types (timestamps in microseconds)."""
    got = frame.toArrow()
    assert got.column_names == expected.column_names
    wanted = pa.table(
        [expected[f.name].cast(f.type, safe=not pa.types.is_timestamp(f.type)) for f in got.schema], schema=got.schema
    )
    order = [(name, "ascending") for name in ("key", "sort") if name in got.column_names]
    assert got.num_rows == wanted.num_rows
    assert got.sort_by(order).equals(wanted.sort_by(order))


def should_read_every_row_of_every_type_with_one_spark_partition_per_leaf(
    spark: Any, instance_dir: Path, table: Table
) -> None:
    frame = _read(spark, instance_dir, "people").load()
    assert frame.columns == list(SCHEMA.field_names)
    assert frame.rdd.getNumPartitions() == len(table.leaf_partitions()) == 3
    _same(frame, table.scan().to_arrow())


def should_push_dataframe_filters_and_the_filter_option_into_the_scan(
    spark: Any, instance_dir: Path, table: Table
) -> None:
    people = _read(spark, instance_dir, "people")
    # A row key filter pushed by Spark plans only the leaf it can match
    narrowed = people.load().filter("key < 150 and age > 40")
    assert narrowed.rdd.getNumPartitions() == 1
    _same(narrowed, table.scan(filter="key < 150 and age > 40").to_arrow())
    # Value filters of every kind Spark pushes, ANDed with the filter option
    frame = (
        people.option("filter", "name is not null or key >= 500")
        .option("columns", "key,sort,age,name,flag")
        .load()
        .filter("(age in (1, 2, 3, 51) or name like 'n4%' or name like '%9') and not (age = 2) and flag")
    )
    expected = table.scan(
        filter="(name is not null or key >= 500) and (age in (1, 2, 3, 51) or name starts with 'n4' or name like "
        "'%9') and not (age = 2) and flag = true",
        columns=["key", "sort", "age", "name", "flag"],
    )
    _same(frame, expected.to_arrow())


PUSHED = [
    ("age != 5 and name like '%3' and flag = false", "age != 5 and name like '%3' and not flag"),
    ("age not in (1, 2) and raw = x'0102' and ratio >= 30", "age not in (1, 2) and raw = X'0102' and ratio >= 30"),
    ("name is null and age between 2 and 8 and key < 400", "name is null and age between 2 and 8 and key < 400"),
    (
        "name starts with 'n9' and sort = 's3' and age is not null",
        "name like 'n9%' and sort = 's3' and age is not null",
    ),
    ("key in (5, 250, 599) or key > 595", "key in (5, 250, 599) or key > 595"),
    ("key > 10 and key < 5", "key > 10 and key < 5"),
]
"""Filter text, and the same predicate in Spark SQL on the DataFrame: Spark offers each conjunct on its own, so
between them these push every kind of filter Spark pushes (on row keys, a sort key and values of several types, with
nulls); an ``or``, which Spark keeps; and row key bounds that select nothing (no leaf is planned)."""

OPTION_FILTERS = ["not (age > 3)", "key > 5000"]
"""Filter text given as the ``filter`` option: ``not`` over nulls, and one that selects nothing."""


def should_return_the_rows_of_the_scan_for_every_operator(spark: Any, instance_dir: Path, table: Table) -> None:
    # Given each filter on the DataFrame and as the filter option, read in one Spark job (each tagged by its case;
    # the schema given, so the source is not asked it for each)
    from pyspark.sql import functions as F

    from sleeper.spark.source import spark_schema

    columns = ["key", "sort", "age", "name", "raw", "score", "ratio", "flag"]
    base = _read(spark, instance_dir, "people", columns=",".join(columns)).schema(spark_schema(SCHEMA, columns))
    texts = [text for text, _ in PUSHED] + OPTION_FILTERS
    frames = [base.load().filter(sql) for _, sql in PUSHED] + [base.option("filter", t).load() for t in OPTION_FILTERS]
    union = frames[0].withColumn("case", F.lit(0))
    for case, frame in enumerate(frames[1:], start=1):
        union = union.unionAll(frame.withColumn("case", F.lit(case)))
    # When it runs
    got = union.toArrow()
    # Then each case's rows are the scan's with the filter
    for case, text in enumerate(texts):
        expected = table.scan(filter=text, columns=columns).to_arrow().to_pylist()
        rows = got.filter(pc.equal(got["case"], case)).drop_columns(["case"])
        assert rows.sort_by([("key", "ascending"), ("sort", "ascending")]).to_pylist() == expected, text


def should_take_only_the_filters_the_language_can_say_and_plan_with_them(instance_dir: Path, table: Table) -> None:
    # Given the source's reader of the table, and filters Spark offers it
    from pyspark.sql import datasource as ds

    from sleeper.spark.source import SleeperDataSource, spark_schema

    options = ds.CaseInsensitiveDict({"instance": str(instance_dir), "table": "people", "filter": "age < 50"})
    reader = SleeperDataSource(options).reader(spark_schema(SCHEMA))
    offered = [ds.LessThan(("key",), 200), ds.EqualTo(("born",), datetime.date(2000, 1, 1)), ds.IsNull(("nope",))]
    # When they are pushed
    left = list(reader.pushFilters(offered))
    # Then the row key comparison is taken, the others are given back as they were, and one leaf is planned
    assert left == offered[1:] and left[0] is offered[1] and left[1] is offered[2]
    assert str(reader.row_filter) == "age < 50 and key < 200"
    assert len(reader.partitions()) == 1


RULES = {
    "aggregation": {"sleeper.table.aggregations": "sum(count),max(label)"},
    "security": {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.SecurityFilteringIterator",
        "sleeper.table.iterator.config": "label,A",
    },
}


@pytest.mark.parametrize("name", RULES)
def should_apply_the_table_rules_as_a_scan_does(spark: Any, instance_dir: Path, name: str) -> None:
    # Given a table of two leaves with a rule, ingested twice so each key has two rows to aggregate
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING)],
        values=[Field("count", PrimitiveType.LONG), Field("label", PrimitiveType.STRING)],
    )
    table = sleeper.connect(instance_dir).create_table(name, schema, split_points=["k5"], properties=RULES[name])
    keys = [f"k{i}" for i in range(10)]
    for round_ in range(2):
        table.ingest(
            pa.table(
                {
                    "key": keys,
                    "count": pa.array([i * 10 + round_ for i in range(10)], pa.int64()),
                    "label": [("A", "B", "", "C")[(i + round_) % 4] for i in range(10)],
                }
            )
        )
    # When Spark reads it, with and without a filter
    frame = _read(spark, instance_dir, name).option("filter", "count > 20").load()
    # Then its rows are the scan's: aggregated or filtered by the rule before the filter
    expected = table.scan(filter="count > 20").to_arrow()
    assert 0 < expected.num_rows < 16
    _same(frame, expected)


def should_refuse_bad_options_with_the_filter_language_message(spark: Any, instance_dir: Path, table: Table) -> None:
    # A bad filter fails the load with the message a scan gives
    with pytest.raises(FilterError) as caught:
        table.scan(filter="agee > 3")
    with pytest.raises(Exception, match="FilterError") as failed:
        _read(spark, instance_dir, "people").option("filter", "agee > 3").load()
    assert str(caught.value) in str(failed.value)
    # The table may be named to load
    named = spark.read.format("sleeper").option("instance", str(instance_dir)).load("people")
    assert named.columns == list(SCHEMA.field_names)
    # An unknown option is named with the options there are
    with pytest.raises(Exception, match="has no option 'filters' \\(options: instance, table, filter, columns\\)"):
        _read(spark, instance_dir, "people").option("filters", "age > 3").load()


def should_need_python_filter_pushdown_on_when_registered_by_hand(spark: Any, instance_dir: Path, table: Table) -> None:
    from sleeper.spark.options import PUSHDOWN_CONF

    spark.conf.set(PUSHDOWN_CONF, "false")
    try:
        with pytest.raises(Exception, match=PUSHDOWN_CONF.replace(".", "\\.")):
            _read(spark, instance_dir, "people").load().count()
    finally:
        spark.conf.set(PUSHDOWN_CONF, "true")


def should_check_options_on_the_driver_when_read_through_read_table(
    spark: Any, instance_dir: Path, table: Table
) -> None:
    with pytest.raises(FilterError, match="no column 'agee'"):
        sleeper.spark.read_table(spark, instance_dir, "people", filter="agee > 3")
    with pytest.raises(QueryExecutionError, match="no column 'nope'"):
        sleeper.spark.read_table(spark, instance_dir, "people", columns=["key", "nope"])
    frame = sleeper.spark.read_table(
        spark, instance_dir, "people", filter=Compare("age", "=", 7), columns=["age", "key"]
    )
    assert frame.columns == ["age", "key"]
    _same(frame, table.scan(filter="age = 7", columns=["age", "key"]).to_arrow())
