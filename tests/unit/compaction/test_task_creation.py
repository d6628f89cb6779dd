"""Compaction task creation: Sleeper's rules for how many tasks to start, over fake ports."""

from __future__ import annotations

import pytest

from sleeper.compaction.task_creation import create_compaction_tasks, run_compaction_tasks_to_target
from sleeper.core.jobs.task_creation import TaskPlan, plan_tasks
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_compaction import MAXIMUM_CONCURRENT_COMPACTION_TASKS
from tests.unit.core.jobs.task_fakes import FakeLauncher, FakeQueue, FakeScaler


def _properties(maximum: int) -> InstanceProperties:
    properties = InstanceProperties()
    properties.set(MAXIMUM_CONCURRENT_COMPACTION_TASKS, maximum)
    return properties


@pytest.mark.parametrize(
    ("visible", "running", "maximum", "expected"),
    [
        (5, 0, 300, TaskPlan(create=5, target=5)),
        (500, 0, 300, TaskPlan(create=300, target=300)),
        (10, 295, 300, TaskPlan(create=5, target=300)),
        (0, 7, 300, TaskPlan(create=0, target=7)),
        (10, 300, 300, TaskPlan(create=0, target=300)),
        (10, 12, 10, TaskPlan(create=-2, target=10)),
    ],
)
def should_plan_one_task_per_visible_job_within_the_maximum(
    visible: int, running: int, maximum: int, expected: TaskPlan
) -> None:
    # Given the queue, the tasks running and the maximum

    # When
    plan = plan_tasks(visible_jobs=visible, running_and_pending=running, maximum_running=maximum)

    # Then
    assert plan == expected


def should_launch_tasks_for_the_visible_jobs_and_scale_hosts_for_the_total() -> None:
    # Given
    launcher = FakeLauncher(running=3)
    scaler = FakeScaler()

    # When
    result = create_compaction_tasks(_properties(10), FakeQueue(visible=4), launcher, host_scaler=scaler)

    # Then
    assert launcher.requested == [4]
    assert scaler.targets == [7]
    assert result.launched == 4
    assert (result.visible_jobs, result.running_and_pending) == (4, 3)


def should_not_launch_when_the_maximum_is_reached_but_still_scale_hosts() -> None:
    # Given
    launcher = FakeLauncher(running=10)
    scaler = FakeScaler()

    # When
    result = create_compaction_tasks(_properties(10), FakeQueue(visible=50), launcher, host_scaler=scaler)

    # Then
    assert launcher.requested == []
    assert scaler.targets == [10]
    assert result.launched == 0


def should_not_launch_when_no_jobs_are_visible() -> None:
    # Given
    launcher = FakeLauncher(running=0)

    # When
    result = create_compaction_tasks(_properties(300), FakeQueue(visible=0), launcher)

    # Then
    assert launcher.requested == []
    assert result.plan == TaskPlan(create=0, target=0)


def should_stop_launching_after_the_time_limit() -> None:
    # Given a clock that moves 20 s on every task launched
    now = [0.0]

    def tick() -> None:
        now[0] += 20.0

    launcher = FakeLauncher(running=0, on_launch=tick)

    # When
    result = create_compaction_tasks(
        _properties(300), FakeQueue(visible=100), launcher, clock=lambda: now[0], time_limit_seconds=50.0
    )

    # Then the third launch passes 50 s, so launching stops there
    assert launcher.requested == [100]
    assert result.launched == 3


def should_launch_the_difference_to_a_target_and_never_scale_hosts_down() -> None:
    # Given
    up = FakeLauncher(running=2)
    down = FakeLauncher(running=8)
    up_scaler, down_scaler = FakeScaler(), FakeScaler()

    # When
    grown = run_compaction_tasks_to_target(up, 5, host_scaler=up_scaler)
    kept = run_compaction_tasks_to_target(down, 5, host_scaler=down_scaler)

    # Then
    assert (up.requested, up_scaler.targets, grown.launched) == ([3], [5], 3)
    assert (down.requested, down_scaler.targets, kept.launched) == ([], [8], 0)


def should_refuse_a_negative_target() -> None:
    # Given
    launcher = FakeLauncher(running=0)

    # When / Then
    with pytest.raises(ValueError, match="negative"):
        run_compaction_tasks_to_target(launcher, -1)
