"""Waiting for a query through the query tracker, as Sleeper's Python client does, with a fake clock."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from sleeper.adapters.memory.trackers import InMemoryQueryTracker
from sleeper.client.errors import QueryFailedError, QueryTimeoutError
from sleeper.client.results import poll_intervals, sorted_rows, wait_for_query
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState, QueryUpdate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _update(query_id: str, state: QueryState, sub: str = "-", error: str | None = None) -> QueryUpdate:
    return QueryUpdate(query_id=query_id, sub_query_id=sub, state=state, update_time=NOW, error_message=error)


def should_poll_as_sleepers_client_does() -> None:
    assert list(itertools.islice(poll_intervals(), 37)) == [0.5] * 10 + [2.0] * 25 + [5.0] * 2


def should_return_once_the_tracker_says_completed() -> None:
    # Given a query the tracker will say COMPLETED after three polls
    tracker = InMemoryQueryTracker()
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 3:
            tracker.record(_update("q", QueryState.COMPLETED))

    # When the client waits, then it returns the tracker's row after polling three times
    assert wait_for_query(tracker, "q", clock=clock, sleep=sleep).last_known_state is QueryState.COMPLETED
    assert clock.sleeps == [0.5, 0.5, 0.5]


def should_give_up_after_the_maximum_wait() -> None:
    tracker = InMemoryQueryTracker()
    tracker.record(_update("q", QueryState.IN_PROGRESS))
    clock = FakeClock()
    with pytest.raises(QueryTimeoutError, match="within 30 s: query q is IN_PROGRESS") as raised:
        wait_for_query(tracker, "q", max_wait_seconds=30, clock=clock, sleep=clock.sleep)
    assert isinstance(raised.value, RuntimeError)
    assert sum(clock.sleeps) == 30 and clock.sleeps[-1] == 1.0


@pytest.mark.parametrize(
    ("updates", "state", "reason"),
    [
        ([_update("q", QueryState.FAILED, error="Table not found: t")], "FAILED", "Table not found: t"),
        (
            [
                _update("q", QueryState.IN_PROGRESS),
                _update("q", QueryState.QUEUED, sub="s1"),
                _update("q", QueryState.QUEUED, sub="s2"),
                _update("q", QueryState.COMPLETED, sub="s1"),
                _update("q", QueryState.FAILED, sub="s2", error="file gone"),
            ],
            "PARTIALLY_FAILED",
            "sub-query s2: file gone",
        ),
    ],
)
def should_raise_at_once_with_the_trackers_reasons_when_the_query_failed(
    updates: list[QueryUpdate], state: str, reason: str
) -> None:
    # Given a query that failed, or failed in part (Sleeper's client waits out its timeout on that)
    tracker = InMemoryQueryTracker()
    tracker.record_all(updates)
    clock = FakeClock()
    # When the client waits, then it raises without sleeping, naming the state and the reasons
    with pytest.raises(QueryFailedError, match=reason) as raised:
        wait_for_query(tracker, "q", clock=clock, sleep=clock.sleep)
    assert raised.value.state == state and isinstance(raised.value, RuntimeError)
    assert clock.sleeps == []


def should_return_rows_in_row_key_then_sort_key_order() -> None:
    schema = Schema(
        row_key_fields=(Field("k", PrimitiveType.STRING),),
        sort_key_fields=(Field("s", PrimitiveType.LONG),),
        value_fields=(Field("v", PrimitiveType.LONG),),
    )
    table = pa.table({"k": ["b", "a", "b"], "s": [2, 5, 1], "v": [1, 2, 3]})
    assert sorted_rows(table, schema) == [
        {"k": "a", "s": 5, "v": 2},
        {"k": "b", "s": 1, "v": 3},
        {"k": "b", "s": 2, "v": 1},
    ]
    assert sorted_rows(None, schema) == []
