"""A writer process of the SQLite concurrency test: adds files to one table through the real log head.

Kept out of the test module so ``multiprocessing`` can import it by name in a spawned process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from threading import Barrier as ThreadBarrier

from sleeper.adapters.local.statestore import SqliteStateStoreBackend
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.ports import StateStoreBackend
from sleeper.statestore.store import StateStore

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])

_start: Barrier | None = None


@dataclass(slots=True)
class WriterResult:
    """What one writer did.

    Attributes:
        writer: The writer's number.
        numbers: The transaction number each of its files got, in the order it added them.
        attempts: How many attempts each commit took.
        exhausted: How many times a commit ran out of attempts (and was then tried again).
        seconds: How long the writer took, from the common start.
    """

    writer: int
    numbers: list[int] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    exhausted: int = 0
    seconds: float = 0.0


def wait_together(barrier: Barrier) -> None:
    """Pool initializer: every writer waits at this barrier before its first write, so they all race."""
    global _start
    _start = barrier


def filename(writer: int, sequence: int) -> str:
    """The unique file a writer adds in one transaction."""
    return f"file:///data/table/data/partition_root/w{writer:02d}-{sequence:04d}.parquet"


def add_files(
    database: str, data_dir: str, table_id: str, writer: int, count: int, settings: StateStoreSettings
) -> WriterResult:
    """Adds ``count`` files, one ADD_FILES transaction each, to a table's files log in a SQLite database."""
    backend = SqliteStateStoreBackend(Path(database), Path(data_dir))
    return add_files_to(backend, table_id, writer, count, settings, _start)


def add_files_to(
    backend: StateStoreBackend,
    table_id: str,
    writer: int,
    count: int,
    settings: StateStoreSettings,
    start: Barrier | ThreadBarrier | None,
) -> WriterResult:
    """Adds ``count`` files, one ADD_FILES transaction each, retrying a commit that ran out of attempts; waits at
    ``start`` (if given) before the first."""
    store = StateStore(schema=SCHEMA, table_id=table_id, backend=backend, settings=settings)
    result = WriterResult(writer)
    store.refresh()
    if start is not None:
        start.wait()
    started = time.perf_counter()
    for sequence in range(count):
        transaction = AddFilesTransaction.of_references(
            [FileReference(filename=filename(writer, sequence), partition_id="root", number_of_rows=sequence)]
        )
        while True:
            try:
                added = store.commit(transaction)
            except AddTransactionRetriesExhaustedError:
                result.exhausted += 1
                continue
            result.numbers.append(added.transaction_number)
            result.attempts.append(added.attempts)
            break
    result.seconds = time.perf_counter() - started
    return result
