"""Bulk export task creation: one task per leaf partition export waiting, within
``sleeper.bulk.export.max.concurrent.tasks``, over fake ports."""

from __future__ import annotations

import pytest

from sleeper.bulk_export.task_creation import create_bulk_export_tasks
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_bulk import MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS
from tests.unit.core.jobs.task_fakes import FakeLauncher, FakeQueue


def _properties(maximum: int) -> InstanceProperties:
    properties = InstanceProperties()
    properties.set(MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS, maximum)
    return properties


@pytest.mark.parametrize(
    ("visible", "running", "maximum", "expected"),
    [(4, 0, 300, [4]), (50, 8, 10, [2]), (10, 10, 10, []), (10, 12, 10, [])],
)
def should_launch_a_task_per_visible_export_within_the_maximum(
    visible: int, running: int, maximum: int, expected: list[int]
) -> None:
    # Given
    launcher = FakeLauncher(running=running, abortable=False)

    # When
    result = create_bulk_export_tasks(_properties(maximum), FakeQueue(visible=visible, in_flight=3), launcher)

    # Then
    assert launcher.requested == expected
    assert (result.visible_jobs, result.running_and_pending) == (visible, running)
    assert result.to_create == result.launched == sum(expected)


def should_not_count_tasks_when_no_export_is_waiting() -> None:
    # Given
    launcher = FakeLauncher(running=5, abortable=False)

    # When
    result = create_bulk_export_tasks(_properties(10), FakeQueue(visible=0, in_flight=3), launcher)

    # Then
    assert (launcher.counted, launcher.requested) == (0, [])
    assert (result.running_and_pending, result.plan, result.launched) == (None, None, 0)
