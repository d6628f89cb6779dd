"""Finding leaf partitions to split: known rows against the threshold, and the files a job names."""

from __future__ import annotations

from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.partition import Partition
from sleeper.core.properties import InstanceProperties
from sleeper.core.range import Region
from sleeper.core.statestore.references import FileReference
from sleeper.splitting import (
    PARTITION_SPLITTING_JOB_QUEUE,
    check_leaf_partitions,
    find_partitions_to_split,
    run_find_partitions_to_split,
    send_split_jobs,
    split_jobs,
)
from tests.unit.splitting.splitting_fixtures import LONG_KEY, FakeInstance, new_table

ROOT = Partition(id="root", parent_id=None, region=Region.whole(LONG_KEY))


def _ref(name: str, rows: int, *, partition_id: str = "root", shared: bool = False, approx: bool = False):
    return FileReference(
        filename=f"s3a://b/t/data/partition_{partition_id}/{name}.parquet",
        partition_id=partition_id,
        number_of_rows=rows,
        only_contains_data_for_this_partition=not shared,
        count_approximate=approx,
    )


def should_split_a_leaf_once_its_known_rows_reach_the_threshold() -> None:
    # Given
    below = [_ref("a", 600), _ref("b", 399)]
    at = [*below, _ref("c", 1)]

    # When
    jobs_below = split_jobs("t", [ROOT], below, threshold=1000, max_files=50)
    jobs_at = split_jobs("t", [ROOT], at, threshold=1000, max_files=50)

    # Then
    assert jobs_below == []
    assert len(jobs_at) == 1
    assert jobs_at[0].partition == ROOT
    assert sorted(jobs_at[0].filenames) == sorted(r.filename for r in at)


def should_not_count_references_shared_with_other_partitions_or_with_approximate_counts() -> None:
    # Given
    references = [_ref("exact", 500), _ref("shared", 10_000, shared=True), _ref("approx", 10_000, approx=True)]

    # When
    [check] = check_leaf_partitions([ROOT], references, threshold=1000)

    # Then
    assert check.known_rows == 500
    assert check.estimated_rows == 20_500
    assert not check.needs_splitting
    assert {r.filename for r in check.wholly_in_partition} == {references[0].filename, references[2].filename}


def should_name_only_files_wholly_in_the_partition() -> None:
    # Given
    references = [_ref("exact", 2000), _ref("shared", 5000, shared=True)]

    # When
    [job] = split_jobs("t", [ROOT], references, threshold=1000, max_files=50)

    # Then
    assert job.filenames == (references[0].filename,)


def should_name_the_files_with_most_rows_when_there_are_more_than_the_maximum() -> None:
    # Given
    references = [_ref("small", 10), _ref("big", 900), _ref("mid", 500), _ref("tiny", 1)]

    # When
    [job] = split_jobs("t", [ROOT], references, threshold=1000, max_files=2)

    # Then
    assert job.filenames == (references[1].filename, references[2].filename)


def should_check_each_leaf_with_only_its_own_references() -> None:
    # Given
    table = new_table(split_points=[100], properties={"sleeper.table.partition.splitting.threshold": "50"})
    left, right = table.state_store.leaf_partitions()
    table.state_store.add_files([_ref("l", 60, partition_id=left.id), _ref("r", 40, partition_id=right.id)])

    # When
    jobs = find_partitions_to_split(table)

    # Then
    assert [job.partition.id for job in jobs] == [left.id]
    assert jobs[0].table_id == table.table_id


def should_take_the_most_files_per_job_from_the_instance_property() -> None:
    # Given
    instance = InstanceProperties({"sleeper.id": "test", "sleeper.partition.splitting.files.maximum": "1"})
    table = new_table(properties={"sleeper.table.partition.splitting.threshold": "10"}, instance_properties=instance)
    table.state_store.add_files([_ref("a", 8), _ref("b", 9)])

    # When
    [job] = find_partitions_to_split(table)

    # Then
    assert job.filenames == (_ref("b", 9).filename,)


def should_send_sleepers_split_job_json_to_the_job_queue() -> None:
    # Given
    table = new_table(properties={"sleeper.table.partition.splitting.threshold": "10"})
    table.state_store.add_files([_ref("a", 10)])
    instance = FakeInstance(tables={table.table_id: table})

    # When
    sent = run_find_partitions_to_split(instance, table.table_id)

    # Then
    [message] = instance.queue(PARTITION_SPLITTING_JOB_QUEUE).receive(10)
    received = SplitPartitionJob.from_json(message.body, table.schema)
    assert sent == [received]
    assert received.filenames == (_ref("a", 10).filename,)
    assert received.partition.id == "root"


def should_send_nothing_when_no_leaf_reaches_the_threshold() -> None:
    # Given
    table = new_table()
    table.state_store.add_files([_ref("a", 10)])
    instance = FakeInstance(tables={table.table_id: table})

    # When
    sent = run_find_partitions_to_split(instance, table.table_id)

    # Then
    assert sent == []
    assert instance.queue(PARTITION_SPLITTING_JOB_QUEUE).receive(10) == []


class _CountingQueue:
    """A queue that records how its messages were sent (one call each, or in batches)."""

    def __init__(self) -> None:
        self.single_sends = 0
        self.batches: list[list[str]] = []

    def send(self, body: str, **_: object) -> str:
        self.single_sends += 1
        return "id"

    def send_batch(self, messages: list[str]) -> list[str]:
        self.batches.append(list(messages))
        return ["id"] * len(messages)


def should_send_the_split_jobs_of_many_leaves_together() -> None:
    # Given 24 leaves, each with a file over the threshold
    table = new_table(
        split_points=list(range(100, 2400, 100)), properties={"sleeper.table.partition.splitting.threshold": "10"}
    )
    leaves = table.state_store.leaf_partitions()
    table.state_store.add_files([_ref(f"f{i}", 10, partition_id=leaf.id) for i, leaf in enumerate(leaves)])
    queue = _CountingQueue()

    # When
    sent = send_split_jobs(table, queue)  # type: ignore[arg-type]

    # Then every job goes in one batch request (the queue cuts it into SQS's calls of 10), none one at a time
    assert len(sent) == len(leaves) == 24
    assert queue.single_sends == 0
    assert [len(batch) for batch in queue.batches] == [24]
    assert {SplitPartitionJob.from_json(body, table.schema).partition.id for body in queue.batches[0]} == {
        leaf.id for leaf in leaves
    }
