"""Garbage collection: deleting files that have had no references for longer than the table's delay, and
sweeping orphan files that no transaction ever added."""

from __future__ import annotations

from sleeper.gc.collector import (
    DEFAULT_DELETE_THREADS,
    FileProblem,
    GcResult,
    GcSettings,
    collect_garbage,
    committer_sender,
    file_outside_table,
    run_garbage_collection,
)
from sleeper.gc.exceptions import GarbageCollectionError, GarbageCollectionFailedError
from sleeper.gc.orphans import (
    DEFAULT_ORPHAN_MIN_AGE,
    DeletedTablesSweepResult,
    OrphanSweepResult,
    sweep_deleted_tables,
    sweep_orphans,
)
from sleeper.gc.ports import GC_QUEUE

__all__ = [
    "DEFAULT_DELETE_THREADS",
    "DEFAULT_ORPHAN_MIN_AGE",
    "GC_QUEUE",
    "FileProblem",
    "DeletedTablesSweepResult",
    "GarbageCollectionError",
    "GarbageCollectionFailedError",
    "GcResult",
    "GcSettings",
    "OrphanSweepResult",
    "collect_garbage",
    "committer_sender",
    "file_outside_table",
    "run_garbage_collection",
    "sweep_deleted_tables",
    "sweep_orphans",
]
