"""A writer of the object log concurrency test: adds files to one table through the real log head, over the file log
(in a spawned process) or the S3 log (in a thread). Kept out of the test module so ``multiprocessing`` can import it."""

from __future__ import annotations

from multiprocessing.synchronize import Barrier

from sleeper.adapters.local.file_log import FileStateStoreBackend
from sleeper.statestore.log_head import StateStoreSettings
from tests.integration.statestore._sqlite_log_writer import WriterResult, add_files_to

_start: Barrier | None = None


def wait_together(barrier: Barrier) -> None:
    """Pool initializer: every writer waits at this barrier before its first write, so they all race."""
    global _start
    _start = barrier


def add_files_to_file_log(
    root: str, table_id: str, writer: int, count: int, settings: StateStoreSettings
) -> WriterResult:
    """A spawned process's writer over the file log under ``root``."""
    return add_files_to(FileStateStoreBackend(root), table_id, writer, count, settings, _start)
