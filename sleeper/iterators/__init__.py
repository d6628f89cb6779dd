"""Table filters (age-off) and aggregations (sum, min, max and their map forms).

The configuration classes are importable without pyarrow; the vectorised application lives in
``sleeper.iterators.apply``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
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

if TYPE_CHECKING:
    from sleeper.iterators.exceptions import IteratorLoadError as IteratorLoadError
    from sleeper.iterators.exceptions import IteratorRunError as IteratorRunError
    from sleeper.iterators.pipeline import QUERY_TIME_SOURCE as QUERY_TIME_SOURCE
    from sleeper.iterators.pipeline import DeletedRows as DeletedRows
    from sleeper.iterators.pipeline import RowIterators as RowIterators
    from sleeper.iterators.pipeline import check_table_iterators as check_table_iterators
    from sleeper.iterators.pipeline import table_iterator_spec as table_iterator_spec
    from sleeper.iterators.pipeline import table_processing as table_processing
    from sleeper.iterators.pipeline import table_rules_refusal as table_rules_refusal
    from sleeper.iterators.pipeline import table_upserts as table_upserts
    from sleeper.iterators.plugin import IteratorSpec as IteratorSpec
    from sleeper.iterators.plugin import resolve_class_name as resolve_class_name
    from sleeper.iterators.shipping import UserCodeError as UserCodeError
    from sleeper.iterators.shipping import install_user_code as install_user_code
    from sleeper.iterators.shipping import install_wheels as install_wheels
    from sleeper.iterators.shipping import user_code_locations as user_code_locations

__getattr__, __dir__ = lazy_face(__name__, __file__)
