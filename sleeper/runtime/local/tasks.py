"""Local tasks: the processes that do a local instance's work, how a dead one is noticed, and what is done about it.

Sleeper runs jobs in ECS tasks and Lambdas, and AWS tells when one is gone. A local instance runs them in the
processes of the ``sleeper`` command (``run``, ``ingest``, ``bulk-import``, the worker processes of ``run --workers``).
Each such process is a *local task* while it works: it takes a new task id (``local-<host>-<pid>-<random>``), and
holds an exclusive ``flock`` on ``tmp/<task id>.lock`` in the instance directory (which records its host and pid)
for as long as it lives. Its temporary files (the sorted runs ingest spills) go in ``tmp/<task id>/``, its job runs
are recorded under its task id, and the queue messages it receives are recorded as received by it.

The operating system releases the lock when the process ends, however it ends (``kill -9`` included), and never
while it lives, so a lock that can be taken belongs to a task that is gone; a pid, which the system reuses, could not
tell that. When a process next works on the instance (a local task starts) or reports on its jobs,
:func:`recover_dead_tasks` looks for such tasks and, holding the dead task's lock so that no other process does the
same at once:

1. records every ingest, bulk import and compaction job run of the task still in progress as failed, naming the task
   (so every job reaches a terminal state; a job sent through a queue is then run again, see 2);
2. makes the queue messages the task had received visible again at once, rather than after the queue's visibility
   timeout (900 s), so they are delivered to a live process;
3. deletes the task's temporary directory, then its lock file.

A temporary directory in ``tmp/`` that no lock file names (left by a version that made them there directly, such as
``tmp/sleeper-ingest-*``) belongs to no live task and is deleted too. Work done through the Python API
(``table.ingest``) takes a directory the same way (:func:`owned_directory`) without being a task.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

from sleeper.adapters.local import SqliteQueues
from sleeper.core import TableStatus
from sleeper.core.jobs import JobWorkspace
from sleeper.core.trackers import (
    CompactionJobFailed,
    CompactionJobRun,
    CompactionJobStatusType,
    CompactionJobTracker,
    IngestJobFailed,
    IngestJobRun,
    IngestJobTracker,
)

__all__ = [
    "TASK_PREFIX",
    "TMP_DIRECTORY",
    "LocalTask",
    "Recovery",
    "TaskHost",
    "job_workspace",
    "local_task",
    "owned_directory",
    "recover_dead_tasks",
]

TMP_DIRECTORY = "tmp"
"""The instance's directory of temporary files, each owner's in a directory of its own beside its lock file."""

TASK_PREFIX = "local-"
"""How the id of every local task begins."""

_LOCK_SUFFIX = ".lock"
_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")
_LOG = logging.getLogger(__name__)


class TaskHost(Protocol):
    """What local tasks need of the instance they work on (a ``sleeper.runtime.local.instance.LocalInstance`` is one):
    its directory, the task this process runs as, its queues, its job trackers and its tables."""

    task: LocalTask | None
    """The local task this process runs as, while it runs as one (set by :func:`local_task`)."""

    @property
    def directory(self) -> Path:
        """The instance's directory (temporary files go in its ``tmp/``)."""
        ...

    @property
    def queues(self) -> SqliteQueues:
        """The instance's queues (recording the messages each task receives)."""
        ...

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """Where ingest and bulk import job runs are recorded."""
        ...

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """Where compaction job runs are recorded."""
        ...

    def tables(self) -> Sequence[TableStatus]:
        """Every table."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovery:
    """What :func:`recover_dead_tasks` did.

    Attributes:
        dead_tasks: The ids of the tasks found gone.
        ingest_runs_failed: Ingest and bulk import job runs of those tasks recorded as failed.
        compaction_runs_failed: Compaction job runs of those tasks recorded as failed.
        messages_released: Queue messages those tasks had received, made visible again.
        directories_removed: Temporary directories deleted (of gone tasks, and of no owner at all).
    """

    dead_tasks: tuple[str, ...] = ()
    ingest_runs_failed: int = 0
    compaction_runs_failed: int = 0
    messages_released: int = 0
    directories_removed: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One line for the log (empty if nothing was found)."""
        if not self.dead_tasks and not self.directories_removed:
            return ""
        return (
            f"{len(self.dead_tasks)} local tasks found gone: {self.ingest_runs_failed} ingest and "
            f"{self.compaction_runs_failed} compaction job runs recorded failed, {self.messages_released} queue "
            f"messages released, {len(self.directories_removed)} temporary directories removed"
        )


class _Lock:
    """An exclusive ``flock`` on a lock file, held through an open file descriptor."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def create(cls, path: Path, owner: dict[str, object]) -> _Lock | None:
        """Creates and locks a new lock file recording its owner; None if the name is taken or was swept away."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return None
        lock = cls(path, fd)
        if not lock._lock_or_close():
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # a sweeper found it unlocked, between its creation and the lock, and removed it
            lock.release()
            return None
        os.write(fd, json.dumps(owner).encode())
        return lock

    @classmethod
    def take_if_dead(cls, path: Path) -> _Lock | None:
        """Locks an existing lock file if its owner is gone; None if it is held (its owner lives) or missing."""
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return None
        lock = cls(path, fd)
        if not lock._lock_or_close():
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # another sweeper removed it while this one waited
            lock.release()
            return None
        return lock

    def _lock_or_close(self) -> bool:
        assert self._fd is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            os.close(self._fd)
            self._fd = None
            return False
        return True

    def owner(self) -> dict[str, object]:
        """What the owner recorded in the file (empty if unreadable)."""
        try:
            parsed = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}
        return parsed if isinstance(parsed, dict) else {}

    def remove(self) -> None:
        """Deletes the lock file, then releases the lock."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.release()

    def release(self) -> None:
        """Releases the lock (closing the file)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _tmp_root(instance: TaskHost) -> Path:
    root = instance.directory / TMP_DIRECTORY
    root.mkdir(parents=True, exist_ok=True)
    return root


def _new_owned(root: Path, prefix: str, owner: dict[str, object]) -> tuple[str, _Lock]:
    while True:
        name = f"{prefix}{uuid.uuid4().hex[:12]}"
        lock = _Lock.create(root / f"{name}{_LOCK_SUFFIX}", owner)
        if lock is not None:
            return name, lock


def _owner_record() -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": datetime.now(tz=UTC).isoformat()}


@contextlib.contextmanager
def owned_directory(instance: TaskHost) -> Iterator[Path]:
    """A new temporary directory under the instance's ``tmp/``, owned by this process until the block ends.

    It is deleted when the block ends; if the process dies first, the next :func:`recover_dead_tasks` deletes it.
    """
    root = _tmp_root(instance)
    name, lock = _new_owned(root, "owned-", _owner_record())
    directory = root / name
    directory.mkdir()
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        lock.remove()


@contextlib.contextmanager
def job_workspace(instance: TaskHost) -> Iterator[JobWorkspace]:
    """Where a job runs on a local instance: under the local task this process runs as (its id recorded on the run,
    its directory for scratch files), else under no task with a directory this process owns while the job runs."""
    if instance.task is not None:
        yield JobWorkspace(task_id=instance.task.task_id, directory=instance.task.directory)
        return
    with owned_directory(instance) as directory:
        yield JobWorkspace(directory=directory)


class LocalTask:
    """This process working on a local instance as a task (see the module docstring); use :func:`local_task`.

    Attributes:
        task_id: The task id, recorded on the job runs it does and the messages it receives.
        directory: Its temporary directory, deleted when it ends.
    """

    def __init__(self, instance: TaskHost) -> None:
        root = _tmp_root(instance)
        owner = _owner_record()
        host = _UNSAFE.sub("-", str(owner["host"])).strip("-")[:40] or "host"
        self.task_id, self._lock = _new_owned(root, f"{TASK_PREFIX}{host}-{os.getpid()}-", owner)
        self.directory = root / self.task_id
        self.directory.mkdir()
        self._instance = instance

    def close(self) -> None:
        """Ends the task: forgets the messages it received, deletes its directory, then its lock file."""
        with contextlib.suppress(Exception):
            self._instance.queues.forget_receiver(self.task_id)
        shutil.rmtree(self.directory, ignore_errors=True)
        self._lock.remove()


@contextlib.contextmanager
def local_task(instance: TaskHost) -> Iterator[LocalTask]:
    """Runs the block as a local task of the instance, after recovering the tasks found gone.

    While the block runs, ``instance.task`` is the task: the handlers record its id on job runs, spill to its
    directory, and the instance's queues record the messages it receives as received by it.
    """
    recovery = recover_dead_tasks(instance)
    if recovery.describe():
        _LOG.info("%s", recovery.describe())
    task = LocalTask(instance)
    previous = instance.task
    instance.task = task
    instance.queues.receiver = task.task_id
    try:
        yield task
    finally:
        instance.task = previous
        instance.queues.receiver = previous.task_id if previous is not None else None
        task.close()


def recover_dead_tasks(instance: TaskHost) -> Recovery:
    """Finds the local tasks that are gone and the temporary directories no live process owns, and cleans up after
    them (see the module docstring).

    Returns:
        What was found and done.
    """
    root = instance.directory / TMP_DIRECTORY
    if not root.is_dir():
        return Recovery()
    entries = {entry.name: entry for entry in os.scandir(root)}
    dead: list[tuple[str, dict[str, object], _Lock]] = []
    removed: list[str] = []
    for name in sorted(entries):
        if not name.endswith(_LOCK_SUFFIX):
            continue
        lock = _Lock.take_if_dead(root / name)
        if lock is not None:
            dead.append((name.removesuffix(_LOCK_SUFFIX), lock.owner(), lock))
    ingest_failed = compaction_failed = released = 0
    for owner_name, owner, lock in dead:
        try:
            if owner_name.startswith(TASK_PREFIX):
                reason = _gone_reason(owner_name, owner)
                ingest_runs, compaction_runs = _fail_runs(instance, owner_name, reason)
                ingest_failed, compaction_failed = ingest_failed + ingest_runs, compaction_failed + compaction_runs
                released += instance.queues.release_received_by(owner_name)
            shutil.rmtree(root / owner_name, ignore_errors=True)
            removed.append(owner_name)
            lock.remove()
        finally:
            lock.release()
    for name, entry in entries.items():
        # a directory no lock file names: left by an older version, or by an owner whose lock file was deleted
        if name.endswith(_LOCK_SUFFIX) or not entry.is_dir(follow_symlinks=False) or name in removed:
            continue
        if (root / f"{name}{_LOCK_SUFFIX}").exists():
            continue
        shutil.rmtree(root / name, ignore_errors=True)
        removed.append(name)
    return Recovery(
        dead_tasks=tuple(n for n, _, _ in dead if n.startswith(TASK_PREFIX)),
        ingest_runs_failed=ingest_failed,
        compaction_runs_failed=compaction_failed,
        messages_released=released,
        directories_removed=tuple(removed),
    )


def _gone_reason(task_id: str, owner: dict[str, object]) -> str:
    where = f"process {owner.get('pid', '?')} on host {owner.get('host', '?')}"
    return (
        f"Task {task_id} ({where}) ended without finishing this run (the process was killed or crashed); "
        "recorded as failed when the instance was next used"
    )


def _fail_runs(instance: TaskHost, task_id: str, reason: str) -> tuple[int, int]:
    """Records failed, naming the task and why, each of its ingest, bulk import and compaction runs still in progress.

    Returns:
        The ingest and bulk import runs, and the compaction runs, recorded failed.
    """
    ingest, compaction = instance.ingest_job_tracker, instance.compaction_job_tracker
    ingest_failed = compaction_failed = 0
    for table_id in [table.table_id for table in instance.tables()]:
        for job in ingest.unfinished_jobs(table_id):
            for run in job.runs:
                if run.task_id == task_id and run.status.is_run_in_progress:
                    ingest.record(_failed(IngestJobFailed, job.job_id, table_id, run, task_id, reason))
                    ingest_failed += 1
        for cjob in compaction.unfinished_jobs(table_id):
            for crun in cjob.runs:
                if crun.task_id == task_id and crun.status is CompactionJobStatusType.IN_PROGRESS:
                    compaction.record(_failed(CompactionJobFailed, cjob.job_id, table_id, crun, task_id, reason))
                    compaction_failed += 1
    return ingest_failed, compaction_failed


_Failed = TypeVar("_Failed", IngestJobFailed, CompactionJobFailed)


def _failed(
    failed: type[_Failed], job_id: str, table_id: str, run: IngestJobRun | CompactionJobRun, task_id: str, reason: str
) -> _Failed:
    return failed(
        job_id=job_id,
        table_id=table_id,
        update_time=datetime.now(tz=UTC),
        job_run_id=run.job_run_id,
        task_id=task_id,
        reasons=(reason,),
    )
