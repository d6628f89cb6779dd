"""A writer of the object log concurrency test: adds files to one table through the real log head, over the file log
(in a spawned process) or the S3 log (in a thread). Kept out of the test module so ``multiprocessing`` can import it."""

from __future__ import annotations

import time
from multiprocessing.synchronize import Barrier
from threading import Barrier as ThreadBarrier

from sleeper.adapters.local.file_log import FileStateStoreBackend
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.ports import StateStoreBackend
from sleeper.statestore.store import StateStore
from tests.integration.statestore._sqlite_log_writer import SCHEMA, WriterResult, filename

_start: Barrier | None = None


def wait_together(barrier: Barrier) -> None:
    """Pool initializer: every writer waits at this barrier before its first write, so they all race."""
    global _start
    _start = barrier


def add_files_to(
    backend: StateStoreBackend,
    table_id: str,
    writer: int,
    count: int,
    settings: StateStoreSettings,
    start: Barrier | ThreadBarrier | None,
) -> WriterResult:
    """Adds ``count`` files, one ADD_FILES transaction each, retrying a commit that ran out of attempts."""
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


def add_files_to_file_log(
    root: str, table_id: str, writer: int, count: int, settings: StateStoreSettings
) -> WriterResult:
    """A spawned process's writer over the file log under ``root``."""
    return add_files_to(FileStateStoreBackend(root), table_id, writer, count, settings, _start)
