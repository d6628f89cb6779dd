"""Finding partitions to split (spec 5), as Sleeper's ``FindPartitionsToSplit`` and ``PartitionSplitCheck``.

Per leaf partition the finder counts the rows it *knows* are in the leaf: the rows of references that hold data of
this partition only (``onlyContainsDataForThisPartition``) and whose counts are exact (not ``countApproximate``).
References shared with other partitions (a file written once for several leaves, or pre-split halves) are not
counted, because their counts are estimates; compaction turns them into exact files later. A leaf whose known rows
reach ``sleeper.table.partition.splitting.threshold`` gets a split job naming those files, at most
``sleeper.partition.splitting.files.maximum`` of them (the ones with most rows), whose sketches give the split point.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.partition import Partition
from sleeper.core.properties.instance_compaction import MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB
from sleeper.core.properties.table import PARTITION_SPLIT_THRESHOLD
from sleeper.core.queue import Queue
from sleeper.core.statestore.references import FileReference
from sleeper.splitting.ports import PARTITION_SPLITTING_JOB_QUEUE, SplittingInstance, SplittingTable

__all__ = [
    "handle_find_partitions_to_split",
    "PartitionSplitCheck",
    "check_leaf_partitions",
    "find_partitions_to_split",
    "run_find_partitions_to_split",
    "send_split_jobs",
    "split_jobs",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionSplitCheck:
    """What the finder knows about one leaf partition.

    Attributes:
        partition: The leaf partition.
        references: Every reference on the partition.
        wholly_in_partition: The references holding data of this partition only: the files a split job names.
        known_rows: Rows of the references wholly in the partition whose counts are exact.
        threshold: The table's split threshold.
    """

    partition: Partition
    references: tuple[FileReference, ...]
    wholly_in_partition: tuple[FileReference, ...]
    known_rows: int
    threshold: int

    @property
    def needs_splitting(self) -> bool:
        """Whether the known rows reach the threshold (Sleeper compares with ``>=``)."""
        return self.known_rows >= self.threshold

    @property
    def estimated_rows(self) -> int:
        """The rows of every reference on the partition, exact or estimated."""
        return sum(r.number_of_rows for r in self.references)

    def files_for_job(self, max_files: int) -> list[str]:
        """The files a split job names: those wholly in the partition, the ``max_files`` with most rows if more.

        Raises:
            ValueError: If ``max_files`` is not positive.
        """
        if max_files < 1:
            raise ValueError(f"the most files in a split job must be positive, got {max_files}")
        chosen: Sequence[FileReference] = self.wholly_in_partition
        if len(chosen) >= max_files:
            chosen = sorted(chosen, key=lambda r: r.number_of_rows, reverse=True)[:max_files]
        return [r.filename for r in chosen]


def check_leaf_partitions(
    leaves: Iterable[Partition], references: Iterable[FileReference], *, threshold: int
) -> list[PartitionSplitCheck]:
    """The split check of every leaf partition, in the order given.

    Args:
        leaves: The leaf partitions.
        references: Every file reference of the table.
        threshold: The split threshold.
    """
    by_partition: dict[str, list[FileReference]] = defaultdict(list)
    for reference in references:
        by_partition[reference.partition_id].append(reference)
    out: list[PartitionSplitCheck] = []
    for leaf in leaves:
        on_leaf = tuple(by_partition.get(leaf.id, ()))
        wholly = tuple(r for r in on_leaf if r.only_contains_data_for_this_partition)
        known = sum(r.number_of_rows for r in wholly if not r.count_approximate)
        out.append(
            PartitionSplitCheck(
                partition=leaf, references=on_leaf, wholly_in_partition=wholly, known_rows=known, threshold=threshold
            )
        )
    return out


def split_jobs(
    table_id: str,
    leaves: Iterable[Partition],
    references: Iterable[FileReference],
    *,
    threshold: int,
    max_files: int,
) -> list[SplitPartitionJob]:
    """The split jobs of a table: one per leaf whose known rows reach the threshold.

    Args:
        table_id: The table.
        leaves: The leaf partitions.
        references: Every file reference of the table.
        threshold: The split threshold.
        max_files: The most files a job names (those with most rows are chosen).
    """
    return [
        SplitPartitionJob.of(table_id, check.partition, check.files_for_job(max_files))
        for check in check_leaf_partitions(leaves, references, threshold=threshold)
        if check.needs_splitting
    ]


def find_partitions_to_split(table: SplittingTable) -> list[SplitPartitionJob]:
    """The split jobs a table needs now, from its state store and properties.

    The threshold is the table's ``sleeper.table.partition.splitting.threshold``; the most files per job is the
    instance's ``sleeper.partition.splitting.files.maximum``.
    """
    properties = table.properties
    threshold = properties.get_int(PARTITION_SPLIT_THRESHOLD)
    max_files = properties.instance_properties.get_int(MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB)
    store = table.state_store
    leaves = store.leaf_partitions()
    references = store.file_references()
    return split_jobs(table.table_id, leaves, references, threshold=threshold, max_files=max_files)


def send_split_jobs(table: SplittingTable, queue: Queue) -> list[SplitPartitionJob]:
    """Finds the table's split jobs and sends each to a queue, as Sleeper's JSON; returns the jobs sent."""
    jobs = find_partitions_to_split(table)
    for job in jobs:
        queue.send(job.to_json(table.schema))
    return jobs


def run_find_partitions_to_split(instance: SplittingInstance, table_id: str) -> list[SplitPartitionJob]:
    """Handles one message of the finder's per-table queue: finds the table's split jobs and sends them to the
    ``PartitionSplittingJobQueue``.

    Raises:
        TableNotFoundError: If there is no table with this id.
    """
    table = instance.table_by_id(table_id.strip())
    return send_split_jobs(table, instance.queue(PARTITION_SPLITTING_JOB_QUEUE))


def handle_find_partitions_to_split(instance: SplittingInstance, body: str) -> str:
    """The finder's runtime-neutral entry: one ``FindPartitionsToSplitQ.fifo`` message (body: the table id).

    Returns:
        A line for the log (empty when no partition is to be split).

    Raises:
        TableNotFoundError: If there is no table with this id.
    """
    jobs = run_find_partitions_to_split(instance, body)
    return f"table {body.strip()}: {len(jobs)} partitions to split" if jobs else ""
