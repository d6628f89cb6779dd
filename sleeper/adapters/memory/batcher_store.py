"""The ingest batcher store in memory, for tests and embedded use."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sleeper.ingest.batcher.model import NOT_ASSIGNED_TO_JOB, SkippedFile, TrackedFile, newest_first, oldest_first
from sleeper.ingest.batcher.ports import ASSIGN_JOB_BATCH_SIZE

__all__ = ["InMemoryIngestBatcherStore"]

_Key = tuple[str, str]
"""(job id or ``not_assigned_to_job``, ``<table id>/<file>``): the store's key, as in Sleeper's DynamoDB table."""


def _key(file: TrackedFile) -> _Key:
    return file.job_id_or_unassigned, file.key


class InMemoryIngestBatcherStore:
    """Implements ``sleeper.ingest.batcher.ports.IngestBatcherStore`` in memory; thread-safe.

    Args:
        assign_batch_size: Files assigned atomically together (Sleeper's 50 by default).
    """

    def __init__(self, *, assign_batch_size: int = ASSIGN_JOB_BATCH_SIZE) -> None:
        self._files: dict[_Key, TrackedFile] = {}
        self._lock = threading.Lock()
        self._assign_batch_size = assign_batch_size

    def add_file(self, file: TrackedFile) -> None:
        """Stores a file, replacing any record with the same key."""
        with self._lock:
            self._files[_key(file)] = file

    def add_files_unless_batched(self, files: Sequence[TrackedFile]) -> list[SkippedFile]:
        """Stores files as pending, except those batched into a job and unchanged since; returns those skipped."""
        skipped: list[SkippedFile] = []
        with self._lock:
            for file in files:
                batched = next(
                    (f for f in self._files.values() if f.is_assigned_to_job and file.is_unchanged_since(f)), None
                )
                if batched is not None:
                    skipped.append(SkippedFile(file=file, batched=batched))
                else:
                    self._files[_key(file)] = file
        return skipped

    def assign_job_get_assigned(self, job_id: str, files: Sequence[TrackedFile]) -> list[str]:
        """Moves pending files into a job, each group of files all or nothing; returns the paths moved."""
        assigned: list[str] = []
        size = self._assign_batch_size
        for start in range(0, len(files), size):
            group = files[start : start + size]
            with self._lock:
                pending = [(NOT_ASSIGNED_TO_JOB, f.key) for f in group]
                moved = [f.assigned_to(job_id) for f in group]
                keys = {_key(f) for f in moved}
                if len(keys) < len(moved) or any(k not in self._files for k in pending):
                    continue
                if any(k in self._files for k in keys):
                    continue
                for key, file in zip(pending, moved, strict=True):
                    del self._files[key]
                    self._files[_key(file)] = file
            assigned.extend(f.file for f in group)
        return assigned

    def all_files_newest_first(self) -> list[TrackedFile]:
        """Every tracked file, newest first."""
        with self._lock:
            files = list(self._files.values())
        return newest_first(files)

    def pending_files_oldest_first(self) -> list[TrackedFile]:
        """The pending files, oldest first."""
        with self._lock:
            files = [f for f in self._files.values() if not f.is_assigned_to_job]
        return oldest_first(files)

    def delete_all_pending(self) -> None:
        """Forgets every pending file."""
        with self._lock:
            for key in [k for k in self._files if k[0] == NOT_ASSIGNED_TO_JOB]:
                del self._files[key]

    def delete_files(self, files: Sequence[TrackedFile]) -> None:
        """Forgets the given records."""
        with self._lock:
            for file in files:
                self._files.pop(_key(file), None)
