"""Example iterators, the Python counterparts of Sleeper's ``example-iterators`` module (and mapped from its Java
names): each is a complete iterator (see :class:`sleeper.iterators.plugin.SortedRowIterator`) working on whole
Arrow batches with pyarrow compute.

* :class:`AdditionIterator` sums every value field of rows with equal row and sort keys (value fields must be
  integers). Config: none.
* :class:`FixedAgeOffIterator` keeps rows whose long field is at least a fixed value. Config: ``field,minValue``.
* :class:`SecurityFilteringIterator` keeps rows whose visibility label is empty, null or one of the reader's
  authorisations: the query-time iterator of fine-grained security (docs/usage/iterators.md). Config:
  ``visibilityField,auth1,auth2,...`` (the field alone: no authorisations, so only unlabelled rows are seen).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import PrimitiveType, Schema
from sleeper.iterators.apply import Aggregator
from sleeper.iterators.config import AggregationConfig, AggregationOp

__all__ = ["AdditionIterator", "FixedAgeOffIterator", "SecurityFilteringIterator"]

_INTEGERS = (PrimitiveType.INT, PrimitiveType.LONG)


class AdditionIterator:
    """Combines rows with equal row and sort keys by summing each value field (all must be int or long fields)."""

    def __init__(self) -> None:
        self._schema: Schema | None = None

    def init(self, config: str, schema: Schema) -> None:
        if config.strip():
            raise ValueError(f"AdditionIterator takes no config, got {config!r}")
        bad = [f.name for f in schema.value_fields if f.type not in _INTEGERS or f.nullable]
        if bad:
            raise ValueError(f"AdditionIterator sums int or long value fields that are not nullable; not {bad}")
        self._schema = schema

    def required_value_fields(self) -> list[str]:
        assert self._schema is not None, "init first"
        return list(self._schema.value_names)

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assert self._schema is not None, "init first"
        sums = [AggregationConfig(op=AggregationOp.SUM, field=name) for name in self._schema.value_names]
        if not sums:
            yield from batches
            return
        aggregator = Aggregator(self._schema, sums)
        for batch in batches:
            yield from aggregator.push(batch)
        yield from aggregator.finish()


class FixedAgeOffIterator:
    """Keeps rows whose long field is not null and at least a minimum value: config ``field,minValue``."""

    def __init__(self) -> None:
        self._field = ""
        self._min = 0

    def init(self, config: str, schema: Schema) -> None:
        parts = [p.strip() for p in config.split(",")]
        if len(parts) != 2:
            raise ValueError(f"expected 'field,minValue', got {config!r}")
        field, minimum = parts
        if not schema.has_field(field) or schema.field(field).type is not PrimitiveType.LONG:
            raise ValueError(f"{field!r} is not a long field of the table")
        try:
            self._min = int(minimum)
        except ValueError:
            raise ValueError(f"the minimum value {minimum!r} is not a whole number") from None
        self._field = field

    def required_value_fields(self) -> list[str]:
        return [self._field]

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        threshold = pa.scalar(self._min, pa.int64())
        for batch in batches:
            keep = pc.fill_null(pc.greater_equal(batch.column(self._field), threshold), False)
            kept = batch.filter(keep)
            if kept.num_rows:
                yield kept


class SecurityFilteringIterator:
    """Keeps the rows a reader may see: those whose visibility field is null, empty or one of the reader's
    authorisations. Config ``visibilityField,auth1,auth2,...``; the visibility field must be a string field."""

    def __init__(self) -> None:
        self._field = ""
        self._auths: pa.Array = pa.array([""], pa.string())

    def init(self, config: str, schema: Schema) -> None:
        parts = config.split(",")
        field = parts[0].strip()
        if not field:
            raise ValueError("expected 'visibilityField,auth1,auth2,...': the visibility field is missing")
        if not schema.has_field(field) or schema.field(field).type is not PrimitiveType.STRING:
            raise ValueError(f"the visibility field {field!r} is not a string field of the table")
        if field in schema.key_names:
            raise ValueError(f"the visibility field {field!r} is a key field; it must be a value field")
        self._field = field
        self._auths = pa.array(["", *(a for a in parts[1:] if a)], pa.string())

    @property
    def authorisations(self) -> frozenset[str]:
        """The reader's authorisations."""
        return frozenset(a for a in self._auths.to_pylist() if a)

    def required_value_fields(self) -> list[str]:
        return [self._field]

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        auths = self._auths
        for batch in batches:
            labels = batch.column(self._field)
            keep = pc.or_kleene(pc.is_null(labels), pc.is_in(labels, value_set=auths))
            if keep.true_count == batch.num_rows:
                yield batch
                continue
            kept = batch.filter(keep)
            if kept.num_rows:
                yield kept
