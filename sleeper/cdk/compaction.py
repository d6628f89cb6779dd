"""Compaction: job creation per table, dispatch of pending batches, commit batching, and the ECS cluster
running compaction tasks on Fargate (and optionally EC2), started by a task creator every minute."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import (
    SleeperCore,
    SleeperQueue,
    per_table_schedule,
    registered_queue,
    schedule_rule,
    sqs_trigger,
)
from sleeper.cdk.ecs_tasks import cluster, container_environment, grant_run_tasks, task_log_group
from sleeper.core import COMPACTION_IMAGE, naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_compaction as cp


class CompactionStack(cdk.NestedStack):
    """Queues ``CompactionJobCreationQ.fifo``, ``PendingCompactionJobBatchQ``, ``CompactionJobQ``,
    ``CompactionCommitQ``; their Lambda functions; the ``compaction-cluster`` and its task definitions."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["Compaction"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper compaction")
        ctx = core.ctx
        data = core.data
        tracker = core.compaction_tracker_tables

        self.job_queue = registered_queue(
            self,
            "JobQueue",
            core,
            operations.COMPACTION_JOB_Q,
            visibility_timeout_seconds=ctx.get_int(cp.COMPACTION_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS),
            max_receive_count=ctx.get_int(cp.COMPACTION_JOB_MAX_RETRIES),
            alarm_description="Compaction jobs failed",
        )
        self.pending_queue = registered_queue(
            self,
            "PendingQueue",
            core,
            operations.PENDING_COMPACTION_JOB_BATCH_Q,
            visibility_timeout_seconds=ctx.get_int(cp.PENDING_COMPACTION_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS),
            max_receive_count=ctx.get_int(cp.COMPACTION_DISPATCH_MAX_RETRIES),
            alarm_description="Batches of compaction jobs could not be dispatched",
        )
        self.commit_queue = registered_queue(
            self,
            "CommitQueue",
            core,
            operations.COMPACTION_COMMIT_Q,
            visibility_timeout_seconds=ctx.get_int(cp.COMPACTION_COMMIT_BATCHER_LAMBDA_TIMEOUT_IN_SECONDS),
            max_receive_count=ctx.get_int(cp.COMPACTION_COMMIT_MAX_RETRIES),
            alarm_description="Finished compactions could not be committed",
        )

        # Job creation: per online table every minute.
        self.job_creation = per_table_schedule(
            self,
            core,
            prefix="JobCreation",
            rule_property=cdkp.COMPACTION_JOB_CREATION_CLOUDWATCH_RULE,
            trigger_handler=operations.COMPACTION_JOB_CREATION_TRIGGER,
            trigger_suffix="compaction-job-creation-trigger",
            handler=operations.COMPACTION_JOB_CREATION,
            handler_suffix="compaction-job-creation-handler",
            description="create compaction jobs",
            batch_size=ctx.get_int(cp.COMPACTION_JOB_CREATION_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(cp.COMPACTION_JOB_CREATION_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(cp.COMPACTION_JOB_CREATION_LAMBDA_CONCURRENCY_RESERVED),
            trigger_property=cdkp.COMPACTION_JOB_CREATION_TRIGGER_LAMBDA_FUNCTION,
        )
        # A table assigning input files through the committer (the default) has its jobs written to pending batches
        # and its assignment sent to the committer; one assigning them itself has its jobs sent to the job queue and
        # recorded created, once assigned (sleeper.table.compaction.job.id.assignment.commit.async).
        creator = self.job_creation.handler
        core.grant_table_state_commit(creator)
        grants.bucket_write(creator, data, [grants.COMPACTIONS_PREFIX])
        grants.queue_send(creator, self.pending_queue.queue, self.job_queue.queue)
        grants.table_read_write(creator, *tracker)

        # Dispatch of pending batches once their input files are assigned.
        self.dispatcher = core.lambdas.function(
            self,
            "JobDispatcher",
            handler=operations.COMPACTION_JOB_DISPATCHER,
            name_suffix="compaction-job-dispatcher",
            description="Sends batches of compaction jobs to the job queue once their files are assigned",
            reserved_concurrency=ctx.get_optional_int(cp.COMPACTION_JOB_DISPATCH_LAMBDA_CONCURRENCY_RESERVED),
        )
        core.grant_table_state_read(self.dispatcher)
        grants.bucket_read(self.dispatcher, data, [grants.COMPACTIONS_PREFIX])
        grants.bucket_delete(self.dispatcher, data, [grants.COMPACTIONS_PREFIX])
        grants.queue_send(self.dispatcher, self.job_queue.queue, self.pending_queue.queue)
        grants.table_read_write(self.dispatcher, *tracker)
        sqs_trigger(
            self.dispatcher,
            self.pending_queue.queue,
            max_concurrency=ctx.get_optional_int(cp.COMPACTION_JOB_DISPATCH_LAMBDA_CONCURRENCY_MAXIMUM),
        )

        # Commit batching.
        self.commit_batcher = core.lambdas.function(
            self,
            "CommitBatcher",
            handler=operations.COMPACTION_COMMIT_BATCHER,
            name_suffix="compaction-commit-batcher",
            description="Sends finished compactions to the state store committer in one transaction per table",
            reserved_concurrency=ctx.get_optional_int(cp.COMPACTION_COMMIT_BATCHER_LAMBDA_CONCURRENCY_RESERVED),
        )
        grants.config_read(self.commit_batcher, core.config)
        grants.table_read(self.commit_batcher, *core.table_index_tables)
        grants.bucket_write(self.commit_batcher, data, [grants.STATESTORE_PREFIX])
        grants.queue_send(self.commit_batcher, core.committer)
        self.commit_batcher.add_event_source(
            _batched_source(
                self.commit_queue,
                batch_size=ctx.get_int(cp.COMPACTION_COMMIT_BATCH_SIZE),
                window_seconds=ctx.get_int(cp.COMPACTION_COMMIT_BATCHING_WINDOW_IN_SECONDS),
                max_concurrency=ctx.get_optional_int(cp.COMPACTION_COMMIT_BATCHER_LAMBDA_CONCURRENCY_MAXIMUM),
            )
        )

        # Tasks.
        self.cluster = cluster(self, "Cluster", core, name_suffix=naming.COMPACTION_CLUSTER)
        self.log_group = task_log_group(self, "TaskLogs", core, "compaction-tasks")
        arm = (ctx.get(cp.COMPACTION_TASK_CPU_ARCHITECTURE) or "ARM64").upper() == "ARM64"
        cpu = ctx.get_int(cp.COMPACTION_TASK_ARM_CPU if arm else cp.COMPACTION_TASK_X86_CPU)
        memory = ctx.get_int(cp.COMPACTION_TASK_ARM_MEMORY if arm else cp.COMPACTION_TASK_X86_MEMORY)
        self.fargate_task = ecs.FargateTaskDefinition(
            self,
            "FargateTask",
            family=ctx.function_name(naming.COMPACTION_FARGATE_FAMILY),
            cpu=cpu,
            memory_limit_mib=memory,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64 if arm else ecs.CpuArchitecture.X86_64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )
        self._container(core, self.fargate_task, memory=None)
        core.set(cdkp.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY, self.fargate_task.family)
        task_definitions: list[ecs.TaskDefinition] = [self.fargate_task]
        self.ec2_task: ecs.Ec2TaskDefinition | None = None
        self.auto_scaling_group: autoscaling.AutoScalingGroup | None = None
        if (ctx.get(cp.COMPACTION_ECS_LAUNCHTYPE) or "FARGATE").upper() == "EC2":
            self._ec2(core, arm=arm, memory=memory)
            assert self.ec2_task is not None
            task_definitions.append(self.ec2_task)
        for task_definition in task_definitions:
            self._grant_task(core, task_definition)
        core.set(cdkp.COMPACTION_CLUSTER, self.cluster.cluster_name)

        self.task_creator = core.lambdas.function(
            self,
            "TaskCreator",
            handler=operations.COMPACTION_TASK_CREATION,
            name_suffix="compaction-tasks-creator",
            description="Starts compaction tasks for the jobs waiting on the compaction job queue",
            reserved_concurrency=1,
        )
        grants.config_read(self.task_creator, core.config)
        grants.queue_attributes(self.task_creator, self.job_queue.queue)
        grant_run_tasks(self.task_creator, self.cluster, task_definitions)
        if self.auto_scaling_group is not None:
            grants.allow(
                self.task_creator,
                ["autoscaling:SetDesiredCapacity"],
                [
                    f"arn:{cdk.Aws.PARTITION}:autoscaling:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:autoScalingGroup:*:"
                    f"autoScalingGroupName/{ctx.function_name('compaction-ec2-pool')}"
                ],
            )
            # Describe calls support no resource-level permissions.
            grants.allow(
                self.task_creator,
                ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeInstanceTypes", "ecs:ListContainerInstances"],
                ["*"],
            )
        schedule_rule(
            self,
            "TaskCreationRule",
            core,
            rule=naming.COMPACTION_TASK_CREATION_RULE,
            period=cdk.Duration.minutes(ctx.get_int(cp.COMPACTION_TASK_CREATION_PERIOD_IN_MINUTES)),
            target=self.task_creator,
            description="Starts compaction tasks to run created jobs",
            rule_property=cdkp.COMPACTION_TASK_CREATION_CLOUDWATCH_RULE,
        )
        core.set(cdkp.COMPACTION_TASK_CREATION_LAMBDA_FUNCTION, self.task_creator.function_name)

    def _container(self, core: SleeperCore, task: ecs.TaskDefinition, *, memory: int | None) -> None:
        nag.acknowledge(task, "ECS2", nag.ECS2_ENVIRONMENT)
        nag.acknowledge(task.obtain_execution_role(), "IAM5[Resource::*]", nag.ECR_AUTH)
        task.add_container(
            "CompactionContainer",
            container_name=naming.COMPACTION_CONTAINER_NAME,
            image=core.images.ecs_image(self, COMPACTION_IMAGE),
            environment=container_environment(core),
            logging=ecs.LogDrivers.aws_logs(stream_prefix="compaction", log_group=self.log_group),
            memory_reservation_mib=memory,
        )

    def _ec2(self, core: SleeperCore, *, arm: bool, memory: int) -> None:
        ctx = core.ctx
        if core.vpc is None:
            raise RuntimeError("the EC2 launch type needs the instance VPC")
        security_group = ec2.SecurityGroup(
            self, "Ec2SecurityGroup", vpc=core.vpc, description="Compaction EC2 hosts", allow_all_outbound=True
        )
        launch_template = ec2.LaunchTemplate(
            self,
            "Ec2LaunchTemplate",
            instance_type=ec2.InstanceType(ctx.get(cp.COMPACTION_EC2_TYPE) or "t4g.xlarge"),
            machine_image=ecs.EcsOptimizedImage.amazon_linux2023(
                hardware_type=ecs.AmiHardwareType.ARM if arm else ecs.AmiHardwareType.STANDARD
            ),
            block_devices=[
                ec2.BlockDevice(
                    device_name="/dev/xvda",
                    volume=ec2.BlockDeviceVolume.ebs(
                        ctx.get_int(cp.COMPACTION_EC2_ROOT_SIZE),
                        encrypted=True,
                        volume_type=ec2.EbsDeviceVolumeType.GP3,
                    ),
                )
            ],
            require_imdsv2=True,
            security_group=security_group,
            user_data=ec2.UserData.for_linux(),
            role=_instance_role(self),
        )
        self.auto_scaling_group = autoscaling.AutoScalingGroup(
            self,
            "Ec2Pool",
            vpc=core.vpc,
            vpc_subnets=core.subnets,
            launch_template=launch_template,
            auto_scaling_group_name=ctx.function_name("compaction-ec2-pool"),
            min_capacity=ctx.get_int(cp.COMPACTION_EC2_POOL_MINIMUM),
            max_capacity=ctx.get_int(cp.COMPACTION_EC2_POOL_MAXIMUM),
        )
        capacity = ecs.AsgCapacityProvider(
            self,
            "Ec2Capacity",
            auto_scaling_group=self.auto_scaling_group,
            enable_managed_termination_protection=False,
            enable_managed_draining=True,
        )
        nag.acknowledge(self.auto_scaling_group, "AS3", nag.AS3_NOTIFICATIONS)
        self.cluster.add_asg_capacity_provider(capacity)
        self.ec2_task = ecs.Ec2TaskDefinition(
            self,
            "Ec2Task",
            family=ctx.function_name(naming.COMPACTION_EC2_FAMILY),
            network_mode=ecs.NetworkMode.BRIDGE,
        )
        fixed = ctx.get_optional_int(cp.COMPACTION_TASK_FIXED_OVERHEAD)
        if fixed is not None:  # the MB ECS keeps for itself on each instance, else a percentage of its memory
            task_memory = memory - fixed
        else:
            task_memory = memory * (100 - ctx.get_int(cp.COMPACTION_TASK_PERCENTAGE_OVERHEAD)) // 100
        self._container(core, self.ec2_task, memory=max(512, task_memory))
        core.set(cdkp.COMPACTION_TASK_EC2_DEFINITION_FAMILY, self.ec2_task.family)
        core.set(cdkp.COMPACTION_AUTO_SCALING_GROUP, self.auto_scaling_group.auto_scaling_group_name)

    def _grant_task(self, core: SleeperCore, task: ecs.TaskDefinition) -> None:
        role = task.task_role
        grants.queue_consume(role, self.job_queue.queue)
        grants.queue_send(role, self.commit_queue.queue)
        core.grant_table_state_commit(role)
        grants.bucket_read_write(role, core.data, [grants.DATA_PREFIX])
        grants.table_read_write(role, *core.compaction_tracker_tables)


def _instance_role(scope: Construct) -> iam.Role:
    role = iam.Role(scope, "Ec2InstanceRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    nag.acknowledge(role, "IAM5[Action::ecs:Submit*]", nag.ECS_AGENT)
    nag.acknowledge(role, "IAM5[Resource::*]", nag.ECS_AGENT)
    return role


def _batched_source(
    queue: SleeperQueue, *, batch_size: int, window_seconds: int, max_concurrency: int | None
) -> sources.SqsEventSource:
    return sources.SqsEventSource(
        queue.queue,
        batch_size=batch_size,
        max_batching_window=cdk.Duration.seconds(window_seconds),
        max_concurrency=max_concurrency,
        report_batch_item_failures=True,
    )
