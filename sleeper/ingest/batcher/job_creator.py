"""The batcher's job creator: turns pending files into ingest or bulk import jobs.

Run every ``sleeper.ingest.batcher.job.creation.period.minutes``. Pending files are read oldest first and grouped by
table. A table's files are batched when any of them is older than ``file.max.age.seconds``, or when there are at
least ``job.min.files`` of them totalling at least ``job.min.size`` bytes. Batches are filled first-fit in that
order: a file goes in the first batch with room for it (fewer than ``job.max.files`` files and at least its size left
of ``job.max.size``), else in a new batch; so a file bigger than the maximum size gets a job to itself.

Each batch gets a new job id and its files are assigned to the job in the store, conditionally, so two job creators
running at once never put a file in two jobs; only the files actually assigned go in the job. The job
``{"id", "tableId", "files"}`` is sent to the queue that ``sleeper.table.ingest.batcher.ingest.queue`` names (see
:data:`INGEST_QUEUE_NAMES`). If the instance has no such queue, the table's files are left pending (Sleeper assigns
them and then drops the job; leaving them pending loses nothing and sends them once the queue exists). As in Sleeper,
a job that fails to send after its files were assigned is logged and dropped: its files stay assigned.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sleeper.core import PropertyError, Queue, SleeperError, TableNotFoundError, operations
from sleeper.core.jobs import IngestJob
from sleeper.core.properties import (
    INGEST_BATCHER_INGEST_QUEUE,
    INGEST_BATCHER_MAX_FILE_AGE_SECONDS,
    INGEST_BATCHER_MAX_JOB_FILES,
    INGEST_BATCHER_MAX_JOB_SIZE,
    INGEST_BATCHER_MIN_JOB_FILES,
    INGEST_BATCHER_MIN_JOB_SIZE,
    TableProperties,
)
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.ports import IngestBatcherStore
from sleeper.statestore import SleeperInstance

__all__ = [
    "INGEST_QUEUE_NAMES",
    "BatchingRules",
    "CreatedJob",
    "IngestBatcher",
    "create_batches",
    "ingest_queue_name",
    "route_bulk_import_to",
    "is_batching_due",
]

INGEST_QUEUE_NAMES: Mapping[str, str] = {
    "standard_ingest": operations.INGEST_JOB_Q,
    "bulk_import_emr": operations.BULK_IMPORT_EMR_Q,
    "bulk_import_persistent_emr": operations.BULK_IMPORT_PERSISTENT_EMR_Q,
    "bulk_import_eks": operations.BULK_IMPORT_EKS_Q,
    "bulk_import_emr_serverless": operations.BULK_IMPORT_EMR_SERVERLESS_Q,
}
"""The logical queue each ``sleeper.table.ingest.batcher.ingest.queue`` value sends jobs to: the names Sleeper's
stacks give these queues after ``sleeper-<id>-`` (``sleeper.ingest.job.queue.url``, ``sleeper.bulk.import.emr.job
.queue.url``, ``….persistent.emr.…``, ``….eks.…``, ``….emr.serverless.…``)."""

_LOG = logging.getLogger(__name__)


def route_bulk_import_to(queue: str, names: Mapping[str, str] = INGEST_QUEUE_NAMES) -> dict[str, str]:
    """Queue names with every bulk import mode sent to one queue (for a runtime with a single bulk import queue).

    Args:
        queue: The logical name of the runtime's bulk import queue, e.g. ``BulkImportJobQ``.
        names: The mapping to start from.
    """
    return {mode: (queue if mode.startswith("bulk_import_") else name) for mode, name in names.items()}


def ingest_queue_name(mode: str, names: Mapping[str, str] = INGEST_QUEUE_NAMES) -> str:
    """The logical queue name for a value of ``sleeper.table.ingest.batcher.ingest.queue`` (any case).

    Args:
        mode: ``standard_ingest``, ``bulk_import_emr``, ``bulk_import_persistent_emr``, ``bulk_import_eks`` or
            ``bulk_import_emr_serverless``.
        names: The mapping to use (a runtime may route every bulk import to one queue).

    Raises:
        PropertyError: If the value is not one of those.
    """
    name = names.get(mode.strip().lower())
    if name is None:
        raise PropertyError(f"invalid ingest batcher queue {mode!r}; expected one of {', '.join(names)}")
    return name


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchingRules:
    """A table's batcher settings.

    Attributes:
        min_files: ``sleeper.table.ingest.batcher.job.min.files``.
        min_bytes: ``sleeper.table.ingest.batcher.job.min.size`` (K/M/G/T/P suffixes are powers of 1024).
        max_files: ``sleeper.table.ingest.batcher.job.max.files``.
        max_bytes: ``sleeper.table.ingest.batcher.job.max.size``.
        max_age: ``sleeper.table.ingest.batcher.file.max.age.seconds``.
        ingest_queue: ``sleeper.table.ingest.batcher.ingest.queue``, lower case.
    """

    min_files: int = 1
    min_bytes: int = 1024**3
    max_files: int = 100
    max_bytes: int = 5 * 1024**3
    max_age: timedelta = timedelta(seconds=300)
    ingest_queue: str = "bulk_import_emr_serverless"

    @classmethod
    def from_properties(cls, properties: TableProperties) -> BatchingRules:
        """Reads a table's settings (unset ones fall back to the instance defaults, then Sleeper's defaults).

        Raises:
            PropertyError: If a value is invalid.
        """
        return cls(
            min_files=properties.get_int(INGEST_BATCHER_MIN_JOB_FILES),
            min_bytes=properties.get_bytes(INGEST_BATCHER_MIN_JOB_SIZE),
            max_files=properties.get_int(INGEST_BATCHER_MAX_JOB_FILES),
            max_bytes=properties.get_bytes(INGEST_BATCHER_MAX_JOB_SIZE),
            max_age=timedelta(seconds=properties.get_int(INGEST_BATCHER_MAX_FILE_AGE_SECONDS)),
            ingest_queue=properties.get_enum(INGEST_BATCHER_INGEST_QUEUE),
        )


def is_batching_due(files: Sequence[TrackedFile], rules: BatchingRules, now: datetime) -> bool:
    """Whether a table's pending files should be made into jobs now.

    True if any file was received more than the maximum age before ``now``, or if there are at least the minimum
    number of files and together they hold at least the minimum size.
    """
    if not files:
        return False
    oldest_allowed = now - rules.max_age
    if any(f.received_time < oldest_allowed for f in files):
        return True
    return len(files) >= rules.min_files and sum(f.file_size_bytes for f in files) >= rules.min_bytes


def create_batches(files: Sequence[TrackedFile], *, max_files: int, max_bytes: int) -> list[list[TrackedFile]]:
    """Splits files into batches, first fit in the order given.

    Each file goes in the first batch that has fewer than ``max_files`` files and at least the file's size left of
    ``max_bytes``; if none has, a new batch is started for it. A file larger than ``max_bytes`` therefore ends up
    alone in its batch.

    Returns:
        The batches, in the order they were started, each keeping the order of its files.
    """
    batches: list[list[TrackedFile]] = []
    space: list[int] = []
    for file in files:
        for i, batch in enumerate(batches):
            if len(batch) < max_files and file.file_size_bytes <= space[i]:
                batch.append(file)
                space[i] -= file.file_size_bytes
                break
        else:
            batches.append([file])
            space.append(max_bytes - file.file_size_bytes)
    return batches


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedJob:
    """A job the batcher created.

    Attributes:
        job: The job as sent: id, table id and the files assigned to it.
        queue: The logical name of the queue it was sent to (or should have gone to).
        total_bytes: The total size of its files.
        sent: Whether it reached the queue.
        error: Why it was not sent, if it was not.
    """

    job: IngestJob
    queue: str
    total_bytes: int
    sent: bool = True
    error: str | None = field(default=None)


class IngestBatcher:
    """Creates jobs from the files pending in the batcher store (Sleeper's ``IngestBatcher``).

    Args:
        instance: The instance (table properties by id, queues by logical name).
        store: The batcher store.
        clock: The current time (timezone-aware).
        job_id_supplier: Makes each job id (a UUID by default).
        queue_names: Maps ``sleeper.table.ingest.batcher.ingest.queue`` values to logical queue names.
    """

    def __init__(
        self,
        instance: SleeperInstance,
        store: IngestBatcherStore,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
        job_id_supplier: Callable[[], str] = lambda: str(uuid.uuid4()),
        queue_names: Mapping[str, str] = INGEST_QUEUE_NAMES,
    ) -> None:
        self._instance = instance
        self._store = store
        self._clock = clock
        self._job_id_supplier = job_id_supplier
        self._queue_names = queue_names

    def create_jobs(self, *, table_id: str | None = None) -> list[CreatedJob]:
        """Batches pending files into jobs and sends them, for every table or one.

        Args:
            table_id: Only batch this table's files; every table's if None.

        Returns:
            The jobs created, in order (including any that could not be sent).
        """
        now = self._clock()
        pending = self._store.pending_files_oldest_first()
        by_table: dict[str, list[TrackedFile]] = {}
        for file in pending:
            if table_id is None or file.table_id == table_id:
                by_table.setdefault(file.table_id, []).append(file)
        created: list[CreatedJob] = []
        for tid, files in by_table.items():
            created.extend(self._batch_table(tid, files, now))
        return created

    def _batch_table(self, table_id: str, files: list[TrackedFile], now: datetime) -> list[CreatedJob]:
        try:
            table = self._instance.table_by_id(table_id)
        except TableNotFoundError:
            _LOG.warning("Leaving %d pending files of table %s, which does not exist", len(files), table_id)
            return []
        rules = BatchingRules.from_properties(table.properties)
        if not is_batching_due(files, rules, now):
            _LOG.info("Not yet batching %d pending files of table %s", len(files), table_id)
            return []
        queue_name = ingest_queue_name(rules.ingest_queue, self._queue_names)
        try:
            queue = self._instance.queue(queue_name)
        except SleeperError as e:
            _LOG.error("Leaving %d files of table %s pending: no queue %s: %s", len(files), table_id, queue_name, e)
            return []
        created: list[CreatedJob] = []
        for batch in create_batches(files, max_files=rules.max_files, max_bytes=rules.max_bytes):
            job = self._send_batch(table_id, queue_name, queue, batch)
            if job is not None:
                created.append(job)
        return created

    def _send_batch(self, table_id: str, queue_name: str, queue: Queue, batch: list[TrackedFile]) -> CreatedJob | None:
        job_id = self._job_id_supplier()
        assigned = self._store.assign_job_get_assigned(job_id, batch)
        if not assigned:
            _LOG.error("Not sending job %s: none of its files could be assigned", job_id)
            return None
        chosen = set(assigned)
        total = sum(f.file_size_bytes for f in batch if f.file in chosen)
        job = IngestJob(id=job_id, table_id=table_id, files=tuple(assigned))
        try:
            queue.send(job.to_json())
        except SleeperError as e:
            _LOG.error(
                "Discarding job %s of table %s, which could not be sent to %s: %s", job_id, table_id, queue_name, e
            )
            return CreatedJob(job=job, queue=queue_name, total_bytes=total, sent=False, error=str(e))
        _LOG.info("Sent job %s with %d files (%d bytes) to %s", job_id, len(assigned), total, queue_name)
        return CreatedJob(job=job, queue=queue_name, total_bytes=total)
