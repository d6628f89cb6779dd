"""Queries: planning sub-queries per leaf partition and running them over the table's data files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
from sleeper.query.exceptions import QueryExecutionError
from sleeper.query.executor import execute, run_leaf_query, table_query
from sleeper.query.planner import leaf_regions, plan_query

__all__ = ["QueryExecutionError", "execute", "leaf_regions", "plan_query", "run_leaf_query", "table_query"]

if TYPE_CHECKING:
    from sleeper.query.entry import WebSocketRuntime as WebSocketRuntime
    from sleeper.query.executor import QueryableTable as QueryableTable
    from sleeper.query.executor import plan_table_query as plan_table_query
    from sleeper.query.executor import query_engine as query_engine
    from sleeper.query.executor import query_iterators as query_iterators
    from sleeper.query.executor import table_query_of as table_query_of
    from sleeper.query.planner import ReferenceOnUnknownPartitionError as ReferenceOnUnknownPartitionError
    from sleeper.query.publishers import json_float as json_float
    from sleeper.query.publishers import query_results_dir as query_results_dir
    from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE as LEAF_PARTITION_QUERY_QUEUE
    from sleeper.query.queued import QUERY_QUEUE as QUERY_QUEUE
    from sleeper.query.queued import ReusedQueryIdError as ReusedQueryIdError
    from sleeper.query.results_config import ResultsConfigError as ResultsConfigError
    from sleeper.query.results_reader import RESULTS_DESTINATIONS as RESULTS_DESTINATIONS
    from sleeper.query.results_reader import QueryWaitTimeoutError as QueryWaitTimeoutError
    from sleeper.query.results_reader import QueuedQueryFailedError as QueuedQueryFailedError
    from sleeper.query.results_reader import raise_if_failed as raise_if_failed
    from sleeper.query.results_reader import run_queued_query as run_queued_query
    from sleeper.query.results_reader import tracked_rows as tracked_rows
    from sleeper.query.warm import send_warm_queries as send_warm_queries

__getattr__, __dir__ = lazy_face(__name__, __file__)
