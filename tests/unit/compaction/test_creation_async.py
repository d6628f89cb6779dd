"""Compaction job creation with the assignment sent to the state store committer
(``sleeper.table.compaction.job.id.assignment.commit.async``): pending batches, the committer and the dispatcher, over
an in-memory state store and in-memory queues.

Each batch of jobs is written to a batch file, its pending batch message sent, then its ASSIGN_JOB_IDS commit
request; the dispatcher sends the jobs only once the assignment has landed. These tests check that nothing reaches the
compaction job queue before then, that redelivered requests never send a job twice, that racing creators never get
two jobs sent for one reference, and that the table's settings choose the synchronous path as documented.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker
from sleeper.compaction.creation import (
    CompactionJobCreationResult,
    PendingBatchError,
    PendingBatches,
    assigns_job_ids_async,
    create_compaction_jobs,
)
from sleeper.compaction.dispatch import BatchFileMissing, DispatchOutcome, DispatchResult, dispatch_pending_batch
from sleeper.core.jobs.compaction import CompactionJob, CompactionJobDispatchRequest
from sleeper.core.queue import Queue
from sleeper.statestore.committer import CommitStatus, apply_commit_requests
from tests.unit.compaction.test_creation import NOW, PREFIX, SCHEMA, TABLE_ID, Table, add, drain, make_table, ref
from tests.unit.core.statestore.builders import PartitionsBuilder

ASYNC = "sleeper.table.compaction.job.id.assignment.commit.async"
ASYNC_ENABLED = "sleeper.table.statestore.commit.async.enabled"


class Pipeline:
    """Job creation, the committer and the dispatcher of one table, over shared in-memory queues and batch files."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.seconds = 0.0
        self.queues = InMemoryQueues(clock=lambda: self.seconds)
        self.job_queue = self.queues.queue("CompactionJobQ")
        self.pending_queue = self.queues.queue("PendingCompactionJobBatchQ")
        self.dead_letters = self.queues.queue("PendingCompactionJobBatchDLQ")
        self.committer_queue = self.queues.queue("StateStoreCommitterQ.fifo", fifo=True)
        self.batch_files: dict[str, str] = {}
        self.tracker = InMemoryCompactionJobTracker()
        self.sent: list[CompactionJob] = []
        self._batch_ids = iter(range(1, 1_000_000))
        self._job_ids = iter(range(1, 1_000_000))

    def now(self) -> datetime:
        return NOW + timedelta(seconds=self.seconds)

    def pending(
        self, *, write_batch: Callable[[str, str], None] | None = None, committer: Queue | None = None
    ) -> PendingBatches:
        return PendingBatches(
            write_batch=write_batch if write_batch is not None else self.batch_files.__setitem__,
            pending_queue=self.pending_queue,
            committer_queue=committer if committer is not None else self.committer_queue,
            batch_id_supplier=lambda: f"batch-{next(self._batch_ids)}",
        )

    def creator(self) -> Table:
        """Another process running job creation on the same table (its own view of the state)."""
        return Table(backend=self.table.backend, properties=self.table.properties)

    def create(self, table: Table | None = None, *, compact_all: bool = False) -> CompactionJobCreationResult:
        return create_compaction_jobs(
            table if table is not None else self.table,
            self.job_queue,
            self.tracker,
            compact_all=compact_all,
            pending=self.pending(),
            job_id_supplier=lambda: f"job-{next(self._job_ids)}",
            rng=random.Random(1),
            clock=self.now,
        )

    def take(self, queue: Queue, limit: int | None = None) -> list[str]:
        """Receives and deletes the messages visible on a queue (up to ``limit``), in order."""
        bodies: list[str] = []
        while limit is None or len(bodies) < limit:
            batch = queue.receive(1)
            if not batch:
                break
            bodies.append(batch[0].body)
            queue.delete(batch[0].receipt_handle)
        return bodies

    def commit(self, bodies: list[str]) -> list[CommitStatus]:
        return [r.status for r in apply_commit_requests(bodies, lambda _: self.table.other_store())]

    def commit_all(self) -> list[CommitStatus]:
        return self.commit(self.take(self.committer_queue))

    def _read(self, key: str) -> str:
        if key not in self.batch_files:
            raise BatchFileMissing(key)
        return self.batch_files[key]

    def dispatch(self, body: str) -> DispatchResult:
        before = self.job_queue.approximate_counts().visible
        result = dispatch_pending_batch(
            body,
            table_by_id=lambda _: self.creator(),
            read_batch=self._read,
            delete_batch=self.batch_files.__delitem__,
            job_queue=self.job_queue,
            pending_queue=self.pending_queue,
            dead_letter_queue=self.dead_letters,
            tracker=self.tracker,
            clock=self.now,
        )
        self.sent += drain(self.job_queue)
        assert len(self.sent) >= before
        return result

    def dispatch_all(self) -> list[DispatchResult]:
        """Handles every pending batch message visible now (not those it returns with a delay)."""
        return [self.dispatch(body) for body in self.take(self.pending_queue)]

    def wait(self, seconds: float) -> None:
        self.seconds += seconds


def four_files_table(**props: str) -> Table:
    table = make_table(**props)
    add(table, *(ref(f"f{i}") for i in range(4)))
    return table


def two_leaves_table(**props: str) -> Table:
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions, **props)
    add(table, *(ref(f"l{i}", partition="L") for i in range(4)), *(ref(f"r{i}", partition="R") for i in range(4)))
    return table


def job_of_reference(store_table: Table) -> dict[tuple[str, str], str | None]:
    return {(r.partition_id, r.filename): r.job_id for r in store_table.other_store().file_references()}


def sent_per_reference(sent: list[CompactionJob]) -> Counter[tuple[str, str]]:
    return Counter((job.partition_id, name) for job in sent for name in job.input_files)


# --- the one rule --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, True),  # Sleeper's defaults: async commits enabled for transaction log tables, the property true
        ({ASYNC: "false"}, False),
        ({ASYNC_ENABLED: "false"}, False),
        ({ASYNC_ENABLED: "false", ASYNC: "true"}, False),
        ({"sleeper.table.statestore.classname": "S3StateStore"}, False),
        ({ASYNC_ENABLED: "true", ASYNC: "true"}, True),
    ],
)
def should_assign_through_the_committer_only_when_async_commits_are_enabled_and_the_property_is_true(
    props: dict[str, str], expected: bool
) -> None:
    assert assigns_job_ids_async(make_table(**props).properties) is expected


# --- the asynchronous path -----------------------------------------------------------------------------------------
def should_send_nothing_to_the_job_queue_until_the_assignment_lands_then_dispatch_each_job_once() -> None:
    # Given two leaves with four files each, sent in batches of one job
    table = two_leaves_table(**{"sleeper.table.compaction.job.send.batch.size": "1"})
    pipeline = Pipeline(table)

    # When jobs are created
    result = pipeline.create()

    # Then each batch is written and pending, its assignment is on the committer's queue, and nothing else happened
    assert [j.partition_id for j in result.jobs] == ["L", "R"]
    assert result.pending_batches == (f"{TABLE_ID}/compactions/batch-1.json", f"{TABLE_ID}/compactions/batch-2.json")
    assert sorted(pipeline.batch_files) == sorted(result.pending_batches)
    for key, job in zip(result.pending_batches, result.jobs, strict=True):
        assert json.loads(pipeline.batch_files[key]) == {"jobs": [job.to_dict()]}
    assert pipeline.job_queue.approximate_counts().visible == 0
    assert pipeline.tracker.jobs(TABLE_ID) == []
    assert set(job_of_reference(table).values()) == {None}
    commit_requests = [json.loads(b) for b in pipeline.take(pipeline.committer_queue)]
    assert [(r["tableId"], r["transactionType"]) for r in commit_requests] == [(TABLE_ID, "ASSIGN_JOB_IDS")] * 2
    assert [r["transaction"]["requests"][0]["jobId"] for r in commit_requests] == ["job-1", "job-2"]

    # When the dispatcher looks before the assignment has landed
    early = pipeline.dispatch_all()

    # Then each batch goes back to the pending queue, delayed, and still nothing is sent
    assert [r.outcome for r in early] == [DispatchOutcome.RETURNED] * 2
    assert pipeline.sent == [] and pipeline.tracker.jobs(TABLE_ID) == []
    assert pipeline.dispatch_all() == []  # delayed

    # When the committer applies the assignments, and the dispatcher looks again after the delay
    assert pipeline.commit([json.dumps(r) for r in commit_requests]) == [CommitStatus.COMMITTED] * 2
    pipeline.wait(30)
    late = pipeline.dispatch_all()

    # Then every job is sent once, tracked as created, and its batch file deleted
    assert [r.outcome for r in late] == [DispatchOutcome.SENT] * 2
    assert [r.batch_key for r in late] == list(result.pending_batches)
    assert pipeline.sent == list(result.jobs)
    assert sorted(j.job_id for j in pipeline.tracker.jobs(TABLE_ID)) == ["job-1", "job-2"]
    assert pipeline.batch_files == {}
    assert set(job_of_reference(table).values()) == {"job-1", "job-2"}


def should_not_send_a_job_twice_when_the_assignment_or_the_pending_batch_is_delivered_again() -> None:
    # Given a job created asynchronously, its assignment applied and its batch dispatched
    table = four_files_table()
    pipeline = Pipeline(table)
    (job,) = pipeline.create().jobs
    (commit_request,) = pipeline.take(pipeline.committer_queue)
    (pending_message,) = pipeline.take(pipeline.pending_queue)
    assert pipeline.commit([commit_request]) == [CommitStatus.COMMITTED]
    assert pipeline.dispatch(pending_message).outcome is DispatchOutcome.SENT
    assigned = job_of_reference(table)

    # When both are delivered again (SQS delivers at least once)
    again = pipeline.commit([commit_request])
    redispatched = pipeline.dispatch(pending_message)

    # Then the assignment changes nothing, the batch is known dispatched, and the job was sent once
    assert again[0] in (CommitStatus.REJECTED, CommitStatus.DUPLICATE)
    assert job_of_reference(table) == assigned
    assert redispatched.outcome is DispatchOutcome.ALREADY_DISPATCHED
    assert pipeline.sent == [job]
    assert [j.job_id for j in pipeline.tracker.jobs(TABLE_ID)] == [job.job_id]
    assert pipeline.dead_letters.approximate_counts().visible == 0


def should_dead_letter_the_batch_whose_assignment_the_committer_refused_and_send_none_of_it() -> None:
    # Given two creators that planned the same files before either assignment landed
    table = four_files_table()
    pipeline = Pipeline(table)
    (first,) = pipeline.create(pipeline.creator()).jobs
    (second,) = pipeline.create(pipeline.creator()).jobs

    # When the committer applies both assignments, in order
    statuses = pipeline.commit_all()

    # Then the second is refused: its files are assigned to the first job
    assert statuses == [CommitStatus.COMMITTED, CommitStatus.REJECTED]
    assert set(job_of_reference(table).values()) == {first.job_id}

    # And the dispatcher sends the first batch and dead-letters the second, sending none of its jobs
    results = pipeline.dispatch_all()
    assert [r.outcome for r in results] == [DispatchOutcome.SENT, DispatchOutcome.DEAD_LETTERED]
    assert f"assigned to job {first.job_id}" in results[1].reason
    assert pipeline.sent == [first]
    assert [j.job_id for j in pipeline.tracker.jobs(TABLE_ID)] == [first.job_id]
    assert pipeline.dead_letters.approximate_counts().visible == 1
    assert second.job_id not in set(job_of_reference(table).values())


_STEPS = st.lists(st.sampled_from(["create A", "create B", "commit one", "dispatch one", "wait"]), max_size=14)


@settings(max_examples=60, deadline=None)
@given(steps=_STEPS, two_leaves=st.booleans(), compact_all=st.booleans())
def should_never_send_two_jobs_for_one_reference_however_two_creators_interleave(
    steps: list[str], two_leaves: bool, compact_all: bool
) -> None:
    # Given a table and two creators, each with its own view of the state
    table = two_leaves_table() if two_leaves else four_files_table()
    pipeline = Pipeline(table)
    creators = {"create A": pipeline.creator(), "create B": pipeline.creator()}

    # When creation, the committer and the dispatcher run interleaved as drawn, then everything settles
    for step in steps:
        if step in creators:
            creators[step].state_store.refresh()
            pipeline.create(creators[step], compact_all=compact_all)
        elif step == "commit one":
            pipeline.commit(pipeline.take(pipeline.committer_queue, 1))
        elif step == "dispatch one":
            for body in pipeline.take(pipeline.pending_queue, 1):
                pipeline.dispatch(body)
        else:
            pipeline.wait(30)
    pipeline.commit_all()
    # A batch whose assignment landed after its send timeout was dead-lettered; the operator sends it back from the
    # dead-letter queue (`sleeper dead-letters retry`), which then sends its jobs
    pipeline.dead_letters.redrive_dead_letters("PendingCompactionJobBatchQ")
    for _ in range(3):
        pipeline.wait(30)
        pipeline.dispatch_all()

    # Then no reference is in two jobs sent, and every job sent holds its files
    assert max(sent_per_reference(pipeline.sent).values(), default=0) <= 1
    assigned = job_of_reference(table)
    for job in pipeline.sent:
        assert {assigned[job.partition_id, name] for name in job.input_files} == {job.job_id}
    # And every assigned reference's job was sent (no batch is left waiting once all settled)
    assert {j for j in assigned.values() if j is not None} == {job.job_id for job in pipeline.sent}
    assert len({j.job_id for j in pipeline.sent}) == len(pipeline.sent)


def should_leave_the_files_unassigned_and_send_nothing_when_the_batch_file_cannot_be_written() -> None:
    # Given a data bucket that refuses writes
    table = four_files_table()
    pipeline = Pipeline(table)

    def refuse(key: str, text: str) -> None:
        raise PermissionError("access denied")

    # When / Then
    with pytest.raises(PendingBatchError) as raised:
        create_compaction_jobs(
            table, pipeline.job_queue, pipeline.tracker, pending=pipeline.pending(write_batch=refuse)
        )
    assert raised.value.batch_key.startswith(f"{TABLE_ID}/compactions/")
    assert len(raised.value.job_ids) == 1
    assert pipeline.pending_queue.approximate_counts().visible == 0
    assert pipeline.committer_queue.approximate_counts().visible == 0
    assert pipeline.job_queue.approximate_counts().visible == 0
    assert set(job_of_reference(table).values()) == {None}


class _BrokenCommitterQueue:
    name = "StateStoreCommitterQ.fifo"

    def send(self, *args: object, **kwargs: object) -> str:
        raise ConnectionError("committer queue unreachable")


def should_dead_letter_a_pending_batch_whose_assignment_was_never_sent_once_it_times_out() -> None:
    # Given creation that wrote its batch and sent the pending message, but could not send the assignment
    table = four_files_table(**{"sleeper.table.compaction.job.send.timeout.seconds": "90"})
    pipeline = Pipeline(table)
    with pytest.raises(PendingBatchError, match="could not be sent to StateStoreCommitterQ.fifo"):
        create_compaction_jobs(
            table,
            pipeline.job_queue,
            pipeline.tracker,
            pending=pipeline.pending(committer=_BrokenCommitterQueue()),  # type: ignore[arg-type]
            clock=pipeline.now,
        )
    (body,) = pipeline.take(pipeline.pending_queue)
    assert CompactionJobDispatchRequest.from_json(body).batch_key in pipeline.batch_files

    # When the dispatcher checks until the send timeout has passed
    outcomes = [pipeline.dispatch(body).outcome]
    pipeline.wait(120)
    outcomes.append(pipeline.dispatch(body).outcome)

    # Then it waited, then dead-lettered the batch; nothing was sent and the files are free for the next run
    assert outcomes == [DispatchOutcome.RETURNED, DispatchOutcome.DEAD_LETTERED]
    assert pipeline.sent == []
    assert set(job_of_reference(table).values()) == {None}
    assert pipeline.create().jobs_created == 1


# --- the synchronous path ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("props", [{ASYNC: "false"}, {ASYNC_ENABLED: "false"}], ids=["property false", "async off"])
def should_assign_and_send_directly_when_the_table_does_not_assign_through_the_committer(props: dict[str, str]) -> None:
    # Given a table that commits the assignment itself
    table = four_files_table(**props)
    pipeline = Pipeline(table)

    # When jobs are created, with pending batches available
    result = pipeline.create()

    # Then the files are assigned and the job sent and tracked at once; nothing is pending
    (job,) = result.jobs
    assert result.pending_batches == ()
    assert set(job_of_reference(table).values()) == {job.job_id}
    assert drain(pipeline.job_queue) == [job]
    assert [j.job_id for j in pipeline.tracker.jobs(TABLE_ID)] == [job.job_id]
    assert pipeline.batch_files == {}
    assert pipeline.pending_queue.approximate_counts().visible == 0
    assert pipeline.committer_queue.approximate_counts().visible == 0


def should_assign_directly_when_no_pending_batches_are_given() -> None:
    # Given a table whose settings ask for asynchronous assignment, and a caller with no pending batch queue
    table = four_files_table()
    assert assigns_job_ids_async(table.properties)
    queue = InMemoryQueues().queue("CompactionJobQ")

    # When
    result = create_compaction_jobs(table, queue, InMemoryCompactionJobTracker(), clock=lambda: NOW)

    # Then the assignment is committed here, as documented
    (job,) = result.jobs
    assert result.pending_batches == ()
    assert drain(queue) == [job]
    assert {n for (_, n), j in job_of_reference(table).items() if j == job.job_id} == {
        f"{PREFIX}/f{i}.parquet" for i in range(4)
    }
