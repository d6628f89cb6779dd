"""Metrics of finished job runs: rows, duration and rate of every ingest and compaction run."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.metrics import Metric, job_run_metrics, publish_metrics, use_metrics_sink
from sleeper.core.trackers.compaction import CompactionJobUpdate
from sleeper.core.trackers.ingest import IngestJobUpdate
from sleeper.core.trackers.runs import CompactionRun, IngestRun

Published = list[tuple[dict[str, str], tuple[Metric, ...]]]


@pytest.fixture
def published() -> Iterator[Published]:
    out: Published = []

    def sink(dimensions: Mapping[str, str], metrics: tuple[Metric, ...]) -> None:
        out.append((dict(dimensions), metrics))

    use_metrics_sink(sink)
    yield out
    use_metrics_sink(None)


class _Tracker:
    def __init__(self) -> None:
        self.updates: list[object] = []

    def record(self, update: CompactionJobUpdate | IngestJobUpdate) -> None:
        self.updates.append(update)


def _clock(*seconds: int) -> Iterator[datetime]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return iter(start + timedelta(seconds=s) for s in seconds)


def should_publish_a_compaction_runs_rows_duration_and_rate(published: Published) -> None:
    # Given a compaction run started at 0 s and finished at 4 s
    times = _clock(0, 4)
    run = CompactionRun(_Tracker(), job_id="j", table_id="t", clock=lambda: next(times))  # type: ignore[arg-type]
    # When it starts and finishes having written 1000 rows
    run.started()
    run.finished(rows_read=1200, rows_written=1000)
    # Then its figures are published under its table
    ((dimensions, metrics),) = published
    assert dimensions == {"tableId": "t"}
    assert [(m.name, m.value, m.unit) for m in metrics] == [
        ("CompactionRowsRead", 1200, "Count"),
        ("CompactionRowsWritten", 1000, "Count"),
        ("CompactionJobSeconds", 4.0, "Seconds"),
        ("CompactionRowsWrittenPerSecond", 250.0, "Count/Second"),
    ]


def should_time_an_ingest_run_from_its_validation(published: Published) -> None:
    # Given an ingest run validated at 0 s, started at 1 s and finished at 2 s
    times = _clock(0, 1, 2)
    run = IngestRun(_Tracker(), job_id="j", table_id="t", clock=lambda: next(times))  # type: ignore[arg-type]
    # When it goes through them
    run.validated(file_count=1)
    run.started(file_count=1)
    run.finished(rows_read=10, rows_written=10, files_written=1)
    # Then its duration runs from its validation, which began it
    ((_, metrics),) = published
    assert {m.name: m.value for m in metrics}["IngestJobSeconds"] == 2.0


def should_leave_out_the_rate_of_a_run_that_took_no_time() -> None:
    # Given a run that took no measurable time
    # When its metrics are made
    _, metrics = job_run_metrics("Ingest", table_id="t", rows_read=1, rows_written=1, seconds=0.0)
    # Then it has no rate
    assert [m.name for m in metrics] == ["IngestRowsRead", "IngestRowsWritten", "IngestJobSeconds"]


def should_not_fail_the_work_when_the_sink_fails(caplog: pytest.LogCaptureFixture) -> None:
    # Given a sink that fails
    def sink(dimensions: Mapping[str, str], metrics: tuple[Metric, ...]) -> None:
        raise OSError("stdout closed")

    use_metrics_sink(sink)
    try:
        # When metrics are published
        with caplog.at_level(logging.WARNING, logger="sleeper.core.metrics"):
            publish_metrics({}, Metric("X", 1))
    finally:
        use_metrics_sink(None)
    # Then the failure is logged, not raised
    assert "could not publish metrics X" in caplog.text
