"""Compaction strategies: which unassigned files of each leaf partition are compacted together.

A strategy looks at one leaf partition at a time: its file references that no job has claimed, in ascending order
of their row counts, and the references already assigned to jobs (running or queued). It plans groups of files; job
creation (``sleeper.compaction.creation``) turns the groups into jobs with ids and output files.

Strategies are chosen by ``sleeper.table.compaction.strategy.class``, which names Sleeper's Java classes:

- ``SizeRatioCompactionStrategy`` (the default): files are compacted once the smaller ones together are big enough
  next to the largest (``sleeper.table.compaction.strategy.sizeratio.ratio``), at most
  ``sleeper.table.compaction.files.batch.size`` files per job, and no more jobs on a partition than
  ``sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition`` allows with those running.
- ``BasicCompactionStrategy``: every full batch of ``sleeper.table.compaction.files.batch.size`` files is compacted;
  a partial batch waits.

Sizes are row counts (``numberOfRows`` of the references), as in Sleeper. The criterion and the window sums use
prefix sums, so planning a partition costs O(n log n) for the sort, not O(n²).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

from sleeper.core import Partition, SleeperError
from sleeper.core.properties import (
    COMPACTION_FILES_BATCH_SIZE,
    COMPACTION_STRATEGIES,
    COMPACTION_STRATEGY_CLASS,
    SIZE_RATIO_COMPACTION_STRATEGY_MAX_CONCURRENT_JOBS_PER_PARTITION,
    SIZE_RATIO_COMPACTION_STRATEGY_RATIO,
    TableProperties,
)
from sleeper.core.statestore import FileReference

__all__ = [
    "BASIC_STRATEGY",
    "SIZE_RATIO_STRATEGY",
    "BasicCompactionStrategy",
    "CompactionStrategy",
    "FilesInPartition",
    "InvalidCompactionStrategyError",
    "PlannedJob",
    "SizeRatioCompactionStrategy",
    "UnknownCompactionStrategyError",
    "files_in_leaf_partitions",
    "leftover_jobs",
    "meets_size_ratio",
    "strategy_for_table",
]

SIZE_RATIO_STRATEGY = "sleeper.compaction.core.job.creation.strategy.impl.SizeRatioCompactionStrategy"
"""Sleeper's Java class name of the size ratio strategy (the default)."""

BASIC_STRATEGY = "sleeper.compaction.core.job.creation.strategy.impl.BasicCompactionStrategy"
"""Sleeper's Java class name of the basic strategy."""


class UnknownCompactionStrategyError(SleeperError):
    """``sleeper.table.compaction.strategy.class`` names a strategy this port does not have."""


class InvalidCompactionStrategyError(SleeperError):
    """A strategy setting is out of range (a batch size, ratio or job limit below 1)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesInPartition:
    """The file references of one leaf partition, as a strategy sees them.

    Attributes:
        partition_id: The leaf partition.
        unassigned: References no job has claimed, in ascending order of rows (ties keep the state store's order).
        assigned: References already assigned to jobs.
    """

    partition_id: str
    unassigned: tuple[FileReference, ...]
    assigned: tuple[FileReference, ...] = ()

    @property
    def running_job_ids(self) -> frozenset[str]:
        """The distinct jobs holding references on the partition (queued or running)."""
        return frozenset(r.job_id for r in self.assigned if r.job_id is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedJob:
    """A group of unassigned files of one leaf partition to compact together.

    Raises:
        InvalidCompactionStrategyError: If there are no files, a file is on another partition or already assigned.
    """

    partition_id: str
    files: tuple[FileReference, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))
        if not self.files:
            raise InvalidCompactionStrategyError(f"a job on partition {self.partition_id} needs at least one file")
        for ref in self.files:
            if ref.partition_id != self.partition_id:
                raise InvalidCompactionStrategyError(
                    f"file {ref.filename} is referenced on partition {ref.partition_id}, not {self.partition_id}"
                )
            if ref.job_id is not None:
                raise InvalidCompactionStrategyError(f"file {ref.filename} is already assigned to job {ref.job_id}")

    @property
    def filenames(self) -> tuple[str, ...]:
        """The input files, in the order planned."""
        return tuple(r.filename for r in self.files)


class CompactionStrategy(Protocol):
    """Plans compaction jobs for leaf partitions."""

    def plan(self, partitions: Iterable[FilesInPartition]) -> list[PlannedJob]:
        """The jobs to create, partition by partition in the order given."""
        ...


def files_in_leaf_partitions(
    references: Iterable[FileReference], partitions: Iterable[Partition]
) -> list[FilesInPartition]:
    """Groups references by leaf partition, as Sleeper's strategy index does.

    Only leaf partitions with at least one unassigned reference are returned, in the order of ``partitions``.
    References on partitions that are not leaves (awaiting a pre-split) are ignored.
    """
    leaf_ids = [p.id for p in partitions if p.is_leaf]
    leaves = set(leaf_ids)
    unassigned: dict[str, list[FileReference]] = {}
    assigned: dict[str, list[FileReference]] = {}
    for ref in references:
        if ref.partition_id not in leaves:
            continue
        target = unassigned if ref.job_id is None else assigned
        target.setdefault(ref.partition_id, []).append(ref)
    return [
        FilesInPartition(
            partition_id=pid,
            unassigned=tuple(sorted(unassigned[pid], key=lambda r: r.number_of_rows)),
            assigned=tuple(assigned.get(pid, ())),
        )
        for pid in leaf_ids
        if pid in unassigned
    ]


def meets_size_ratio(sizes_ascending: Sequence[int], ratio: int) -> bool:
    """Sleeper's size ratio criterion: at least two files, and ratio × largest <= the sum of the others."""
    if len(sizes_ascending) < 2:
        return False
    return ratio * sizes_ascending[-1] <= sum(sizes_ascending[:-1])


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise InvalidCompactionStrategyError(f"{name} must be at least 1, not {value}")


class SpanStrategy(ABC):
    """A strategy that plans each leaf partition as spans of its unassigned files, smallest first (``spans``)."""

    __slots__ = ()

    @abstractmethod
    def spans(self, sizes_ascending: Sequence[int], running_jobs: int) -> list[range]:
        """The jobs for one leaf partition as spans of its unassigned files' sizes (ascending), given how many
        distinct jobs already hold files on it."""

    def plan(self, partitions: Iterable[FilesInPartition]) -> list[PlannedJob]:
        """The jobs for each partition (see the class description)."""
        jobs: list[PlannedJob] = []
        for files in partitions:
            jobs.extend(self.plan_partition(files))
        return jobs

    def plan_partition(self, files: FilesInPartition) -> list[PlannedJob]:
        """The jobs for one leaf partition."""
        refs = files.unassigned
        spans = self.spans([r.number_of_rows for r in refs], len(files.running_job_ids))
        return [PlannedJob(partition_id=files.partition_id, files=refs[s.start : s.stop]) for s in spans]


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeRatioCompactionStrategy(SpanStrategy):
    """Sleeper's default strategy (``SizeRatioCompactionStrategy``).

    Per leaf partition, with unassigned files sorted by ascending rows ``s_1 <= ... <= s_n``:

    1. If the distinct jobs already holding files on the partition reach ``max_concurrent_jobs_per_partition``, no
       jobs are created; otherwise at most the difference (later jobs are dropped).
    2. The largest files are dropped one at a time until ``ratio × s_k <= s_1 + ... + s_(k-1)`` holds for the
       remaining ``k >= 2`` files. If it never holds, nothing is compacted.
    3. If at most ``files_batch_size`` files remain, they form one job. Otherwise a window of ``files_batch_size``
       files slides from the smallest: a window meeting the criterion becomes a job and the next window starts after
       it; a window failing it moves on by one file. (Windows at the end may be shorter.)

    Attributes:
        ratio: ``sleeper.table.compaction.strategy.sizeratio.ratio`` (3).
        files_batch_size: ``sleeper.table.compaction.files.batch.size`` (12).
        max_concurrent_jobs_per_partition: ``...sizeratio.max.concurrent.jobs.per.partition`` (2147483647).
    """

    ratio: int = 3
    files_batch_size: int = 12
    max_concurrent_jobs_per_partition: int = 2_147_483_647

    def __post_init__(self) -> None:
        _check_positive("ratio", self.ratio)
        _check_positive("files batch size", self.files_batch_size)
        _check_positive("max concurrent jobs per partition", self.max_concurrent_jobs_per_partition)

    @classmethod
    def from_properties(cls, properties: TableProperties) -> SizeRatioCompactionStrategy:
        """The strategy with a table's settings."""
        return cls(
            ratio=properties.get_int(SIZE_RATIO_COMPACTION_STRATEGY_RATIO),
            files_batch_size=properties.get_int(COMPACTION_FILES_BATCH_SIZE),
            max_concurrent_jobs_per_partition=properties.get_int(
                SIZE_RATIO_COMPACTION_STRATEGY_MAX_CONCURRENT_JOBS_PER_PARTITION
            ),
        )

    def spans(self, sizes_ascending: Sequence[int], running_jobs: int) -> list[range]:
        """The jobs for one leaf partition as spans of its unassigned files' sizes (ascending), given how many
        distinct jobs already hold files on it: what :meth:`plan_partition` plans, without a reference per file."""
        allowed = self.max_concurrent_jobs_per_partition - running_jobs
        if allowed < 1:
            return []
        sizes = sizes_ascending
        prefix = [0, *accumulate(sizes)]  # prefix[i] = sum of sizes[:i]
        # Step 2: the longest ascending prefix of the files that meets the criterion.
        count = len(sizes)
        while count >= 2 and self.ratio * sizes[count - 1] > prefix[count - 1]:
            count -= 1
        if count < 2:
            return []
        if count <= self.files_batch_size:
            return [range(count)]
        # Step 3: slide a window over the files that meet the criterion.
        spans: list[range] = []
        position = 0
        while position < count and len(spans) < allowed:
            end = min(position + self.files_batch_size, count)
            if end - position >= 2 and self.ratio * sizes[end - 1] <= prefix[end - 1] - prefix[position]:
                spans.append(range(position, end))
                position = end
            else:
                position += 1
        return spans


@dataclass(frozen=True, slots=True, kw_only=True)
class BasicCompactionStrategy(SpanStrategy):
    """Sleeper's ``BasicCompactionStrategy``: every full batch of ``files_batch_size`` unassigned files of a leaf,
    smallest first, becomes a job; the remaining partial batch waits for more files. No limit on running jobs.

    Attributes:
        files_batch_size: ``sleeper.table.compaction.files.batch.size`` (12).
    """

    files_batch_size: int = 12

    def __post_init__(self) -> None:
        _check_positive("files batch size", self.files_batch_size)

    @classmethod
    def from_properties(cls, properties: TableProperties) -> BasicCompactionStrategy:
        """The strategy with a table's settings."""
        return cls(files_batch_size=properties.get_int(COMPACTION_FILES_BATCH_SIZE))

    def spans(self, sizes_ascending: Sequence[int], running_jobs: int) -> list[range]:
        """The jobs for one leaf partition as spans of its unassigned files (see ``SizeRatioCompactionStrategy``):
        every full batch; running jobs do not limit this strategy."""
        size = self.files_batch_size
        return [range(start, start + size) for start in range(0, len(sizes_ascending) - size + 1, size)]


def leftover_jobs(
    partitions: Iterable[FilesInPartition], planned: Iterable[PlannedJob], files_batch_size: int
) -> list[PlannedJob]:
    """Jobs for every unassigned leaf file the strategy left out, in chunks of ``files_batch_size`` (the last chunk
    of a partition may be smaller, even a single file): Sleeper's "compact all files" mode.

    Files are taken smallest first. A file the strategy planned on one leaf may still be a leftover on another leaf
    it is also referenced on (Sleeper excludes it by name on every leaf; here each reference is judged on its own).
    """
    _check_positive("files batch size", files_batch_size)
    taken = {(r.partition_id, r.filename) for job in planned for r in job.files}
    jobs: list[PlannedJob] = []
    for files in partitions:
        left = [r for r in files.unassigned if (r.partition_id, r.filename) not in taken]
        jobs.extend(
            PlannedJob(partition_id=files.partition_id, files=tuple(left[start : start + files_batch_size]))
            for start in range(0, len(left), files_batch_size)
        )
    return jobs


def compact_to_split_jobs(
    partitions: Iterable[FilesInPartition], planned: Iterable[PlannedJob], split_threshold: int, files_batch_size: int
) -> list[PlannedJob]:
    """Jobs that make a leaf splittable: beyond Sleeper, which can leave a leaf unsplit for good.

    The splitter only counts rows it knows exactly and wholly in the leaf (Sleeper's ``PartitionSplitCheck``). After a
    split, a leaf's references are halves of its parent's files: approximate, and shared with its sibling. If the
    size-ratio strategy never compacts them (a single file never meets the ratio), the leaf never splits, however
    large it is. For each leaf with no planned or running job whose estimated rows reach the split threshold while
    its exactly known rows do not, this plans one job over its files (up to the batch size, smallest first), so that
    its rows become exact and the next splitting run can split it.
    """
    _check_positive("files batch size", files_batch_size)
    busy = {job.partition_id for job in planned}
    jobs: list[PlannedJob] = []
    for files in partitions:
        if files.partition_id in busy or files.running_job_ids or not files.unassigned:
            continue
        sizes = [r.number_of_rows for r in files.unassigned]
        exact = [r.only_contains_data_for_this_partition and not r.count_approximate for r in files.unassigned]
        if needs_compaction_to_split(sizes, exact, split_threshold):
            jobs.append(PlannedJob(partition_id=files.partition_id, files=files.unassigned[:files_batch_size]))
    return jobs


def needs_compaction_to_split(sizes: Sequence[int], exact: Sequence[bool], split_threshold: int) -> bool:
    """Whether a leaf's unassigned files (their rows, and whether each count is exact and wholly in the leaf) are
    estimated to reach the split threshold while the rows known exactly do not (see :func:`compact_to_split_jobs`)."""
    known = sum(size for size, is_exact in zip(sizes, exact, strict=True) if is_exact)
    return sum(sizes) >= split_threshold > known


def strategy_for_table(properties: TableProperties) -> SizeRatioCompactionStrategy | BasicCompactionStrategy:
    """The strategy ``sleeper.table.compaction.strategy.class`` names, with the table's settings.

    Accepts the names ``sleeper.core.properties.COMPACTION_STRATEGIES`` accepts: Sleeper's Java class names (current
    and earlier packages) and the bare class names. Setting the property, or its instance default, refuses any other
    name, so another name reaches here only from properties saved without that check (an edited store).

    Raises:
        UnknownCompactionStrategyError: If the property names another class.
        InvalidCompactionStrategyError: If a setting is below 1.
    """
    name = (properties.get(COMPACTION_STRATEGY_CLASS) or SIZE_RATIO_STRATEGY).strip()
    simple = COMPACTION_STRATEGIES.simple_name(name)
    if simple == "SizeRatioCompactionStrategy":
        return SizeRatioCompactionStrategy.from_properties(properties)
    if simple == "BasicCompactionStrategy":
        return BasicCompactionStrategy.from_properties(properties)
    raise UnknownCompactionStrategyError(
        f"unknown compaction strategy {name!r} in {COMPACTION_STRATEGY_CLASS.name}; use {SIZE_RATIO_STRATEGY} or "
        f"{BASIC_STRATEGY}"
    )
