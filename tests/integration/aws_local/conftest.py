"""An emulated AWS instance (a moto server on a free port in this process, provisioned as a deployment leaves it)
shared by the module's tests, with the environment a client of it exports."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sleeper.emulator.instance import EmulatedAwsInstance


@pytest.fixture(scope="module")
def emulated() -> Iterator[EmulatedAwsInstance]:
    """A new emulated instance; the environment points boto3 at it while the module runs."""
    with EmulatedAwsInstance(f"local-{uuid.uuid4().hex[:10]}", port=0) as instance:
        with pytest.MonkeyPatch.context() as env:
            for name, value in instance.environment().items():
                env.setenv(name, value)
            yield instance
