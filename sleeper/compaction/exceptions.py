"""Errors of compaction execution, commits and tasks."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = [
    "CompactionConfigError",
    "CompactionError",
    "CompactionInputError",
]


class CompactionError(SleeperError):
    """A compaction job could not be run or committed."""


class CompactionConfigError(CompactionError):
    """A job or table setting cannot be honoured (an unknown engine, a custom iterator class, ...)."""


class CompactionInputError(CompactionError):
    """A job's partition or input files are not what the job needs (missing partition, unreadable input)."""
