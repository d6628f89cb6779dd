"""Task creation for every job kind that runs in tasks (ingest, compaction, bulk export), as Sleeper's one
``RunDataProcessingTasks`` does it (gchq/sleeper ``java/task-launching``): on a schedule, start one task per job
waiting on the kind's job queue, up to the kind's maximum running at once.

The rules:

* tasks to create = min(visible jobs, maximum - tasks running and pending); the hosts, where a kind has hosts to
  size, are scaled for the tasks running and pending plus that number (below the tasks running if the maximum was
  lowered);
* nothing is launched unless that is at least one;
* a kind that does not size hosts stops when no job is visible, before counting its tasks
  (:attr:`TaskKind.count_when_queue_empty`);
* run by hand to reach a number of tasks, the difference from the tasks running and pending is launched, and the
  hosts are never scaled below the tasks already running.

A feature configures its :class:`TaskKind` (its name and the property capping its tasks) and adds only what is its
own (compaction: the hosts of the EC2 launch type and the time limit of a scheduled run). Everything here is pure
logic over the ports below; the ECS launcher is :class:`sleeper.adapters.aws.launchers.ecs.EcsTaskLauncher`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sleeper.core.properties import InstanceProperties, PropertyDefinition
from sleeper.core.queue import QueueCounts

__all__ = [
    "AbortCheck",
    "HostScaling",
    "JobQueueCounts",
    "TaskCreation",
    "TaskKind",
    "TaskLauncher",
    "TaskPlan",
    "create_tasks",
    "plan_tasks",
    "run_tasks_to_target",
]

_LOG = logging.getLogger(__name__)

AbortCheck = Callable[[], bool]
"""Called by a launcher between launches; True means stop launching (the scheduled run is nearly over)."""

HostScaling = Callable[[int], None]
"""Makes room on the hosts for this many tasks in total (a feature's own, e.g. compaction's EC2 pool)."""


class JobQueueCounts(Protocol):
    """A job queue, as far as task creation needs it (any ``sleeper.core.queue.Queue`` is one)."""

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        ...


class TaskLauncher(Protocol):
    """Counts and starts the tasks of one job kind (ECS tasks on AWS; the emulator runs them as local processes)."""

    def running_and_pending_tasks(self) -> int:
        """How many tasks are running or about to run."""
        ...

    def launch_tasks(self, count: int, *, should_abort: AbortCheck) -> int:
        """Starts up to ``count`` tasks, stopping early when ``should_abort`` returns True.

        Returns:
            How many tasks were started.
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskKind:
    """One job kind whose jobs run in tasks, as task creation sees it.

    Attributes:
        name: What the tasks do, in logs and errors (``"ingest"``).
        maximum_tasks: The instance property capping the tasks running at once.
        count_when_queue_empty: Whether the tasks are counted (and the hosts sized) when no job is visible; a kind
            with no hosts to size stops there instead.
    """

    name: str
    maximum_tasks: PropertyDefinition
    count_when_queue_empty: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskPlan:
    """How many tasks to create and how many the hosts must hold.

    Attributes:
        create: Tasks to create; negative when more tasks run than the maximum allows (nothing is launched then).
        target: Tasks the hosts are scaled for: the tasks running and pending plus ``create``.
    """

    create: int
    target: int

    @property
    def to_launch(self) -> int:
        """Tasks to ask of the launcher (``create``, never negative)."""
        return max(self.create, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskCreation:
    """What one run of task creation saw and did.

    Attributes:
        visible_jobs: Jobs waiting on the queue (0 when run by hand to a target: the queue is not read).
        running_and_pending: Tasks running or about to run before this run, or None if they were not counted (no
            job visible, for a kind that stops there).
        plan: The tasks to create and the hosts' target, or None if the tasks were not counted.
        launched: Tasks actually started.
    """

    visible_jobs: int
    running_and_pending: int | None
    plan: TaskPlan | None
    launched: int

    @property
    def to_create(self) -> int:
        """Tasks asked of the launcher."""
        return 0 if self.plan is None else self.plan.to_launch


def plan_tasks(*, visible_jobs: int, running_and_pending: int, maximum_running: int) -> TaskPlan:
    """Sleeper's rule for a scheduled run: one task per visible job, within the maximum.

    Args:
        visible_jobs: Approximate number of visible messages on the job queue.
        running_and_pending: Tasks running or pending.
        maximum_running: The kind's maximum number of tasks running at once.

    Raises:
        ValueError: If the target comes out negative (a negative count was given).
    """
    create = min(visible_jobs, maximum_running - running_and_pending)
    target = running_and_pending + create
    if target < 0:
        raise ValueError(f"target number of tasks is negative: {target} (counts must not be negative)")
    return TaskPlan(create=create, target=target)


def create_tasks(
    kind: TaskKind,
    properties: InstanceProperties,
    job_queue: JobQueueCounts,
    launcher: TaskLauncher,
    *,
    scale_hosts: HostScaling | None = None,
    clock: Callable[[], float] = time.monotonic,
    time_limit_seconds: float | None = None,
) -> TaskCreation:
    """One scheduled run: starts a task for each job waiting, within the kind's maximum.

    Args:
        kind: The job kind (its name and maximum property).
        properties: The instance properties (the maximum number of tasks).
        job_queue: The kind's job queue.
        launcher: Counts and starts tasks.
        scale_hosts: Sizes the hosts for the target number of tasks, before any launch (None: no hosts to size).
        clock: Seconds from an arbitrary origin (``time.monotonic``), to stop launching after the time limit.
        time_limit_seconds: How long launching may go on (None: until every task asked for is started).

    Returns:
        What was seen and done.
    """
    start = clock()
    visible = job_queue.approximate_counts().visible
    if visible <= 0 and not kind.count_when_queue_empty:
        _LOG.info("%s task creation: no jobs visible on the queue", kind.name)
        return TaskCreation(visible_jobs=visible, running_and_pending=None, plan=None, launched=0)
    maximum = properties.get_int(kind.maximum_tasks)
    running = launcher.running_and_pending_tasks()
    plan = plan_tasks(visible_jobs=visible, running_and_pending=running, maximum_running=maximum)
    _LOG.info(
        "%s task creation: %d jobs visible, %d tasks running or pending, maximum %d, creating %d",
        kind.name, visible, running, maximum, plan.to_launch,
    )  # fmt: skip

    def should_abort() -> bool:
        if time_limit_seconds is not None and clock() - start > time_limit_seconds:
            _LOG.info("%s task creation ran for more than %.0f s, stopping", kind.name, time_limit_seconds)
            return True
        return False

    launched = _scale_and_launch(launcher, scale_hosts, plan, should_abort)
    return TaskCreation(visible_jobs=visible, running_and_pending=running, plan=plan, launched=launched)


def run_tasks_to_target(
    kind: TaskKind, launcher: TaskLauncher, desired_tasks: int, *, scale_hosts: HostScaling | None = None
) -> TaskCreation:
    """Starts tasks until ``desired_tasks`` are running or pending, whatever is on the queue (run by hand).

    The hosts are scaled for the larger of the desired and the current number of tasks: never down.

    Raises:
        ValueError: If ``desired_tasks`` is negative.
    """
    if desired_tasks < 0:
        raise ValueError(f"desired number of {kind.name} tasks is negative: {desired_tasks}")
    running = launcher.running_and_pending_tasks()
    plan = TaskPlan(create=desired_tasks - running, target=max(desired_tasks, running))
    launched = _scale_and_launch(launcher, scale_hosts, plan, lambda: False)
    return TaskCreation(visible_jobs=0, running_and_pending=running, plan=plan, launched=launched)


def _scale_and_launch(
    launcher: TaskLauncher, scale_hosts: HostScaling | None, plan: TaskPlan, abort: AbortCheck
) -> int:
    if scale_hosts is not None:
        scale_hosts(plan.target)
    if plan.to_launch < 1:
        return 0
    return launcher.launch_tasks(plan.to_launch, should_abort=abort)
