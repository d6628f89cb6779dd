"""Queries: planning sub-queries per leaf partition and running them over the table's data files."""

from __future__ import annotations

from sleeper.query.exceptions import QueryExecutionError
from sleeper.query.executor import execute, run_leaf_query, table_query
from sleeper.query.planner import leaf_regions, plan_query

__all__ = ["QueryExecutionError", "execute", "leaf_regions", "plan_query", "run_leaf_query", "table_query"]
