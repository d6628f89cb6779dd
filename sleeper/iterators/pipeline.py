"""Everything applied to a table's rows, in Sleeper's order: its filters, its aggregations, its iterator
(``sleeper.table.iterator.class.name``), then a query's query-time iterator.

:class:`RowIterators` is what ingest, compaction, bulk import, queries and the Athena connector apply; each builds one
before it reads or writes anything, so an iterator that cannot be loaded fails the work before any file is opened.
:func:`check_table_iterators` is the check of a table's properties at ``table create`` and property set.

Each loaded iterator runs behind a guard: an error raised by its own code (not by the reading of its input) becomes an
:class:`IteratorRunError` naming it, and where rows are written (``writes=True``) what it yields must keep the
columns it was given and the key order, or the work fails before a file is committed.

Before any of them, a table's pending row deletes (``sleeper.core.statestore.deletes``) hide rows of the files they
list: :class:`DeletedRows` is the one per-file hide that queries and compactions apply to each file's rows before the
merge, so deletes apply to stored rows before the table's rules.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import Filter, InList, Literal, PrimitiveType, Schema, columns_of, parse_filter
from sleeper.core.properties import (
    AGGREGATION_CONFIG,
    FILTERING_CONFIG,
    ITERATOR_CLASS_NAME,
    ITERATOR_CONFIG,
    UPSERT,
    TableProperties,
)
from sleeper.io import NotSortedError, check_sorted, key_at, to_expression
from sleeper.iterators.apply import RowProcessor
from sleeper.iterators.config import ProcessingConfig
from sleeper.iterators.exceptions import IteratorConfigError, IteratorRunError
from sleeper.iterators.plugin import IteratorSpec, SortedRowIterator, load_iterator

__all__ = [
    "QUERY_TIME_SOURCE",
    "DeletedRows",
    "RowIterators",
    "check_table_iterators",
    "table_iterator_spec",
    "table_processing",
    "table_rules_refusal",
    "table_upserts",
]

QUERY_TIME_SOURCE = "queryTimeIteratorClassName"
"""How a query-time iterator is named in errors (the query message field)."""


class DeletedRows:
    """The rows of one file that pending deletes hide: those matching any of the deletes' filters (a row a filter
    neither matches nor fails, through a null, is kept, as a SQL ``DELETE ... WHERE`` keeps it).

    Args:
        filters: The texts of the filters of the deletes that list the file (``sleeper.core.filter`` language).
        schema: The table schema.

    Raises:
        FilterError: If a filter does not suit the schema.
    """

    def __init__(self, filters: Sequence[str], schema: Schema) -> None:
        nodes = [_parsed_filter(text, schema) for text in filters]
        self.columns: frozenset[str] = frozenset(c for n in nodes for c in columns_of(n))
        # Key-set deletes (an upsert's ``key in (...)``) on one column are tested as one set; on an integer column as
        # a sorted array searched per batch (built once: Arrow's is_in would build its hash table for every batch)
        members: dict[str, list[Literal]] = {}
        others: list[Filter] = []
        for node in nodes:
            if isinstance(node, InList) and not node.negated:
                members.setdefault(node.column, []).extend(node.values)
            else:
                others.append(node)
        self._sorted_sets: list[tuple[str, np.ndarray]] = []
        for column, values in members.items():
            field_type = schema.field(column).type
            if field_type in (PrimitiveType.INT, PrimitiveType.LONG) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in values
            ):
                self._sorted_sets.append((column, np.unique(np.array(values, dtype=np.int64))))
            else:
                others.append(InList(column, tuple(values)))
        matched: pc.Expression | None = None
        for node in others:
            expression = to_expression(node, schema)
            matched = expression if matched is None else matched | expression
        self._keep = None if matched is None else ~pc.coalesce(matched, pa.scalar(False))

    def keep(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of a batch no delete hides."""
        if not batch.num_rows:
            return batch
        for column, values in self._sorted_sets:
            batch = _without_members(batch, column, values)
        if self._keep is None or not batch.num_rows:
            return batch
        return batch.filter(self._keep)

    def apply(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The batches with the hidden rows left out (empty batches dropped)."""
        for batch in batches:
            kept = self.keep(batch)
            if kept.num_rows:
                yield kept

    @classmethod
    def by_file(cls, filters: dict[str, tuple[str, ...]], schema: Schema) -> dict[str, DeletedRows]:
        """The hide of each file some deletes list, from the filters by file
        (``sleeper.core.statestore.deletes.filters_by_file``), each distinct set of filters combined once (each
        filter text is parsed once per process, :func:`_parsed_filter`)."""
        made: dict[tuple[str, ...], DeletedRows] = {}
        out: dict[str, DeletedRows] = {}
        for name, texts in filters.items():
            hide = made.get(texts)
            if hide is None:
                hide = made[texts] = cls(texts, schema)
            out[name] = hide
        return out


def _without_members(batch: pa.RecordBatch, column: str, values: np.ndarray) -> pa.RecordBatch:
    """The rows of a batch whose integer column is not one of some sorted values (a null is kept)."""
    array = batch.column(column)
    if not batch.num_rows or not len(values):
        return batch
    data = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    at = np.minimum(np.searchsorted(values, data), len(values) - 1)
    hidden = values[at] == data
    if array.null_count:
        hidden &= array.is_valid().to_numpy(zero_copy_only=False)
    if not hidden.any():
        return batch
    return batch.filter(pa.array(~hidden))


@functools.lru_cache(maxsize=512)
def _parsed_filter(text: str, schema: Schema) -> Filter:
    """A delete's filter parsed (kept: the same deletes are read by every scan until a compaction applies them)."""
    return parse_filter(text, schema)


def table_upserts(properties: TableProperties) -> bool:
    """Whether the table keeps one row per row key, the last written (``sleeper.table.upsert``, beyond Sleeper)."""
    return (properties.get(UPSERT) or "false").strip().lower() == "true"


def table_processing(properties: TableProperties, schema: Schema) -> ProcessingConfig:
    """The table's filters and aggregations (``sleeper.table.filters``, ``sleeper.table.aggregations``), and whether
    it keeps the last row of each row key (``sleeper.table.upsert``).

    Raises:
        IteratorConfigError: If either cannot be read or does not suit the schema, or the table sets both
            aggregations and upsert.
    """
    parsed = ProcessingConfig.parse(properties.get(FILTERING_CONFIG), properties.get(AGGREGATION_CONFIG), schema)
    if not table_upserts(properties):
        return parsed
    processing = ProcessingConfig(filters=parsed.filters, aggregations=parsed.aggregations, upsert=True)
    processing.validate(schema)
    return processing


def table_iterator_spec(properties: TableProperties) -> IteratorSpec | None:
    """The table's iterator (``sleeper.table.iterator.class.name`` and ``.config``), if it has one."""
    return IteratorSpec.optional(
        properties.get(ITERATOR_CLASS_NAME), properties.get(ITERATOR_CONFIG), ITERATOR_CLASS_NAME.name
    )


def table_rules_refusal(properties: TableProperties, reader: str = "a reader of its files") -> str | None:
    """Why a reader that returns a table's stored rows as they are would return other rows than a Sleeper query, or
    None if the table's rows are exactly the union of its files' rows.

    A table's filters (``sleeper.table.filters``, such as an age-off), aggregations (``sleeper.table.aggregations``),
    iterator (``sleeper.table.iterator.class.name``, such as a security filter) and upsert (``sleeper.table.upsert``:
    one row per row key, older ones hidden) change its rows whenever they are read, so its files do not hold its
    rows. Every door that hands out stored rows without applying :class:`RowIterators` (the simple Athena connector,
    an Iceberg view) must refuse a table for which this returns a reason, and include the reason in its error.

    Args:
        properties: The table's properties.
        reader: Who would read the files as they are, for the reason's wording (e.g. ``"an Iceberg reader"``).

    Returns:
        One sentence naming each of those properties the table sets, or None if it sets none of them.
    """
    applied = [
        p.name for p in (ITERATOR_CLASS_NAME, AGGREGATION_CONFIG, FILTERING_CONFIG) if (properties.get(p) or "").strip()
    ]
    if table_upserts(properties):
        applied.append(UPSERT.name)
    if not applied:
        return None
    return (
        f"it sets {', '.join(applied)}: its rows are changed whenever they are read, so its files do not hold its "
        f"rows and {reader}, which reads the files as they are, would see other rows than Sleeper queries"
    )


def check_table_iterators(properties: TableProperties) -> None:
    """Checks that a table's filters, aggregations and iterator can be applied: the iterator is loaded and
    initialised with its config, as every place running it will.

    Raises:
        IteratorConfigError: In one line, naming the property and what is wrong (an :class:`IteratorLoadError` for
            the iterator).
    """
    RowIterators.for_table(properties, properties.schema)


class RowIterators:
    """The table's processing and iterators, loaded and ready to apply to sorted streams (any number of times)."""

    def __init__(
        self,
        schema: Schema,
        processing: ProcessingConfig,
        iterators: Sequence[tuple[IteratorSpec, SortedRowIterator]] = (),
        *,
        now_ms: int | None = None,
        writes: bool = False,
    ) -> None:
        """Creates the chain from what is already loaded (see :meth:`for_table` and :meth:`build`).

        Args:
            schema: The table schema.
            processing: The filters and aggregations, applied first.
            iterators: The loaded iterators with what named them, applied in order after the processing.
            now_ms: The time age-off filters measure from; the time of each :meth:`apply` if None.
            writes: Whether the rows are written to data files: then iterators must keep their input's columns and
                the key order.

        Raises:
            IteratorConfigError: If the processing does not suit the schema.
        """
        processing.validate(schema)
        self._schema = schema
        self._processing = processing
        self._iterators = tuple(iterators)
        self._now_ms = now_ms
        self._writes = writes

    @classmethod
    def build(
        cls,
        schema: Schema,
        processing: ProcessingConfig,
        *,
        table_iterator: IteratorSpec | None = None,
        query_time: IteratorSpec | None = None,
        now_ms: int | None = None,
        writes: bool = False,
    ) -> RowIterators:
        """Loads the iterators named and chains them after the processing.

        Raises:
            IteratorLoadError: If an iterator cannot be loaded or refuses its config.
            IteratorConfigError: If the processing does not suit the schema.
        """
        loaded = [(spec, load_iterator(spec, schema)) for spec in (table_iterator, query_time) if spec is not None]
        return cls(schema, processing, loaded, now_ms=now_ms, writes=writes)

    @classmethod
    def for_table(
        cls,
        properties: TableProperties,
        schema: Schema,
        *,
        query_time: IteratorSpec | None = None,
        now_ms: int | None = None,
        writes: bool = False,
    ) -> RowIterators:
        """The table's filters, aggregations and iterator from its properties, then a query-time iterator.

        Raises:
            IteratorLoadError: If an iterator cannot be loaded or refuses its config.
            IteratorConfigError: If the filters or aggregations cannot be read or do not suit the schema, or an upsert
                table sets an iterator.
        """
        processing = table_processing(properties, schema)
        table_iterator = table_iterator_spec(properties)
        if processing.upsert and table_iterator is not None:
            raise IteratorConfigError(
                f"{UPSERT.name} cannot be set with {ITERATOR_CLASS_NAME.name}: an iterator may change, combine or "
                "reorder rows, so which row of a key was written last would no longer be defined; unset one of them"
            )
        return cls.build(
            schema,
            processing,
            table_iterator=table_iterator,
            query_time=query_time,
            now_ms=now_ms,
            writes=writes,
        )

    @property
    def processing(self) -> ProcessingConfig:
        """The filters and aggregations applied first."""
        return self._processing

    @property
    def is_empty(self) -> bool:
        """Whether rows pass through unchanged."""
        return self._processing.is_empty and not self._iterators

    @property
    def only_drops_rows(self) -> bool:
        """Whether the chain only ever drops rows, never changing or merging them, and whether a row is dropped
        depends on that row alone (no aggregation, no upsert, no iterator): then rows it would drop for any reason may
        be skipped before it, such as by a filter's test of statistics. On an upsert table a row hides the older rows
        of its key, so a query filter applied before it would show an older row the newest one hides."""
        return not self._processing.aggregations and not self._processing.upsert and not self._iterators

    def required_value_fields(self) -> tuple[str, ...]:
        """The value fields a reader must load for the processing and every iterator, in schema order."""
        wanted = set(self._processing.required_value_fields(self._schema))
        for _, iterator in self._iterators:
            wanted.update(iterator.required_value_fields())
        return tuple(name for name in self._schema.value_names if name in wanted)

    def apply(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Applies the processing and then each iterator to a stream sorted by row keys then sort keys.

        Raises:
            IteratorDataError: If the processing meets data it cannot handle.
            IteratorRunError: If an iterator's own code fails or (where rows are written) breaks the contract.
        """
        if self.is_empty:
            return iter(batches)
        stream: Iterator[pa.RecordBatch] = iter(batches)
        if not self._processing.is_empty:
            now = self._now_ms if self._now_ms is not None else int(time.time() * 1000)
            stream = RowProcessor(self._schema, self._processing, now).process(stream)
        for spec, iterator in self._iterators:
            stream = _guarded(spec, iterator, stream, self._schema.key_names if self._writes else None)
        return stream


class _Upstream:
    """The input handed to an iterator, remembering an error raised while reading it (not the iterator's fault)."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self.error: BaseException | None = None
        self.schema: pa.Schema | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = next(self._batches)
            except StopIteration:
                return
            except BaseException as e:
                self.error = e
                raise
            if self.schema is None:
                self.schema = batch.schema
            yield batch


def _guarded(
    spec: IteratorSpec,
    iterator: SortedRowIterator,
    batches: Iterator[pa.RecordBatch],
    key_names: Sequence[str] | None,
) -> Iterator[pa.RecordBatch]:
    """Runs one iterator over a stream, naming it in its failures; ``key_names`` given checks what it writes."""
    upstream = _Upstream(batches)
    name = f"{spec.source} {spec.class_name!r}"
    last_key: tuple[object, ...] | None = None
    try:
        for batch in iterator.apply(iter(upstream)):
            if not isinstance(batch, pa.RecordBatch):
                raise IteratorRunError(f"{name} yielded {type(batch).__name__}, not a pyarrow RecordBatch")
            if key_names is not None and batch.num_rows:
                last_key = _check_written(name, batch, upstream.schema, key_names, last_key)
            yield batch
    except IteratorRunError:
        raise
    except Exception as e:
        if upstream.error is e:
            raise
        raise IteratorRunError(f"{name} failed: {type(e).__name__}: {' '.join(str(e).split())}") from e


def _check_written(
    name: str,
    batch: pa.RecordBatch,
    expected: pa.Schema | None,
    key_names: Sequence[str],
    last_key: tuple[object, ...] | None,
) -> tuple[object, ...]:
    if expected is not None and not batch.schema.equals(expected):
        raise IteratorRunError(
            f"{name} changed the columns of rows being written: it was given {expected.names} "
            f"({', '.join(str(t) for t in expected.types)}), it yielded {batch.schema.names} "
            f"({', '.join(str(t) for t in batch.schema.types)})"
        )
    try:
        check_sorted(batch, key_names, what=f"the output of {name}")
    except NotSortedError as e:
        raise IteratorRunError(f"{e}; iterators must keep rows in key order") from e
    first = key_at(batch, key_names, 0)
    if last_key is not None and _less(first, last_key):
        raise IteratorRunError(
            f"the output of {name} is not sorted by {list(key_names)}: a batch starts with key {first!r} after "
            f"{last_key!r}; iterators must keep rows in key order"
        )
    return key_at(batch, key_names, -1)


def _less(left: tuple[object, ...], right: tuple[object, ...]) -> bool:
    return left < right  # key values of one schema compare with each other
