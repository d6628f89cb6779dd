"""Vectorised application of table filters and aggregations to streams of Arrow record batches.

Everything here works on whole columns with pyarrow compute and numpy; Python loops run over batches and fields only.
Rows stream in sorted by row keys then sort keys, so rows with equal keys are adjacent; a group of equal keys may
span batch boundaries, which the streaming ``Aggregator`` handles by holding back the last group of each batch
(already combined into one row) until it sees the first row of the next batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import LONG_MAX, LONG_MIN, Schema
from sleeper.iterators.config import AggregationConfig, AggregationOp, ProcessingConfig
from sleeper.iterators.exceptions import IteratorConfigError, IteratorDataError

_Indices = npt.NDArray[np.int64]

_NUMPY_REDUCERS = {
    AggregationOp.SUM: np.add,
    AggregationOp.MIN: np.minimum,
    AggregationOp.MAX: np.maximum,
}
_NUMPY_FLOAT_REDUCERS = {
    AggregationOp.SUM: np.add,
    AggregationOp.MIN: np.fmin,  # skips NaN unless both are NaN, as Arrow's min does
    AggregationOp.MAX: np.fmax,
}
_ARROW_AGGREGATES = {AggregationOp.SUM: "sum", AggregationOp.MIN: "min", AggregationOp.MAX: "max"}


def apply_filters(batch: pa.RecordBatch, config: ProcessingConfig, now_ms: int) -> pa.RecordBatch:
    """Removes the rows the age-off filters reject.

    A row is kept when, for every filter, its long field is not null and ``now_ms - value < max_age_ms``.

    Args:
        batch: The rows; it must hold every filtered field as an int64 column.
        config: The processing configuration; only its filters are used.
        now_ms: The current time in milliseconds since the epoch.

    Returns:
        The kept rows; the batch itself (not a copy) when every row is kept or there are no filters.

    Raises:
        IteratorDataError: If a filtered column is missing or is not int64.
    """
    if not config.filters or batch.num_rows == 0:
        return batch
    mask: pa.Array | None = None
    for f in config.filters:
        column = _column(batch, f.field)
        if not pa.types.is_int64(column.type):
            raise IteratorDataError(f"age-off field {f.field!r} must be an int64 column, found {column.type}")
        lowest_kept = f.min_kept_value(now_ms)
        if lowest_kept <= LONG_MIN:
            keep = pc.is_valid(column)
        elif lowest_kept > LONG_MAX:
            keep = pa.array(np.zeros(batch.num_rows, dtype=np.bool_))
        else:
            keep = pc.fill_null(pc.greater_equal(column, pa.scalar(lowest_kept, pa.int64())), False)
        mask = keep if mask is None else pc.and_(mask, keep)
    assert mask is not None
    if mask.true_count == batch.num_rows:
        return batch
    return batch.filter(mask)


def aggregate_batch(batch: pa.RecordBatch, schema: Schema, aggregations: Sequence[AggregationConfig]) -> pa.RecordBatch:
    """Combines adjacent rows with equal row and sort keys in one batch holding whole groups.

    Args:
        batch: Rows sorted by row keys then sort keys.
        schema: The table schema, which names the key fields.
        aggregations: How to combine each value column of the batch.

    Returns:
        One row per group, with the schema of the input; the batch itself when no two adjacent rows share keys.

    Raises:
        IteratorDataError: If the batch lacks a key column, holds an unaggregated value column, or holds nulls where
            they are not allowed.
    """
    plan = _Plan(schema, aggregations)
    plan.check(batch)
    return plan.aggregate_runs(batch, plan.run_starts(batch))


class Aggregator:
    """Combines rows with equal row and sort keys across a sorted stream of batches.

    ``push`` each batch in order, then call ``finish``. Each call returns the groups it completed, in order, as at most
    one batch. The last group seen is held back (as one combined row) because the next batch may continue it.
    """

    def __init__(self, schema: Schema, aggregations: Sequence[AggregationConfig]) -> None:
        """Creates an aggregator.

        Args:
            schema: The table schema, which names the key fields.
            aggregations: How to combine each value field; must not be empty.

        Raises:
            IteratorConfigError: If there are no aggregations.
        """
        if not aggregations:
            raise IteratorConfigError("an Aggregator needs at least one aggregation")
        self._plan = _Plan(schema, aggregations)
        self._pending: pa.RecordBatch | None = None

    def push(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """Adds the next batch of the stream.

        Args:
            batch: Rows sorted by row keys then sort keys, following on from the previous batch.

        Returns:
            The groups completed by this batch (none, or one batch).

        Raises:
            IteratorDataError: If the batch lacks a key column, holds an unaggregated value column, or holds nulls
                where they are not allowed.
        """
        if batch.num_rows == 0:
            return []
        plan = self._plan
        plan.check(batch)
        combined = plan.aggregate_runs(batch, plan.run_starts(batch))
        last = combined.num_rows - 1
        head: pa.RecordBatch | None = None
        start = 0
        pending = self._pending
        if pending is not None:
            if plan.same_keys(pending, combined):
                head = plan.aggregate_runs(_concat([pending, combined.slice(0, 1)]), np.zeros(1, dtype=np.int64))
                start = 1
            else:
                head = pending
        if start > last:
            self._pending = head
            return []
        self._pending = combined.slice(last)
        return _joined([head, combined.slice(start, last - start)])

    def finish(self) -> list[pa.RecordBatch]:
        """Ends the stream, returning the held-back last group (none, or one single-row batch)."""
        pending, self._pending = self._pending, None
        return [] if pending is None else [pending]


class RowProcessor:
    """Applies a table's filters, then its aggregations, to a sorted stream of batches.

    Used by ingest, compaction and queries alike. With an empty configuration, batches pass through untouched.
    """

    def __init__(self, schema: Schema, config: ProcessingConfig, now_ms: int) -> None:
        """Creates a processor.

        Args:
            schema: The table schema.
            config: The filters and aggregations; checked against the schema.
            now_ms: The time age-off is measured from, in milliseconds since the epoch.

        Raises:
            IteratorConfigError: If the configuration does not suit the schema.
        """
        config.validate(schema)
        self._schema = schema
        self._config = config
        self._now_ms = now_ms

    @property
    def config(self) -> ProcessingConfig:
        """The filters and aggregations applied."""
        return self._config

    def process(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Keeps the last row of each row key (an upsert table), then filters and aggregates, a stream of batches
        sorted by row keys then sort keys.

        Args:
            batches: The input, in key order; a group of equal keys may span batches.

        Yields:
            The output in key order. Without filters or aggregations these are the input batches themselves;
            otherwise empty batches are dropped.

        Raises:
            IteratorDataError: If a batch does not have the columns or values the configuration needs.
        """
        config = self._config
        if config.is_empty:
            yield from batches
            return
        aggregator = Aggregator(self._schema, config.aggregations) if config.aggregations else None
        if config.upsert:
            batches = last_per_row_key(batches, self._schema.row_key_names)
        for batch in batches:
            filtered = apply_filters(batch, config, self._now_ms)
            if aggregator is not None:
                yield from aggregator.push(filtered)
            elif filtered.num_rows > 0:
                yield filtered
        if aggregator is not None:
            yield from aggregator.finish()


def last_per_row_key(batches: Iterable[pa.RecordBatch], row_key_names: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The last row of each run of equal row keys in a stream sorted by row keys then sort keys: on an upsert table,
    the row with the greatest sort key (of rows with equal sort keys too, the last in the stream).

    Vectorised: each row's row keys are compared with the next row's, whole columns at a time. The last row of each
    batch is held back until the first row of the next batch shows whether it continues the run.

    Yields:
        The kept rows in order, at most one batch per input batch (empty ones dropped), then the held-back row.
    """
    held: pa.RecordBatch | None = None
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        keep = np.zeros(n, dtype=np.bool_)
        if n > 1:
            same = None
            for name in row_key_names:
                column = batch.column(name)
                equal = pc.fill_null(pc.equal(column.slice(0, n - 1), column.slice(1)), False)
                same = equal if same is None else pc.and_(same, equal)
            assert same is not None
            keep[: n - 1] = ~same.to_numpy(zero_copy_only=False)
        parts: list[pa.RecordBatch] = []
        if held is not None and not all(held.column(k)[0] == batch.column(k)[0] for k in row_key_names):
            parts.append(held)
        if keep.any():
            parts.append(batch.filter(pa.array(keep)))
        held = batch.slice(n - 1)
        if len(parts) == 2 and not parts[0].schema.equals(parts[1].schema):
            yield from parts
        else:
            yield from _joined(list(parts))
    if held is not None:
        yield held


class _Plan:
    """What to do with each column of a batch: group by it (keys) or combine it (values)."""

    __slots__ = ("key_names", "ops")

    def __init__(self, schema: Schema, aggregations: Sequence[AggregationConfig]) -> None:
        self.key_names = schema.key_names
        self.ops = {a.field: a.op for a in aggregations}

    def check(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        for name in self.key_names:
            if name not in names:
                raise IteratorDataError(f"cannot aggregate rows without key column {name!r}")
            if batch.column(name).null_count:
                raise IteratorDataError(f"key column {name!r} holds nulls")
        for name in names:
            if name in self.key_names:
                continue
            if name not in self.ops:
                raise IteratorDataError(f"column {name!r} has no aggregation and is not a key column")
            if batch.column(name).null_count:
                raise IteratorDataError(f"aggregated column {name!r} holds nulls")

    def run_starts(self, batch: pa.RecordBatch) -> _Indices:
        """The index of the first row of each run of equal keys."""
        n = batch.num_rows
        if n <= 1:
            return np.zeros(n, dtype=np.int64)
        changed = np.zeros(n - 1, dtype=np.bool_)
        for name in self.key_names:
            column = batch.column(name)
            differs = pc.not_equal(column.slice(1), column.slice(0, n - 1))
            changed |= differs.to_numpy(zero_copy_only=False)
        return np.concatenate((np.zeros(1, dtype=np.int64), np.flatnonzero(changed).astype(np.int64) + 1))

    def aggregate_runs(self, batch: pa.RecordBatch, starts: _Indices) -> pa.RecordBatch:
        """Combines each run of rows (given by the index of its first row) into one row."""
        n = batch.num_rows
        groups = len(starts)
        if groups == n:
            return batch
        lengths = np.diff(np.append(starts, n))
        group_ids = np.repeat(np.arange(groups, dtype=np.int64), lengths)
        take = pa.array(starts, type=pa.int64())
        arrays = []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if name in self.key_names:
                arrays.append(column.take(take))
            else:
                arrays.append(_aggregate_column(name, column, self.ops[name], starts, group_ids, groups))
        return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)

    def same_keys(self, left: pa.RecordBatch, right: pa.RecordBatch) -> bool:
        """Whether the first rows of two batches have equal keys."""
        return all(left.column(name)[0] == right.column(name)[0] for name in self.key_names)


def _aggregate_column(
    name: str, column: pa.Array, op: AggregationOp, starts: _Indices, group_ids: _Indices, groups: int
) -> pa.Array:
    column_type = column.type
    if op.is_map:
        if not pa.types.is_map(column_type):
            raise IteratorDataError(f"{op.value}({name}) needs a map column, found {column_type}")
        return _aggregate_map(name, column, op.element_op, group_ids, groups)
    if pa.types.is_integer(column_type) or pa.types.is_floating(column_type):
        values = column.to_numpy(zero_copy_only=True)
        reducers = _NUMPY_FLOAT_REDUCERS if pa.types.is_floating(column_type) else _NUMPY_REDUCERS
        reduced = reducers[op].reduceat(values, starts, dtype=values.dtype)
        return pa.array(reduced, type=column_type)
    if op is not AggregationOp.SUM and (
        pa.types.is_temporal(column_type)
        or pa.types.is_boolean(column_type)
        or pa.types.is_string(column_type)
        or pa.types.is_large_string(column_type)
        or pa.types.is_binary(column_type)
        or pa.types.is_large_binary(column_type)
    ):
        table = pa.table({"g": pa.array(group_ids), "v": column})
        result = table.group_by("g", use_threads=False).aggregate([("v", _ARROW_AGGREGATES[op])])
        return _in_group_order(result, f"v_{_ARROW_AGGREGATES[op]}", groups)
    raise IteratorDataError(f"{op.value}({name}) cannot aggregate a column of type {column_type}")


def _aggregate_map(name: str, column: pa.MapArray, op: AggregationOp, group_ids: _Indices, groups: int) -> pa.Array:
    """Combines the maps of each group, key by key; keys keep the order they first appear in within the group."""
    map_type = column.type
    if not pa.types.is_integer(map_type.item_type):
        raise IteratorDataError(f"map_{op.value}({name}) needs integer map values, found {map_type.item_type}")
    offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    entries = last - first
    if entries == 0:
        empty = np.zeros(groups + 1, dtype=np.int32)
        return pa.MapArray.from_arrays(empty, column.keys.slice(0, 0), column.items.slice(0, 0), type=map_type)
    keys = column.keys.slice(first, entries)
    items = column.items.slice(first, entries)
    entry_groups = np.repeat(group_ids, np.diff(offsets))
    table = pa.table(
        {"g": pa.array(entry_groups), "k": keys, "v": items, "p": pa.array(np.arange(entries, dtype=np.int64))}
    )
    aggregate = _ARROW_AGGREGATES[op]
    result = table.group_by(["g", "k"], use_threads=False).aggregate([("v", aggregate), ("p", "min")])
    result = result.take(pc.sort_indices(result.column("p_min")))
    result_groups = result.column("g").to_numpy()
    counts = np.bincount(result_groups, minlength=groups)
    new_offsets = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(counts))).astype(np.int32)
    values = result.column(f"v_{aggregate}").combine_chunks()
    if values.type != map_type.item_type:
        values = pc.cast(values, map_type.item_type, safe=False)
    return pa.MapArray.from_arrays(new_offsets, result.column("k").combine_chunks(), values, type=map_type)


def _in_group_order(result: pa.Table, column: str, groups: int) -> pa.Array:
    """Puts a ``group_by`` result column in group id order, whatever order the groups came out in."""
    order = np.empty(groups, dtype=np.int64)
    order[result.column("g").to_numpy()] = np.arange(groups, dtype=np.int64)
    return result.column(column).combine_chunks().take(pa.array(order))


def _column(batch: pa.RecordBatch, name: str) -> pa.Array:
    index = batch.schema.get_field_index(name)
    if index < 0:
        raise IteratorDataError(f"batch has no column {name!r}")
    return batch.column(index)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    return pa.concat_batches(batches)


def _joined(batches: list[pa.RecordBatch | None]) -> list[pa.RecordBatch]:
    non_empty = [b for b in batches if b is not None and b.num_rows > 0]
    if len(non_empty) <= 1:
        return non_empty
    return [_concat(non_empty)]
