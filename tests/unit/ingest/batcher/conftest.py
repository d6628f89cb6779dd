"""Fakes of the batcher's ports for unit tests: an instance of tables in memory, with in-memory queues."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from sleeper.adapters.memory.batcher_store import InMemoryIngestBatcherStore
from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.core.exceptions import SleeperError, TableNotFoundError
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KNOWN_QUEUES = ("IngestJobQ", "BulkImportEMRServerlessQ", "BulkImportNonPersistentEMRQ", "IngestBatcherSubmitQ")


@dataclass(frozen=True)
class FakeTable:
    table_id: str
    name: str
    properties: TableProperties


@dataclass
class FakeInstance:
    """Tables by name and id, and in-memory queues (only ``KNOWN_QUEUES`` exist)."""

    properties: InstanceProperties = field(default_factory=lambda: InstanceProperties({"sleeper.id": "test"}))
    tables: dict[str, FakeTable] = field(default_factory=dict)
    queues: InMemoryQueues = field(default_factory=InMemoryQueues)

    def add_table(self, name: str, table_id: str, properties: Mapping[str, str] | None = None) -> FakeTable:
        values = {"sleeper.table.name": name, "sleeper.table.id": table_id, **(properties or {})}
        table = FakeTable(table_id=table_id, name=name, properties=TableProperties(self.properties, values))
        self.tables[table_id] = table
        return table

    def table(self, name: str) -> FakeTable:
        for table in self.tables.values():
            if table.name == name:
                return table
        raise TableNotFoundError.of(table_name=name)

    def table_by_id(self, table_id: str) -> FakeTable:
        table = self.tables.get(table_id)
        if table is None:
            raise TableNotFoundError.of(table_id=table_id)
        return table

    def queue(self, logical_name: str) -> Queue:
        if logical_name not in KNOWN_QUEUES:
            raise SleeperError(f"unknown queue {logical_name}")
        return self.queues.queue(logical_name, dead_letter=logical_name.removesuffix("Q") + "DLQ")

    def messages(self, logical_name: str) -> list[str]:
        queue = self.queue(logical_name)
        bodies: list[str] = []
        while batch := queue.receive(max_messages=10, wait_seconds=0):
            bodies.extend(m.body for m in batch)
        return bodies


class FakeClock:
    """A settable clock."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def instance() -> FakeInstance:
    return FakeInstance()


@pytest.fixture
def store() -> InMemoryIngestBatcherStore:
    return InMemoryIngestBatcherStore()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def job_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"job-{next(counter)}"
