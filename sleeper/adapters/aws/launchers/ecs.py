"""ECS tasks for ingest, compaction and bulk export: the ``TaskLauncher`` port of
:mod:`sleeper.core.jobs.task_creation`.

* tasks running and pending = ``pendingTasksCount + runningTasksCount`` of ``DescribeClusters`` on the cluster;
* ``RunTask`` on the kind's cluster (``sleeper.compaction.cluster``, ``sleeper.ingest.cluster``, ...) with the
  task definition family from the instance properties, at most 10 tasks per call and one call a second (ECS's
  sustained rate), the container override Sleeper uses (the command is the config bucket; the ``CONFIG_BUCKET``
  environment variable is set too), and tags propagated from the task definition;
* Fargate (ingest and bulk export always, compaction by default): ``sleeper.fargate.version``, the subnets
  ``sleeper.subnets`` and the security group ``sleeper.ecs.security.group.id``; EC2 (compaction with
  ``sleeper.compaction.ecs.launch.type=EC2``): the EC2 task definition family, bridge networking, no network
  configuration;
* a call whose failures are only "capacity is unavailable" is retried every 5 s for up to a minute; any other failure,
  or an error from ECS, stops the launch (logged, as Sleeper does: the next scheduled run tries again).

No mypy stubs for the ECS client are installed, so it is typed ``Any``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.clients import EcsClient
from sleeper.adapters.aws.exceptions import AwsError, translated
from sleeper.adapters.aws.launchers.common import required_property
from sleeper.core import BULK_EXPORT_CONTAINER_NAME, COMPACTION_CONTAINER_NAME, INGEST_CONTAINER_NAME
from sleeper.core.properties import (
    COMPACTION_ECS_LAUNCHTYPE,
    FARGATE_VERSION,
    SUBNETS,
    InstanceProperties,
    PropertyDefinition,
)
from sleeper.core.properties import instance_cdk as cdk

__all__ = [
    "CAPACITY_UNAVAILABLE",
    "COMPACTION_CONTAINER_NAME",
    "CONFIG_BUCKET_ENV",
    "INGEST_CONTAINER_NAME",
    "MAX_TASKS_PER_RUN_TASK",
    "EcsTaskLauncher",
    "bulk_export_run_task_request",
    "bulk_export_task_launcher",
    "compaction_run_task_request",
    "compaction_task_launcher",
    "ingest_run_task_request",
    "ingest_task_launcher",
]

_LOG = logging.getLogger(__name__)

CONFIG_BUCKET_ENV = "CONFIG_BUCKET"
"""The environment variable naming the config bucket in every Sleeper container."""
CAPACITY_UNAVAILABLE = (
    "Capacity is unavailable at this time. Please try again later or in a different availability zone"
)
"""The reason of a ``RunTask`` failure that is worth retrying shortly."""
MAX_TASKS_PER_RUN_TASK = 10
"""ECS starts at most 10 tasks per ``RunTask`` call."""


def _run_task_request(
    properties: InstanceProperties,
    *,
    cluster: PropertyDefinition,
    family: PropertyDefinition,
    container_name: str,
    fargate: bool = True,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "cluster": required_property(properties, cluster),
        "taskDefinition": required_property(properties, family),
        "launchType": "FARGATE" if fargate else "EC2",
    }
    config_bucket = required_property(properties, cdk.CONFIG_BUCKET)
    request["overrides"] = {
        "containerOverrides": [
            {
                "name": container_name,
                "command": [config_bucket],
                "environment": [{"name": CONFIG_BUCKET_ENV, "value": config_bucket}],
            }
        ]
    }
    request["propagateTags"] = "TASK_DEFINITION"
    if fargate:
        vpc: dict[str, Any] = {"subnets": properties.get_list(SUBNETS)}
        security_group = properties.get(cdk.ECS_SECURITY_GROUP)
        if security_group:
            vpc["securityGroups"] = [security_group]
        request["platformVersion"] = required_property(properties, FARGATE_VERSION)
        request["networkConfiguration"] = {"awsvpcConfiguration": vpc}
    return request


def compaction_run_task_request(
    properties: InstanceProperties, *, container_name: str = COMPACTION_CONTAINER_NAME
) -> dict[str, Any]:
    """The ``RunTask`` request (without ``count``) of compaction tasks, Fargate or EC2 by
    ``sleeper.compaction.ecs.launch.type``.

    Raises:
        PropertyError: If a property the request needs is not set.
    """
    fargate = properties.get_enum(COMPACTION_ECS_LAUNCHTYPE) == "FARGATE"
    family = cdk.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY if fargate else cdk.COMPACTION_TASK_EC2_DEFINITION_FAMILY
    return _run_task_request(
        properties, cluster=cdk.COMPACTION_CLUSTER, family=family, container_name=container_name, fargate=fargate
    )


def ingest_run_task_request(
    properties: InstanceProperties, *, container_name: str = INGEST_CONTAINER_NAME
) -> dict[str, Any]:
    """The ``RunTask`` request (without ``count``) of ingest tasks, always on Fargate.

    Raises:
        PropertyError: If a property the request needs is not set.
    """
    family = cdk.INGEST_TASK_DEFINITION_FAMILY
    return _run_task_request(properties, cluster=cdk.INGEST_CLUSTER, family=family, container_name=container_name)


def bulk_export_run_task_request(
    properties: InstanceProperties, *, container_name: str = BULK_EXPORT_CONTAINER_NAME
) -> dict[str, Any]:
    """The ``RunTask`` request (without ``count``) of bulk export tasks, always on Fargate.

    Raises:
        PropertyError: If a property the request needs is not set (no bulk export stack).
    """
    family = cdk.BULK_EXPORT_TASK_FARGATE_DEFINITION_FAMILY
    return _run_task_request(properties, cluster=cdk.BULK_EXPORT_CLUSTER, family=family, container_name=container_name)


class EcsTaskLauncher:
    """Counts and starts the tasks of one ``RunTask`` request on its cluster (a ``TaskLauncher``)."""

    def __init__(
        self,
        ecs: EcsClient,
        request: Mapping[str, Any],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        seconds_between_calls: float = 1.0,
        capacity_retry_seconds: float = 5.0,
        capacity_retry_timeout_seconds: float = 60.0,
    ) -> None:
        """Creates a launcher.

        Args:
            ecs: An ECS client.
            request: The ``RunTask`` request without ``count`` (see :func:`compaction_run_task_request`).
            sleep: Waits between calls (a fake in tests).
            clock: Seconds from an arbitrary origin, to time out retries when capacity is unavailable.
            seconds_between_calls: The wait between ``RunTask`` calls, to stay within ECS's sustained rate.
            capacity_retry_seconds: The wait before retrying a call that failed for lack of capacity.
            capacity_retry_timeout_seconds: How long to keep retrying for capacity before giving up.
        """
        self._ecs = ecs
        self._request = dict(request)
        self._sleep = sleep
        self._clock = clock
        self._between = seconds_between_calls
        self._retry = capacity_retry_seconds
        self._retry_timeout = capacity_retry_timeout_seconds

    @property
    def cluster(self) -> str:
        """The cluster tasks are started on."""
        return str(self._request["cluster"])

    def running_and_pending_tasks(self) -> int:
        """``pendingTasksCount + runningTasksCount`` of the cluster.

        Raises:
            AwsError: If the cluster cannot be described, or is not found.
        """
        with translated(f"DescribeClusters {self.cluster}"):
            clusters = self._ecs.describe_clusters(clusters=[self.cluster]).get("clusters", [])
        if len(clusters) != 1:
            raise AwsError(f"DescribeClusters {self.cluster}", "ClusterNotFound", "unable to retrieve the cluster")
        return int(clusters[0].get("pendingTasksCount", 0)) + int(clusters[0].get("runningTasksCount", 0))

    def launch_tasks(self, count: int, *, should_abort: Callable[[], bool] = lambda: False) -> int:
        """Starts up to ``count`` tasks, at most 10 per call and one call a second.

        Stops early when ``should_abort`` returns True (checked after each call), when a call fails for any reason
        other than lack of capacity, or when capacity stays unavailable past the retry timeout. Failures are logged,
        not raised: the next scheduled run tries again.

        Returns:
            How many tasks were started.
        """
        launched = 0
        capacity_wait_start: float | None = None
        while launched < count:
            batch = min(MAX_TASKS_PER_RUN_TASK, count - launched)
            try:
                response = self._ecs.run_task(**self._request, count=batch)
            except (ClientError, BotoCoreError) as e:
                _LOG.error("could not launch tasks on %s: %s", self.cluster, e)
                break
            started = len(response.get("tasks", []))
            launched += started
            failures = response.get("failures", [])
            capacity = [f for f in failures if f.get("reason") == CAPACITY_UNAVAILABLE]
            _LOG.info(
                "RunTask on %s (%s, %s): %d started, %d to go, failures %s",
                self.cluster,
                self._request.get("launchType"),
                self._request.get("taskDefinition"),
                started,
                count - launched,
                failures,
            )
            if should_abort():
                _LOG.info("aborted launching tasks on %s", self.cluster)
                break
            if len(capacity) < len(failures):
                _LOG.error("failures launching tasks on %s: %s", self.cluster, failures)
                break
            if launched >= count:
                break
            if capacity:
                now = self._clock()
                capacity_wait_start = now if capacity_wait_start is None else capacity_wait_start
                if now - capacity_wait_start >= self._retry_timeout:
                    _LOG.error("capacity unavailable on %s for %.0f s, giving up", self.cluster, self._retry_timeout)
                    break
                self._sleep(self._retry)
            else:
                capacity_wait_start = None
                self._sleep(self._between)
        return launched


def compaction_task_launcher(ecs: EcsClient, properties: InstanceProperties, **options: Any) -> EcsTaskLauncher:
    """The launcher of compaction tasks (``options`` go to :class:`EcsTaskLauncher`)."""
    return EcsTaskLauncher(ecs, compaction_run_task_request(properties), **options)


def ingest_task_launcher(ecs: EcsClient, properties: InstanceProperties, **options: Any) -> EcsTaskLauncher:
    """The launcher of ingest tasks (``options`` go to :class:`EcsTaskLauncher`)."""
    return EcsTaskLauncher(ecs, ingest_run_task_request(properties), **options)


def bulk_export_task_launcher(ecs: EcsClient, properties: InstanceProperties, **options: Any) -> EcsTaskLauncher:
    """The launcher of bulk export tasks (``options`` go to :class:`EcsTaskLauncher`)."""
    return EcsTaskLauncher(ecs, bulk_export_run_task_request(properties), **options)
