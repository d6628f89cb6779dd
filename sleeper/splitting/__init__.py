"""Partition splitting: finding leaf partitions that hold too many rows, and splitting them at the median
of their files' sketches."""

from __future__ import annotations

from sleeper.splitting.exceptions import MissingSketchesError, SplittingError, UntrackedFileError
from sleeper.splitting.finder import (
    PartitionSplitCheck,
    check_leaf_partitions,
    find_partitions_to_split,
    run_find_partitions_to_split,
    send_split_jobs,
    split_jobs,
    split_jobs_from_columns,
)
from sleeper.splitting.ports import (
    FIND_PARTITIONS_TO_SPLIT_QUEUE,
    PARTITION_SPLITTING_JOB_QUEUE,
)
from sleeper.splitting.splitter import (
    SplitOutcome,
    SplitResult,
    committer_sender,
    find_split_point,
    read_sketches,
    run_split_job_message,
    split_partition_job,
    split_point_candidates,
)

__all__ = [
    "FIND_PARTITIONS_TO_SPLIT_QUEUE",
    "PARTITION_SPLITTING_JOB_QUEUE",
    "MissingSketchesError",
    "PartitionSplitCheck",
    "SplitOutcome",
    "SplitResult",
    "SplittingError",
    "UntrackedFileError",
    "check_leaf_partitions",
    "committer_sender",
    "find_partitions_to_split",
    "find_split_point",
    "read_sketches",
    "run_find_partitions_to_split",
    "run_split_job_message",
    "send_split_jobs",
    "split_jobs",
    "split_jobs_from_columns",
    "split_partition_job",
    "split_point_candidates",
]
