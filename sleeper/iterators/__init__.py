"""Table filters (age-off) and aggregations (sum, min, max and their map forms).

The configuration classes are importable without pyarrow; the vectorised application lives in
``sleeper.iterators.apply``.
"""

from __future__ import annotations

from sleeper.iterators.config import (
    AGGREGATIONS_PROPERTY,
    FILTERS_PROPERTY,
    AggregationConfig,
    AggregationOp,
    FilterConfig,
    ProcessingConfig,
    parse_aggregations,
    parse_filters,
)
from sleeper.iterators.exceptions import IteratorConfigError, IteratorDataError

__all__ = [
    "AGGREGATIONS_PROPERTY",
    "FILTERS_PROPERTY",
    "AggregationConfig",
    "AggregationOp",
    "FilterConfig",
    "IteratorConfigError",
    "IteratorDataError",
    "ProcessingConfig",
    "parse_aggregations",
    "parse_filters",
]
