"""CloudWatch embedded metric format (EMF): a JSON log line that CloudWatch Logs turns into metrics, as Sleeper's
table metrics Lambda publishes them (through the EMF logger of Lambda Powertools) without calling PutMetricData.

The records are made by Powertools' EMF provider (``aws_lambda_powertools.metrics``), which checks the units and
the limits of a record: ``{"_aws": {"Timestamp": <epoch ms>, "CloudWatchMetrics": [{"Namespace", "Dimensions":
[[names]], "Metrics": [{"Name", "Unit"}]}]}, <dimension>: <value>, ..., <metric>: [<value>], ...}``. No ``service``
dimension is added, even where ``POWERTOOLS_SERVICE_NAME`` is set (the deployment sets it on every function to name
its service on its log lines), so the dimension sets are Sleeper's: ``instanceId`` and ``tableName`` for table
metrics, which the dashboard and Sleeper's clients read.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from sleeper.core import Metric, MetricsSink

__all__ = ["emf_line", "emf_metrics_sink", "emf_record"]


def emf_record(
    *,
    namespace: str,
    dimensions: Mapping[str, str],
    metrics: Mapping[str, float] | Iterable[Metric],
    timestamp: datetime,
    unit: str = "Count",
) -> dict[str, Any]:
    """One EMF record: every metric under one dimension set.

    Args:
        namespace: The CloudWatch namespace (``sleeper.cloudwatch.table.metrics.namespace``).
        dimensions: Dimension names and values (at most 29, as Powertools allows).
        metrics: Metric names and values, all in ``unit``, or :class:`~sleeper.core.metrics.Metric` values with their
            own units (at most 100).
        timestamp: When the metrics were measured (timezone-aware; CloudWatch drops metrics more than 14 days old).
        unit: The CloudWatch unit of metrics given by name and value.

    Raises:
        ValueError: If there are too many dimensions or metrics, a name is shared, a unit is not CloudWatch's, or the
            time is naive.
    """
    items = (
        [Metric(name, value, unit) for name, value in metrics.items()]
        if isinstance(metrics, Mapping)
        else list(metrics)
    )
    if len(dimensions) > 29 or len(items) > 100:
        raise ValueError("an EMF record holds at most 29 dimensions and 100 metrics")
    names = [m.name for m in items]
    if len(set(names)) != len(names) or set(dimensions) & set(names) or "_aws" in dimensions or "_aws" in names:
        raise ValueError("dimension and metric names must be distinct and not _aws")
    if timestamp.tzinfo is None:
        raise ValueError("the timestamp must be timezone-aware")
    provider = AmazonCloudWatchEMFProvider(namespace=namespace, service="")  # "": no service dimension from the env
    for name, value in dimensions.items():
        provider.add_dimension(name, value)
    try:
        for metric in items:
            provider.add_metric(metric.name, metric.unit, metric.value)
    except Exception as e:  # Powertools' MetricUnitError and MetricValueError
        raise ValueError(str(e)) from None
    provider.set_timestamp(timestamp)
    return dict(provider.serialize_metric_set())


def emf_line(record: Mapping[str, object]) -> str:
    """The record as the one-line JSON CloudWatch Logs reads."""
    return json.dumps(record, separators=(",", ":"))


def emf_metrics_sink(
    namespace: str,
    dimensions: Mapping[str, str],
    *,
    write: Callable[[str], None] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> MetricsSink:
    """A sink for :mod:`sleeper.core.metrics` writing each publication as one EMF line to standard output (the
    function's or task's log stream, from which CloudWatch Logs publishes the metrics).

    Args:
        namespace: The CloudWatch namespace.
        dimensions: Dimensions added to every publication, e.g. ``{"instanceId": ...}``.
        write: Writes one line (standard output, flushed, by default).
        clock: The time of each publication.
    """

    def _write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    out = write or _write

    def sink(extra: Mapping[str, str], metrics: tuple[Metric, ...]) -> None:
        record = emf_record(namespace=namespace, dimensions={**dimensions, **extra}, metrics=metrics, timestamp=clock())
        out(emf_line(record))

    return sink
