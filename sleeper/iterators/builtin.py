"""The iterators Sleeper builds in, named by its Java names (see :data:`sleeper.iterators.plugin.JAVA_NAMES`).

* :class:`AgeOffIterator` (``sleeper.core.iterator.AgeOffIterator``): config ``field,maxAgeMs``, the same rule as
  ``sleeper.table.filters=ageOff(field,maxAgeMs)``.
* :class:`AggregatorsIterator` (``AGGREGATORS``): filters and aggregations in the form of Sleeper's removed
  ``AggregationFilteringIterator``, ``<extra grouping fields>;<filter>,<aggregation>,...``, e.g.
  ``;,sum(count),max(last_seen)`` or ``;ageoff='timestamp','86400000',sum(count)``. It behaves exactly as the same
  filters and aggregations given in ``sleeper.table.filters`` and ``sleeper.table.aggregations``, which are the
  recommended form.

Both apply :class:`~sleeper.iterators.apply.RowProcessor`, so they are vectorised like the table's own processing.
Age-off measures from the time each stream starts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pyarrow as pa

from sleeper.core import MapType, Schema
from sleeper.iterators.apply import RowProcessor
from sleeper.iterators.config import AggregationConfig, AggregationOp, FilterConfig, ProcessingConfig
from sleeper.iterators.exceptions import IteratorConfigError

__all__ = ["AgeOffIterator", "AggregatorsIterator", "parse_aggregators_config"]

_CALL = re.compile(r"(\w+)\((\w+)\)")
_AGE_OFF = "ageoff="


class _ProcessingIterator:
    """An iterator applying a fixed set of filters and aggregations."""

    def __init__(self) -> None:
        self._schema: Schema | None = None
        self._config = ProcessingConfig()

    @property
    def processing(self) -> ProcessingConfig:
        """The filters and aggregations applied."""
        return self._config

    def required_value_fields(self) -> list[str]:
        assert self._schema is not None, "init first"
        return list(self._config.required_value_fields(self._schema))

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assert self._schema is not None, "init first"
        return RowProcessor(self._schema, self._config, int(time.time() * 1000)).process(batches)


class AgeOffIterator(_ProcessingIterator):
    """Drops rows whose long field is null or older than a maximum age: config ``field,maxAgeMs``."""

    def init(self, config: str, schema: Schema) -> None:
        parts = [p.strip() for p in config.split(",")]
        if len(parts) != 2 or not parts[0]:
            raise IteratorConfigError(f"expected 'field,maxAgeMs', got {config!r}")
        try:
            max_age = int(parts[1])
        except ValueError:
            raise IteratorConfigError(f"the max age in {config!r} must be a whole number of milliseconds") from None
        processing = ProcessingConfig(filters=(FilterConfig(field=parts[0], max_age_ms=max_age),))
        processing.validate(schema)
        self._schema, self._config = schema, processing


class AggregatorsIterator(_ProcessingIterator):
    """Sleeper's ``AGGREGATORS``: filters and aggregations as ``<extra grouping fields>;<filter>,<aggregation>,...``.

    See :func:`parse_aggregators_config`.
    """

    def init(self, config: str, schema: Schema) -> None:
        self._config = parse_aggregators_config(config, schema)
        self._schema = schema


def parse_aggregators_config(config: str, schema: Schema) -> ProcessingConfig:
    """Reads the ``AGGREGATORS`` config form into filters and aggregations.

    The part before the one ``;`` lists the fields rows are grouped by beyond the row keys: rows are combined when
    their row and sort keys are equal, so it must be empty for a table without sort keys, or name its sort keys. After
    it comes the filter slot, empty or ``ageoff='field','maxAgeMs'``, then the aggregations ``op(field)`` with ``op``
    one of sum, min, max (``map_`` variants accepted; a map field gets the map operation either way).

    Raises:
        IteratorConfigError: If the text is not in that form, or the filters and aggregations do not suit the schema
            by the rules of ``sleeper.table.filters`` and ``sleeper.table.aggregations``.
    """
    grouping_text, separator, rest = config.partition(";")
    if not separator:
        raise IteratorConfigError(
            f"expected '<grouping fields>;<filter>,<aggregations>' with one ';', got {config!r} (e.g. "
            "';,sum(count),max(last_seen)')"
        )
    grouping = [g.strip() for g in grouping_text.split(",") if g.strip()]
    if sorted(grouping) != sorted(schema.sort_key_names):
        expected = ",".join(schema.sort_key_names) or "nothing"
        raise IteratorConfigError(
            f"grouping fields {grouping} are not supported: rows are grouped by the row and sort keys, so list "
            f"{expected} before the ';'"
        )
    parts = [p.strip() for p in rest.split(",")]
    filters: list[FilterConfig] = []
    first = parts.pop(0) if parts else ""
    if first.lower().startswith(_AGE_OFF):
        field = first[len(_AGE_OFF) :].replace("'", "").strip()
        age_text = parts.pop(0).replace("'", "").strip() if parts else ""
        try:
            max_age = int(age_text)
        except ValueError:
            raise IteratorConfigError(
                f"ageoff needs a whole number of milliseconds after the field, got {age_text!r}"
            ) from None
        filters.append(FilterConfig(field=field, max_age_ms=max_age))
    elif first:
        raise IteratorConfigError(
            f"the filter slot after ';' must be empty or ageoff='field','maxAgeMs', got {first!r}"
        )
    aggregations: list[AggregationConfig] = []
    for part in parts:
        match = _CALL.fullmatch(part)
        if match is None:
            raise IteratorConfigError(f"expected an aggregation op(field), got {part!r}")
        name, field = match.group(1).lower(), match.group(2)
        base = name.removeprefix("map_")
        try:
            op = AggregationOp(base)
        except ValueError:
            raise IteratorConfigError(
                f"unknown aggregation {match.group(1)!r} in {part!r}; use sum, min or max"
            ) from None
        if schema.has_field(field) and isinstance(schema.field(field).type, MapType):
            op = AggregationOp(f"map_{base}")
        aggregations.append(AggregationConfig(op=op, field=field))
    processing = ProcessingConfig(filters=tuple(filters), aggregations=tuple(aggregations))
    processing.validate(schema)
    return processing
