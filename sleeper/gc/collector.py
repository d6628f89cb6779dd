"""Garbage collection, as Sleeper's ``GarbageCollector``.

A file is ready for collection once it has had no references for longer than the table's
``sleeper.table.gc.delay.minutes``: queries that planned before it lost its last reference may still read it. The
collector takes the ready files in batches of the instance's ``sleeper.gc.batch.size``; for each batch it deletes the
data files and their ``.sketches`` sidecars, then records the deleted files with one DELETE_FILES transaction
(through the state store committer when the table's ``sleeper.table.gc.commit.async`` says so). It stops starting
batches once ``sleeper.gc.files.maximum`` files were deleted in the run (a batch that crosses it is finished).

Deleting first and committing second means a crash in between leaves files that are gone but still tracked: the next
run deletes them again, which succeeds because a missing file counts as deleted, and then commits them.

Safety beyond Sleeper:

* A file outside the table's own data prefix (another table, another bucket, a path with ``..``) is never deleted:
  it is refused and reported, and left tracked.
* A table whose GC delay is not longer than the query cache timeout plus the query timeout (Sleeper's own 15
  minutes against 60 s plus 900 s) is collected as configured, with a warning logged on each run naming the risk (a
  query planned before the collection may find its file gone) and the least delay that removes it; property
  validation gives the same warning when the value is set.
* A file an outside reader holds (:mod:`sleeper.core.held_files`: a published Iceberg snapshot, current or superseded
  for less than the GC delay, may read it) is kept, and collected by a later run once the hold is released. The holds
  are read after the ready files are chosen, so a hold written before a file became ready is always seen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyarrow import fs as pafs

from sleeper.core import crash_point
from sleeper.core.jobs import StateStoreCommitRequest
from sleeper.core.properties import (
    GARBAGE_COLLECTOR_ASYNC_COMMIT,
    GARBAGE_COLLECTOR_BATCH_SIZE,
    GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION,
    GARBAGE_COLLECTOR_MAXIMUM_FILE_DELETION_PER_INVOCATION,
    QUERY_PROCESSOR_CACHE_TIMEOUT,
    QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS,
    TIME_TRAVEL_RETENTION_MINUTES,
    gc_delay_problem,
)
from sleeper.core.statestore import StateStoreError, file_outside_table
from sleeper.core.statestore.transactions import DeleteFilesTransaction
from sleeper.gc.exceptions import GarbageCollectionFailedError
from sleeper.gc.held import held_files
from sleeper.gc.ports import STATE_STORE_COMMITTER_QUEUE
from sleeper.io import FileSystemOptions, delete_in_table, resolve, sketches_path
from sleeper.statestore import SleeperInstance, SleeperTable, committer_sender

__all__ = [
    "DEFAULT_DELETE_THREADS",
    "FileProblem",
    "GcResult",
    "GcSettings",
    "collect_garbage",
    "committer_sender",
    "file_outside_table",
    "run_garbage_collection",
]

DEFAULT_DELETE_THREADS = 8
"""How many deletes run at once (object store deletes are latency bound)."""

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileProblem:
    """A file that was not collected, and why."""

    filename: str
    reason: str

    def __str__(self) -> str:
        return f"{self.filename}: {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class GcResult:
    """What one garbage collection run of a table did.

    Attributes:
        table_id: The table.
        deleted: Files deleted (with their sidecars) and committed (or sent to the committer) as deleted.
        refused: Files outside the table's data prefix: left alone, still tracked.
        failed: Files whose delete failed: still tracked, retried by the next run.
        uncommitted: Files deleted whose DELETE_FILES commit failed: still tracked, committed by the next run.
        batches: How many batches were committed.
        held: Files ready for collection but kept because an outside reader holds them (a published Iceberg
            snapshot); not a problem: a later run collects them once released.
    """

    table_id: str
    deleted: tuple[str, ...] = ()
    refused: tuple[FileProblem, ...] = ()
    failed: tuple[FileProblem, ...] = ()
    uncommitted: tuple[FileProblem, ...] = ()
    batches: int = 0
    held: tuple[str, ...] = ()

    @property
    def problems(self) -> list[FileProblem]:
        """Every file not collected, with the reason."""
        return [*self.refused, *self.failed, *self.uncommitted]

    def raise_if_failed(self) -> None:
        """Raises if any file was refused or failed.

        Raises:
            GarbageCollectionFailedError: Naming the files.
        """
        if self.problems:
            raise GarbageCollectionFailedError(self.table_id, [str(p) for p in self.problems])


@dataclass(frozen=True, slots=True, kw_only=True)
class GcSettings:
    """The settings of one run for one table.

    Attributes:
        delay: How long a file must have had no references: the GC delay, or the table's time travel retention
            (``sleeper.table.time.travel.retention.minutes``) if longer.
        batch_size: Files per DELETE_FILES commit.
        max_files: Deletions after which no new batch is started.
        async_commit: Whether commits go to the state store committer.
    """

    delay: timedelta
    batch_size: int
    max_files: int
    async_commit: bool

    @classmethod
    def of(cls, table: SleeperTable) -> GcSettings:
        """The settings of a table, from its properties and the instance properties they fall back to.

        A GC delay not longer than the query cache timeout plus the query timeout is used as it is, and logged at
        WARNING with the risk and the safe value (see the module docs).
        """
        properties = table.properties
        instance = properties.instance_properties
        delay_minutes = properties.get_int(GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION)
        problem = gc_delay_problem(
            gc_delay=GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION.name,
            gc_delay_minutes=delay_minutes,
            cache_timeout=QUERY_PROCESSOR_CACHE_TIMEOUT.name,
            cache_timeout_seconds=properties.get_int(QUERY_PROCESSOR_CACHE_TIMEOUT),
            query_timeout_seconds=instance.get_int(QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS),
        )
        if problem is not None:
            _LOG.warning("table %s: %s", table.table_id, problem)
        # Time travel: files of the states within the retention stay (sleeper.statestore.history).
        retention_minutes = properties.get_int(TIME_TRAVEL_RETENTION_MINUTES)
        return cls(
            delay=timedelta(minutes=max(delay_minutes, retention_minutes)),
            batch_size=instance.get_int(GARBAGE_COLLECTOR_BATCH_SIZE),
            max_files=instance.get_int(GARBAGE_COLLECTOR_MAXIMUM_FILE_DELETION_PER_INVOCATION),
            async_commit=properties.get_bool(GARBAGE_COLLECTOR_ASYNC_COMMIT),
        )


def collect_garbage(
    table: SleeperTable,
    *,
    now: datetime | None = None,
    settings: GcSettings | None = None,
    send_commit: Callable[[StateStoreCommitRequest], None] | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    delete_threads: int = DEFAULT_DELETE_THREADS,
    held: Callable[[], Collection[str]] | None = None,
) -> GcResult:
    """Deletes a table's files that have had no references for longer than its GC delay, in batches.

    Args:
        table: The table.
        now: The time the run starts (the delay is measured back from it); now if None.
        settings: The run's settings; the table's (``GcSettings.of``) if None.
        send_commit: Sends a commit request to the state store committer; needed for asynchronous commits, which
            are otherwise made here.
        filesystem: A filesystem to delete from instead of the one each file's URI names.
        options: How to reach S3.
        delete_threads: How many deletes run at once.
        held: The files outside readers hold, which are kept; by default the holds under the table's data prefix
            (:func:`sleeper.gc.held.held_files`), read only when some file is ready.

    Returns:
        What was deleted, refused and failed. Failures do not stop the run; see ``GcResult.raise_if_failed``.

    Raises:
        HoldFormatError: If a hold cannot be read (nothing is deleted).
    """
    settings = settings or GcSettings.of(table)
    if settings.batch_size < 1 or settings.max_files < 1 or delete_threads < 1:
        raise ValueError("batch size, maximum files and delete threads must be positive")
    start = now or datetime.now(tz=UTC)
    store = table.state_store
    store.refresh()
    ready = store.unreferenced_files_before(start - settings.delay)
    kept: list[str] = []
    if ready:
        holding = held() if held is not None else held_files(table.data_prefix, filesystem=filesystem, options=options)
        kept = [f for f in ready if f in holding]
        ready = [f for f in ready if f not in holding]
    deleted: list[str] = []
    refused: list[FileProblem] = []
    failed: list[FileProblem] = []
    uncommitted: list[FileProblem] = []
    batches = 0
    for offset in range(0, len(ready), settings.batch_size):
        if len(deleted) >= settings.max_files:
            break
        batch = ready[offset : offset + settings.batch_size]
        allowed: list[str] = []
        for filename in batch:
            reason = file_outside_table(filename, table.data_prefix)
            if reason is None:
                allowed.append(filename)
            else:
                refused.append(FileProblem(filename=filename, reason=reason))
        gone, errors = _delete_files(allowed, table.data_prefix, filesystem, options, delete_threads)
        failed.extend(errors)
        if not gone:
            continue
        crash_point("gc.after_delete")
        try:
            committed = _commit(table, gone, settings.async_commit, send_commit)
        except Exception as e:  # noqa: BLE001 - reported; the next run commits these files
            uncommitted.extend(FileProblem(filename=f, reason=f"DELETE_FILES commit failed: {e}") for f in gone)
            continue
        deleted.extend(committed)
        batches += 1
    return GcResult(
        table_id=table.table_id,
        deleted=tuple(deleted),
        refused=tuple(refused),
        failed=tuple(failed),
        uncommitted=tuple(uncommitted),
        batches=batches,
        held=tuple(kept),
    )


def _delete_files(
    filenames: Sequence[str],
    data_prefix: str,
    filesystem: pafs.FileSystem | None,
    options: FileSystemOptions | None,
    threads: int,
) -> tuple[list[str], list[FileProblem]]:
    """Deletes data files and their sidecars; a missing file counts as deleted. Returns the deleted and the failed."""

    def delete_one(filename: str) -> str | None:
        try:
            for location in (filename, sketches_path(filename)):
                fs, path = resolve(location, options, filesystem=filesystem)
                delete_in_table(fs, path, data_prefix)
        except Exception as e:  # noqa: BLE001 - one file's failure must not stop the others
            return f"delete failed: {type(e).__name__}: {e}"
        return None

    if threads > 1 and len(filenames) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(filenames))) as pool:
            outcomes = list(pool.map(delete_one, filenames))
    else:
        outcomes = [delete_one(f) for f in filenames]
    gone = [f for f, error in zip(filenames, outcomes, strict=True) if error is None]
    errors = [FileProblem(filename=f, reason=e) for f, e in zip(filenames, outcomes, strict=True) if e is not None]
    return gone, errors


def _commit(
    table: SleeperTable,
    filenames: list[str],
    async_commit: bool,
    send_commit: Callable[[StateStoreCommitRequest], None] | None,
) -> list[str]:
    """Records deleted files with DELETE_FILES; returns the files recorded.

    If another collector recorded some of them first, the state is refreshed and the files still tracked are
    recorded.
    """
    if async_commit and send_commit is not None:
        send_commit(
            StateStoreCommitRequest.of_transaction(table.table_id, DeleteFilesTransaction(filenames=tuple(filenames)))
        )
        return filenames
    store = table.state_store
    try:
        store.commit(DeleteFilesTransaction(filenames=tuple(filenames)))
        return filenames
    except StateStoreError:
        store.refresh()
        state = store.files_state()
        remaining = [f for f in filenames if (entry := state.file(f)) is not None and not entry.references]
        if remaining:
            store.commit(DeleteFilesTransaction(filenames=tuple(remaining)))
        return remaining


def run_garbage_collection(
    instance: SleeperInstance,
    table_id: str,
    *,
    now: datetime | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> GcResult:
    """Handles one message of the ``GCJobQ``: collects one table's garbage.

    Files that failed or were refused are raised as an error after the rest were committed, so the message is
    retried and, if the failure persists, dead-lettered where an operator sees it.

    Raises:
        TableNotFoundError: If there is no table with this id.
        GarbageCollectionFailedError: If some files were not collected.
    """
    table = instance.table_by_id(table_id.strip())
    result = collect_garbage(
        table,
        now=now,
        send_commit=committer_sender(instance.queue(STATE_STORE_COMMITTER_QUEUE)),
        filesystem=filesystem,
        options=options,
    )
    result.raise_if_failed()
    return result
