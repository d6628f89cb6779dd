"""The task creation every job kind shares: the order of host sizing and launching, what a kind that does not count
on an empty queue skips, and the errors on bad counts, over fake ports."""

from __future__ import annotations

import pytest

from sleeper.core.jobs.task_creation import TaskKind, TaskPlan, create_tasks, plan_tasks, run_tasks_to_target
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_ingest import MAXIMUM_CONCURRENT_INGEST_TASKS
from tests.unit.core.jobs.task_fakes import FakeLauncher, FakeQueue

KIND = TaskKind(name="example", maximum_tasks=MAXIMUM_CONCURRENT_INGEST_TASKS)
COUNTING_KIND = TaskKind(name="example", maximum_tasks=MAXIMUM_CONCURRENT_INGEST_TASKS, count_when_queue_empty=True)


def _properties(maximum: int) -> InstanceProperties:
    properties = InstanceProperties()
    properties.set(MAXIMUM_CONCURRENT_INGEST_TASKS, maximum)
    return properties


def should_size_the_hosts_for_the_target_before_launching() -> None:
    # Given
    events: list[str] = []
    launcher = FakeLauncher(running=2, events=events)

    # When
    result = create_tasks(
        KIND, _properties(5), FakeQueue(visible=9), launcher, scale_hosts=lambda n: events.append(f"scale {n}")
    )

    # Then
    assert events == ["count", "scale 5", "launch 3"]
    assert (result.plan, result.launched) == (TaskPlan(create=3, target=5), 3)


@pytest.mark.parametrize(("kind", "expected"), [(KIND, []), (COUNTING_KIND, ["count", "scale 4"])])
def should_count_and_size_on_an_empty_queue_only_for_a_kind_that_asks(kind: TaskKind, expected: list[str]) -> None:
    # Given
    events: list[str] = []
    launcher = FakeLauncher(running=4, events=events)

    # When
    result = create_tasks(
        kind, _properties(5), FakeQueue(visible=0), launcher, scale_hosts=lambda n: events.append(f"scale {n}")
    )

    # Then
    assert events == expected
    assert result.launched == 0


def should_refuse_negative_counts() -> None:
    # Given a negative count of tasks running, as no launcher should report

    # When / Then
    with pytest.raises(ValueError, match="negative"):
        plan_tasks(visible_jobs=0, running_and_pending=-3, maximum_running=5)


def should_name_the_kind_when_refusing_a_negative_target() -> None:
    # Given
    launcher = FakeLauncher(running=0)

    # When / Then
    with pytest.raises(ValueError, match="desired number of example tasks is negative: -1"):
        run_tasks_to_target(KIND, launcher, -1)
