"""The Sleeper Spark source's name and options, and the checks of the columns asked of a table (no PySpark here)."""

from __future__ import annotations

from collections.abc import Sequence

from sleeper.query import QueryExecutionError

__all__ = ["FORMAT", "OPTIONS", "PUSHDOWN_CONF", "check_columns"]

FORMAT = "sleeper"
"""The name the source is registered under: ``spark.read.format("sleeper")``."""

OPTIONS = ("instance", "table", "filter", "columns")
"""The options the source takes: ``instance`` (a local instance directory or ``aws:ID``, as ``sleeper.connect``
takes), ``table`` (the table name, or give it to ``load(name)``), ``filter`` (filter text, docs/usage/filters.md) and
``columns`` (the columns to return, in order, comma-separated or a JSON list; every column if absent)."""

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""The Spark setting that lets a Python data source take the DataFrame's filters (off by default in Spark)."""


def check_columns(columns: Sequence[str], names: Sequence[str]) -> None:
    """Checks columns asked of a table against its columns.

    Raises:
        QueryExecutionError: If one is not in the table, one is named twice, or none is named.
    """
    if not columns:
        raise QueryExecutionError(f"name at least one column to read (columns: {', '.join(names)})")
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise QueryExecutionError(f"table has no column {', '.join(map(repr, unknown))} (columns: {', '.join(names)})")
    twice = sorted({c for c in columns if list(columns).count(c) > 1})
    if twice:
        raise QueryExecutionError(f"column {', '.join(map(repr, twice))} is named more than once")
