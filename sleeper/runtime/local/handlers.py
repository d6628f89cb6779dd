"""What the local runtime's workers run for each queue: every queue is routed to the runtime-neutral feature entry
the registry names for it (:mod:`sleeper.runtime.router`), the same function Sleeper's Lambda or container runs for it
on AWS.

A handler takes the instance and one message body, returns a line for the log (empty for nothing to say), and raises
when the message should be delivered again (and, after the queue's receive limit, dead-lettered). Job runs are
recorded under the local task the process runs as (``instance.task``, through the instance's ``job_workspace()``), and
jobs keep their scratch files in the task's directory, so the runs and files of a process that dies are found
(``sleeper.runtime.local.tasks``).
"""

from __future__ import annotations

from sleeper.core import BULK_IMPORT_JOB_Q as BULK_IMPORT_QUEUE
from sleeper.core import operations
from sleeper.runtime.faults_env import arm_crash_points_from_environment
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import Handler, LocalRunner, RoundSummary
from sleeper.runtime.local.tasks import local_task
from sleeper.runtime.router import has_entry, routed

__all__ = ["BULK_IMPORT_QUEUE", "default_handlers", "drain_in_worker"]


def default_handlers() -> dict[str, Handler]:
    """Every queue of a local instance whose messages the registry routes, in registry order, the order a round
    drains them (work flows from earlier queues to later ones): each runs the feature entry the registry names for
    its queue (:mod:`sleeper.runtime.router`), the same function its Lambda or container runs on AWS."""
    return dict(routed(*(spec.name for spec in operations.local_queues() if has_entry(spec.name))))


def drain_in_worker(directory: str, queue_name: str, retry_failed_now: bool = False) -> RoundSummary:
    """Drains one queue of the instance in a directory with the default handlers (run in a worker process); see
    ``LocalRunner.drain`` for ``retry_failed_now``.

    Crash points named in ``SLEEPER_CRASH_AT`` are armed in the worker as in the process that started it. The worker
    drains as a local task of its own, so its runs and messages are recovered if it dies.
    """
    arm_crash_points_from_environment()
    instance = LocalInstance(directory)
    with local_task(instance):
        return LocalRunner(instance, default_handlers()).drain(queue_name, retry_failed_now=retry_failed_now)
