"""Errors raised when a transaction does not apply to the current state of a table."""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError


class StateStoreError(SleeperError):
    """A state change was refused because it does not fit the table's current state."""


class FileNotFoundInStateError(StateStoreError):
    """A named file is not tracked by the table."""


class FileReferenceNotFoundError(StateStoreError):
    """A file has no reference on the named partition."""


class FileAlreadyExistsError(StateStoreError):
    """A file to be added or written is already tracked by the table."""


class FileReferenceAlreadyExistsError(StateStoreError):
    """A reference to be added already exists."""


class FileReferenceAssignedToJobError(StateStoreError):
    """A reference is assigned to a different job than expected (or to any job, where none was expected)."""


class FileReferenceNotAssignedToJobError(StateStoreError):
    """A reference is not assigned to the job that tries to commit it."""


class FileHasReferencesError(StateStoreError):
    """A file cannot be deleted while partitions still reference it."""


class PartitionNotFoundError(StateStoreError):
    """A named partition does not exist."""


class PartitionNotLeafError(StateStoreError):
    """A partition was expected to be a leaf (e.g. for a split) but is not: it was already split."""


class PartitionAlreadyExistsError(StateStoreError):
    """A new partition reuses an existing id."""


class InvalidTransactionError(StateStoreError):
    """A transaction is malformed in itself, whatever the state (e.g. a compaction output named as an input)."""


class FileOutsideTableError(StateStoreError):
    """A transaction names a file outside the table's own data prefix."""


class TableDeletedError(StateStoreError):
    """A transaction was refused because its table was deleted (or is being deleted)."""


class JobIdReusedError(StateStoreError):
    """An ingest or bulk import job id whose files were added is used again for other input files.

    A job id stands for one set of input files: the same id with the same files is a retry and adds nothing, but the
    same id with other files would be dropped as a retry, so it is refused.
    """

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"job id {job_id!r} was already used to add files from other input files; a job id can be reused only to "
            "retry the same input files: give this job a new job id"
        )
        self.job_id = job_id


class PendingDeleteNotAppliedError(StateStoreError):
    """A compaction commit was refused because a row delete committed after the job read the table's state lists some
    of the job's inputs and not all of them, so its output would either hide rows written after the delete or show
    rows the delete removed. Retryable: the job runs again, reading the delete, and applies it."""
