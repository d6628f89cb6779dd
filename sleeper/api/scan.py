"""A scan of a table: the rows a query selects, read as Arrow (a stream or a table) or handed to pandas, polars or
DuckDB, with the names pyiceberg's ``DataScan`` uses (``to_arrow``, ``to_arrow_batch_reader``, ``to_pandas``,
``to_polars``, ``to_duckdb``).

A scan is lazy: it holds what to read, and each ``to_*`` call plans the query against the table's current files and
runs it. Rows come in key order, with the table's filters and aggregations applied, read straight from the data
files (``s3a://`` on AWS) as Sleeper's direct query client reads them. pandas, polars and DuckDB are imported only
when their method is called, and a missing one is named with how to install it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from sleeper.core import Filter, KeyValue, MissingExtraError, Query, Range, Region, SleeperError, filter_of
from sleeper.io import FileSystemOptions
from sleeper.query import QueryableTable, QueryExecutionError, execute, table_query_of

if TYPE_CHECKING:
    import duckdb
    import polars

__all__ = ["KeysArg", "MissingExtraError", "RangesArg", "Scan", "regions_of"]

KeysArg: TypeAlias = Iterable[Mapping[str, object] | Sequence[object]]
"""Exact row keys: each a mapping by row key field name, or the values in row key order."""

_Bounds: TypeAlias = Mapping[str, tuple[KeyValue | None, KeyValue | None]]
RangesArg: TypeAlias = Region | Range | _Bounds | Iterable[Region | Range | _Bounds]
"""Ranges of row keys: a :class:`Region`, a :class:`Range`, a mapping ``{row key field: (min, max)}`` (``[min, max)``,
None for unbounded; several fields in one mapping must all hold), or an iterable of those (rows in any of them)."""


def regions_of(schema_table: QueryableTable, ranges: RangesArg) -> list[Region]:
    """The regions ranges given in any form :data:`RangesArg` allows stand for.

    Raises:
        SleeperError: If a mapping names a field that is not a row key, or an item is of no accepted form.
        RangeError: If a minimum is above its maximum.
    """
    items: Iterable[Any] = [ranges] if isinstance(ranges, (Region, Range, Mapping)) else ranges
    return [_region(schema_table, item) for item in items]


def _region(table: QueryableTable, item: object) -> Region:
    schema = table.schema
    if isinstance(item, Region):
        return item
    if isinstance(item, Range):
        return Region.of([item])
    if isinstance(item, Mapping):
        built = []
        for name, bounds in item.items():
            if name not in schema.row_key_names:
                raise SleeperError(
                    f"cannot scan a range of {name!r}: ranges are of row key fields ({', '.join(schema.row_key_names)})"
                )
            if not isinstance(bounds, tuple | list) or len(bounds) != 2:
                raise SleeperError(f"the range of {name!r} must be (min, max), got {bounds!r}")
            field = schema.field(name)
            low, high = bounds
            built.append(Range(field=field, min=Range.whole(field).min if low is None else low, max=high))
        return Region.of(built)
    what = type(item).__name__
    raise SleeperError(f"a range must be a Region, a Range or a mapping {{field: (min, max)}}, got {what}")


@dataclass(frozen=True, slots=True)
class Scan:
    """The rows of a table that a query selects; read with one of the ``to_*`` methods.

    Attributes:
        table: The table.
        keys: Exact row keys to return, or None.
        regions: Regions of row keys to return, or None (with no keys either: every row).
        columns: The columns to return, in this order (key fields too only if named); every column if None.
        limit: The most rows to return (the first in key order): reading stops once they are found. Every row if None.
        options: How pyarrow reaches the data files (the instance's).
        filter: Beyond Sleeper: which of the rows to return, on any column, as filter text (docs/usage/filters.md)
            or a :mod:`sleeper.core.filter` model; parsed against the schema when the scan is made. Applied after the
            table's filters, aggregations and iterators, and after the query-time iterator, so it only ever narrows
            what they give.
        iterator: A query-time iterator applied after the table's rules, as a query's
            ``queryTimeIteratorClassName``: a dotted path ``package.module.Class`` or one of Sleeper's built-in names
            (e.g. ``sleeper.iterators.examples.SecurityFilteringIterator``). None for none.
        iterator_config: The query-time iterator's config, e.g. ``visibility,auth1,auth2``.
    """

    table: QueryableTable
    keys: tuple[Mapping[str, object] | Sequence[object], ...] | None = None
    regions: tuple[Region, ...] | None = None
    columns: tuple[str, ...] | None = None
    limit: int | None = None
    options: FileSystemOptions | None = None
    filter: Filter | str | None = None
    iterator: str | None = None
    iterator_config: str | None = None

    def __post_init__(self) -> None:
        if self.iterator_config is not None and self.iterator is None:
            raise SleeperError("iterator_config needs iterator (the query-time iterator it configures)")
        if self.filter is not None:
            object.__setattr__(self, "filter", filter_of(self.filter, self.table.schema))
        if self.limit is not None and (isinstance(self.limit, bool) or self.limit < 0):
            raise QueryExecutionError(f"limit must be 0 or more rows, got {self.limit!r}")
        if self.columns is not None:
            schema = self.table.schema
            unknown = [c for c in self.columns if not schema.has_field(c)]
            if unknown:
                raise QueryExecutionError(
                    f"table has no column {', '.join(map(repr, unknown))} (columns: {', '.join(schema.field_names)})"
                )

    def __repr__(self) -> str:
        parts = [repr(getattr(self.table, "name", self.table.table_id))]
        for label, value in (("keys", self.keys), ("regions", self.regions)):
            if value is not None:
                parts.append(f"{label}={len(value)}")
        if self.columns is not None:
            parts.append(f"columns={list(self.columns)!r}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        if self.filter is not None:
            parts.append(f"filter={str(self.filter)!r}")
        if self.iterator is not None:
            parts.append(f"iterator={self.iterator!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def _repr_html_(self) -> str:
        """A notebook's view of what the scan reads (nothing is read until a ``to_*`` method is called)."""
        from sleeper.api.views import html_summary

        every = "every row" if self.keys is None and self.regions is None else None
        return html_summary(
            f"Scan of {getattr(self.table, 'name', self.table.table_id)}",
            [
                ("exact keys", every or len(self.keys or ())),
                ("regions", every or "; ".join(str(r) for r in self.regions or ()) or "none"),
                ("columns", ", ".join(self.columns) if self.columns is not None else "every column"),
                ("limit", self.limit if self.limit is not None else "none"),
                ("filter", str(self.filter) if self.filter is not None else "none"),
                ("query-time iterator", self.iterator or "none"),
            ],
        )

    def with_limit(self, limit: int | None) -> Scan:
        """The same scan returning at most ``limit`` rows."""
        return dataclasses.replace(self, limit=limit)

    def query(self) -> Query:
        """The query this scan runs (a new random id each call): its regions, the value fields its columns need, its
        filter and its query-time iterator."""
        schema = self.table.schema
        requested = None
        if self.columns is not None:
            requested = [c for c in self.columns if c not in schema.key_names]
        query = table_query_of(
            self.table, keys=self.keys, regions=self.regions, requested_value_fields=requested, row_filter=self.filter
        )
        if self.iterator is None:
            return query
        processing = dataclasses.replace(
            query.processing,
            query_time_iterator_class_name=self.iterator,
            query_time_iterator_config=self.iterator_config,
        )
        return dataclasses.replace(query, processing=processing)

    def to_arrow_batch_reader(self, *, batch_rows: int | None = None) -> pa.RecordBatchReader:
        """The rows as a stream of record batches, read from the data files as it is consumed (memory is bounded by
        the batches, not by the result).

        Args:
            batch_rows: The most rows in a batch read and merged (the executor's default if None).

        Raises:
            IteratorLoadError: If the query-time iterator cannot be loaded (nothing is read).
        """
        reader = execute(self.query(), self.table, options=self.options, batch_rows=batch_rows, limit=self.limit)
        if self.columns is None or list(self.columns) == reader.schema.names:
            return reader
        columns = list(self.columns)
        projected = pa.schema([reader.schema.field(c) for c in columns])
        return pa.RecordBatchReader.from_batches(projected, (batch.select(columns) for batch in reader))

    def to_arrow(self) -> pa.Table:
        """The rows as a pyarrow Table."""
        return self.to_arrow_batch_reader().read_all()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows as an Arrow C stream (the Arrow PyCapsule interface), so any Arrow consumer reads the scan lazily,
        a batch at a time: ``pa.table(scan)``, ``pa.RecordBatchReader.from_stream(scan)``, ``duckdb.sql("select ...
        from scan")``, ``polars.DataFrame(scan)``. Each call runs the scan afresh against the table's current files.
        """
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)

    def to_pandas(self, **kwargs: Any) -> Any:
        """The rows as a pandas DataFrame (``kwargs`` go to ``pyarrow.Table.to_pandas``; typed Any: pandas has no
        stubs here).

        Raises:
            MissingExtraError: If pandas is not installed.
        """
        _require("pandas")
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self) -> polars.DataFrame:
        """The rows as a polars DataFrame, built from the Arrow stream batch by batch (no whole Arrow table is held
        beside it).

        Raises:
            MissingExtraError: If polars is not installed.
        """
        pl = _require("polars")
        frame: polars.DataFrame = pl.DataFrame(self)
        return frame

    def to_duckdb(self, table_name: str, connection: duckdb.DuckDBPyConnection | None = None) -> Any:
        """The scan registered as a DuckDB view; returns the connection. Nothing is read until DuckDB queries it; each
        query of the view then streams the scan afresh through the Arrow C stream (no Arrow table is materialised).

        Args:
            table_name: The name to register the rows under.
            connection: The DuckDB connection; a new in-memory one if None.

        Raises:
            MissingExtraError: If duckdb is not installed.
        """
        db = _require("duckdb")
        con = db.connect() if connection is None else connection
        con.register(table_name, self)
        return con

    def count(self) -> int:
        """How many rows the scan returns (read through the stream, never held whole)."""
        return sum(batch.num_rows for batch in self.to_arrow_batch_reader())


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"Scan.to_{module}", "dataframes", module) from None
