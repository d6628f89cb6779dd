"""Bulk export (Sleeper's ``BulkExportStack``, ``BulkExportTaskResources`` and ``BulkExportOnFargateResources``): the
bulk export queue feeding the planner Lambda, the leaf partition export queue, the results bucket (objects expire
after ``sleeper.bulk.export.results.bucket.expiry.days``), the ECS cluster running bulk export tasks on Fargate with
the task shape of ``sleeper.bulk.export.task.*``, and the task creator on its schedule.

Least privilege: the planner reads table state and the query tracker's rows of its exports, sends leaf exports, and
lists and deletes objects only in the results bucket (an earlier run's files of the same export); the tasks consume
leaf exports, read the table data and state, write the results bucket and track their exports; the task creator
reads the config, counts the leaf export queue's messages and starts tasks of its family on its cluster. Exports are
tracked in the query tracker, so the stack needs the query stack's tracker table.
"""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import SleeperCore, registered_queue, schedule_rule, secure_bucket, sqs_trigger
from sleeper.cdk.ecs_tasks import cluster, container_environment, grant_run_tasks, task_log_group
from sleeper.core import BULK_EXPORT_IMAGE, naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_bulk as bp
from sleeper.core.properties import instance_cdk as cdkp

__all__ = ["BulkExportStack", "task_shape"]


def task_shape(core: SleeperCore) -> tuple[str, int, int]:
    """The CPU architecture (``X86_64`` or ``ARM64``), CPU units and memory (MiB) of a bulk export task, from
    ``sleeper.bulk.export.task.cpu.architecture`` and the matching ``...arm...`` or ``...x86...`` properties."""
    ctx = core.ctx
    architecture = (ctx.get(bp.BULK_EXPORT_TASK_CPU_ARCHITECTURE) or "X86_64").upper()
    if architecture == "ARM64":
        return architecture, ctx.get_int(bp.BULK_EXPORT_TASK_ARM_CPU), ctx.get_int(bp.BULK_EXPORT_TASK_ARM_MEMORY)
    return architecture, ctx.get_int(bp.BULK_EXPORT_TASK_X86_CPU), ctx.get_int(bp.BULK_EXPORT_TASK_X86_MEMORY)


class BulkExportStack(cdk.NestedStack):
    """``sleeper-<id>-BulkExport-Q``, ``-BulkExportLeafPartition-Q``, ``sleeper-<cid>-bulk-export-results-<account>``,
    the ``bulk-export-cluster`` with the ``BulkExportTaskOnFargate`` family, the planner and the task creator."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["BulkExport"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk export")
        ctx = core.ctx
        if core.query_tracker is None:
            raise ValueError("BulkExportStack needs QueryStack: bulk exports are tracked in the query tracker")
        tracker = core.query_tracker
        visibility = ctx.get_int(bp.BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS)
        self.export_queue = registered_queue(
            self,
            "ExportQueue",
            core,
            operations.BULK_EXPORT_Q,
            visibility_timeout_seconds=visibility,
            alarm_description="Bulk export queries failed",
        )
        self.leaf_queue = registered_queue(
            self,
            "LeafPartitionQueue",
            core,
            operations.LEAF_PARTITION_BULK_EXPORT_Q,
            visibility_timeout_seconds=visibility,
            alarm_description="Leaf partition bulk exports failed",
        )
        self.results_bucket = secure_bucket(
            self,
            "ResultsBucket",
            ctx,
            name=naming.bulk_export_bucket_name(ctx.instance_id, ctx.account),
            access_logs=core.access_logs_bucket,
            expiry_days=ctx.get_int(bp.BULK_EXPORT_RESULTS_BUCKET_EXPIRY_IN_DAYS),
        )
        core.set(cdkp.BULK_EXPORT_S3_BUCKET, self.results_bucket.bucket_name)

        self.planner = core.lambdas.function(
            self,
            "Planner",
            handler=operations.BULK_EXPORT_PLANNER,
            name_suffix="bulk-export_planner",
            description="Sends a message to export for each leaf partition",
            reserved_concurrency=1,
        )
        core.grant_table_state_read(self.planner)
        grants.table_read_write(self.planner, tracker)
        grants.queue_send(self.planner, self.leaf_queue.queue)
        grants.bucket_read(self.planner, self.results_bucket)
        grants.bucket_delete(self.planner, self.results_bucket, ["*"])
        sqs_trigger(self.planner, self.export_queue.queue)
        if self.planner.role is not None:
            core.set(cdkp.BULK_EXPORT_LAMBDA_ROLE_ARN, self.planner.role.role_arn)

        self.cluster = cluster(self, "Cluster", core, name_suffix=naming.BULK_EXPORT_CLUSTER)
        log_group = task_log_group(self, "TaskLogs", core, "bulk-export-tasks")
        architecture, cpu, memory = task_shape(core)
        self.task = ecs.FargateTaskDefinition(
            self,
            "Task",
            family=ctx.function_name(naming.BULK_EXPORT_FARGATE_FAMILY),
            cpu=cpu,
            memory_limit_mib=memory,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64 if architecture == "ARM64" else ecs.CpuArchitecture.X86_64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )
        self.task.add_container(
            "BulkExportContainer",
            container_name=naming.BULK_EXPORT_CONTAINER_NAME,
            image=core.images.ecs_image(self, BULK_EXPORT_IMAGE),
            environment=container_environment(core),
            logging=ecs.LogDrivers.aws_logs(stream_prefix="bulk-export", log_group=log_group),
        )
        nag.acknowledge(self.task, "ECS2", nag.ECS2_ENVIRONMENT)
        nag.acknowledge(self.task.obtain_execution_role(), "IAM5[Resource::*]", nag.ECR_AUTH)
        role = self.task.task_role
        grants.queue_consume(role, self.leaf_queue.queue)
        core.grant_table_state_read(role)
        grants.bucket_read(role, core.data, [grants.DATA_PREFIX])
        grants.bucket_read_write(role, self.results_bucket)
        grants.table_read_write(role, tracker)
        core.set(cdkp.BULK_EXPORT_CLUSTER, self.cluster.cluster_name)
        core.set(cdkp.BULK_EXPORT_TASK_FARGATE_DEFINITION_FAMILY, self.task.family)

        self.task_creator = core.lambdas.function(
            self,
            "TaskCreator",
            handler=operations.BULK_EXPORT_TASK_CREATION,
            name_suffix="bulk-export-tasks-creator",
            description="If there are leaf partition bulk export jobs on the queue, creates tasks to run them",
            reserved_concurrency=1,
        )
        grants.config_read(self.task_creator, core.config)
        grants.queue_attributes(self.task_creator, self.leaf_queue.queue)
        grant_run_tasks(self.task_creator, self.cluster, [self.task])
        schedule_rule(
            self,
            "TaskCreationRule",
            core,
            rule=naming.BULK_EXPORT_TASK_CREATION_RULE,
            period=cdk.Duration.minutes(ctx.get_int(bp.BULK_EXPORT_TASK_CREATION_PERIOD_IN_MINUTES)),
            target=self.task_creator,
            description="Triggers scaling bulk export tasks to run bulk export jobs",
            rule_property=cdkp.BULK_EXPORT_TASK_CREATION_CLOUDWATCH_RULE,
        )
        core.set(cdkp.BULK_EXPORT_TASK_CREATION_LAMBDA_FUNCTION, self.task_creator.function_name)
