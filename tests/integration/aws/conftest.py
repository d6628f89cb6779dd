"""Fixtures of the AWS adapter tests: fresh resources on this process's moto server for each test."""

from __future__ import annotations

import pytest

from tests.contract.aws_backends import AwsStateStore, AwsTableIndex, create_state_store, create_table_index


@pytest.fixture
def aws_state_store() -> AwsStateStore:
    """A state store backend on its own DynamoDB tables and bucket."""
    return create_state_store()


@pytest.fixture
def aws_table_index() -> AwsTableIndex:
    """A table index on its own DynamoDB tables."""
    return create_table_index()
