"""Pending row deletes: rows of a fixed set of files hidden where they match a filter, until compaction removes them.

A row delete (the DELETE_ROWS transaction, beyond Sleeper) committed at transaction number N records a
:class:`PendingDelete`: its filter text (the language of ``sleeper.core.filter``) and the files referenced in the table
at that moment. The rows of those files that match the filter are hidden from every read; files added later are in no
earlier delete's set, so rows committed after N are never hidden. A compaction removes the matching rows of its inputs
physically and says which deletes it applied, so its output joins no set; a file leaves every set when it leaves the
table's state (garbage collected, or the table cleared), and a delete whose set is empty is gone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sleeper.core.exceptions import SerDeError


@dataclass(frozen=True, slots=True)
class PendingDelete:
    """A row delete still to be applied to some files.

    Attributes:
        number: The files log transaction number the delete was committed at.
        filter: The canonical text of the filter the deleted rows match.
        files: The files whose matching rows are hidden.
    """

    number: int
    filter: str
    files: frozenset[str]

    def to_dict(self) -> dict[str, Any]:
        """The delete as JSON (files sorted, so equal deletes write equal JSON)."""
        return {"number": self.number, "filter": self.filter, "files": sorted(self.files)}

    @classmethod
    def from_dict(cls, data: object, path: str = "pendingDelete") -> PendingDelete:
        """Reads a delete written by :meth:`to_dict`.

        Raises:
            SerDeError: Naming the bad field.
        """
        if not isinstance(data, Mapping):
            raise SerDeError(f"{path} must be an object")
        number = data.get("number")
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise SerDeError(f"{path}.number must be a positive integer")
        text = data.get("filter")
        if not isinstance(text, str) or not text:
            raise SerDeError(f"{path}.filter must be a non-empty string")
        files = data.get("files")
        if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
            raise SerDeError(f"{path}.files must be a list of non-empty strings")
        return cls(number=number, filter=text, files=frozenset(files))


def filters_by_file(deletes: Iterable[PendingDelete], files: Collection[str]) -> dict[str, tuple[str, ...]]:
    """The filters hiding rows of each of some files, in delete order; a file no delete lists is left out."""
    wanted = files if isinstance(files, (set, frozenset, dict)) else set(files)
    out: dict[str, list[str]] = {}
    for delete in deletes:
        small, large = (delete.files, wanted) if len(delete.files) <= len(wanted) else (wanted, delete.files)
        for name in small:
            if name in large:
                out.setdefault(name, []).append(delete.filter)
    return {name: tuple(texts) for name, texts in out.items()}


def filters_of_each(
    deletes: Iterable[PendingDelete], file_lists: Sequence[Sequence[str]]
) -> list[dict[str, tuple[str, ...]]]:
    """For each of some reads (a leaf query, a leaf export), the filters hiding rows of each file it reads, by file
    (empty for a read of no file a delete lists): what a read carries to wherever it runs."""
    hidden = filters_by_file(deletes, {name for files in file_lists for name in files})
    return [{name: hidden[name] for name in files if name in hidden} for files in file_lists]
