"""A moto S3 server per test module, for the S3 file and publish tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from sleeper.emulator.moto_speedups import speed_up_moto


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """The URL of a moto server started for the module and stopped after it."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    speed_up_moto()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
