"""Finding partitions to split, as Sleeper's ``FindPartitionsToSplit`` and ``PartitionSplitCheck``.

Per leaf partition the finder counts the rows it *knows* are in the leaf: the rows of references that hold data of
this partition only (``onlyContainsDataForThisPartition``) and whose counts are exact (not ``countApproximate``).
References shared with other partitions (a file written once for several leaves, or pre-split halves) are not
counted, because their counts are estimates; compaction turns them into exact files later. A leaf whose known rows
reach ``sleeper.table.partition.splitting.threshold`` gets a split job naming those files, at most
``sleeper.partition.splitting.files.maximum`` of them (the ones with most rows), whose sketches give the split point.

The scheduled finder (:func:`find_partitions_to_split`) reads the leaves' references as columns
(``StateStore.reference_columns``), making no object per reference, and sums them per leaf with numpy
(:func:`split_jobs_from_columns`); :func:`split_jobs` does the same over reference objects, and
tests/unit/splitting/test_finder_columns.py compares the two over random states.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sleeper.core import Partition, Queue
from sleeper.core.jobs import SplitPartitionJob
from sleeper.core.properties import MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB, PARTITION_SPLIT_THRESHOLD
from sleeper.core.statestore import FileReference, ReferenceColumns
from sleeper.splitting.ports import PARTITION_SPLITTING_JOB_QUEUE
from sleeper.statestore import SleeperInstance, SleeperTable

__all__ = [
    "handle_find_partitions_to_split",
    "PartitionSplitCheck",
    "check_leaf_partitions",
    "find_partitions_to_split",
    "run_find_partitions_to_split",
    "send_split_jobs",
    "split_jobs",
    "split_jobs_from_columns",
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
        chosen: Sequence[FileReference] = self.wholly_in_partition
        return _most_rows([r.filename for r in chosen], [r.number_of_rows for r in chosen], max_files)


def _most_rows(filenames: Sequence[str], rows: Sequence[int], max_files: int) -> list[str]:
    """The files a split job names: all of them, or the ``max_files`` with most rows (earlier first on ties) if
    there are that many."""
    if max_files < 1:
        raise ValueError(f"the most files in a split job must be positive, got {max_files}")
    if len(filenames) < max_files:
        return list(filenames)
    chosen = sorted(range(len(filenames)), key=rows.__getitem__, reverse=True)[:max_files]
    return [filenames[i] for i in chosen]


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


def split_jobs_from_columns(
    table_id: str,
    leaves: Sequence[Partition],
    columns: ReferenceColumns,
    *,
    threshold: int,
    max_files: int,
) -> list[SplitPartitionJob]:
    """The jobs :func:`split_jobs` finds, in the same order naming the same files, from the leaves' references as
    columns (``StateStore.reference_columns``, in state order) rather than as objects.

    Args:
        table_id: The table.
        leaves: The leaf partitions.
        columns: The references on those leaves (references on other partitions are not counted).
        threshold: The split threshold.
        max_files: The most files a job names (those with most rows are chosen).

    Raises:
        ValueError: If ``max_files`` is not positive.
    """
    if max_files < 1:
        raise ValueError(f"the most files in a split job must be positive, got {max_files}")
    count = len(columns)
    if not count or not leaves:
        return []
    rank = {leaf.id: i for i, leaf in enumerate(leaves)}
    codes = np.fromiter((rank.get(pid, -1) for pid in columns.partition_ids), dtype=np.int64, count=count)
    wholly = np.fromiter(columns.only_contains_data_for_this_partition, dtype=np.bool_, count=count)
    exact = ~np.fromiter(columns.count_approximate, dtype=np.bool_, count=count)
    rows = np.fromiter(columns.number_of_rows, dtype=np.int64, count=count)
    on_leaf = codes >= 0
    counted = on_leaf & wholly & exact
    known = np.zeros(len(leaves), dtype=np.int64)
    np.add.at(known, codes[counted], rows[counted])
    splitting = np.flatnonzero(known >= threshold)
    if not len(splitting):
        return []
    # The references wholly on each leaf, grouped by leaf and in state order within it (a stable sort).
    candidates = np.flatnonzero(on_leaf & wholly)
    order = np.argsort(codes[candidates], kind="stable")
    grouped, grouped_codes = candidates[order], codes[candidates][order]
    starts = np.searchsorted(grouped_codes, splitting, side="left")
    ends = np.searchsorted(grouped_codes, splitting, side="right")
    jobs = []
    for leaf_index, start, end in zip(splitting.tolist(), starts.tolist(), ends.tolist(), strict=True):
        positions = grouped[start:end]
        files = _most_rows([columns.filenames[i] for i in positions.tolist()], rows[positions].tolist(), max_files)
        jobs.append(SplitPartitionJob.of(table_id, leaves[leaf_index], files))
    return jobs


def find_partitions_to_split(table: SleeperTable) -> list[SplitPartitionJob]:
    """The split jobs a table needs now, from its state store and properties.

    The threshold is the table's ``sleeper.table.partition.splitting.threshold``; the most files per job is the
    instance's ``sleeper.partition.splitting.files.maximum``.
    """
    properties = table.properties
    threshold = properties.get_int(PARTITION_SPLIT_THRESHOLD)
    max_files = properties.instance_properties.get_int(MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB)
    store = table.state_store
    leaves = store.leaf_partitions()
    columns = store.reference_columns([leaf.id for leaf in leaves])
    return split_jobs_from_columns(table.table_id, leaves, columns, threshold=threshold, max_files=max_files)


def send_split_jobs(table: SleeperTable, queue: Queue) -> list[SplitPartitionJob]:
    """Finds the table's split jobs and sends them to a queue, as Sleeper's JSON; returns the jobs sent.

    They go in batches (SQS's ``SendMessageBatch``, 10 a call) rather than one call each as Sleeper's finder sends
    them: a table of many leaves over the threshold makes one call per ten jobs.
    """
    jobs = find_partitions_to_split(table)
    if jobs:
        queue.send_batch([job.to_json(table.schema) for job in jobs])
    return jobs


def run_find_partitions_to_split(instance: SleeperInstance, table_id: str) -> list[SplitPartitionJob]:
    """Handles one message of the finder's per-table queue: finds the table's split jobs and sends them to the
    ``PartitionSplittingJobQueue``.

    Raises:
        TableNotFoundError: If there is no table with this id.
    """
    table = instance.table_by_id(table_id.strip())
    return send_split_jobs(table, instance.queue(PARTITION_SPLITTING_JOB_QUEUE))


def handle_find_partitions_to_split(instance: SleeperInstance, body: str) -> str:
    """The finder's runtime-neutral entry: one ``FindPartitionsToSplitQ.fifo`` message (body: the table id).

    Returns:
        A line for the log (empty when no partition is to be split).

    Raises:
        TableNotFoundError: If there is no table with this id.
    """
    jobs = run_find_partitions_to_split(instance, body)
    return f"table {body.strip()}: {len(jobs)} partitions to split" if jobs else ""
