"""The state of a table built by applying transactions: files with their references, and partitions.

The two sub-states are mutable so that applying a transaction costs time in proportion to the transaction, not to
the table; the transaction log head owns them and hands out immutable values (references, partitions).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from sleeper.core.partition import Partition, PartitionTree
from sleeper.core.schema import Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference


class FilesState:
    """Every file of a table with its references, plus the ids of ingest jobs whose files were added."""

    def __init__(self) -> None:
        self._files: dict[str, AllReferencesToAFile] = {}
        self._added_job_ids: set[str] = set()

    # --- reads -------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, filename: object) -> bool:
        return filename in self._files

    def file(self, filename: str) -> AllReferencesToAFile | None:
        """A file and its references, or None if the file is not tracked."""
        return self._files.get(filename)

    def files(self) -> Iterator[AllReferencesToAFile]:
        """Every tracked file, referenced or not."""
        return iter(self._files.values())

    def references(self) -> Iterator[FileReference]:
        """Every file reference."""
        for f in self._files.values():
            yield from f.references.values()

    def reference(self, filename: str, partition_id: str) -> FileReference | None:
        """The reference of a file on a partition, or None."""
        f = self._files.get(filename)
        return None if f is None else f.references.get(partition_id)

    def references_on_partition(self, partition_id: str) -> list[FileReference]:
        """The references on one partition."""
        return [r for f in self._files.values() if (r := f.references.get(partition_id)) is not None]

    def unreferenced_files_before(self, time: datetime) -> list[str]:
        """Files with no references whose last update was before a time: ready for garbage collection."""
        return [
            f.filename
            for f in self._files.values()
            if not f.references and f.last_update_time is not None and f.last_update_time < time
        ]

    def has_added_job(self, job_id: str) -> bool:
        """Whether an ADD_FILES transaction carrying this job id has been applied."""
        return job_id in self._added_job_ids

    @property
    def added_job_ids(self) -> frozenset[str]:
        """Job ids of every ADD_FILES transaction applied (used to make ingest idempotent)."""
        return frozenset(self._added_job_ids)

    # --- writes (only transactions call these) -----------------------------------------------------------------
    def put(self, entry: AllReferencesToAFile) -> None:
        """Adds or replaces a file entry."""
        self._files[entry.filename] = entry

    def set_references(self, filename: str, references: dict[str, FileReference], time: datetime) -> None:
        """Replaces the references of a tracked file, recording the update time."""
        self._files[filename] = AllReferencesToAFile(filename=filename, references=references, last_update_time=time)

    def remove(self, filename: str) -> None:
        """Stops tracking a file."""
        del self._files[filename]

    def clear(self) -> None:
        """Stops tracking every file (the added job ids are kept: those jobs stay done)."""
        self._files.clear()

    def record_added_job(self, job_id: str) -> None:
        """Remembers that an ingest job's files were added."""
        self._added_job_ids.add(job_id)

    def copy(self) -> FilesState:
        """An independent copy (entries are immutable, so a shallow copy of the maps suffices)."""
        out = FilesState()
        out._files = dict(self._files)
        out._added_job_ids = set(self._added_job_ids)
        return out

    @classmethod
    def of(cls, files: Iterable[AllReferencesToAFile], added_job_ids: Iterable[str] = ()) -> FilesState:
        """Builds a state from file entries (as loaded from a snapshot)."""
        out = cls()
        for f in files:
            out._files[f.filename] = f
        out._added_job_ids.update(added_job_ids)
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FilesState)
            and self._files == other._files
            and self._added_job_ids == other._added_job_ids
        )

    __hash__ = None  # type: ignore[assignment]


class PartitionsState:
    """Every partition of a table, keyed by id."""

    def __init__(self) -> None:
        self._partitions: dict[str, Partition] = {}

    def __len__(self) -> int:
        return len(self._partitions)

    def __contains__(self, partition_id: object) -> bool:
        return partition_id in self._partitions

    def get(self, partition_id: str) -> Partition | None:
        """A partition by id, or None."""
        return self._partitions.get(partition_id)

    def partitions(self) -> list[Partition]:
        """All partitions."""
        return list(self._partitions.values())

    def leaves(self) -> list[Partition]:
        """The leaf partitions (unordered)."""
        return [p for p in self._partitions.values() if p.is_leaf]

    def tree(self, schema: Schema) -> PartitionTree:
        """The partitions as a tree with lookups."""
        return PartitionTree(schema, self._partitions.values())

    def put(self, partition: Partition) -> None:
        """Adds or replaces a partition."""
        self._partitions[partition.id] = partition

    def clear(self) -> None:
        """Removes every partition."""
        self._partitions.clear()

    def copy(self) -> PartitionsState:
        """An independent copy."""
        out = PartitionsState()
        out._partitions = dict(self._partitions)
        return out

    @classmethod
    def of(cls, partitions: Iterable[Partition]) -> PartitionsState:
        """Builds a state from partitions."""
        out = cls()
        for p in partitions:
            out._partitions[p.id] = p
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionsState) and self._partitions == other._partitions

    __hash__ = None  # type: ignore[assignment]
