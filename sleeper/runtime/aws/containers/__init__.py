"""The entry points of an AWS instance's containers (``containers/<name>/Dockerfile``, named in the registry's
``ContainerSpec.entry_point``): the compaction and ingest ECS tasks and the bulk import Spark driver. Each builds the
instance from its environment, gives the feature's task or driver where it runs (its task id and scratch directory:
:func:`task_workspace`) and maps how it ended to an exit code. The Lambda handlers are in ``sleeper/lambdas/``.
"""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sleeper.core.jobs import JobWorkspace

if TYPE_CHECKING:
    from sleeper.runtime.aws.instance import AwsInstance

__all__ = ["IDLE_WAIT_ENV", "LOGGER", "configure_logging", "idle_wait_seconds", "task_workspace"]

LOGGER = logging.getLogger("sleeper.runtime.aws.containers")

IDLE_WAIT_ENV = "SLEEPER_TASK_IDLE_WAIT_SECONDS"
"""Caps how long a container task waits for a job before it stops (seconds, a number of at least 0): the emulated
instance's tests set it so a task ends soon after its queue is drained."""


def idle_wait_seconds(environ: Mapping[str, str] | None = None) -> float | None:
    """The cap on idle waiting from ``SLEEPER_TASK_IDLE_WAIT_SECONDS``, or None when unset.

    Raises:
        ValueError: If it is set but is not a number of at least 0.
    """
    value = (os.environ if environ is None else environ).get(IDLE_WAIT_ENV, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{IDLE_WAIT_ENV} must be a number of seconds, not {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"{IDLE_WAIT_ENV} must be at least 0, not {value!r}")
    return seconds


@contextmanager
def task_workspace(task_id: str | None = None, directory: str | None = None) -> Iterator[JobWorkspace]:
    """Where a container task's jobs run while the block lasts: the task id (a new UUID unless given) and a scratch
    directory (a new temporary directory, deleted when the block ends, unless one is given)."""
    chosen = task_id or str(uuid.uuid4())
    if directory is not None:
        yield JobWorkspace(task_id=chosen, directory=directory)
        return
    with tempfile.TemporaryDirectory(prefix=f"task-{chosen[:8]}-") as scratch:
        yield JobWorkspace(task_id=chosen, directory=scratch)


def configure_logging(instance: AwsInstance | None = None) -> None:
    """Logs to standard error with times, logger names and the ids of the work (the task, job, table), as each
    container's entry point does; with the instance, at the levels its ``sleeper.logging.*`` properties set, and
    publishing the task's metrics (each finished job's rows, duration and rate) as CloudWatch EMF lines on standard
    output. Call it first without the instance, then again with it: if its properties cannot be read then, that is
    logged and the levels stay as they were (the task meets the error again when it starts)."""
    from sleeper.runtime.aws.metrics import publish_metrics_as_emf
    from sleeper.runtime.logging_config import configure_text_logging

    if instance is None:
        configure_text_logging()
        return
    try:
        properties = instance.properties
    except Exception as e:
        LOGGER.warning("could not read the instance properties to set logging and metrics: %s", e)
        return
    configure_text_logging(properties)
    publish_metrics_as_emf(properties)


def install_user_code_of(instance: AwsInstance) -> None:
    """Installs the iterator code the instance's ``sleeper.userjars`` lists, as each task container does before it
    takes a job (:func:`sleeper.iterators.shipping.install_user_code`; a no-op when none is listed).

    Raises:
        UserCodeError: If a listed wheel cannot be installed: the task stops before any job rather than fail each.
    """
    from sleeper.iterators import install_user_code

    install_user_code(instance.properties, options=instance.filesystem_options)
