"""Plugins every test run loads: the reliability battery's report (``tests/reliability_report.py``) and the order
test files start in (``tests/schedule.py``, the costliest first); hypothesis without its per-example deadline; the
cyclic garbage collector run less often; and what every test gets: the process-wide metrics sink put back after it,
and no ``AWS_ENDPOINT_URL`` naming a server that is gone."""

import gc
import os
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from hypothesis import settings

from sleeper.core.metrics import use_metrics_sink

# An example's time is not behaviour: on a shared machine one may take 10x its usual time, and hypothesis's default
# 200 ms deadline would then fail a correct test (speed is measured in benchmarks/, never asserted in tests).
settings.register_profile("sleeper-tests", deadline=None)
settings.load_profile("sleeper-tests")

pytest_plugins = ["tests.reliability_report", "tests.schedule"]

# A test process holds every collected test, moto's models and the modules of every package, so each full collection
# of the cyclic garbage collector walks a large heap (about 0.2 s each in tests/integration/cli, 27 of them in one
# run: 9 s of its 84 s of CPU). Collecting the youngest generation after 10,000 allocations instead of Python's 700
# makes every generation's collections about 14x rarer: that run's collector time fell to 3 s, its CPU to 79 s, its
# peak memory rose from 496 to 520 MB. Only the test processes change; what they start keeps Python's defaults.
gc.set_threshold(10_000, 10, 10)


@pytest.fixture(autouse=True)
def _no_metrics_sink_left_behind() -> Iterator[None]:
    """A test that runs an ECS task's entry point in this process makes the process publish EMF lines on standard
    output for its life, as a task does (``sleeper.runtime.aws.metrics.publish_metrics_as_emf``); the sink is taken
    away after each test so later tests' standard output (a CLI's JSON) holds only what they print."""
    yield
    use_metrics_sink(None)


def _answers(url: str) -> bool:
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        return True  # only a local test server can have gone away
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _no_endpoint_of_a_stopped_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 sends every client without an explicit endpoint to ``AWS_ENDPOINT_URL``, so a test that used
    ``moto.mock_aws`` would reach a local test server an earlier test named and stopped, and fail with a refused
    connection. While a test runs, a value naming a local server that no longer accepts connections is taken away
    (restored after it); a value naming a running server (a module's emulated instance) is left alone."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and not _answers(endpoint):
        monkeypatch.delenv("AWS_ENDPOINT_URL")
