"""Compaction job creation: pre-split, plan, limit, assign then send, track (in-memory state store and queue)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker
from sleeper.compaction.creation import (
    CompactionJobCreationResult,
    CompactionJobSendError,
    UnknownCompactionStrategyError,
    compaction_output_file,
    create_compaction_jobs,
    limit_jobs,
    pre_split_file_references,
)
from sleeper.compaction.strategies import BASIC_STRATEGY, PlannedJob
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.partition import Partition
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import OutgoingMessage, Queue
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    SplitFileReferenceRequest,
    SplitFileReferencesTransaction,
)
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.statestore.store import StateStore
from tests.reliability_report import Reliability
from tests.unit.core.statestore.builders import PartitionsBuilder

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
TABLE_ID = "table-1"
PREFIX = "file:///data/table-1"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class Table:
    """A table over an in-memory state store (implements ``sleeper.statestore.tables.SleeperTable``)."""

    backend: InMemoryStateStoreBackend
    properties: TableProperties
    table_id: str = TABLE_ID
    schema: Schema = SCHEMA
    data_prefix: str = PREFIX
    state_store: StateStore = field(init=False)

    def __post_init__(self) -> None:
        self.state_store = self.other_store()

    def other_store(self) -> StateStore:
        """Another process's view of the same table."""
        return StateStore(schema=self.schema, table_id=self.table_id, backend=self.backend)


def make_table(partitions: Sequence[Partition] | None = None, /, **props: str) -> Table:
    table = Table(backend=InMemoryStateStoreBackend(), properties=TableProperties(InstanceProperties(), props))
    table.state_store.initialise(partitions)
    return table


def add(table: Table, *refs: FileReference) -> None:
    table.state_store.add_files(refs)


def ref(name: str, rows: int = 100, partition: str = "root", *, job_id: str | None = None) -> FileReference:
    return FileReference(
        filename=f"{PREFIX}/{name}.parquet", partition_id=partition, number_of_rows=rows, job_id=job_id
    )


def job_queue() -> Queue:
    return InMemoryQueues().queue("CompactionJobQ")


def drain(queue: Queue) -> list[CompactionJob]:
    out: list[CompactionJob] = []
    while batch := queue.receive(10):
        out.extend(CompactionJob.from_json(m.body) for m in batch)
        for m in batch:
            queue.delete(m.receipt_handle)
    return out


def ids() -> Callable[[], str]:
    counter = iter(range(1, 1_000_000))
    return lambda: f"job-{next(counter)}"


def run(
    table: Table,
    queue: Queue,
    tracker: InMemoryCompactionJobTracker | None = None,
    *,
    compact_all: bool = False,
    job_id_supplier: Callable[[], str] | None = None,
) -> CompactionJobCreationResult:
    return create_compaction_jobs(
        table,
        queue,
        tracker if tracker is not None else InMemoryCompactionJobTracker(),
        compact_all=compact_all,
        job_id_supplier=job_id_supplier,
        rng=random.Random(1),
        clock=lambda: NOW,
    )


def assigned_jobs(store: StateStore) -> dict[str, str | None]:
    return {f"{r.partition_id}:{r.filename.rsplit('/', 1)[-1]}": r.job_id for r in store.file_references()}


# --- creating and sending ------------------------------------------------------------------------------------------
def should_create_a_job_assign_its_files_send_it_and_track_it() -> None:
    # Given four equal files on the root
    table = make_table()
    add(table, *(ref(f"f{i}") for i in range(4)))
    queue = job_queue()
    tracker = InMemoryCompactionJobTracker()

    # When
    result = run(table, queue, tracker, job_id_supplier=ids())

    # Then one job compacts them all
    assert result.jobs_created == 1
    job = result.jobs[0]
    assert job.job_id == "job-1"
    assert job.partition_id == "root"
    assert sorted(job.input_files) == sorted(f"{PREFIX}/f{i}.parquet" for i in range(4))
    # its files are assigned to it
    assert {r.job_id for r in table.other_store().file_references()} == {"job-1"}
    # its JSON on the queue parses back to the same job
    assert drain(queue) == [job]
    # and the tracker knows it was created
    status = tracker.job("job-1")
    assert status is not None
    assert status.status == CompactionJobStatusType.CREATED
    assert (status.partition_id, status.input_files_count, status.create_time) == ("root", 4, NOW)
    assert result.jobs_per_partition == {"root": 1}


def should_name_the_output_file_after_the_job_under_the_partition() -> None:
    # Given
    table = make_table()
    add(table, *(ref(f"f{i}") for i in range(4)))

    # When
    result = run(table, job_queue(), job_id_supplier=ids())

    # Then
    assert result.jobs[0].output_file == f"{PREFIX}/data/partition_root/job-1.parquet"
    assert compaction_output_file(PREFIX + "/", "p", "j") == f"{PREFIX}/data/partition_p/j.parquet"


def should_copy_the_tables_filters_and_aggregations_into_the_job() -> None:
    # Given
    table = make_table(**{"sleeper.table.filters": "ageOff(value,1000)", "sleeper.table.aggregations": "sum(value)"})
    add(table, *(ref(f"f{i}") for i in range(4)))
    queue = job_queue()

    # When
    run(table, queue)

    # Then
    [job] = drain(queue)
    assert (job.filter_config, job.aggregation_config) == ("ageOff(value,1000)", "sum(value)")
    assert job.table_id == TABLE_ID


def should_create_nothing_when_no_files_meet_the_strategy() -> None:
    # Given one file alone
    table = make_table()
    add(table, ref("alone"))
    queue = job_queue()

    # When
    result = run(table, queue)

    # Then
    assert result.jobs == ()
    assert drain(queue) == []
    assert assigned_jobs(table.other_store()) == {"root:alone.parquet": None}


def should_create_no_duplicate_jobs_when_run_again() -> None:
    # Given a run already created jobs for every file
    table = make_table(**{"sleeper.table.compaction.files.batch.size": "4"})
    add(table, *(ref(f"f{i}") for i in range(12)))
    queue = job_queue()
    first = run(table, queue)

    # When
    second = run(table, queue)

    # Then
    assert first.jobs_created == 3
    assert second.jobs_created == 0
    assert len(drain(queue)) == 3


def should_use_the_strategy_the_table_names() -> None:
    # Given the basic strategy with batches of 2, and 5 files the size ratio strategy would put in one job
    table = make_table(
        **{"sleeper.table.compaction.strategy.class": BASIC_STRATEGY, "sleeper.table.compaction.files.batch.size": "2"}
    )
    add(table, *(ref(f"f{i}", rows=i + 1) for i in range(5)))

    # When
    result = run(table, job_queue())

    # Then two full batches; the largest file waits
    assert [len(j.input_files) for j in result.jobs] == [2, 2]
    assert assigned_jobs(table.other_store())["root:f4.parquet"] is None


def should_refuse_an_unknown_strategy_before_assigning_anything() -> None:
    # Given
    table = make_table(**{"sleeper.table.compaction.strategy.class": "com.example.Mine"})
    add(table, *(ref(f"f{i}") for i in range(4)))
    queue = job_queue()

    # When / Then
    with pytest.raises(UnknownCompactionStrategyError):
        run(table, queue)
    assert set(assigned_jobs(table.other_store()).values()) == {None}
    assert drain(queue) == []


# --- pre-split -----------------------------------------------------------------------------------------------------
def should_pre_split_references_one_level_per_run() -> None:
    # Given root -> L, R and L -> LL, LR, with a file of 1000 rows on the root
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).split("L", "LL", "LR", 50).partitions()
    table = make_table(partitions)
    add(table, ref("big", rows=1000))
    queue = job_queue()

    # When the first run moves the reference to root's children
    first = run(table, queue)

    # Then
    refs = {r.partition_id: r for r in table.other_store().file_references()}
    assert first.references_pre_split == 1
    assert sorted(refs) == ["L", "R"]
    assert refs["L"].number_of_rows == 500
    assert refs["L"].count_approximate
    assert not refs["L"].only_contains_data_for_this_partition

    # When the second run moves L's reference down again
    second = run(table, queue)

    # Then
    refs = {r.partition_id: r for r in table.other_store().file_references()}
    assert second.references_pre_split == 1
    assert sorted(refs) == ["LL", "LR", "R"]
    assert refs["LL"].number_of_rows == 250

    # And a third run has nothing left to split
    assert run(table, queue).references_pre_split == 0
    assert drain(queue) == []


def should_not_pre_split_an_assigned_reference() -> None:
    # Given a reference on the (now split) root, assigned to a job before the split
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions)
    add(table, ref("busy", rows=10, job_id="running"), ref("free", rows=10))

    # When
    result = run(table, job_queue())

    # Then only the unassigned reference moved down
    assert result.references_pre_split == 1
    assert sorted(assigned_jobs(table.other_store())) == ["L:free.parquet", "R:free.parquet", "root:busy.parquet"]


def should_compact_pre_split_references_with_files_already_on_the_leaf() -> None:
    # Given a leaf with three files, and a file on the root about to be split onto it
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions)
    add(table, ref("top", rows=200), *(ref(f"l{i}", rows=100, partition="L") for i in range(3)))

    # When
    result = run(table, job_queue())

    # Then the half of "top" on L (100 rows) joins L's job
    assert result.references_pre_split == 1
    assert result.jobs_per_partition == {"L": 1}
    assert f"{PREFIX}/top.parquet" in result.jobs[0].input_files


def should_plan_the_pre_split_again_when_another_creator_split_first() -> None:
    # Given another creator splits the root's reference just before this run's split lands
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions)
    add(table, ref("big", rows=1000))
    top = table.other_store().file_references()[0]

    def racer() -> None:
        request = SplitFileReferenceRequest(old_reference=top, new_references=(top.split_to("L"), top.split_to("R")))
        table.other_store().commit(SplitFileReferencesTransaction(requests=(request,)))

    table.backend.transaction_log(TABLE_ID, LogType.FILES).at_start_of_next_add(racer)

    # When
    split = pre_split_file_references(table.state_store)

    # Then this run finds nothing left to split, and the racer's split stands
    assert split == 0
    assert sorted(r.partition_id for r in table.other_store().file_references()) == ["L", "R"]


def should_leave_a_reference_whose_file_is_already_on_a_child() -> None:
    # Given a file referenced on the split root and on one of its children
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions)
    table.state_store.add_files(
        [
            FileReference(filename=f"{PREFIX}/odd.parquet", partition_id="root", number_of_rows=10),
            FileReference(filename=f"{PREFIX}/odd.parquet", partition_id="L", number_of_rows=5),
            ref("fine", rows=10),
        ]
    )

    # When
    split = pre_split_file_references(table.state_store)

    # Then only the other file moves down
    assert split == 1
    assert sorted(assigned_jobs(table.other_store())) == [
        "L:fine.parquet",
        "L:odd.parquet",
        "R:fine.parquet",
        "root:odd.parquet",
    ]


# --- limits --------------------------------------------------------------------------------------------------------
def five_leaves() -> list[Partition]:
    builder = PartitionsBuilder(SCHEMA).split("root", "a", "rest1", 10)
    builder.split("rest1", "b", "rest2", 20).split("rest2", "c", "rest3", 30).split("rest3", "d", "e", 40)
    return builder.partitions()


def should_limit_the_jobs_created_per_run() -> None:
    # Given 5 leaves each with enough files for one job, and a limit of 2
    table = make_table(five_leaves(), **{"sleeper.table.compaction.job.creation.limit": "2"})
    for leaf in "abcde":
        add(table, *(ref(f"{leaf}{i}", partition=leaf) for i in range(4)))
    queue = job_queue()

    # When
    result = run(table, queue)

    # Then
    assert result.jobs_created == 2
    assert result.jobs_over_limit == 3
    assert len(drain(queue)) == 2
    assigned = [v for v in assigned_jobs(table.other_store()).values() if v is not None]
    assert len(assigned) == 8


def should_count_running_jobs_against_the_limit() -> None:
    # Given a limit of 3 and two jobs already holding files
    table = make_table(five_leaves(), **{"sleeper.table.compaction.job.creation.limit": "3"})
    add(table, ref("x", partition="e", job_id="running-1"), ref("y", partition="e", job_id="running-2"))
    for leaf in "abcd":
        add(table, *(ref(f"{leaf}{i}", partition=leaf) for i in range(4)))

    # When
    result = run(table, job_queue())

    # Then only one more job
    assert result.jobs_created == 1
    assert result.jobs_over_limit == 3


def should_limit_jobs_per_partition_by_the_running_jobs() -> None:
    # Given at most 2 jobs per partition, one running, and files for 3 jobs
    table = make_table(
        **{
            "sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition": "2",
            "sleeper.table.compaction.files.batch.size": "4",
        }
    )
    add(table, ref("busy", job_id="running"), *(ref(f"f{i}") for i in range(12)))

    # When
    result = run(table, job_queue())

    # Then
    assert result.jobs_created == 1


@settings(max_examples=50, deadline=None)
@given(
    planned=st.integers(min_value=0, max_value=30),
    limit=st.integers(min_value=0, max_value=30),
    running=st.integers(min_value=0, max_value=10),
    seed=st.integers(),
)
def should_keep_at_most_the_limit_of_distinct_planned_jobs(planned: int, limit: int, running: int, seed: int) -> None:
    # Given
    jobs = [
        PlannedJob(partition_id="p", files=(FileReference(filename=f"f{i}", partition_id="p", number_of_rows=1),))
        for i in range(planned)
    ]

    # When
    kept = limit_jobs(jobs, limit, running, random.Random(seed))

    # Then
    assert len(kept) == min(planned, max(limit - running, 0))
    assert len({j.files[0].filename for j in kept}) == len(kept)
    assert [jobs.index(j) for j in kept] == sorted(jobs.index(j) for j in kept)


# --- assign, then send ---------------------------------------------------------------------------------------------
class CheckingQueue:
    """Wraps a queue; on each send, records whether the job's files were already assigned to it in the store."""

    def __init__(self, inner: Queue, store: StateStore) -> None:
        self.inner = inner
        self.store = store
        self.assigned_at_send: list[bool] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        self.store.refresh()
        refs = self.store.file_references()
        for message in messages:
            body = message if isinstance(message, str) else message.body
            job = CompactionJob.from_json(body)
            mine = {r.filename for r in refs if r.job_id == job.job_id and r.partition_id == job.partition_id}
            self.assigned_at_send.append(mine == set(job.input_files))
        return self.inner.send_batch(messages)


def should_assign_files_before_sending_each_job() -> None:
    # Given 25 jobs' worth of files, sent in assignment batches of 10
    table = make_table(
        **{
            "sleeper.table.compaction.files.batch.size": "2",
            "sleeper.table.compaction.strategy.sizeratio.ratio": "1",
            "sleeper.table.compaction.job.send.batch.size": "10",
        }
    )
    add(table, *(ref(f"f{i:02}") for i in range(50)))
    queue = CheckingQueue(job_queue(), table.other_store())

    # When
    result = create_compaction_jobs(table, queue, InMemoryCompactionJobTracker())  # type: ignore[arg-type]

    # Then every job's files were assigned in the state store before it was sent
    assert result.jobs_created == 25
    assert queue.assigned_at_send == [True] * 25
    file_log = table.backend.transaction_log(TABLE_ID, LogType.FILES)
    assert [e.transaction_type.name for e in file_log.entries()][-3:] == ["ASSIGN_JOB_IDS"] * 3


def claim(table: Table, job_id: str, *names: str) -> None:
    """Another creator assigns files of the root to its own job."""
    other = table.other_store()
    other.commit(
        AssignJobIdsTransaction(
            requests=(
                AssignJobIdRequest(
                    job_id=job_id, partition_id="root", filenames=tuple(f"{PREFIX}/{n}.parquet" for n in names)
                ),
            )
        )
    )


def should_send_nothing_for_a_job_whose_files_a_racing_creator_assigned(reliability: Reliability) -> None:
    # Given another creator assigns one of the files just before this run's assignment lands
    table = make_table()
    add(table, *(ref(f"f{i}") for i in range(4)))
    log = table.backend.transaction_log(TABLE_ID, LogType.FILES)
    log.at_start_of_next_add(lambda: claim(table, "racer", "f2"))
    queue = job_queue()
    tracker = InMemoryCompactionJobTracker()

    # When
    started = time.perf_counter()
    result = run(table, queue, tracker)
    resolved_s = time.perf_counter() - started

    # Then nothing is sent or tracked, and the racer keeps its file
    jobs_by_file: dict[str, set[str]] = {}
    for entry in log.entries():
        if entry.transaction_type.name == "ASSIGN_JOB_IDS" and entry.body is not None:
            assignment = table.state_store.serde.from_json(entry.transaction_type, entry.body)
            assert isinstance(assignment, AssignJobIdsTransaction)
            for request in assignment.requests:
                for filename in request.filenames:
                    jobs_by_file.setdefault(filename, set()).add(request.job_id)
    reliability.record(
        "A5",
        case="two job creators assign overlapping files (one file claimed by a racer first)",
        creators=2,
        losing_jobs=result.jobs_lost_to_race,
        losing_jobs_dispatched=queue.approximate_counts().visible,
        losing_jobs_tracked=len(tracker.jobs(TABLE_ID)),
        files_in_two_jobs=sum(len(jobs) > 1 for jobs in jobs_by_file.values()),
        max_jobs_per_file=max((len(jobs) for jobs in jobs_by_file.values()), default=0),
        time_to_resolve_s=round(resolved_s, 4),
    )
    assert result.jobs_created == 0
    assert result.jobs_lost_to_race == 1
    assert drain(queue) == []
    assert tracker.jobs(TABLE_ID) == []
    assert set(assigned_jobs(table.other_store()).values()) == {None, "racer"}


def should_still_send_the_jobs_a_racing_creator_did_not_touch() -> None:
    # Given two leaves with a job each, and a racer claiming a file of one of them
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions)
    add(table, *(ref(f"l{i}", partition="L") for i in range(4)), *(ref(f"r{i}", partition="R") for i in range(4)))

    def racer() -> None:
        table.other_store().commit(
            AssignJobIdsTransaction(
                requests=(AssignJobIdRequest(job_id="racer", partition_id="R", filenames=(f"{PREFIX}/r0.parquet",)),)
            )
        )

    table.backend.transaction_log(TABLE_ID, LogType.FILES).at_start_of_next_add(racer)
    queue = job_queue()

    # When
    result = run(table, queue)

    # Then the job on L is assigned and sent; the one on R is dropped
    assert [j.partition_id for j in result.jobs] == ["L"]
    assert result.jobs_lost_to_race == 1
    assert drain(queue) == list(result.jobs)
    jobs = assigned_jobs(table.other_store())
    assert {jobs[f"L:l{i}.parquet"] for i in range(4)} == {result.jobs[0].job_id}
    assert {jobs[f"R:r{i}.parquet"] for i in range(1, 4)} == {None}


class BrokenQueue:
    name = "CompactionJobQ"

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        raise ConnectionError("queue unreachable")


def should_report_jobs_assigned_but_not_sent() -> None:
    # Given a queue that cannot be reached
    table = make_table()
    add(table, *(ref(f"f{i}") for i in range(4)))
    tracker = InMemoryCompactionJobTracker()

    # When / Then
    with pytest.raises(CompactionJobSendError) as raised:
        create_compaction_jobs(table, BrokenQueue(), tracker, job_id_supplier=ids())  # type: ignore[arg-type]
    assert raised.value.unsent_job_ids == ("job-1",)
    assert tracker.jobs(TABLE_ID) == []


# --- compact all ---------------------------------------------------------------------------------------------------
def should_compact_every_leaf_file_when_compacting_all() -> None:
    # Given a lone file on one leaf and files the strategy will not compact on the other
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 100).partitions()
    table = make_table(partitions, **{"sleeper.table.compaction.files.batch.size": "3"})
    add(table, ref("lone", partition="L"), *(ref(f"r{i}", rows=10**i, partition="R") for i in range(5)))
    queue = job_queue()

    # When
    result = run(table, queue, compact_all=True)

    # Then every reference is in exactly one job of at most 3 files
    assert result.compact_all
    sent = drain(queue)
    assert sorted(f for j in sent for f in j.input_files) == sorted(
        r.filename for r in table.other_store().file_references()
    )
    assert all(len(j.input_files) <= 3 for j in sent)
    assert result.jobs_per_partition == {"L": 1, "R": 2}
    assert None not in set(assigned_jobs(table.other_store()).values())


def should_compact_nothing_extra_without_compact_all() -> None:
    # Given the same lone file
    table = make_table()
    add(table, ref("lone"))

    # When
    result = run(table, job_queue(), compact_all=False)

    # Then
    assert result.jobs_created == 0
    assert result.to_dict()["jobsCreated"] == 0
