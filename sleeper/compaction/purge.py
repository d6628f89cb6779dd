"""Purging a table's pending row deletes: compacting the files that still hold rows a delete hides, and no other.

A row delete (``sleeper.core.statestore.deletes``) hides rows at read time until compaction removes them. A purge
forces that now, in the calling process and on either runtime: it moves references on non-leaf partitions down to the
leaves (the pre-split job creation does), then on each leaf partition makes one job of the unassigned references there
of files in a pending delete's set, assigns it (ASSIGN_JOB_IDS), runs it (the job applies the deletes of its inputs as
every compaction does) and commits it synchronously, with the deletes it applied. A file in no delete's set is left as
it is: it holds no row a delete hides, and the job's output joins no set, as it applied every delete of its inputs. It
repeats while files hold deleted rows and jobs can be made, at most ``max_rounds`` times. A file assigned to a job
already running is left to that job (its output joins the delete's set if it did not apply it, and the next purge
takes it).

:func:`deletes_left` reports what is left: each pending delete with the referenced files it still hides rows of (those
cost at read time) and the unreferenced ones awaiting the garbage collector (which hold the deleted rows on storage
until it deletes them; a delete is gone from the state once its last file is).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sleeper.compaction.commit import CommitMode, commit_job
from sleeper.compaction.creation import JobFactory, pre_split_file_references
from sleeper.compaction.dispatch import record_created
from sleeper.compaction.execution import run_compaction
from sleeper.compaction.strategies import PlannedJob
from sleeper.core.jobs import CompactionJob
from sleeper.core.statestore import StateStoreError
from sleeper.core.statestore.transactions import AssignJobIdRequest, AssignJobIdsTransaction
from sleeper.core.trackers import CompactionJobTracker
from sleeper.io import FileSystemOptions
from sleeper.statestore import SleeperTable, StateStore

__all__ = ["DeleteLeft", "PurgeResult", "deletes_left", "purge_table"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeleteLeft:
    """A pending delete and the files it lists.

    Attributes:
        number: The files log transaction it was committed at.
        filter: Its filter text.
        files_with_rows: Referenced files whose matching rows it hides (read cost; a purge compacts them).
        files_awaiting_gc: Files no longer referenced that still hold the rows on storage until garbage collected.
    """

    number: int
    filter: str
    files_with_rows: int
    files_awaiting_gc: int

    def to_dict(self) -> dict[str, object]:
        """As JSON."""
        return {
            "transaction": self.number,
            "filter": self.filter,
            "filesWithRows": self.files_with_rows,
            "filesAwaitingGc": self.files_awaiting_gc,
        }


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What a purge did and what is left.

    Attributes:
        rounds: The rounds of job creation run.
        jobs: The ids of the compaction jobs run.
        left: The pending deletes still listing files (:func:`deletes_left`); none with rows once done.
    """

    rounds: int
    jobs: tuple[str, ...]
    left: tuple[DeleteLeft, ...] = field(default=())

    @property
    def done(self) -> bool:
        """Whether no referenced file holds a deleted row: reads pay nothing for the deletes any more."""
        return all(d.files_with_rows == 0 for d in self.left)

    def to_dict(self) -> dict[str, object]:
        """As JSON."""
        return {
            "rounds": self.rounds,
            "jobs": list(self.jobs),
            "done": self.done,
            "pendingDeletes": [d.to_dict() for d in self.left],
        }


def deletes_left(store: StateStore) -> tuple[DeleteLeft, ...]:
    """Every pending delete of a table with the files it still lists, referenced or awaiting GC (brought up to
    date first)."""
    store.refresh()
    deletes = store.pending_deletes()
    if not deletes:
        return ()
    listed = frozenset().union(*(d.files for d in deletes))
    referenced = {f.filename for f in store.files_state().files_named(listed) if f.references}
    return tuple(
        DeleteLeft(
            number=d.number,
            filter=d.filter,
            files_with_rows=len(d.files & referenced),
            files_awaiting_gc=len(d.files - referenced),
        )
        for d in deletes
    )


def purge_table(
    table: SleeperTable,
    tracker: CompactionJobTracker,
    *,
    options: FileSystemOptions | None = None,
    max_rounds: int = 10,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> PurgeResult:
    """Compacts the files of a table in a pending delete's set, and no other (see the module docs).

    Raises:
        StateStoreError: If a commit is refused for another reason than losing a file to another job.
        IteratorLoadError, MissingFileError, ...: As a compaction run raises them.
    """
    store = table.state_store
    run: list[str] = []
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        holding = _files_with_deleted_rows(store)
        if not holding:
            break
        while pre_split_file_references(store):
            pass
        jobs = _assigned_jobs(table, holding)
        if not jobs:
            break  # every such file is assigned to a running job
        record_created(tracker, jobs, clock())
        for job in jobs:
            run.append(job.job_id)
            job_run_id = str(uuid.uuid4())
            result = run_compaction(job, table, options=options, run_id=job_run_id)
            commit_job(
                job,
                table,
                rows_written=result.rows_written,
                task_id=None,
                job_run_id=job_run_id,
                tracker=tracker,
                mode=CommitMode.SYNC,
                clock=clock,
                options=options,
                applied_deletes=result.applied_deletes,
            )
    return PurgeResult(rounds=rounds, jobs=tuple(run), left=deletes_left(store))


def _files_with_deleted_rows(store: StateStore) -> set[str]:
    store.refresh()
    deletes = store.pending_deletes()
    if not deletes:
        return set()
    listed = frozenset().union(*(d.files for d in deletes))
    return {f.filename for f in store.files_state().files_named(listed) if f.references}


def _assigned_jobs(table: SleeperTable, holding: set[str]) -> list[CompactionJob]:
    store = table.state_store
    leaf_ids = [p.id for p in store.partitions() if p.is_leaf]
    planned = []
    for partition_id, references in store.references_by_partition(leaf_ids).items():
        inputs = tuple(r for r in references if r.job_id is None and r.filename in holding)
        if inputs:
            planned.append(PlannedJob(partition_id=partition_id, files=inputs))
    factory = JobFactory.for_table(table)
    assigned = []
    for job in (factory.job(p) for p in planned):
        request = AssignJobIdRequest(job_id=job.job_id, partition_id=job.partition_id, filenames=job.input_files)
        try:
            store.commit(AssignJobIdsTransaction(requests=(request,)))
        except StateStoreError as e:
            _LOG.info("purge job %s lost its files to another job: %s", job.job_id, e)
            continue
        assigned.append(job)
    return assigned
