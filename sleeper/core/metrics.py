"""Metrics of the work done: each finished ingest, bulk import or compaction run's rows, duration and rate, query
latencies and state store committer batch sizes.

Code that measures something calls :func:`publish_metrics`; what happens to the figures is chosen once per process
by the runtime with :func:`use_metrics_sink` (on AWS, a CloudWatch embedded metric format line on standard output,
which CloudWatch Logs turns into metrics in the instance's namespace; locally, nothing). Without a sink nothing is
published, so library code and tests never need one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = [
    "Metric",
    "MetricsSink",
    "job_run_metrics",
    "metrics_published_to",
    "publish_metrics",
    "use_metrics_sink",
]


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure.

    Attributes:
        name: The metric name, e.g. ``CompactionRowsWritten``.
        value: The figure.
        unit: A CloudWatch unit: ``Count``, ``Seconds``, ``Milliseconds``, ``Count/Second``.
    """

    name: str
    value: float
    unit: str = "Count"


MetricsSink = Callable[[Mapping[str, str], tuple[Metric, ...]], None]
"""Publishes metrics under dimensions (e.g. ``{"tableId": ...}``)."""

_sink: MetricsSink | None = None
_scoped: ContextVar[MetricsSink | None] = ContextVar("sleeper_metrics_sink", default=None)
_LOG = logging.getLogger(__name__)


def use_metrics_sink(sink: MetricsSink | None) -> None:
    """Chooses where this process publishes metrics (None: nowhere)."""
    global _sink
    _sink = sink


@contextmanager
def metrics_published_to(sink: MetricsSink | None) -> Iterator[None]:
    """Publishes what this thread measures to a sink while the block runs (a Lambda invocation), whatever sink the
    process chose; other threads keep theirs."""
    token = _scoped.set(sink)
    try:
        yield
    finally:
        _scoped.reset(token)


def publish_metrics(dimensions: Mapping[str, str], *metrics: Metric) -> None:
    """Publishes metrics under dimensions, to the sink the runtime chose; nothing without one. A sink that fails is
    logged as a warning: measuring never fails the work that was measured."""
    sink = _scoped.get() or _sink
    if sink is None or not metrics:
        return
    try:
        sink(dimensions, metrics)
    except Exception:
        _LOG.warning("could not publish metrics %s", ", ".join(m.name for m in metrics), exc_info=True)


def job_run_metrics(
    kind: str, *, table_id: str, rows_read: int, rows_written: int, seconds: float
) -> tuple[dict[str, str], tuple[Metric, ...]]:
    """The metrics of one finished job run: ``<Kind>RowsRead``, ``<Kind>RowsWritten``, ``<Kind>JobSeconds`` and,
    when it took any time, ``<Kind>RowsWrittenPerSecond``, under the dimension ``tableId``.

    Args:
        kind: ``Ingest`` (ingest and bulk import) or ``Compaction``.
        table_id: The job's table.
        rows_read: Rows the run read.
        rows_written: Rows it wrote.
        seconds: How long it ran, from its start to its finish.
    """
    metrics = [
        Metric(f"{kind}RowsRead", rows_read),
        Metric(f"{kind}RowsWritten", rows_written),
        Metric(f"{kind}JobSeconds", seconds, "Seconds"),
    ]
    if seconds > 0:
        metrics.append(Metric(f"{kind}RowsWrittenPerSecond", rows_written / seconds, "Count/Second"))
    return {"tableId": table_id}, tuple(metrics)
