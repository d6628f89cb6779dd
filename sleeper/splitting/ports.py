"""Ports of partition splitting: the tables split and the instance the finder and splitter run in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from typing import Protocol

# The per-table FIFO queue that starts the finder (body: the table id), and the queue of split jobs
from sleeper.core.operations import FIND_PARTITIONS_TO_SPLIT_Q as FIND_PARTITIONS_TO_SPLIT_QUEUE
from sleeper.core.operations import PARTITION_SPLITTING_JOB_Q as PARTITION_SPLITTING_JOB_QUEUE
from sleeper.io.filesystem import FileSystemOptions
from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = [
    "FIND_PARTITIONS_TO_SPLIT_QUEUE",
    "PARTITION_SPLITTING_JOB_QUEUE",
    "STATE_STORE_COMMITTER_QUEUE",
    "SplittingInstance",
    "SplittingRuntime",
    "SplittingTable",
]


SplittingTable = SleeperTable
"""A table whose partitions are split."""

SplittingInstance = SleeperInstance
"""The instance the finder and splitter run in: properties, tables by id, queues."""


class SplittingRuntime(SplittingInstance, Protocol):
    """The instance the splitter's entry runs in: :class:`SplittingInstance` and how to reach the sketches."""

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How to reach the data files (None for the defaults: a local instance)."""
        ...
