"""The filters Spark offers the Sleeper source, in the filter language: each kind the language can say becomes its
predicate (checked against the schema), and the rest are left for Spark; the table's types as Spark types; PySpark
imported only when the source is used, and the extra named when it is missing."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from sleeper.core.filter import And, Compare, InList, IsNull, Like, Not, StartsWith
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema, TimestampType, ValueType

datasource = pytest.importorskip("pyspark.sql.datasource")
if not hasattr(datasource, "EqualTo"):  # pragma: no cover - depends on the environment
    pytest.skip("filter pushdown needs PySpark 4.1", allow_module_level=True)

from pyspark.sql import types as T  # noqa: E402

from sleeper.spark.source import spark_filter, spark_schema  # noqa: E402

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("raw", PrimitiveType.BYTE_ARRAY, True),
        Field("tags", ListType(PrimitiveType.STRING)),
        Field("born", ValueType.DATE, True),
    ],
)
ds: Any = datasource

CONVERTED = [
    (ds.EqualTo(("age",), 3), Compare("age", "=", 3)),
    (ds.GreaterThan(("key",), 10), Compare("key", ">", 10)),
    (ds.GreaterThanOrEqual(("key",), 10), Compare("key", ">=", 10)),
    (ds.LessThan(("name",), "m"), Compare("name", "<", "m")),
    (ds.LessThanOrEqual(("age",), 7), Compare("age", "<=", 7)),
    (ds.EqualTo(("raw",), bytearray(b"\x01\x02")), Compare("raw", "=", b"\x01\x02")),
    (ds.In(("age",), [1, 2, 3]), InList("age", (1, 2, 3))),
    (ds.IsNull(("name",)), IsNull("name")),
    (ds.IsNotNull(("name",)), IsNull("name", negated=True)),
    (ds.Not(ds.EqualTo(("age",), 3)), Not(Compare("age", "=", 3))),
    (ds.EqualNullSafe(("age",), None), IsNull("age")),
    (ds.EqualNullSafe(("age",), 4), And((IsNull("age", negated=True), Compare("age", "=", 4)))),
    (ds.StringStartsWith(("name",), "ab"), StartsWith("name", "ab")),
    (ds.StringEndsWith(("name",), "yz"), Like("name", "%yz")),
    (ds.StringContains(("name",), "mid"), Like("name", "%mid%")),
]

LEFT_FOR_SPARK = [
    ds.EqualTo(("nested", "field"), 1),  # a nested column
    ds.EqualTo(("nothing",), 1),  # a column the table lacks
    ds.EqualTo(("age",), "3"),  # a literal of another type
    ds.EqualTo(("tags",), ["a"]),  # a list column
    ds.EqualTo(("born",), datetime.date(2020, 1, 1)),  # a date literal
    ds.GreaterThan(("age",), None),  # a null literal
    ds.In(("age",), [1, None]),  # a null in the list
    ds.StringContains(("name",), "50%"),  # a pattern character
    ds.StringStartsWith(("raw",), "ab"),  # a string prefix of a byte array column
    ds.Not(ds.EqualTo(("nothing",), 1)),  # not of what cannot be said
]


@pytest.mark.parametrize(("offered", "expected"), CONVERTED, ids=[str(c[0]) for c in CONVERTED])
def should_say_a_spark_filter_in_the_filter_language(offered: Any, expected: Any) -> None:
    assert spark_filter(offered, SCHEMA) == expected


@pytest.mark.parametrize("offered", LEFT_FOR_SPARK, ids=[str(c) for c in LEFT_FOR_SPARK])
def should_leave_to_spark_what_the_language_cannot_say(offered: Any) -> None:
    assert spark_filter(offered, SCHEMA) is None


def should_give_the_table_types_as_spark_types() -> None:
    # Given a schema of every kind of field
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.BYTE_ARRAY)],
        sort_keys=[Field("sort", PrimitiveType.INT)],
        values=[
            Field("m", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
            Field("f", ValueType.FLOAT, True),
            Field("d", ValueType.DOUBLE, True),
            Field("b", ValueType.BOOLEAN, True),
            Field("at", TimestampType("ns", "UTC"), True),
            Field("local", TimestampType("ms"), True),
        ],
    )
    # When it is given as a Spark schema, with some columns in another order
    every = spark_schema(schema)
    some = spark_schema(schema, ["local", "key"])
    # Then each field has its Spark type, row keys are not nullable, and the columns come in the order asked
    assert every == T.StructType(
        [
            T.StructField("key", T.BinaryType(), False),
            T.StructField("sort", T.IntegerType(), False),
            T.StructField("m", T.MapType(T.StringType(), T.LongType(), False), False),
            T.StructField("f", T.FloatType(), True),
            T.StructField("d", T.DoubleType(), True),
            T.StructField("b", T.BooleanType(), True),
            T.StructField("at", T.TimestampType(), True),
            T.StructField("local", T.TimestampNTZType(), True),
        ]
    )
    assert some.fieldNames() == ["local", "key"]


def should_import_pyspark_only_when_used_and_name_the_extra_when_it_is_missing() -> None:
    # Given a process where PySpark cannot be imported
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import sleeper.spark\n"
        "print('pyspark' in sys.modules)\n"
        "sys.modules['pyspark'] = None\n"
        "try:\n"
        "    sleeper.spark.register(object())\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    # When sleeper.spark is imported, then used
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    # Then importing it imports no PySpark, and using it names the extra to install
    imported, error = done.stdout.strip().splitlines()
    assert imported == "False"
    assert error == (
        "MissingExtraError reading a table with Spark needs the spark extra (pyspark is not installed): "
        "pip install 'sleeper-lsm[spark]'"
    )
