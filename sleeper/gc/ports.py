"""Ports of garbage collection: the tables collected and the instance the collector runs in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

# The per-table FIFO queue that starts garbage collection (body: the table id)
from sleeper.core.operations import GC_JOB_Q as GC_QUEUE
from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = ["GC_QUEUE", "STATE_STORE_COMMITTER_QUEUE", "GcInstance", "GcTable"]


GcTable = SleeperTable
"""A table whose unreferenced files are collected."""

GcInstance = SleeperInstance
"""The instance the collector runs in: tables by id, the committer queue."""
