"""Compaction task creation (spec 4.4, 12): every minute, start one task per compaction job waiting on the job
queue, up to ``sleeper.compaction.max.concurrent.tasks`` running at once.

Sleeper's rules, as its task creator applies them:

* tasks to create = min(visible jobs, maximum − running and pending tasks); the hosts are scaled for running and
  pending + tasks to create (this may be below the tasks running, if the maximum was lowered);
* nothing is launched unless that is at least one;
* the creator runs once a minute, so launching stops once it has run for 50 seconds;
* run by hand to reach a number of tasks (``runCompactionTasks.sh``), it launches the difference from the tasks
  running and pending, and never scales the hosts down below the tasks already running.

Everything here is pure logic over the ports of :mod:`sleeper.compaction.launch_ports`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sleeper.compaction.launch_ports import JobQueueCounts, TaskHostScaler, TaskLauncher
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_compaction import MAXIMUM_CONCURRENT_COMPACTION_TASKS

__all__ = [
    "SCHEDULED_RUN_TIME_LIMIT_SECONDS",
    "CompactionTaskCreation",
    "CompactionTaskPlan",
    "create_compaction_tasks",
    "plan_compaction_tasks",
    "run_compaction_tasks_to_target",
]

_LOG = logging.getLogger(__name__)

SCHEDULED_RUN_TIME_LIMIT_SECONDS = 50.0
"""How long a scheduled run launches tasks for before it stops (it is triggered every minute)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionTaskPlan:
    """How many tasks to create and how many the hosts must hold.

    Attributes:
        create: Tasks to create; nothing is launched unless this is at least 1 (it is negative when more tasks run
            than the maximum allows).
        target: Tasks the hosts are scaled for: the tasks running and pending plus ``create``.
    """

    create: int
    target: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionTaskCreation:
    """What one run of compaction task creation saw and did.

    Attributes:
        visible_jobs: Jobs waiting on the queue (None when started by hand for a target).
        running_and_pending: Tasks running or about to run before this run.
        plan: The tasks to create and the hosts' target.
        launched: Tasks actually started.
    """

    visible_jobs: int | None
    running_and_pending: int
    plan: CompactionTaskPlan
    launched: int


def plan_compaction_tasks(*, visible_jobs: int, running_and_pending: int, maximum_running: int) -> CompactionTaskPlan:
    """Sleeper's rule for a scheduled run: one task per visible job, within the maximum.

    Args:
        visible_jobs: Approximate number of visible messages on the compaction job queue.
        running_and_pending: Tasks running or pending.
        maximum_running: ``sleeper.compaction.max.concurrent.tasks``.

    Raises:
        ValueError: If the target comes out negative (a negative count was given).
    """
    create = min(visible_jobs, maximum_running - running_and_pending)
    target = running_and_pending + create
    if target < 0:
        raise ValueError(f"target number of compaction tasks is negative: {target}")
    return CompactionTaskPlan(create=create, target=target)


def create_compaction_tasks(
    properties: InstanceProperties,
    job_queue: JobQueueCounts,
    launcher: TaskLauncher,
    *,
    host_scaler: TaskHostScaler | None = None,
    clock: Callable[[], float] = time.monotonic,
    time_limit_seconds: float = SCHEDULED_RUN_TIME_LIMIT_SECONDS,
) -> CompactionTaskCreation:
    """One scheduled run: starts a task for each job waiting, within ``sleeper.compaction.max.concurrent.tasks``.

    Args:
        properties: The instance properties (the maximum number of tasks).
        job_queue: The compaction job queue.
        launcher: Counts and starts tasks.
        host_scaler: Sizes the hosts for the target number of tasks (EC2 launch type), if any.
        clock: Seconds from an arbitrary origin (``time.monotonic``), to stop launching after the time limit.
        time_limit_seconds: How long launching may go on.

    Returns:
        What was seen and done.
    """
    start = clock()
    visible = job_queue.approximate_counts().visible
    maximum = properties.get_int(MAXIMUM_CONCURRENT_COMPACTION_TASKS)
    running = launcher.running_and_pending_tasks()
    plan = plan_compaction_tasks(visible_jobs=visible, running_and_pending=running, maximum_running=maximum)
    _LOG.info(
        "compaction task creation: %d jobs visible, %d tasks running or pending, maximum %d, creating %d",
        visible,
        running,
        maximum,
        max(plan.create, 0),
    )

    def should_abort() -> bool:
        if clock() - start > time_limit_seconds:
            _LOG.info("compaction task creation ran for more than %.0f s, stopping", time_limit_seconds)
            return True
        return False

    launched = _scale_and_launch(launcher, host_scaler, target=plan.target, create=plan.create, abort=should_abort)
    return CompactionTaskCreation(visible_jobs=visible, running_and_pending=running, plan=plan, launched=launched)


def run_compaction_tasks_to_target(
    launcher: TaskLauncher, desired_tasks: int, *, host_scaler: TaskHostScaler | None = None
) -> CompactionTaskCreation:
    """Starts tasks until ``desired_tasks`` are running or pending, whatever is on the queue (run by hand).

    The hosts are scaled for the larger of the desired and the current number of tasks: never down.

    Raises:
        ValueError: If ``desired_tasks`` is negative.
    """
    if desired_tasks < 0:
        raise ValueError(f"desired number of compaction tasks is negative: {desired_tasks}")
    running = launcher.running_and_pending_tasks()
    plan = CompactionTaskPlan(create=desired_tasks - running, target=max(desired_tasks, running))
    launched = _scale_and_launch(launcher, host_scaler, target=plan.target, create=plan.create, abort=lambda: False)
    return CompactionTaskCreation(visible_jobs=None, running_and_pending=running, plan=plan, launched=launched)


def _scale_and_launch(
    launcher: TaskLauncher,
    host_scaler: TaskHostScaler | None,
    *,
    target: int,
    create: int,
    abort: Callable[[], bool],
) -> int:
    if host_scaler is not None:
        host_scaler.scale_to(target)
    if create < 1:
        return 0
    return launcher.launch_tasks(create, should_abort=abort)
