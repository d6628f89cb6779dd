"""The port of the ingest batcher's store of tracked files (the instance the batcher runs in is
``sleeper.ingest.ports.IngestRuntime``).

Adapters of ``IngestBatcherStore``: ``sleeper.adapters.memory.batcher_store`` (tests), ``sleeper.adapters.local``
(SQLite, the local instance) and ``sleeper.adapters.aws`` (Sleeper's DynamoDB table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sleeper.ingest.batcher.model import SkippedFile, TrackedFile

__all__ = ["ASSIGN_JOB_BATCH_SIZE", "IngestBatcherStore"]

ASSIGN_JOB_BATCH_SIZE = 50
"""Files assigned to a job in one atomic step (two DynamoDB write items each, within the limit of 100)."""


class IngestBatcherStore(Protocol):
    """Where the batcher keeps the files submitted to it (Sleeper's ``IngestBatcherStore``).

    A file is identified by its table id and path, within its job id (``not_assigned_to_job`` while pending).
    """

    def add_file(self, file: TrackedFile) -> None:
        """Stores a file, replacing any record with the same job id (or pending state), table and path."""
        ...

    def add_files_unless_batched(self, files: Sequence[TrackedFile]) -> list[SkippedFile]:
        """Stores submitted files as pending, except those already batched into a job and unchanged since.

        A file is skipped when a record of it assigned to a job is kept and ``file.is_unchanged_since(record)``
        (same table, path, size and modification time; a record or file without a modification time counts as
        changed). Every other file is stored as ``add_file`` stores it: a pending record of the same path is
        replaced. Each file's check and write are atomic against a job creator assigning the same path, so a file
        assigned meanwhile is skipped rather than tracked a second time.

        Args:
            files: Pending files (no job id), as a submit request names them.

        Returns:
            The files not stored, each with the assigned record that stood in for it, in the order given.
        """
        ...

    def assign_job_get_assigned(self, job_id: str, files: Sequence[TrackedFile]) -> list[str]:
        """Moves pending files into a job, conditionally, and returns the paths that were moved.

        The files are taken in groups of ``ASSIGN_JOB_BATCH_SIZE``, each moved atomically: a group is moved only if
        every file in it is still pending (no other job creator took it), otherwise the whole group is left pending
        for the next run. So a file is never put in two jobs.

        Args:
            job_id: The new job.
            files: Pending files, as read from ``pending_files_oldest_first``.

        Returns:
            The paths (``TrackedFile.file``) of the files now assigned to the job, in the order given.
        """
        ...

    def all_files_newest_first(self) -> list[TrackedFile]:
        """Every tracked file, pending or assigned, newest first (ties by table id and path)."""
        ...

    def pending_files_oldest_first(self) -> list[TrackedFile]:
        """The files not yet assigned to a job, oldest first (ties by table id and path)."""
        ...

    def delete_all_pending(self) -> None:
        """Forgets every pending file."""
        ...

    def delete_files(self, files: Sequence[TrackedFile]) -> None:
        """Forgets the given records (each identified by job id or pending state, table id and path)."""
        ...
