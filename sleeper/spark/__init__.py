"""Spark reads a Sleeper table: ``spark.read.format("sleeper")``, a PySpark Python data source (the ``spark`` extra,
PySpark 4.0 or later; filter pushdown needs 4.1).

``register(spark)`` registers the source and turns on Python data source filter pushdown; ``read_table(spark,
instance, table, filter=..., columns=...)`` checks the filter and columns here, on the driver, and returns the
DataFrame. :class:`~sleeper.spark.source.SleeperDataSource` is the source itself (``spark.dataSource.register``).
PySpark is imported only when one of them is used. docs/usage/bulk-import.md has the options and which engine reads
a table which way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
from sleeper.spark.options import FORMAT, OPTIONS
from sleeper.spark.reading import read_table, register

if TYPE_CHECKING:
    from sleeper.spark.source import SleeperDataSource as SleeperDataSource

__all__ = ["FORMAT", "OPTIONS", "SleeperDataSource", "read_table", "register"]


__getattr__, __dir__ = lazy_face(__name__, __file__)
