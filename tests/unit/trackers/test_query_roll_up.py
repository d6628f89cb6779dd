"""Query tracker rules: parent roll-up and duplicate sub-query updates (sleeper.core.trackers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.trackers.query import (
    PARENT_SUB_QUERY_ID,
    QueryState,
    QueryUpdate,
    TrackedQuery,
    apply_query_update,
    parent_state_if_finished,
    roll_up_parent,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
C, F, P = QueryState.COMPLETED, QueryState.FAILED, QueryState.PARTIALLY_FAILED
Q, R = QueryState.QUEUED, QueryState.IN_PROGRESS


def child(sub: str, state: QueryState, rows: int = 0, error: str | None = None) -> TrackedQuery:
    return TrackedQuery(
        query_id="q",
        sub_query_id=sub,
        last_known_state=state,
        last_update_time=T0,
        expiry_date=T0 + timedelta(days=1),
        row_count=rows,
        error_message=error,
    )


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ([C], C),
        ([C, C, C], C),
        ([F], F),
        ([F, F], F),
        ([F, P], F),
        ([P], F),
        ([C, F], P),
        ([C, P], P),
        ([C, R], None),
        ([C, Q], None),
        ([F, R], None),
    ],
)
def should_roll_finished_sub_queries_up_into_the_parent_state(
    children: list[QueryState], expected: QueryState | None
) -> None:
    # Given / When
    state = parent_state_if_finished(children)
    # Then
    assert state == expected


def should_sum_row_counts_and_collect_errors_in_the_parent() -> None:
    # Given
    children = [child("a", C, 10), child("b", F, 0, "file missing"), child("c", C, 5), child("d", F, 0, "file missing")]
    # When
    parent = roll_up_parent("q", children, T0 + timedelta(seconds=5))
    # Then
    assert parent is not None
    assert (parent.sub_query_id, parent.last_known_state, parent.row_count) == (PARENT_SUB_QUERY_ID, P, 15)
    assert parent.error_message == "file missing"
    assert parent.expiry_date == T0 + timedelta(seconds=5) + timedelta(days=1)


def should_not_roll_up_while_a_sub_query_is_unfinished() -> None:
    # Given / When
    parent = roll_up_parent("q", [child("a", C, 10), child("b", R)], T0)
    # Then
    assert parent is None


def should_write_the_parent_when_the_last_sub_query_finishes() -> None:
    # Given a parent in progress with one sub-query done and one running
    rows = {PARENT_SUB_QUERY_ID: child(PARENT_SUB_QUERY_ID, R), "a": child("a", C, 10), "b": child("b", R)}
    update = QueryUpdate(query_id="q", sub_query_id="b", state=C, update_time=T0, row_count=7)
    # When
    written = apply_query_update(rows, update)
    # Then
    assert [(r.sub_query_id, r.last_known_state, r.row_count) for r in written] == [("b", C, 7), ("-", C, 17)]


def should_only_write_the_sub_query_while_others_run() -> None:
    # Given
    rows = {PARENT_SUB_QUERY_ID: child(PARENT_SUB_QUERY_ID, R), "a": child("a", Q), "b": child("b", R)}
    update = QueryUpdate(query_id="q", sub_query_id="b", state=F, update_time=T0, error_message="boom")
    # When
    written = apply_query_update(rows, update)
    # Then
    assert [(r.sub_query_id, r.last_known_state, r.error_message) for r in written] == [("b", F, "boom")]


def should_ignore_an_update_to_a_finished_sub_query() -> None:
    # Given a sub-query that completed and a duplicate delivery that reports it in progress
    rows = {PARENT_SUB_QUERY_ID: child(PARENT_SUB_QUERY_ID, C, 10), "a": child("a", C, 10)}
    update = QueryUpdate(query_id="q", sub_query_id="a", state=R, update_time=T0 + timedelta(seconds=9))
    # When
    written = apply_query_update(rows, update)
    # Then
    assert written == []


def should_write_a_parent_update_as_given() -> None:
    # Given a query with no leaf partitions to read
    update = QueryUpdate(query_id="q", state=C, update_time=T0, row_count=0)
    # When
    written = apply_query_update({}, update, ttl=timedelta(hours=2))
    # Then
    assert [(r.sub_query_id, r.last_known_state, r.expiry_date) for r in written] == [("-", C, T0 + timedelta(hours=2))]
