"""Test doubles for the state store: a settable clock, recorded sleeps, and in-memory stores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar

from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.queue import InMemoryQueue, InMemoryQueues
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.properties import InstanceProperties
from sleeper.core.schema import Schema
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.store import StateStore
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA

START = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told to (by ``advance``, or by ``tick`` on each read)."""

    def __init__(self, now: datetime = START, tick: timedelta = timedelta(0)) -> None:
        self.now = now
        self.tick = tick

    def __call__(self) -> datetime:
        current = self.now
        self.now += self.tick
        return current

    def advance(self, seconds: float = 0, **kwargs: float) -> None:
        """Moves the clock forward."""
        self.now += timedelta(seconds=seconds, **kwargs)


@dataclass
class RecordedSleeps:
    """Records waits instead of sleeping; runs queued actions during the next waits (one each)."""

    waits: list[float] = field(default_factory=list)
    actions: list[Callable[[], object]] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.actions:
            self.actions.pop(0)()


def fixed_jitter(fraction: float) -> Callable[[], float]:
    """A jitter source that always gives the same fraction."""
    return lambda: fraction


@dataclass
class Table:
    """A table's state store over shared in-memory stores, with the doubles it uses."""

    backend: InMemoryStateStoreBackend
    clock: FakeClock
    sleeps: RecordedSleeps
    filesystem: pafs.FileSystem
    schema: Schema
    table_id: str
    settings: StateStoreSettings

    def store(self, *, settings: StateStoreSettings | None = None, jitter: float = 1.0) -> StateStore:
        """A new state store object for the table (as another process would have)."""
        return StateStore(
            schema=self.schema,
            table_id=self.table_id,
            backend=self.backend,
            filesystem=self.filesystem,
            snapshot_base_path=f"data/{self.table_id}",
            settings=settings or self.settings,
            clock=self.clock,
            sleep=self.sleeps,
            jitter=fixed_jitter(jitter),
        )


def new_table(
    *, schema: Schema = LONG_KEY_SCHEMA, settings: StateStoreSettings | None = None, table_id: str = "table-1"
) -> Table:
    """A table on fresh in-memory stores and filesystem."""
    return Table(
        backend=InMemoryStateStoreBackend(),
        clock=FakeClock(),
        sleeps=RecordedSleeps(),
        filesystem=in_memory_filesystem(),
        schema=schema,
        table_id=table_id,
        settings=settings or StateStoreSettings(),
    )


T = TypeVar("T")


@dataclass
class MemoryInstance(Generic[T]):
    """An instance in memory holding tables of type T (implements ``sleeper.statestore.tables.SleeperInstance``)."""

    properties: InstanceProperties = field(default_factory=lambda: InstanceProperties({"sleeper.id": "test"}))
    queues: InMemoryQueues = field(default_factory=InMemoryQueues)
    tables: dict[str, T] = field(default_factory=dict)

    def table_by_id(self, table_id: str) -> T:
        try:
            return self.tables[table_id]
        except KeyError:
            raise TableNotFoundError(f"no table {table_id}") from None

    def queue(self, logical_name: str) -> InMemoryQueue:
        return self.queues.queue(logical_name, fifo=logical_name.endswith(".fifo"))
