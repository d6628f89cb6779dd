"""Named crash points: inert until armed, then the action runs (docs/reliability.md)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import sleeper
from sleeper.core import faults
from sleeper.core.faults import CRASH_POINTS, CrashPointReached, arm, armed, crash_point, disarm, disarm_all


@pytest.fixture(autouse=True)
def _disarmed() -> Iterator[None]:
    disarm_all()
    yield
    disarm_all()


def should_do_nothing_at_a_crash_point_that_is_not_armed() -> None:
    # Given another point armed
    arm("other.point")
    # When the code passes an unarmed point
    crash_point("ingest.after_files_written")
    # Then nothing happened and the other point is still armed
    assert faults.armed_points() == {"other.point"}


def should_raise_a_crash_that_error_handlers_do_not_catch() -> None:
    # Given an armed point
    arm("compaction.after_commit")
    handled: list[Exception] = []
    # When code that records and swallows errors reaches it
    with pytest.raises(CrashPointReached) as crash:
        try:
            crash_point("compaction.after_commit")
        except Exception as e:  # what a handler that records failures does
            handled.append(e)
    # Then the crash went past the handler, naming the point
    assert handled == []
    assert crash.value.name == "compaction.after_commit"
    assert not isinstance(crash.value, Exception)


def should_run_the_armed_action_with_the_point_name() -> None:
    # Given a point armed with an action that only records
    seen: list[str] = []
    arm("gc.after_delete", seen.append)
    # When the point is reached twice
    crash_point("gc.after_delete")
    crash_point("gc.after_delete")
    # Then the action ran each time
    assert seen == ["gc.after_delete", "gc.after_delete"]


def should_disarm_itself_after_firing_the_given_number_of_times() -> None:
    # Given a point armed to fire twice
    seen: list[str] = []
    arm("gc.after_delete", seen.append, times=2)
    # When it is reached three times
    for _ in range(3):
        crash_point("gc.after_delete")
    # Then it fired twice and is no longer armed
    assert len(seen) == 2
    assert "gc.after_delete" not in faults.armed_points()


def should_fire_a_point_armed_once_in_only_one_of_many_threads() -> None:
    # Given a point armed to fire once, and threads that all reach it together
    seen: list[str] = []
    arm("compaction.after_output_written", seen.append, times=1)
    barrier = threading.Barrier(8)

    def reach() -> None:
        barrier.wait()
        crash_point("compaction.after_output_written")

    threads = [threading.Thread(target=reach) for _ in range(8)]
    # When they run
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one of them crashed
    assert seen == ["compaction.after_output_written"]


def should_disarm_one_point_or_every_point() -> None:
    # Given three armed points
    for name in ("a", "b", "c"):
        arm(name)
    # When one is disarmed, then all
    disarm("b")
    after_one = faults.armed_points()
    disarm_all()
    # Then each disarm removed what it names
    assert after_one == {"a", "c"}
    assert faults.armed_points() == frozenset()
    crash_point("a")  # and nothing fires


def should_arm_a_point_only_inside_a_with_block() -> None:
    # Given a point armed for a block that crashes
    # When the block ends by the crash
    with pytest.raises(CrashPointReached), armed("ingest.after_files_written"):
        crash_point("ingest.after_files_written")
    # Then the point is disarmed again
    assert faults.armed_points() == frozenset()
    crash_point("ingest.after_files_written")


@pytest.mark.parametrize(("name", "times"), [("", None), ("x", 0), ("x", -1)])
def should_refuse_an_empty_name_or_a_count_below_one(name: str, times: int | None) -> None:
    # When a point is armed with an empty name or a count below one
    # Then it is refused
    with pytest.raises(ValueError):
        arm(name, times=times)
    assert faults.armed_points() == frozenset()


def should_call_every_listed_crash_point_exactly_once_in_the_code() -> None:
    # Given the package source
    root = Path(sleeper.__file__).parent
    calls: dict[str, int] = {}
    pattern = re.compile(r"""crash_point\(\s*["']([^"']+)["']\s*\)""")
    for path in root.rglob("*.py"):
        for name in pattern.findall(path.read_text(encoding="utf-8")):
            calls[name] = calls.get(name, 0) + 1
    # Then each listed point is called once, and every point called is listed
    assert calls == dict.fromkeys(CRASH_POINTS, 1)
