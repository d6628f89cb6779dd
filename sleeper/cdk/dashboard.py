"""``DashboardStack``: one CloudWatch dashboard per instance (named as Sleeper names it, the cleaned instance id).

It shows, over ``sleeper.dashboard.time.window.minutes``: the table metrics of every table (a search over the
metrics namespace, so tables created after the deployment appear too, where Sleeper lists the tables it was deployed
with), the depth and oldest message age of each work queue and dead letters, each function's invocations, errors,
throttles and duration, and the running ECS tasks and failed tasks of each cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from sleeper.cdk.alarms import Watched, queue_metric
from sleeper.cdk.common import SleeperCore
from sleeper.core import naming
from sleeper.core.properties import instance_common as common

WIDTH = 24


class DashboardStack(cdk.NestedStack):
    """The instance's dashboard and its URL as a stack output."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, watched: Watched) -> None:
        super().__init__(scope, construct_id, description="Sleeper dashboard")
        ctx = core.ctx
        self.window = window = cdk.Duration.minutes(ctx.get_int(common.DASHBOARD_TIME_WINDOW_MINUTES))
        name = naming.dashboard_name(ctx.instance_id)
        self.dashboard = dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=name, default_interval=cdk.Duration.hours(3)
        )
        namespace = ctx.get(common.METRICS_NAMESPACE) or "Sleeper"
        dimensions = f"{naming.METRIC_DIMENSION_INSTANCE},{naming.METRIC_DIMENSION_TABLE}"
        dashboard.add_widgets(_title("Tables (every table of the instance)"))
        table_widgets: list[cloudwatch.IWidget] = []
        for metric in naming.TABLE_METRICS:
            search = (
                f'SEARCH(\'{{{namespace},{dimensions}}} MetricName="{metric}" '
                f"{naming.METRIC_DIMENSION_INSTANCE}=\"{ctx.instance_id}\"', 'Average', {window.to_seconds()})"
            )
            table_widgets.append(
                cloudwatch.GraphWidget(
                    title=metric,
                    left=[cloudwatch.MathExpression(expression=search, label="", period=window)],
                    left_y_axis=cloudwatch.YAxisProps(min=0),
                    width=8,
                )
            )
        dashboard.add_widgets(*table_widgets)
        if watched.queues:
            queues = [ctx.queue_name(q) for q in watched.queues]
            dead_letters = [naming.dead_letter_queue_name(ctx.instance_id, q) for q in watched.queues]
            dashboard.add_widgets(_title("Work queues"))
            dashboard.add_widgets(
                _graph("Messages waiting", [queue_metric("ApproximateNumberOfMessagesVisible", q, "Average", window)
                                            for q in queues]),
                _graph("Messages in flight", [queue_metric("ApproximateNumberOfMessagesNotVisible", q, "Average",
                                                           window) for q in queues]),
                _graph("Age of oldest message (s)", [queue_metric("ApproximateAgeOfOldestMessage", q, "Maximum",
                                                                  window) for q in queues]),
                _graph("Dead letters", [queue_metric("ApproximateNumberOfMessagesVisible", q, "Maximum", window)
                                        for q in dead_letters]),
            )  # fmt: skip
        if watched.functions:
            dashboard.add_widgets(_title("Lambda functions"))
            dashboard.add_widgets(
                _graph("Invocations", [_lambda("Invocations", f, "Sum", window) for f in watched.functions]),
                _graph("Errors", [_lambda("Errors", f, "Sum", window) for f in watched.functions]),
                _graph("Throttles", [_lambda("Throttles", f, "Sum", window) for f in watched.functions]),
                _graph(
                    "Duration (ms, maximum)", [_lambda("Duration", f, "Maximum", window) for f in watched.functions]
                ),
            )
        if watched.clusters:
            dashboard.add_widgets(_title("ECS tasks"))
            running = [
                cloudwatch.MathExpression(
                    expression=(
                        f'SEARCH(\'{{ECS/ContainerInsights,ClusterName}} MetricName="RunningTaskCount" '
                        f"ClusterName=\"{cluster}\"', 'Average', {window.to_seconds()})"
                    ),
                    label="",
                    period=window,
                )
                for cluster in watched.clusters
            ]
            failures = cloudwatch.Metric(
                namespace="AWS/Events",
                metric_name="TriggeredRules",
                dimensions_map={"RuleName": ctx.rule_name(naming.ECS_TASK_FAILURE_RULE)},
                statistic="Sum",
                period=window,
                label="failed tasks",
            )
            dashboard.add_widgets(
                _graph("Running tasks (with Container Insights)", running),
                _graph("Failed tasks", [failures]),
                _graph("CPU utilization of tasks (%)", [_ecs("CPUUtilization", c, window) for c in watched.clusters]),
                _graph("Memory utilization of tasks (%)", [_ecs("MemoryUtilization", c, window)
                                                          for c in watched.clusters]),
            )  # fmt: skip
        cdk.CfnOutput(
            self,
            "DashboardUrl",
            value=f"https://console.aws.amazon.com/cloudwatch/home?region={cdk.Aws.REGION}#dashboards:name={name}",
        )


def _title(text: str) -> cloudwatch.TextWidget:
    return cloudwatch.TextWidget(markdown=f"## {text}", width=WIDTH, height=1)


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), left_y_axis=cloudwatch.YAxisProps(min=0), width=6)


def _lambda(name: str, function: str, statistic: str, period: cdk.Duration) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/Lambda",
        metric_name=name,
        dimensions_map={"FunctionName": function},
        statistic=statistic,
        period=period,
        label=function,
    )


def _ecs(name: str, cluster: str, period: cdk.Duration) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/ECS",
        metric_name=name,
        dimensions_map={"ClusterName": cluster},
        statistic="Average",
        period=period,
        label=cluster,
    )
