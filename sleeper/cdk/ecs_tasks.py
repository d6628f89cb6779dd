"""ECS clusters, task definitions and the Lambda functions that start tasks (compaction and ingest)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, SleeperCore, retention


def cluster(scope: Construct, construct_id: str, core: SleeperCore, *, name_suffix: str) -> ecs.Cluster:
    """A cluster ``sleeper-<cid>-<suffix>`` in the instance VPC with enhanced container insights."""
    if core.vpc is None:
        raise RuntimeError("ECS clusters need the instance VPC")
    return ecs.Cluster(
        scope,
        construct_id,
        cluster_name=core.ctx.function_name(name_suffix),
        vpc=core.vpc,
        container_insights_v2=ecs.ContainerInsights.ENHANCED,
    )


def task_log_group(scope: Construct, construct_id: str, core: SleeperCore, name: str) -> logs.LogGroup:
    """The log group of a kind of task."""
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=f"/sleeper/{core.ctx.function_name(name)}",
        retention=retention(core.ctx),
        removal_policy=core.ctx.log_removal_policy,
    )


def container_environment(core: SleeperCore) -> dict[str, str]:
    """What every Sleeper container gets: the config bucket (it reads everything else from the properties)."""
    return {CONFIG_BUCKET_ENV: core.config.bucket_name, INSTANCE_ID_ENV: core.ctx.instance_id}


def grant_run_tasks(
    function: lambda_.IFunction,
    cluster_: ecs.ICluster,
    task_definitions: list[ecs.TaskDefinition],
) -> None:
    """Lets a task creator start tasks of these definitions on a cluster and count the running ones."""
    for task_definition in task_definitions:
        # Any revision of the family: the task creator starts the latest.
        region_account = f"{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}"
        family = task_definition.family
        arn_without_revision = f"arn:{cdk.Aws.PARTITION}:ecs:{region_account}:task-definition/{family}:*"
        grants.allow(function, ["ecs:RunTask"], [arn_without_revision])
        roles = [task_definition.task_role.role_arn]
        if task_definition.execution_role is not None:
            roles.append(task_definition.execution_role.role_arn)
        grants.allow(function, ["iam:PassRole"], roles)
    grants.allow(function, ["ecs:DescribeClusters"], [cluster_.cluster_arn])
    # ListTasks and DescribeTasks name tasks, not the cluster: scope them to the cluster by condition.
    grants.allow(
        function,
        ["ecs:ListTasks", "ecs:DescribeTasks"],
        ["*"],
        conditions={"ArnEquals": {"ecs:cluster": cluster_.cluster_arn}},
    )
