"""Alarms beside the dead-letter alarms, all to the errors topic: each function's errors and throttles, the age of the
oldest message on each work queue, and each failed ECS task.

Every alarm names its resource by the name :mod:`sleeper.core.naming` gives it (not a reference), so this stack
depends on no other nested stack's outputs. ECS task failures are sent by an EventBridge rule matching the
instance's clusters' ``ECS Task State Change`` events (stopped with a non-zero exit code, or failed to start)
straight to the errors topic: one notification per failed task, naming the task, its cluster and why it stopped;
Container Insights would cost per cluster and gives no failure count.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sleeper.cdk.common import SleeperCore
from sleeper.core import TriggerKind, naming, operations

OLDEST_MESSAGE_ALARM_SECONDS = 3600
"""A work queue whose oldest message is older than an hour is not being drained (no consumer, a stuck task pool or
a backlog growing faster than it is worked); per-table queues drain within their period, job queues within minutes
of tasks starting."""
ALARM_PERIOD = cdk.Duration.minutes(5)


def work_queues() -> frozenset[str]:
    """The queues something consumes (a Lambda trigger or a container, from the registry): their backlog is work
    waiting. Queues only a user reads (query results) are not work queues."""
    consumed = {q for h in operations.HANDLERS if h.trigger.kind is TriggerKind.SQS for q in h.trigger.queues}
    consumed |= {c.consumes for c in operations.CONTAINERS if c.consumes}
    return frozenset(consumed)


def ecs_clusters(core: SleeperCore) -> list[str]:
    """The names of the instance's ECS clusters (those its optional stacks deploy)."""
    wanted = core.ctx.optional_stacks
    names = []
    if "CompactionStack" in wanted:
        names.append(core.ctx.function_name(naming.COMPACTION_CLUSTER))
    if "IngestStack" in wanted:
        names.append(core.ctx.function_name(naming.INGEST_CLUSTER))
    return names


@dataclass(frozen=True, slots=True)
class Watched:
    """What the alarms watch, by name (the dashboard shows the same)."""

    functions: list[str]
    """Function names."""
    queues: list[str]
    """Logical names of the work queues (``sleeper.core.operations``)."""
    clusters: list[str]
    """ECS cluster names."""


def watched(scope: Construct, core: SleeperCore) -> Watched:
    """The functions (every function of the instance's stacks named ``sleeper-<cid>-...``; CDK's own providers have
    no name of ours), work queues and clusters of the instance built so far under ``scope``."""
    prefix = core.ctx.function_name("")
    functions = sorted(
        {
            c.function_name
            for c in scope.node.find_all()
            if isinstance(c, lambda_.CfnFunction) and isinstance(c.function_name, str)
            and c.function_name.startswith(prefix)
        }
    )  # fmt: skip
    queues = sorted(q for q in core.queues if q in work_queues())
    return Watched(functions=functions, queues=queues, clusters=ecs_clusters(core))


class AlarmsStack(cdk.NestedStack):
    """Function errors and throttles, the oldest message of each work queue, and failed ECS tasks."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper alarms on functions, queues and tasks")
        assert core.alarm_topic is not None
        action = cw_actions.SnsAction(core.alarm_topic)
        self.watched = seen = watched(scope, core)
        self.alarms: list[cloudwatch.Alarm] = []
        for index, function in enumerate(seen.functions):
            errors = _lambda_metric("Errors", function)
            throttles = _lambda_metric("Throttles", function)
            alarm = cloudwatch.MathExpression(
                expression="FILL(errors, 0) + FILL(throttles, 0)",
                using_metrics={"errors": errors, "throttles": throttles},
                period=ALARM_PERIOD,
                label=f"{function} errors and throttles",
            ).create_alarm(
                self,
                f"FunctionAlarm{index}",
                alarm_description=f"{function} failed (an error or a timeout) or was throttled",
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            self.alarms.append(alarm)
        for index, logical_name in enumerate(seen.queues):
            queue = core.ctx.queue_name(logical_name)
            alarm = cloudwatch.Alarm(
                self,
                f"OldestMessageAlarm{index}",
                alarm_description=(
                    f"The oldest message on {queue} has waited over {OLDEST_MESSAGE_ALARM_SECONDS // 60} minutes: "
                    "its work is not being done"
                ),
                metric=queue_metric("ApproximateAgeOfOldestMessage", queue, "Maximum"),
                threshold=OLDEST_MESSAGE_ALARM_SECONDS,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            self.alarms.append(alarm)
        self.task_failures: events.Rule | None = None
        if seen.clusters:
            self.task_failures = task_failure_rule(self, core, seen.clusters)


def _lambda_metric(name: str, function: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/Lambda",
        metric_name=name,
        dimensions_map={"FunctionName": function},
        statistic="Sum",
        period=ALARM_PERIOD,
    )


def queue_metric(name: str, queue: str, statistic: str, period: cdk.Duration = ALARM_PERIOD) -> cloudwatch.Metric:
    """An SQS metric of a queue, by its name."""
    return cloudwatch.Metric(
        namespace="AWS/SQS",
        metric_name=name,
        dimensions_map={"QueueName": queue},
        statistic=statistic,
        period=period,
    )


def task_failure_rule(scope: Construct, core: SleeperCore, clusters: list[str]) -> events.Rule:
    """``<id>-EcsTaskFailureRule``: each task of the clusters that stops with a non-zero exit code or fails to start
    is sent to the errors topic."""
    assert core.alarm_topic is not None
    stack = cdk.Stack.of(scope)
    arns = [stack.format_arn(service="ecs", resource="cluster", resource_name=name) for name in clusters]
    rule = events.Rule(
        scope,
        "EcsTaskFailures",
        rule_name=core.ctx.rule_name(naming.ECS_TASK_FAILURE_RULE),
        description="Sends each failed ECS task of the instance to the errors topic",
        event_pattern=events.EventPattern(
            source=["aws.ecs"],
            detail_type=["ECS Task State Change"],
            detail={
                "clusterArn": arns,
                "lastStatus": ["STOPPED"],
                "$or": [
                    {"containers": {"exitCode": [{"anything-but": 0}]}},
                    {"stopCode": ["TaskFailedToStart"]},
                ],
            },
        ),
    )
    rule.add_target(
        targets.SnsTopic(
            core.alarm_topic,
            message=events.RuleTargetInput.from_text(
                f"Sleeper {core.ctx.instance_id}: ECS task {events.EventField.from_path('$.detail.taskArn')} "
                f"stopped ({events.EventField.from_path('$.detail.stoppedReason')}) on cluster "
                f"{events.EventField.from_path('$.detail.clusterArn')}"
            ),
        )
    )
    return rule
