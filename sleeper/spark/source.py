"""The Sleeper table source for Spark: ``spark.read.format("sleeper")``, with PySpark's Python data source API.

Options (:data:`sleeper.spark.reading.OPTIONS`): ``instance`` (a local instance directory or ``aws:ID``), ``table``,
and optionally ``filter`` (filter text, docs/usage/filters.md) and ``columns`` (comma-separated, or a JSON list).

What happens where:

- **Schema** (when ``load()`` runs): the table's schema as Spark types: ``IntType`` is ``IntegerType``, ``LongType``
  ``LongType``, ``StringType`` ``StringType``, ``ByteArrayType`` ``BinaryType``, lists ``ArrayType`` and maps
  ``MapType``; the value types beyond Sleeper's: ``FloatType``, ``DoubleType``, ``BooleanType``, ``DateType``, and a
  ``TimestampType`` with a time zone is Spark's ``TimestampType`` (an instant), one without ``TimestampNTZType``
  (Spark holds microseconds: finer timestamps are truncated to the microsecond). Row keys are not nullable.
- **Filter pushdown** (PySpark 4.1 or later, with ``spark.sql.python.filterPushdown.enabled``): each filter Spark
  offers that the filter language can say (``=``, ``<=>``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``is null``, ``is not
  null``, ``not``, ``startswith``, ``endswith`` and ``contains`` on a column of the table, with a literal of the
  column's type) is taken and ANDed with the ``filter`` option; the others (dates and timestamps among them) are
  left for Spark to apply.
- **Planning**: the query is planned against the table's state store once, on the driver side, as ``Table.scan``
  plans it: row key predicates narrow it to the leaf partitions that can match, and each leaf partition's sub-query
  is one Spark partition, carrying its sub-query as Sleeper's leaf partition query JSON. Executors read nothing from
  the state store.
- **Reading**: each executor installs the wheels of the table's iterator listed in ``sleeper.userjars`` (as bulk
  import's executors do: :mod:`sleeper.iterators.shipping`), then runs its sub-query
  (:func:`sleeper.query.executor.run_leaf_query`): the leaf's files within its region, merged, with the table's
  filters, aggregations and iterator applied, then the filter, so the rows are the rows ``table.scan(filter=...)``
  returns. Batches go to Spark as Arrow.

PySpark is imported when this module is; ``sleeper.spark`` imports it only when it is used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper.core import (
    And,
    Compare,
    Field,
    FieldType,
    Filter,
    FilterError,
    InList,
    IsNull,
    Like,
    ListType,
    MapType,
    MissingExtraError,
    Not,
    PrimitiveType,
    QuerySerDe,
    Schema,
    SleeperError,
    StartsWith,
    TimestampType,
    ValueType,
    conjoin,
    filter_of,
)
from sleeper.io import FileSystemOptions
from sleeper.iterators import install_wheels, table_iterator_spec, user_code_locations
from sleeper.query import plan_table_query, query_engine, query_iterators, run_leaf_query, table_query_of
from sleeper.spark.options import FORMAT, OPTIONS, check_columns

try:
    from pyspark.sql import types as spark_types
    from pyspark.sql.pandas.types import to_arrow_schema
except ImportError as error:  # pragma: no cover - depends on the environment
    raise MissingExtraError("reading a table with Spark", "spark", "pyspark") from error
try:
    from pyspark.sql import datasource as spark_datasource
except ImportError as error:  # pragma: no cover - depends on the environment
    raise SleeperError(
        "reading a table with Spark needs PySpark 4.0 or later (Python data sources): "
        "pip install --upgrade 'pyspark>=4.1'"
    ) from error

if TYPE_CHECKING:
    from sleeper.api import Table
    from sleeper.core.properties import TableProperties

__all__ = ["LeafRead", "SleeperDataSource", "SleeperReader", "pushes_filters", "spark_filter", "spark_schema"]

_PUSHDOWN = hasattr(spark_datasource, "EqualTo")


def pushes_filters() -> bool:
    """Whether this PySpark offers a Python data source the DataFrame's filters (4.1 or later)."""
    return _PUSHDOWN


# ---------------------------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------------------------


def _primitive(primitive: PrimitiveType) -> Any:
    return {
        PrimitiveType.INT: spark_types.IntegerType(),
        PrimitiveType.LONG: spark_types.LongType(),
        PrimitiveType.STRING: spark_types.StringType(),
        PrimitiveType.BYTE_ARRAY: spark_types.BinaryType(),
    }[primitive]


def spark_type(field_type: FieldType) -> Any:
    """The Spark type a Sleeper field type is read as."""
    if isinstance(field_type, PrimitiveType):
        return _primitive(field_type)
    if isinstance(field_type, TimestampType):
        return spark_types.TimestampType() if field_type.time_zone is not None else spark_types.TimestampNTZType()
    if isinstance(field_type, ValueType):
        return {
            ValueType.FLOAT: spark_types.FloatType(),
            ValueType.DOUBLE: spark_types.DoubleType(),
            ValueType.BOOLEAN: spark_types.BooleanType(),
            ValueType.DATE: spark_types.DateType(),
        }[field_type]
    if isinstance(field_type, ListType):
        return spark_types.ArrayType(_primitive(field_type.element_type), containsNull=False)
    if isinstance(field_type, MapType):
        return spark_types.MapType(
            _primitive(field_type.key_type), _primitive(field_type.value_type), valueContainsNull=False
        )
    raise TypeError(f"not a Sleeper field type: {field_type!r}")


def spark_schema(schema: Schema, columns: Sequence[str] | None = None) -> Any:
    """The Spark schema of a table's columns (every column if None), in the order given."""
    names = list(schema.field_names) if columns is None else list(columns)
    return spark_types.StructType([_spark_field(schema.field(name)) for name in names])


def _spark_field(field: Field) -> Any:
    return spark_types.StructField(field.name, spark_type(field.type), nullable=field.nullable)


# ---------------------------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------------------------


def _option(options: Mapping[str, str], name: str) -> str:
    value = options.get(name)
    if value is None or not str(value).strip():
        raise SleeperError(
            f"the {FORMAT} source needs the {name!r} option: "
            f'spark.read.format("{FORMAT}").option("instance", DIR_OR_AWS_ID).option("table", NAME).load()'
        )
    return str(value)


def _check_options(options: Mapping[str, str]) -> None:
    unknown = sorted(k for k in options if k.lower() not in OPTIONS and k.lower() != "path")
    if unknown:
        raise SleeperError(
            f"the {FORMAT} source has no option {', '.join(map(repr, unknown))} (options: {', '.join(OPTIONS)})"
        )


def _columns(text: str | None, schema: Schema) -> list[str] | None:
    if text is None:
        return None
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            parsed = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise SleeperError(f"the columns option is not a JSON list of names: {e}") from None
        if not isinstance(parsed, list) or not all(isinstance(c, str) for c in parsed):
            raise SleeperError(f"the columns option must list column names, got {text!r}")
        columns = list(parsed)
    else:
        columns = [c.strip() for c in stripped.split(",") if c.strip()]
    check_columns(columns, schema.field_names)
    return columns


def _open(options: Mapping[str, str]) -> Table[Any]:
    from sleeper.runtime import connect

    _check_options(options)
    return connect(_option(options, "instance")).table(_table_name(options))


def _table_name(options: Mapping[str, str]) -> str:
    """The ``table`` option, or the path given to ``load(name)``."""
    table, path = options.get("table"), options.get("path")
    if table is not None and path is not None and str(table) != str(path):
        raise SleeperError(f"the table is named twice: option table={table!r} and load({path!r}); name it once")
    if table is None and path is not None and str(path).strip():
        return str(path)
    return _option(options, "table")


def _open_by_id(location: str, table_id: str) -> Table[Any]:
    from sleeper.runtime import connect

    return connect(location).table_by_id(table_id)


# ---------------------------------------------------------------------------------------------------------------
# Spark filters
# ---------------------------------------------------------------------------------------------------------------

_COMPARISONS: dict[str, str] = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def spark_filter(spark_filter: Any, schema: Schema) -> Filter | None:
    """A filter Spark offers a data source (``pyspark.sql.datasource.Filter``) in the filter language, checked
    against the table's schema; None if the language cannot say it (a nested column, a column the table lacks, a
    literal of another type such as a date, a pattern holding ``%`` or ``_``), so Spark applies it itself."""
    try:
        model = _model(spark_filter, schema)
        return None if model is None else filter_of(model, schema)
    except FilterError:
        return None


def _model(node: Any, schema: Schema) -> Filter | None:
    kind = type(node).__name__
    if kind == "Not":
        inner = _model(node.child, schema)
        return None if inner is None else Not(inner)
    attribute = getattr(node, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1 or not schema.has_field(attribute[0]):
        return None
    column = attribute[0]
    value = getattr(node, "value", None)
    if kind in _COMPARISONS:
        return None if value is None else Compare(column, _COMPARISONS[kind], value)
    if kind == "EqualNullSafe":
        # a <=> v is true or false, never null: true when a is not null and equals v (a is null when v is null)
        if value is None:
            return IsNull(column)
        return And((IsNull(column, negated=True), Compare(column, "=", value)))
    if kind == "In":
        values = tuple(value or ())
        return None if not values or any(v is None for v in values) else InList(column, values)
    if kind == "IsNull":
        return IsNull(column)
    if kind == "IsNotNull":
        return IsNull(column, negated=True)
    if not isinstance(value, str) or schema.field(column).type is not PrimitiveType.STRING:
        return None
    if kind == "StringStartsWith":
        return StartsWith(column, value)
    if "%" in value or "_" in value:
        return None
    if kind == "StringEndsWith":
        return Like(column, "%" + value)
    if kind == "StringContains":
        return Like(column, "%" + value + "%")
    return None


# ---------------------------------------------------------------------------------------------------------------
# The source
# ---------------------------------------------------------------------------------------------------------------


class LeafRead(spark_datasource.InputPartition):
    """One Spark partition: a leaf partition's sub-query as Sleeper's leaf partition query JSON, and the time the
    table's age-off filters measure from (the same for every sub-query of a read)."""

    def __init__(self, query_json: str, now_ms: int) -> None:
        super().__init__(query_json)
        self.query_json = query_json
        self.now_ms = now_ms


class SleeperReader(spark_datasource.DataSourceReader):
    """Plans a read of a table as one Spark partition per leaf sub-query and reads each in an executor.

    Holds what executors need to run a sub-query (the schema, the table properties the table's rules are read from,
    how to reach the files), never the instance or its state store.
    """

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        table = _open(options)
        self._table: Table[Any] | None = table
        self.schema = table.schema
        self.table_id = table.table_id
        self.location = _option(options, "instance")
        self.properties: TableProperties = table.properties
        self.engine = query_engine(self.properties)  # the table's data engine, chosen once on the driver
        fs = table.instance.filesystem_options
        self.filesystem = None if fs is None else FileSystemOptions(s3=fs.s3)
        # The wheels of the table's iterator (sleeper.userjars), installed in each executor before it reads
        has_iterator = table_iterator_spec(self.properties) is not None
        self.user_code = user_code_locations(self.properties.instance_properties) if has_iterator else []
        names = list(schema.fieldNames())
        check_columns(names, self.schema.field_names)
        self.columns = names
        self.target = to_arrow_schema(schema, timezone="UTC")
        option = options.get("filter")
        self.filters: list[Filter] = [] if option is None else [filter_of(str(option), self.schema)]

    def __getstate__(self) -> dict[str, Any]:
        # The instance and its state store stay on the driver: executors get what running a sub-query needs
        state = dict(self.__dict__)
        state["_table"] = None
        return state

    @property
    def row_filter(self) -> Filter | None:
        """The filter the read applies: the ``filter`` option and every filter pushed by Spark, together."""
        return conjoin(self.filters)

    def partitions(self) -> list[LeafRead]:
        """One partition per leaf sub-query of the table's current files (none if no leaf can match)."""
        table = self._table if self._table is not None else _open_by_id(self.location, self.table_id)
        requested = [c for c in self.columns if c not in self.schema.key_names]
        query = table_query_of(table, requested_value_fields=requested, row_filter=self.row_filter)
        leaves = plan_table_query(query, table.state_store, table_id=table.table_id, schema=self.schema)
        serde = QuerySerDe.for_schema(self.schema)
        now_ms = int(time.time() * 1000)
        return [LeafRead(serde.to_json(leaf), now_ms) for leaf in leaves]

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        """The rows of one sub-query, as Arrow batches of the Spark schema."""
        if not isinstance(partition, LeafRead):
            return
        if self.user_code:  # an executor may be another machine than the driver: install the iterator's code here
            install_wheels(self.user_code, options=self.filesystem)
        leaf = QuerySerDe.for_schema(self.schema).leaf_query_from_json(partition.query_json)
        config = query_iterators(self.properties, self.schema, leaf.processing, partition.now_ms)
        batches = run_leaf_query(
            leaf, self.schema, config, partition.now_ms, options=self.filesystem, engine=self.engine
        )
        for batch in batches:
            yield _conform(batch, self.target)


class PushingReader(SleeperReader):
    """A reader that takes the DataFrame's filters the filter language can say (PySpark 4.1 or later)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:  # noqa: N802 - PySpark's name
        """Takes each filter the filter language can say; yields the others back for Spark to apply."""
        for offered in filters:
            model = spark_filter(offered, self.schema)
            if model is None:
                yield offered
            else:
                self.filters.append(model)


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """A batch as the exact Arrow schema Spark expects: the columns in its order, timestamps in microseconds."""
    arrays = []
    for field in target:
        column = batch.column(field.name)
        if not column.type.equals(field.type):
            column = column.cast(field.type, safe=not pa.types.is_timestamp(field.type))
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


class SleeperDataSource(spark_datasource.DataSource):
    """``spark.read.format("sleeper")``: a Sleeper table as a DataFrame (register it with
    ``sleeper.spark.register(spark)`` or ``spark.dataSource.register(SleeperDataSource)``)."""

    @classmethod
    def name(cls) -> str:
        """The format name, ``sleeper``."""
        return FORMAT

    def schema(self) -> Any:
        """The table's columns (or those of the ``columns`` option) as a Spark schema; the ``filter`` option is
        checked here, so a bad one fails when the DataFrame is loaded.

        Raises:
            SleeperError: If an option is missing or unknown.
            FilterError: If the filter does not parse or suit the schema.
            QueryExecutionError: If a column is not in the table.
        """
        table = _open(self.options)
        schema = table.schema
        option = self.options.get("filter")
        if option is not None:
            filter_of(str(option), schema)
        return spark_schema(schema, _columns(self.options.get("columns"), schema))

    def reader(self, schema: Any) -> SleeperReader:
        """The reader of the DataFrame's columns (``schema``: the source's, or a subset the user gives)."""
        if _PUSHDOWN:
            return PushingReader(self.options, schema)
        return SleeperReader(self.options, schema)
