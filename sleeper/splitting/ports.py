"""Ports of partition splitting: the tables split and the instance the finder and splitter run in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = [
    "FIND_PARTITIONS_TO_SPLIT_QUEUE",
    "PARTITION_SPLITTING_JOB_QUEUE",
    "STATE_STORE_COMMITTER_QUEUE",
    "SplittingInstance",
    "SplittingTable",
]

FIND_PARTITIONS_TO_SPLIT_QUEUE = "FindPartitionsToSplitQ.fifo"
"""The logical name of the per-table FIFO queue that starts the finder (body: the table id)."""

PARTITION_SPLITTING_JOB_QUEUE = "PartitionSplittingJobQueue"
"""The logical name of the queue of split jobs (``sleeper-<id>-PartitionSplittingJobQueue``)."""

SplittingTable = SleeperTable
"""A table whose partitions are split."""

SplittingInstance = SleeperInstance
"""The instance the finder and splitter run in: properties, tables by id, queues."""
