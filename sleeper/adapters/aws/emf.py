"""CloudWatch embedded metric format (EMF): a JSON log line that CloudWatch Logs turns into metrics, as Sleeper's
table metrics Lambda publishes them (through the EMF logger of Lambda Powertools) without calling PutMetricData.

One record: ``{"_aws": {"Timestamp": <epoch ms>, "CloudWatchMetrics": [{"Namespace", "Dimensions": [[names]],
"Metrics": [{"Name", "Unit"}]}]}, <dimension>: <value>, ..., <metric>: <value>, ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

__all__ = ["emf_line", "emf_record"]


def emf_record(
    *,
    namespace: str,
    dimensions: Mapping[str, str],
    metrics: Mapping[str, float],
    timestamp: datetime,
    unit: str = "Count",
) -> dict[str, object]:
    """One EMF record: every metric with the same unit, under one dimension set.

    Args:
        namespace: The CloudWatch namespace (``sleeper.cloudwatch.table.metrics.namespace``).
        dimensions: Dimension names and values (at most 30, as CloudWatch allows).
        metrics: Metric names and values (at most 100 per record).
        timestamp: When the metrics were measured (timezone-aware).
        unit: The CloudWatch unit of every metric.

    Raises:
        ValueError: If there are too many dimensions or metrics, a name is shared, or the time is naive.
    """
    if len(dimensions) > 30 or len(metrics) > 100:
        raise ValueError("an EMF record holds at most 30 dimensions and 100 metrics")
    if set(dimensions) & set(metrics) or "_aws" in dimensions or "_aws" in metrics:
        raise ValueError("dimension and metric names must be distinct and not _aws")
    if timestamp.tzinfo is None:
        raise ValueError("the timestamp must be timezone-aware")
    record: dict[str, object] = {
        "_aws": {
            "Timestamp": int(timestamp.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [list(dimensions)],
                    "Metrics": [{"Name": name, "Unit": unit} for name in metrics],
                }
            ],
        }
    }
    record.update(dimensions)
    record.update(metrics)
    return record


def emf_line(record: Mapping[str, object]) -> str:
    """The record as the one-line JSON CloudWatch Logs reads."""
    return json.dumps(record, separators=(",", ":"))
