"""Ingest: the ingest job queue, the ECS cluster running ingest tasks on Fargate, and the task
creator started every minute."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import SleeperCore, registered_queue, schedule_rule
from sleeper.cdk.ecs_tasks import cluster, container_environment, grant_run_tasks, task_log_group
from sleeper.core import INGEST_IMAGE, naming, operations
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_ingest as ip


def grant_ingest_sources(grantee: iam.IGrantable, core: SleeperCore) -> None:
    """Read ingest input files: the ``for_ingest/`` prefix of the data bucket and ``sleeper.ingest.source.bucket``."""
    grants.bucket_read(grantee, core.data, [grants.FOR_INGEST_PREFIX])
    source = core.ctx.get(ip.INGEST_SOURCE_BUCKET)
    if source:
        arn = f"arn:{cdk.Aws.PARTITION}:s3:::{source}"
        grants.allow(grantee, grants.S3_LIST, [arn])
        grants.allow(grantee, grants.S3_READ, [f"{arn}/*"])


class IngestStack(cdk.NestedStack):
    """``sleeper-<id>-IngestJobQ``, the ``ingest-cluster`` with the ``IngestTask`` family, and the task creator."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper ingest")
        ctx = core.ctx
        self.job_queue = registered_queue(
            self,
            "JobQueue",
            core,
            operations.INGEST_JOB_Q,
            visibility_timeout_seconds=ctx.get_int(ip.INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS),
            alarm_description="Ingest jobs failed",
        )
        self.cluster = cluster(self, "Cluster", core, name_suffix=naming.INGEST_CLUSTER)
        log_group = task_log_group(self, "TaskLogs", core, "ingest-tasks")
        self.task = ecs.FargateTaskDefinition(
            self,
            "Task",
            family=ctx.function_name(naming.INGEST_TASK_FAMILY),
            cpu=ctx.get_int(ip.INGEST_TASK_CPU),
            memory_limit_mib=ctx.get_int(ip.INGEST_TASK_MEMORY),
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.X86_64, operating_system_family=ecs.OperatingSystemFamily.LINUX
            ),
        )
        self.task.add_container(
            "IngestContainer",
            container_name=naming.INGEST_CONTAINER_NAME,
            image=core.images.ecs_image(self, INGEST_IMAGE),
            environment=container_environment(core),
            logging=ecs.LogDrivers.aws_logs(stream_prefix="ingest", log_group=log_group),
        )
        nag.acknowledge(self.task, "ECS2", nag.ECS2_ENVIRONMENT)
        nag.acknowledge(self.task.obtain_execution_role(), "IAM5[Resource::*]", nag.ECR_AUTH)
        role = self.task.task_role
        grants.queue_consume(role, self.job_queue.queue)
        core.grant_table_state_commit(role)
        grants.bucket_read_write(role, core.data, [grants.DATA_PREFIX])
        grant_ingest_sources(role, core)
        grants.table_read_write(role, *core.ingest_tracker_tables)
        core.set(cdkp.INGEST_CLUSTER, self.cluster.cluster_name)
        core.set(cdkp.INGEST_TASK_DEFINITION_FAMILY, self.task.family)

        self.task_creator = core.lambdas.function(
            self,
            "TaskCreator",
            handler=operations.INGEST_TASK_CREATION,
            name_suffix="ingest-tasks-creator",
            description="Starts ingest tasks for the jobs waiting on the ingest job queue",
            reserved_concurrency=1,
        )
        grants.config_read(self.task_creator, core.config)
        grants.queue_attributes(self.task_creator, self.job_queue.queue)
        grant_run_tasks(self.task_creator, self.cluster, [self.task])
        schedule_rule(
            self,
            "TaskCreationRule",
            core,
            rule=naming.INGEST_TASK_CREATION_RULE,
            period=cdk.Duration.minutes(ctx.get_int(ip.INGEST_TASK_CREATION_PERIOD_IN_MINUTES)),
            target=self.task_creator,
            description="Starts ingest tasks to run queued jobs",
            rule_property=cdkp.INGEST_CLOUDWATCH_RULE,
        )
        core.set(cdkp.INGEST_LAMBDA_FUNCTION, self.task_creator.function_name)
