"""What the ingest batcher store adapters share: moving pending files into a job one group at a time."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from sleeper.ingest.batcher import ASSIGN_JOB_BATCH_SIZE, TrackedFile

__all__ = ["GroupAssigningStore"]


class GroupAssigningStore(ABC):
    """Implements ``IngestBatcherStore.assign_job_get_assigned`` over a subclass's ``_assign_group``, which moves one
    group of pending files (with distinct keys) into a job all or nothing.

    Args:
        assign_batch_size: Files assigned atomically together (Sleeper's 50 by default).
    """

    def __init__(self, *, assign_batch_size: int = ASSIGN_JOB_BATCH_SIZE) -> None:
        self._assign_batch_size = assign_batch_size

    def assign_job_get_assigned(self, job_id: str, files: Sequence[TrackedFile]) -> list[str]:
        """Moves pending files into a job, each group of ``assign_batch_size`` files all or nothing; returns the
        paths moved. A group naming one file twice, or with a file no longer pending, stays pending.

        Raises:
            BatcherStoreError: If the store fails (``AwsError`` on DynamoDB).
        """
        assigned: list[str] = []
        size = self._assign_batch_size
        for start in range(0, len(files), size):
            group = files[start : start + size]
            if len({f.key for f in group}) == len(group) and self._assign_group(job_id, group):
                assigned.extend(f.file for f in group)
        return assigned

    @abstractmethod
    def _assign_group(self, job_id: str, group: Sequence[TrackedFile]) -> bool:
        """Moves a group of pending files with distinct keys into a job if every one is still pending."""
