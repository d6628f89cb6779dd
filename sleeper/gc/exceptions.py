"""Errors of garbage collection."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = ["GarbageCollectionError", "GarbageCollectionFailedError"]


class GarbageCollectionError(SleeperError):
    """Garbage collection could not be run for a table."""


class GarbageCollectionFailedError(GarbageCollectionError):
    """Some files could not be deleted or were refused; the others were deleted and committed.

    Attributes:
        table_id: The table.
        problems: One line per file that failed or was refused.
    """

    def __init__(self, table_id: str, problems: list[str]) -> None:
        shown = "; ".join(problems[:10]) + (f"; ... {len(problems) - 10} more" if len(problems) > 10 else "")
        super().__init__(f"garbage collection of table {table_id}: {len(problems)} files not collected: {shown}")
        self.table_id = table_id
        self.problems = problems
