"""Where an AWS process publishes its metrics (:mod:`sleeper.core.metrics`): one CloudWatch embedded metric format
line per publication on standard output, in the namespace ``sleeper.cloudwatch.table.metrics.namespace`` with the
dimension ``instanceId`` beside those of each publication (``tableId`` for a job run). The Lambda handlers and the
ECS tasks choose it when they start; CloudWatch Logs turns the lines of their log streams into metrics."""

from __future__ import annotations

from sleeper.adapters.aws import emf_metrics_sink
from sleeper.core import MetricsSink, use_metrics_sink
from sleeper.core.properties import ID, METRICS_NAMESPACE, InstanceProperties

__all__ = ["emf_sink", "publish_metrics_as_emf"]


def emf_sink(properties: InstanceProperties) -> MetricsSink:
    """A sink writing EMF lines on standard output for the instance of these properties."""
    namespace = properties.get(METRICS_NAMESPACE) or "Sleeper"
    return emf_metrics_sink(namespace, {"instanceId": properties.get(ID) or "unknown"})


def publish_metrics_as_emf(properties: InstanceProperties) -> None:
    """Makes this process publish its metrics as EMF lines on standard output (an ECS task, for its life), for the
    instance of these properties."""
    use_metrics_sink(emf_sink(properties))
