"""Words for people: a count with its noun in the right number, for every message the package prints."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: ``counted(1, "leaf partition")`` is ``1 leaf partition``,
    ``counted(2, "leaf partition")`` is ``2 leaf partitions``, ``counted(1234, "row")`` is ``1,234 rows``.

    The plural is the noun with ``s`` unless given (``counted(2, "query", "queries")``).
    """
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
