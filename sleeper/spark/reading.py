"""Registering the Sleeper Spark source and reading a table with it, with the options checked on the driver.

PySpark is imported only when :func:`register` or :func:`read_table` runs (the ``spark`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleeper.core import Filter, SleeperError, filter_of
from sleeper.spark.options import FORMAT, OPTIONS, PUSHDOWN_CONF, check_columns

if TYPE_CHECKING:
    from sleeper.api import Instance

__all__ = ["FORMAT", "OPTIONS", "PUSHDOWN_CONF", "read_table", "register"]


def register(spark: Any) -> None:
    """Registers the Sleeper source with a Spark session, so ``spark.read.format("sleeper")`` reads tables, and turns
    on Python data source filter pushdown (:data:`PUSHDOWN_CONF`) where this PySpark has it, so the DataFrame's
    filters that the filter language can say are applied while the table is read.

    Raises:
        MissingExtraError: If PySpark is not installed.
        SleeperError: If PySpark is older than 4.0 (it has no Python data sources).
    """
    from sleeper.spark.source import SleeperDataSource, pushes_filters

    spark.dataSource.register(SleeperDataSource)
    if pushes_filters():
        spark.conf.set(PUSHDOWN_CONF, "true")


def read_table(
    spark: Any,
    instance: str | Path | Instance,
    table: str,
    *,
    filter: str | Filter | None = None,
    columns: Sequence[str] | None = None,
) -> Any:
    """A table as a Spark DataFrame, read through the Sleeper source (registered here if need be).

    The instance, the table, the filter and the columns are checked here, on the driver, so a mistake is the typed
    error ``Table.scan`` raises rather than a Spark error; the rows are read when Spark runs the DataFrame, one Spark
    partition per leaf partition the filter can match, with the table's filters, aggregations and iterator applied
    before the filter (the rows ``table.scan(filter=..., columns=...)`` returns).

    Args:
        spark: The Spark session.
        instance: The instance: a local instance directory, ``aws:ID``, or an opened instance.
        table: The table name.
        filter: Which rows to return, as filter text or a :mod:`sleeper.core.filter` model; every row if None.
        columns: The columns to return, in order; every column if None.

    Returns:
        The DataFrame (typed Any: PySpark is optional).

    Raises:
        InstanceNotFoundError: If there is no instance there.
        TableNotFoundError: If the instance has no such table.
        FilterError: If the filter has bad syntax or does not suit the table's schema.
        QueryExecutionError: If a column is not in the table, or none is named.
        MissingExtraError: If PySpark is not installed.
    """
    from sleeper.runtime import connect

    opened = connect(instance) if isinstance(instance, str | Path) else instance
    schema = opened.table(table).schema
    options = {"instance": opened.location, "table": table}
    if filter is not None:
        options["filter"] = str(filter_of(filter, schema))
    if columns is not None:
        if isinstance(columns, str):
            raise SleeperError(f"columns must be a sequence of column names, got the string {columns!r}")
        check_columns(list(columns), schema.field_names)
        options["columns"] = ",".join(columns)
    register(spark)
    return spark.read.format(FORMAT).options(**options).load()
