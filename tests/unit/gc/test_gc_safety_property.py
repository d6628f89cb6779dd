"""D1 (docs/reliability.md): over random sequences of ingests, compactions, clock moves and GC runs, GC never deletes a
referenced file, nor one unreferenced for less than the delay, and deletes every file ready for it."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.gc import collect_garbage
from tests.reliability_report import Reliability
from tests.unit.gc.gc_fixtures import new_table

DELAY = timedelta(minutes=20)

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("ingest"), st.integers(1, 3)),
        st.tuples(st.just("compact"), st.integers(1, 4)),
        st.tuples(st.just("advance"), st.integers(5, 40)),
        st.tuples(st.just("gc"), st.integers(1, 5)),
    ),
    min_size=5,
    max_size=30,
)


TALLY: Counter[str] = Counter()
"""Figures over every example of the property, for the battery's line (docs/reliability.md D1)."""


def should_never_delete_a_referenced_or_recently_unreferenced_file(reliability: Reliability) -> None:
    # Given a fresh tally; When the property runs over its examples
    TALLY.clear()
    failure: BaseException | None = None
    try:
        _never_delete_a_referenced_or_recently_unreferenced_file()
    except BaseException as e:
        failure = e
        raise
    finally:
        reliability.record(
            "D1",
            case="random ingests, compactions, clock moves and GC runs under a fake clock",
            examples=TALLY["examples"],
            gc_runs=TALLY["gc_runs"],
            files_deleted=TALLY["deleted"],
            referenced_files_deleted=TALLY["referenced_deleted"],
            early_deletions=TALLY["early_deleted"],
            failures=0 if failure is None else 1,
        )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(OPERATIONS)
def _never_delete_a_referenced_or_recently_unreferenced_file(operations: list[tuple[str, int]]) -> None:
    TALLY["examples"] += 1
    # Given a table and a model of when each file lost its last reference
    table = new_table(instance_values={"sleeper.gc.batch.size": "2"})
    referenced: list[str] = []
    unreferenced_at: dict[str, datetime] = {}
    deleted: set[str] = set()
    counter = 0

    for operation, amount in operations:
        # When
        if operation == "ingest":
            for _ in range(amount):
                counter += 1
                referenced.append(table.add_referenced(f"f{counter}"))
        elif operation == "compact" and referenced:
            inputs = referenced[:amount]
            counter += 1
            output = table.compact(inputs, f"f{counter}", job_id=f"job-{counter}")
            for name in inputs:
                unreferenced_at[name] = table.clock.now
            referenced = [*referenced[len(inputs) :], output]
        elif operation == "advance":
            table.clock.advance(timedelta(minutes=amount))
        elif operation == "gc":
            result = collect_garbage(table, now=table.clock.now, filesystem=table.filesystem)
            ready = {f for f, t in unreferenced_at.items() if t < table.clock.now - DELAY} - deleted
            TALLY["gc_runs"] += 1
            TALLY["deleted"] += len(result.deleted)
            TALLY["referenced_deleted"] += len(set(result.deleted) & set(referenced))
            TALLY["early_deleted"] += len(set(result.deleted) - ready - set(referenced))

            # Then
            assert result.problems == []
            assert set(result.deleted) == ready
            deleted |= set(result.deleted)
        assert all(table.exists(f) for f in referenced)
        assert all(table.exists(f) for f, t in unreferenced_at.items() if f not in deleted)
        assert not any(table.exists(f) for f in deleted)
