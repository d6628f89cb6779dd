"""Compaction job creation: the scheduled per-table operation that turns small files into compaction jobs.

One run for a table:

1. **Pre-split**: every unassigned file reference on a partition that is no longer a leaf is replaced by references
   on the partition's two children, in one SPLIT_FILE_REFERENCES transaction. This moves references one level down
   the tree per run; references still above a leaf are split again on the next run.
2. **Plan**: the table's strategy (``sleeper.table.compaction.strategy.class``) groups the unassigned references of
   each leaf partition. In "compact all" mode (Sleeper's ``compactAllFiles``, the admin's "run compaction now") every
   unassigned leaf reference the strategy left out is also put in jobs of up to
   ``sleeper.table.compaction.files.batch.size`` files, even one file alone. The leaves' references are read from
   the state as columns and planned by ``plan_jobs_from_columns``, which plans what ``plan_jobs`` plans over
   reference objects: both take each leaf's jobs from its strategy's ``spans`` over the files' sizes and the
   compact-to-split rule from ``needs_compaction_to_split`` (``sleeper.compaction.strategies``);
   tests/unit/compaction/test_creation_columns.py compares them over random states.
3. **Limit**: at most ``sleeper.table.compaction.job.creation.limit`` minus the distinct jobs already holding
   references are created; beyond it the jobs kept are chosen at random, as in Sleeper.
4. **Assign, then send**, per batch of ``sleeper.table.compaction.job.send.batch.size`` jobs, one of two ways, as
   :func:`assigns_job_ids_async` decides from ``sleeper.table.compaction.job.id.assignment.commit.async`` (resolved
   with ``sleeper.table.statestore.commit.async.enabled`` as every ``...commit.async`` property is; by default true
   for transaction log tables):

   * **asynchronously**, as Sleeper's ``BatchCreateCompactionJobs``: the batch of jobs is written to
     ``<tableId>/compactions/<batchId>.json`` in the data bucket, ``{"tableId", "batchKey", "createTime"}`` is sent
     to the pending batch queue, and then an ASSIGN_JOB_IDS commit request for the whole batch is sent to the state
     store committer. Nothing is sent to the compaction job queue here: the dispatcher
     (:mod:`sleeper.compaction.dispatch`) sends the jobs, and records them created, once it sees every input file
     assigned to its job; if the committer refused the assignment because another creator claimed some of the files
     first, the dispatcher finds them assigned to another job and dead-letters the batch, so nothing is sent for it.
     The files of a batch whose assignment was refused stay unassigned, for the next run;
   * **synchronously** (the property false, asynchronous commits disabled for the table, or a caller that gives no
     :class:`PendingBatches`): the input references are assigned with one ASSIGN_JOB_IDS transaction committed here,
     and only once it is committed are the jobs' JSON messages sent to the compaction job queue and recorded as
     created in the job tracker. If the batch is refused because another creator claimed some of its files first,
     each job is assigned on its own and the jobs refused are dropped.

   Either way nothing is ever sent for a job whose files are not assigned to it, so no two jobs compact the same
   reference. Sleeper writes a pending batch on the synchronous path too; sending the jobs here once their
   assignment is committed gives the same guarantee without the dispatcher.

Running it again without new files creates nothing: assigned references are never planned again. On the asynchronous
path a run before the last run's assignment has landed plans the same files again; its assignment is then refused and
its batch dead-lettered, as in Sleeper.
"""

from __future__ import annotations

import logging
import operator
import random
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, repeat
from typing import TypeVar

import numpy as np

from sleeper.compaction.dispatch import record_created
from sleeper.compaction.strategies import (
    FilesInPartition,
    InvalidCompactionStrategyError,
    PlannedJob,
    UnknownCompactionStrategyError,
    compact_to_split_jobs,
    leftover_jobs,
    needs_compaction_to_split,
    strategy_for_table,
)
from sleeper.core import Queue, SleeperError, join_under
from sleeper.core.jobs import (
    CompactionJob,
    CompactionJobBatch,
    CompactionJobDispatchRequest,
    batch_key_prefix,
)
from sleeper.core.properties import (
    AGGREGATION_CONFIG,
    COMPACTION_FILES_BATCH_SIZE,
    COMPACTION_JOB_CREATION_LIMIT,
    COMPACTION_JOB_ID_ASSIGNMENT_COMMIT_ASYNC,
    COMPACTION_JOB_SEND_BATCH_SIZE,
    FILTERING_CONFIG,
    ITERATOR_CLASS_NAME,
    ITERATOR_CONFIG,
    PARTITION_SPLIT_THRESHOLD,
    TableProperties,
)
from sleeper.core.statestore import ReferenceColumns, StateStoreError
from sleeper.core.statestore.transactions import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    SplitFileReferenceRequest,
    SplitFileReferencesTransaction,
)
from sleeper.core.trackers import CompactionJobTracker
from sleeper.statestore import SleeperTable, StateStore, send_transaction

__all__ = [
    "CompactionJobCreationResult",
    "CompactionJobSendError",
    "InvalidCompactionStrategyError",
    "JobFactory",
    "PendingBatchError",
    "PendingBatches",
    "PlannedFiles",
    "UnknownCompactionStrategyError",
    "assigns_job_ids_async",
    "compaction_output_file",
    "create_compaction_jobs",
    "limit_jobs",
    "plan_jobs",
    "plan_jobs_from_columns",
    "pre_split_file_references",
]

logger = logging.getLogger(__name__)

_P = TypeVar("_P")

SQS_SEND_BATCH = 10
"""The most messages one send to the job queue carries (SQS's SendMessageBatch limit)."""


class PendingBatchError(SleeperError):
    """A batch of jobs could not be made pending (asynchronous assignment): its batch file, its pending batch message
    or its assignment request could not be written or sent.

    No assignment of its files has been sent, or the one sent may still be applied: either way the dispatcher sends
    the jobs only if every input file is assigned to its job, and otherwise dead-letters the batch once
    ``sleeper.table.compaction.job.send.timeout.seconds`` has passed; files left unassigned are planned again by the
    next run. ``batch_key`` and ``job_ids`` name the batch for an operator.
    """

    def __init__(self, message: str, *, batch_key: str, job_ids: Sequence[str]) -> None:
        super().__init__(message)
        self.batch_key = batch_key
        self.job_ids = tuple(job_ids)


class CompactionJobSendError(SleeperError):
    """Jobs were assigned their input files but could not all be sent to the job queue.

    Their files stay assigned to jobs that no task will run; Sleeper's dispatcher leaves them in the same state
    (its batch goes to a dead-letter queue). ``unsent_job_ids`` names them for an operator.
    """

    def __init__(self, message: str, *, unsent_job_ids: Sequence[str]) -> None:
        super().__init__(message)
        self.unsent_job_ids = tuple(unsent_job_ids)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCreationResult:
    """What one run of job creation did for a table, for logs and the CLI.

    Attributes:
        table_id: The table.
        references_pre_split: References on non-leaf partitions replaced by references on their children.
        jobs: The jobs created. Synchronously: assigned their files, sent to the queue and recorded in the tracker;
            asynchronously: written to a pending batch whose assignment was sent to the committer (the dispatcher
            sends and records them once it has landed).
        jobs_per_partition: How many of ``jobs`` are on each leaf partition.
        jobs_over_limit: Jobs planned but not created because of ``sleeper.table.compaction.job.creation.limit``.
        jobs_lost_to_race: Jobs not created because another creator assigned some of their files first (synchronous
            assignment only: asynchronously, the dispatcher finds the race and dead-letters the losing batch).
        compact_all: Whether every unassigned leaf file was put in a job ("compact all" mode).
        pending_batches: The keys of the pending batch files written (asynchronous assignment), in order.
    """

    table_id: str
    references_pre_split: int
    jobs: tuple[CompactionJob, ...]
    jobs_per_partition: Mapping[str, int] = field(default_factory=dict)
    jobs_over_limit: int = 0
    jobs_lost_to_race: int = 0
    compact_all: bool = False
    pending_batches: tuple[str, ...] = ()

    @property
    def jobs_created(self) -> int:
        """The number of jobs created."""
        return len(self.jobs)

    @property
    def input_files(self) -> int:
        """The number of input file references in the jobs created."""
        return sum(len(j.input_files) for j in self.jobs)

    def to_dict(self) -> dict[str, object]:
        """A summary for JSON output (job ids, not whole jobs)."""
        return {
            "tableId": self.table_id,
            "referencesPreSplit": self.references_pre_split,
            "jobsCreated": self.jobs_created,
            "inputFiles": self.input_files,
            "jobsPerPartition": dict(self.jobs_per_partition),
            "jobsOverLimit": self.jobs_over_limit,
            "jobsLostToRace": self.jobs_lost_to_race,
            "compactAll": self.compact_all,
            "pendingBatches": list(self.pending_batches),
            "jobIds": [j.job_id for j in self.jobs],
        }


def _random_job_id() -> str:
    return str(uuid.uuid4())


def compaction_output_file(data_prefix: str, partition_id: str, job_id: str) -> str:
    """Where a job writes its output: ``<data_prefix>/data/partition_<partition id>/<job id>.parquet``, as Sleeper
    names compaction outputs (ingest names its files the same way, after a random id).

    Raises:
        UnsafePathError: If the partition id or job id could escape the table's data prefix.
    """
    return join_under(data_prefix, "data", f"partition_{partition_id}", f"{job_id}.parquet")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobFactory:
    """Makes compaction jobs of planned groups of files, with the table's output path and read settings.

    Attributes:
        table_id: The table.
        data_prefix: The table's data prefix.
        iterator_class_name: ``sleeper.table.iterator.class.name``.
        iterator_config: ``sleeper.table.iterator.config``.
        filter_config: ``sleeper.table.filters``.
        aggregation_config: ``sleeper.table.aggregations``.
        job_id_supplier: New job ids (random UUIDs, as Sleeper's).
    """

    table_id: str
    data_prefix: str
    iterator_class_name: str | None = None
    iterator_config: str | None = None
    filter_config: str | None = None
    aggregation_config: str | None = None
    job_id_supplier: Callable[[], str] = _random_job_id
    _partition_dirs: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def for_table(cls, table: SleeperTable, job_id_supplier: Callable[[], str] | None = None) -> JobFactory:
        """The factory for a table, copying its iterator, filter and aggregation settings into each job."""
        props = table.properties
        return cls(
            table_id=table.table_id,
            data_prefix=table.data_prefix,
            iterator_class_name=props.get(ITERATOR_CLASS_NAME),
            iterator_config=props.get(ITERATOR_CONFIG),
            filter_config=props.get(FILTERING_CONFIG),
            aggregation_config=props.get(AGGREGATION_CONFIG),
            job_id_supplier=job_id_supplier if job_id_supplier is not None else _random_job_id,
        )

    def job(self, planned: PlannedJob | PlannedFiles) -> CompactionJob:
        """A new job compacting the planned files."""
        job_id = self.job_id_supplier()
        if self.job_id_supplier is _random_job_id:
            # A UUID is one safe path segment: only the partition's part of the path needs checking, once.
            output_file = self._partition_dir(planned.partition_id) + f"{job_id}.parquet"
        else:
            output_file = compaction_output_file(self.data_prefix, planned.partition_id, job_id)
        return CompactionJob(
            table_id=self.table_id,
            job_id=job_id,
            input_files=planned.filenames,
            output_file=output_file,
            partition_id=planned.partition_id,
            iterator_class_name=self.iterator_class_name,
            iterator_config=self.iterator_config,
            filter_config=self.filter_config,
            aggregation_config=self.aggregation_config,
        )

    def _partition_dir(self, partition_id: str) -> str:
        """``<data_prefix>/data/partition_<partition id>/``, checked as ``compaction_output_file`` checks it.

        Raises:
            UnsafePathError: If the partition id could escape the table's data prefix.
        """
        found = self._partition_dirs.get(partition_id)
        if found is None:
            found = self._partition_dirs[partition_id] = (
                join_under(self.data_prefix, "data", f"partition_{partition_id}") + "/"
            )
        return found


# --- pre-split -----------------------------------------------------------------------------------------------------
def _split_requests(state_store: StateStore) -> list[SplitFileReferenceRequest]:
    partitions = state_store.partitions()
    non_leaf = {p.id: p for p in partitions if not p.is_leaf}
    if not non_leaf:
        return []
    requests: list[SplitFileReferenceRequest] = []
    # Only the files referenced on a non-leaf partition, found through the index by partition, in state order.
    for file in state_store.files_on_partitions(non_leaf):
        for ref in file.references.values():
            parent = non_leaf.get(ref.partition_id)
            if parent is None or ref.job_id is not None:
                continue
            children = parent.child_ids
            if any(child in file.references for child in children):
                # The file is already referenced on a child: splitting would be refused. Leave it for an operator.
                logger.warning(
                    "not pre-splitting %s on %s: it already has a reference on a child", ref.filename, parent.id
                )
                continue
            requests.append(
                SplitFileReferenceRequest(old_reference=ref, new_references=tuple(ref.split_to(c) for c in children))
            )
    return requests


def pre_split_file_references(state_store: StateStore) -> int:
    """Moves every unassigned reference on a non-leaf partition to its two children (one level), committing one
    SPLIT_FILE_REFERENCES transaction. The children's references get half the rows each, marked approximate.

    If another writer split some of the same references first, the split is planned again from the refreshed state
    once before giving up.

    Returns:
        How many references were split.

    Raises:
        StateStoreError: If the split is refused twice.
    """
    for attempt in (1, 2):
        requests = _split_requests(state_store)
        if not requests:
            return 0
        try:
            state_store.commit(SplitFileReferencesTransaction(requests=tuple(requests)))
        except StateStoreError:
            if attempt == 2:
                raise
            logger.info("pre-split of table %s was refused; planning it again", state_store.table_id)
            state_store.refresh()
            continue
        logger.info("pre-split %d file references in table %s", len(requests), state_store.table_id)
        return len(requests)
    return 0  # pragma: no cover - the loop always returns or raises


# --- planning ------------------------------------------------------------------------------------------------------
def plan_jobs(
    properties: TableProperties, leaves: Sequence[FilesInPartition], *, compact_all: bool = False
) -> list[PlannedJob]:
    """The jobs the table's strategy plans, plus the leftovers in "compact all" mode, plus jobs that make leaves over
    the split threshold splittable (see ``compact_to_split_jobs``), before the creation limit.

    Raises:
        UnknownCompactionStrategyError: If the strategy property names an unknown class.
    """
    strategy = strategy_for_table(properties)
    planned = strategy.plan(leaves)
    batch_size = properties.get_int(COMPACTION_FILES_BATCH_SIZE)
    if compact_all:
        planned += leftover_jobs(leaves, planned, batch_size)
    planned += compact_to_split_jobs(leaves, planned, properties.get_int(PARTITION_SPLIT_THRESHOLD), batch_size)
    return planned


# --- planning from the state's columns -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PlannedFiles:
    """A planned job as its partition and input files (what ``PlannedJob`` holds, without a reference object per
    file): what ``plan_jobs_from_columns`` plans."""

    partition_id: str
    filenames: tuple[str, ...]


def _leaf_order(codes: np.ndarray, assigned: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    """The references ordered by leaf, the unassigned first within each leaf, by ascending rows (a stable sort:
    ties keep the state's order, as ``files_in_leaf_partitions`` sorts)."""
    try:
        sizes = np.array(rows, dtype=np.int64)
    except OverflowError:  # beyond 2^63 rows: sorted by Python instead
        return np.array(
            sorted(range(len(rows)), key=lambda i: (int(codes[i]), bool(assigned[i]), rows[i])), dtype=np.int64
        )
    order: np.ndarray = np.lexsort((sizes, assigned, codes))
    return order


def plan_jobs_from_columns(
    properties: TableProperties, leaf_ids: Sequence[str], columns: ReferenceColumns, *, compact_all: bool = False
) -> list[PlannedFiles]:
    """The jobs ``plan_jobs`` plans, in the same order with the same files, from the leaves' references as columns
    (``StateStore.reference_columns``) rather than as objects: grouped and sorted with numpy, each leaf planned over
    lists of its sizes.

    Args:
        properties: The table's properties.
        leaf_ids: The leaf partitions, in the order ``files_in_leaf_partitions`` keeps (the order of the partitions).
        columns: The references on those leaves, in state order.
        compact_all: Also plan every unassigned leaf file the strategy left out ("compact all" mode).

    Raises:
        UnknownCompactionStrategyError: If the strategy property names an unknown class.
        InvalidCompactionStrategyError: If a strategy setting is below 1.
    """
    strategy = strategy_for_table(properties)
    batch_size = properties.get_int(COMPACTION_FILES_BATCH_SIZE)
    split_threshold = properties.get_int(PARTITION_SPLIT_THRESHOLD)
    count = len(columns)
    if not count:
        return []
    rank = {partition_id: i for i, partition_id in enumerate(leaf_ids)}
    codes = np.fromiter(map(rank.__getitem__, columns.partition_ids), dtype=np.int64, count=count)
    assigned = np.fromiter(map(operator.is_not, columns.job_ids, repeat(None)), dtype=np.bool_, count=count)
    order = _leaf_order(codes, assigned, columns.number_of_rows)
    per_leaf = np.bincount(codes, minlength=len(leaf_ids))
    ends = np.cumsum(per_leaf)
    starts = ends - per_leaf
    free = np.bincount(codes[~assigned], minlength=len(leaf_ids))
    positions = order.tolist()
    names = [columns.filenames[i] for i in positions]
    sizes = [columns.number_of_rows[i] for i in positions]
    job_ids, approximate, only_this = (
        columns.job_ids,
        columns.count_approximate,
        columns.only_contains_data_for_this_partition,
    )
    exact = [only_this[i] and not approximate[i] for i in positions]

    planned: list[PlannedFiles] = []
    leftovers: list[PlannedFiles] = []
    unbusy: list[tuple[str, int, int]] = []  # leaves with no job planned or running: (leaf, first, unassigned)
    for leaf in np.flatnonzero(free).tolist():
        partition_id, first, unassigned, end = leaf_ids[leaf], int(starts[leaf]), int(free[leaf]), int(ends[leaf])
        running = len({job_ids[i] for i in positions[first + unassigned : end]})
        spans = strategy.spans(sizes[first : first + unassigned], running)
        planned.extend(PlannedFiles(partition_id, tuple(names[first + s.start : first + s.stop])) for s in spans)
        busy = bool(spans)
        if compact_all:
            taken = set(chain.from_iterable(spans))
            left = [names[first + k] for k in range(unassigned) if k not in taken]
            leftovers.extend(
                PlannedFiles(partition_id, tuple(left[i : i + batch_size])) for i in range(0, len(left), batch_size)
            )
            busy = busy or bool(left)
        if not busy and not running:
            unbusy.append((partition_id, first, unassigned))
    to_split: list[PlannedFiles] = []
    for partition_id, first, unassigned in unbusy:
        if needs_compaction_to_split(
            sizes[first : first + unassigned], exact[first : first + unassigned], split_threshold
        ):
            to_split.append(PlannedFiles(partition_id, tuple(names[first : first + min(unassigned, batch_size)])))
    return planned + leftovers + to_split


def limit_jobs(planned: Sequence[_P], creation_limit: int, running_jobs: int, rng: random.Random) -> list[_P]:
    """Sleeper's job creation limit: at most ``creation_limit - running_jobs`` jobs (none if that is below 1); when
    more are planned, the ones kept are chosen at random (kept in planned order)."""
    allowed = max(creation_limit - running_jobs, 0)
    if len(planned) <= allowed:
        return list(planned)
    keep = sorted(rng.sample(range(len(planned)), allowed))
    return [planned[i] for i in keep]


# --- assignment and sending ----------------------------------------------------------------------------------------
def _assign_request(job: CompactionJob) -> AssignJobIdRequest:
    return AssignJobIdRequest(job_id=job.job_id, partition_id=job.partition_id, filenames=job.input_files)


def _assign(state_store: StateStore, jobs: Sequence[CompactionJob]) -> list[CompactionJob]:
    """Assigns the jobs' files; returns the jobs whose assignment was committed."""
    try:
        state_store.commit(AssignJobIdsTransaction(requests=tuple(_assign_request(j) for j in jobs)))
        return list(jobs)
    except StateStoreError as e:
        if len(jobs) == 1:
            logger.info("job %s lost its files to another job: %s", jobs[0].job_id, e)
            return []
        logger.info("assigning %d jobs was refused (%s); assigning them one by one", len(jobs), e)
    assigned: list[CompactionJob] = []
    for job in jobs:
        try:
            state_store.commit(AssignJobIdsTransaction(requests=(_assign_request(job),)))
        except StateStoreError as e:
            logger.info("job %s lost its files to another job: %s", job.job_id, e)
            continue
        assigned.append(job)
    return assigned


def _send(queue: Queue, jobs: Sequence[CompactionJob]) -> None:
    for start in range(0, len(jobs), SQS_SEND_BATCH):
        chunk = jobs[start : start + SQS_SEND_BATCH]
        try:
            queue.send_batch([j.to_json() for j in chunk])
        except Exception as e:
            unsent = [j.job_id for j in jobs[start:]]
            raise CompactionJobSendError(
                f"{len(unsent)} compaction jobs were assigned their files but not sent to {queue.name}: {e}",
                unsent_job_ids=unsent,
            ) from e


def _assign_and_send(
    state_store: StateStore,
    queue: Queue,
    tracker: CompactionJobTracker,
    jobs: Sequence[CompactionJob],
    clock: Callable[[], datetime],
) -> list[CompactionJob]:
    """Synchronous assignment of one batch: assigns, sends the jobs assigned and records them created."""
    assigned = _assign(state_store, jobs)
    _send(queue, assigned)
    record_created(tracker, assigned, clock())
    return assigned


# --- asynchronous assignment --------------------------------------------------------------------------------------
def assigns_job_ids_async(properties: TableProperties) -> bool:
    """Whether the table's new jobs have their input files assigned through the state store committer: the one rule,
    ``sleeper.table.compaction.job.id.assignment.commit.async`` as resolved with
    ``sleeper.table.statestore.commit.async.enabled`` (as every ``...commit.async`` property is)."""
    return properties.get_bool(COMPACTION_JOB_ID_ASSIGNMENT_COMMIT_ASYNC)


def _random_batch_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingBatches:
    """Where asynchronous assignment puts each batch of jobs (see the module docs).

    Attributes:
        write_batch: Writes a batch file, given its key in the data bucket and its JSON.
        pending_queue: The pending batch queue (``PendingCompactionJobBatchQ``), which the dispatcher reads.
        committer_queue: The state store committer's queue (``StateStoreCommitterQ.fifo``).
        batch_id_supplier: New batch ids (random UUIDs, as Sleeper's).
    """

    write_batch: Callable[[str, str], None]
    pending_queue: Queue
    committer_queue: Queue
    batch_id_supplier: Callable[[], str] = _random_batch_id


def _send_pending_batch(
    state_store: StateStore, pending: PendingBatches, jobs: Sequence[CompactionJob], create_time: datetime
) -> str:
    """Writes the batch, sends its pending batch message, then its assignment request (in Sleeper's order: the
    dispatcher is waiting for the batch before its files can be assigned). Returns the batch key.

    Raises:
        PendingBatchError: If a step failed.
    """
    table_id = state_store.table_id
    key = f"{batch_key_prefix(table_id)}{pending.batch_id_supplier()}.json"
    job_ids = [j.job_id for j in jobs]
    try:
        request = CompactionJobDispatchRequest(table_id=table_id, batch_key=key, create_time=create_time)
        pending.write_batch(key, CompactionJobBatch.of(jobs).to_json())
    except Exception as e:
        raise PendingBatchError(
            f"the batch of {len(jobs)} compaction jobs of table {table_id} could not be written to {key}: {e}; "
            "its files stay unassigned for the next run",
            batch_key=key,
            job_ids=job_ids,
        ) from e
    try:
        pending.pending_queue.send(request.to_json())
    except Exception as e:
        raise PendingBatchError(
            f"the pending batch {key} of table {table_id} could not be sent to {pending.pending_queue.name}: {e}; "
            "its files stay unassigned for the next run",
            batch_key=key,
            job_ids=job_ids,
        ) from e
    try:
        send_transaction(
            pending.committer_queue,
            state_store,
            AssignJobIdsTransaction(requests=tuple(_assign_request(j) for j in jobs)),
        )
    except Exception as e:
        raise PendingBatchError(
            f"the assignment of pending batch {key} of table {table_id} could not be sent to "
            f"{pending.committer_queue.name}: {e}; the dispatcher will dead-letter the batch once it times out, and "
            "its files stay unassigned for the next run",
            batch_key=key,
            job_ids=job_ids,
        ) from e
    return key


# --- the operation -------------------------------------------------------------------------------------------------
def create_compaction_jobs(
    table: SleeperTable,
    queue: Queue,
    tracker: CompactionJobTracker,
    *,
    compact_all: bool = False,
    pending: PendingBatches | None = None,
    job_id_supplier: Callable[[], str] | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> CompactionJobCreationResult:
    """Creates compaction jobs for one table: pre-split, plan, limit, then per batch assign and send, or make it
    pending (see the module docs).

    Args:
        table: The table.
        queue: The compaction job queue (``CompactionJobQ``), for synchronous assignment.
        tracker: Where each job created with synchronous assignment is recorded.
        compact_all: Also put every unassigned leaf file the strategy left out into jobs (Sleeper's force-all).
        pending: Where batches go when the table assigns asynchronously (:func:`assigns_job_ids_async`). Without it
            the assignment is always committed here, whatever the table says (as the partition splitter commits
            without a committer sender): for callers with no pending queue or dispatcher.
        job_id_supplier: New job ids (random UUIDs by default).
        rng: Chooses the jobs kept when more are planned than the creation limit allows.
        clock: The time recorded in the tracker, or in a pending batch message.

    Returns:
        What was done.

    Raises:
        UnknownCompactionStrategyError: If the strategy property names an unknown class.
        InvalidCompactionStrategyError: If a strategy setting is below 1.
        CompactionJobSendError: If assigned jobs could not be sent to the queue.
        PendingBatchError: If a batch could not be made pending (asynchronous assignment).
        StateStoreError: If the pre-split is refused (twice).
    """
    state_store = table.state_store
    properties = table.properties
    split = pre_split_file_references(state_store)

    # The leaves' references as columns (found through the state's index by partition), planned as plan_jobs plans
    # them as objects.
    leaf_ids = [p.id for p in state_store.partitions() if p.is_leaf]
    columns = state_store.reference_columns(leaf_ids)
    planned = plan_jobs_from_columns(properties, leaf_ids, columns, compact_all=compact_all)
    running = len(state_store.job_ids())
    limited = limit_jobs(
        planned, properties.get_int(COMPACTION_JOB_CREATION_LIMIT), running, rng if rng is not None else random.Random()
    )
    factory = JobFactory.for_table(table, job_id_supplier)
    jobs = [factory.job(p) for p in limited]

    batch_size = max(properties.get_int(COMPACTION_JOB_SEND_BATCH_SIZE), 1)
    batches = [jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size)]
    created: list[CompactionJob] = []
    batch_keys: list[str] = []
    if pending is not None and assigns_job_ids_async(properties):
        for batch in batches:
            batch_keys.append(_send_pending_batch(state_store, pending, batch, clock()))
            created.extend(batch)
    else:
        for batch in batches:
            created.extend(_assign_and_send(state_store, queue, tracker, batch, clock))

    result = CompactionJobCreationResult(
        table_id=table.table_id,
        references_pre_split=split,
        jobs=tuple(created),
        jobs_per_partition=dict(Counter(j.partition_id for j in created)),
        jobs_over_limit=len(planned) - len(limited),
        jobs_lost_to_race=len(jobs) - len(created),
        compact_all=compact_all,
        pending_batches=tuple(batch_keys),
    )
    logger.info(
        "created %d compaction jobs for table %s (%d references pre-split, %d over the limit, %d lost to a race, "
        "%d pending batches awaiting their assignment)",
        result.jobs_created,
        table.table_id,
        split,
        result.jobs_over_limit,
        result.jobs_lost_to_race,
        len(batch_keys),
    )
    return result
