"""Queries: the tracker's rows, the roll-up of sub-queries into their query, and the tracker port."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Protocol

from sleeper.core.trackers.base import check_id, check_time

QUERY_TTL = timedelta(days=1)
PARENT_SUB_QUERY_ID = "-"


class QueryState(Enum):
    """Last known state of a query or sub-query (the ``lastKnownState`` attribute)."""

    QUEUED = "QUEUED"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    PARTIALLY_FAILED = "PARTIALLY_FAILED"

    @property
    def is_finished(self) -> bool:
        """Whether the query will not change state again (COMPLETED, FAILED or PARTIALLY_FAILED)."""
        return self in (QueryState.COMPLETED, QueryState.FAILED, QueryState.PARTIALLY_FAILED)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryUpdate:
    """A change of state of a query (``sub_query_id="-"``) or of one of its sub-queries.

    Attributes:
        query_id: The query id.
        sub_query_id: The sub-query id, or ``"-"`` for the query itself.
        state: The new state.
        update_time: When it changed.
        row_count: Rows returned (when finished).
        error_message: Why it failed, if it did.
    """

    query_id: str
    state: QueryState
    update_time: datetime
    sub_query_id: str = PARENT_SUB_QUERY_ID
    row_count: int = 0
    error_message: str | None = None

    def __post_init__(self) -> None:
        check_id("query_id", self.query_id)
        check_id("sub_query_id", self.sub_query_id)
        check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedQuery:
    """A query tracker row (hash key ``queryId``, range key ``subQueryId``).

    Attributes:
        query_id: The query id.
        sub_query_id: The sub-query id, ``"-"`` for the query itself.
        last_known_state: Its state.
        last_update_time: When the state last changed.
        expiry_date: When the row may be removed (last update plus the time to live).
        row_count: Rows returned; for the query itself, the sum over its sub-queries.
        error_message: Why it failed, if it did (the ``errors`` attribute).
    """

    query_id: str
    sub_query_id: str
    last_known_state: QueryState
    last_update_time: datetime
    expiry_date: datetime
    row_count: int = 0
    error_message: str | None = None

    @property
    def is_parent(self) -> bool:
        """Whether this row is the query itself rather than a sub-query."""
        return self.sub_query_id == PARENT_SUB_QUERY_ID


def parent_state_if_finished(child_states: Iterable[QueryState]) -> QueryState | None:
    """The state of a query once all its sub-queries finished, or None while any is unfinished.

    All COMPLETED gives COMPLETED; none COMPLETED (all FAILED or PARTIALLY_FAILED) gives FAILED; a mix gives
    PARTIALLY_FAILED.
    """
    states = list(child_states)
    if any(not state.is_finished for state in states):
        return None
    completed = sum(1 for state in states if state == QueryState.COMPLETED)
    if completed == len(states):
        return QueryState.COMPLETED
    if completed == 0:
        return QueryState.FAILED
    return QueryState.PARTIALLY_FAILED


def roll_up_parent(
    query_id: str, children: Sequence[TrackedQuery], update_time: datetime, *, ttl: timedelta = QUERY_TTL
) -> TrackedQuery | None:
    """The parent row after its sub-queries finished, with the summed row count, or None if any is unfinished."""
    state = parent_state_if_finished(child.last_known_state for child in children)
    if state is None or not children:
        return None
    errors = list(dict.fromkeys(child.error_message for child in children if child.error_message))
    return TrackedQuery(
        query_id=query_id,
        sub_query_id=PARENT_SUB_QUERY_ID,
        last_known_state=state,
        last_update_time=update_time,
        expiry_date=update_time + ttl,
        row_count=sum(child.row_count for child in children),
        error_message="; ".join(errors) if errors else None,
    )


def apply_query_update(
    rows: Mapping[str, TrackedQuery], update: QueryUpdate, *, ttl: timedelta = QUERY_TTL
) -> list[TrackedQuery]:
    """The rows to write when recording an update, given the query's current rows keyed by sub-query id.

    A sub-query that already finished ignores further updates (a duplicate delivery cannot revert it or count twice).
    When a sub-query finishes, the parent is recomputed from all sub-queries and written once they have all finished.
    """
    existing = rows.get(update.sub_query_id)
    if update.sub_query_id != PARENT_SUB_QUERY_ID and existing is not None and existing.last_known_state.is_finished:
        return []
    row = TrackedQuery(
        query_id=update.query_id,
        sub_query_id=update.sub_query_id,
        last_known_state=update.state,
        last_update_time=update.update_time,
        expiry_date=update.update_time + ttl,
        row_count=update.row_count,
        error_message=update.error_message,
    )
    if row.is_parent or not update.state.is_finished:
        return [row]
    run = run_of(update.sub_query_id)
    children = [
        r for key, r in rows.items() if key not in (PARENT_SUB_QUERY_ID, update.sub_query_id) and run_of(key) == run
    ] + [row]
    parent = roll_up_parent(update.query_id, children, update.update_time, ttl=ttl)
    return [row] if parent is None else [row, parent]


RUN_SEPARATOR = "."
"""Separates a run's tag from the rest of a sub-query id (``<run tag>.<id>``): each message sending a query is one run
of it, and a query id sent again by another message is a new run whose sub-queries roll up on their own."""


def run_of(sub_query_id: str) -> str | None:
    """The run tag a sub-query id carries, or None for a sub-query planned without one."""
    tag, separator, _ = sub_query_id.partition(RUN_SEPARATOR)
    return tag if separator else None


class QueryTracker(Protocol):
    """Tracks the state of queries and sub-queries, rolling sub-queries up into their query."""

    def record(self, update: QueryUpdate) -> None:
        """Applies an update (see ``apply_query_update``), atomically with the parent roll-up."""
        ...

    def record_all(self, updates: Sequence[QueryUpdate]) -> None:
        """Applies several updates in order, atomically (e.g. every sub-query QUEUED before any is sent)."""
        ...

    def status(self, query_id: str, sub_query_id: str = PARENT_SUB_QUERY_ID) -> TrackedQuery | None:
        """The row of a query or sub-query, or None."""
        ...

    def sub_queries(self, query_id: str) -> list[TrackedQuery]:
        """The sub-query rows of a query, ordered by sub-query id."""
        ...

    def all_queries(self) -> list[TrackedQuery]:
        """Every row, ordered by query id then sub-query id (parent first)."""
        ...

    def queries_with_state(self, state: QueryState) -> list[TrackedQuery]:
        """Rows in a state, in the order of ``all_queries``."""
        ...

    def failed_queries(self) -> list[TrackedQuery]:
        """Rows that FAILED or PARTIALLY_FAILED, in the order of ``all_queries``."""
        ...
