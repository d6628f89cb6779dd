"""Plugins every test run loads: the reliability battery's report (``tests/reliability_report.py``) and the order
test files start in (``tests/schedule.py``, the costliest first); and what every test gets: the process-wide metrics
sink put back after it."""

from collections.abc import Iterator

import pytest

from sleeper.core.metrics import use_metrics_sink

pytest_plugins = ["tests.reliability_report", "tests.schedule"]


@pytest.fixture(autouse=True)
def _no_metrics_sink_left_behind() -> Iterator[None]:
    """A test that runs an ECS task's entry point in this process makes the process publish EMF lines on standard
    output for its life, as a task does (``sleeper.runtime.aws.metrics.publish_metrics_as_emf``); the sink is taken
    away after each test so later tests' standard output (a CLI's JSON) holds only what they print."""
    yield
    use_metrics_sink(None)
