"""Errors of garbage collection."""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError

__all__ = ["GarbageCollectionError", "GarbageCollectionFailedError", "UnsafeGcDelayError"]


class GarbageCollectionError(SleeperError):
    """Garbage collection could not be run for a table."""


class UnsafeGcDelayError(GarbageCollectionError):
    """The table's garbage collection delay is not longer than the query cache timeout plus the query timeout, so a
    query could lose a file it is reading: nothing is deleted until the configuration is fixed."""


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
