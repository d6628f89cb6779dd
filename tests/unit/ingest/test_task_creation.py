"""Ingest task creation: Sleeper's rules for how many tasks to start, over fake ports."""

from __future__ import annotations

import pytest

from sleeper.core.jobs.task_creation import plan_tasks
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_ingest import MAXIMUM_CONCURRENT_INGEST_TASKS
from sleeper.ingest.task_creation import create_ingest_tasks
from tests.unit.core.jobs.task_fakes import FakeLauncher, FakeQueue


def _properties(maximum: int) -> InstanceProperties:
    properties = InstanceProperties()
    properties.set(MAXIMUM_CONCURRENT_INGEST_TASKS, maximum)
    return properties


@pytest.mark.parametrize(
    ("visible", "running", "maximum", "expected"),
    [
        (3, 0, 200, 3),
        (500, 0, 200, 200),
        (10, 195, 200, 5),
        (0, 0, 200, 0),
        (10, 200, 200, 0),
        (10, 210, 200, 0),
    ],
)
def should_create_one_task_per_visible_job_within_the_maximum(
    visible: int, running: int, maximum: int, expected: int
) -> None:
    # Given the queue, the tasks running and the maximum

    # When
    count = plan_tasks(visible_jobs=visible, running_and_pending=running, maximum_running=maximum).to_launch

    # Then
    assert count == expected


def should_launch_tasks_for_the_visible_jobs() -> None:
    # Given
    launcher = FakeLauncher(running=2, abortable=False)

    # When
    result = create_ingest_tasks(_properties(5), FakeQueue(visible=10, in_flight=4), launcher)

    # Then in-flight jobs already have tasks, so only the visible ones count
    assert launcher.requested == [3]
    assert (result.visible_jobs, result.running_and_pending, result.to_create, result.launched) == (10, 2, 3, 3)


def should_not_count_tasks_when_the_queue_is_empty() -> None:
    # Given
    launcher = FakeLauncher(running=0, abortable=False)

    # When
    result = create_ingest_tasks(_properties(200), FakeQueue(visible=0, in_flight=7), launcher)

    # Then
    assert launcher.counted == 0
    assert launcher.requested == []
    assert result.running_and_pending is None


def should_not_launch_when_the_maximum_is_reached() -> None:
    # Given
    launcher = FakeLauncher(running=200, abortable=False)

    # When
    result = create_ingest_tasks(_properties(200), FakeQueue(visible=10), launcher)

    # Then
    assert launcher.requested == []
    assert result.launched == 0
