"""Fixtures that give a test's in-process moto the atomicity of DynamoDB, S3 and SQS: the emulator's own guards.

The guards, and why moto needs them, are in :mod:`sleeper.emulator.moto_guards` (the one copy, which
``sleeper aws-local up`` applies too). Each is applied once per process and stays applied. The moto server of
``tests.contract.aws_backends`` applies them all when it starts; these fixtures are for tests that run moto otherwise
(e.g. an emulated instance in the test's process). Import the fixture into a test module and ask for it
(``@pytest.mark.usefixtures("atomic_moto_transactions")``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sleeper.emulator.moto_guards import atomic_conditional_puts, atomic_dynamodb_items, atomic_queues

__all__ = ["atomic_moto_queues", "atomic_moto_transactions"]


@pytest.fixture
def atomic_moto_transactions() -> Iterator[None]:
    """moto's DynamoDB item writes, reads, queries, scans and transactions, and its conditional S3 puts, made atomic
    (``atomic_dynamodb_items``, ``atomic_conditional_puts``)."""
    atomic_dynamodb_items()
    atomic_conditional_puts()
    yield


@pytest.fixture
def atomic_moto_queues() -> Iterator[None]:
    """moto's SQS receives and deletes made atomic per queue, as SQS's are (``atomic_queues``)."""
    atomic_queues()
    yield
