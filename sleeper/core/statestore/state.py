"""The state of a table built by applying transactions: files with their references, and partitions.

The two sub-states are mutable so that applying a transaction costs time in proportion to the transaction, not to
the table; the transaction log head owns them and hands out immutable values (references, partitions).

A files state keeps its files in any mapping of the :class:`FileEntries` shape: a dict by default, or one that holds a
snapshot's files as columns and makes each into objects only when read (``sleeper.statestore.arrow_files``), so that
loading a large table's snapshot does not cost an object per reference.

The files state also remembers the ingest and bulk import jobs whose files were added, each with the hash of the
input files it ingested (:func:`input_files_hash`) when the ADD_FILES transaction carried one. That makes a job
idempotent per job id and input: the same id with the same input files adds nothing again, and the same id with other
input files is refused (:meth:`FilesState.job_already_added`). A job recorded without a hash (by an older version, a
snapshot or log that holds only ids, or an ingest of rows rather than files) is done whatever its input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from sleeper.core.partition import Partition, PartitionTree
from sleeper.core.schema import Schema
from sleeper.core.statestore.deletes import PendingDelete
from sleeper.core.statestore.exceptions import JobIdReusedError
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference


def input_files_hash(files: Iterable[str]) -> str:
    """The hash recorded for the input files of a job: SHA-256 (hex) of the distinct files, sorted, one a line.

    Args:
        files: The files the job read, each as one string (an absolute path, or an ``s3a://`` URI).
    """
    digest = hashlib.sha256()
    for name in sorted(set(files)):
        digest.update(name.encode())
        digest.update(b"\n")
    return digest.hexdigest()


class FileEntries(Protocol):
    """The files of a state by name: the operations of a ``dict`` that a files state uses (a dict is one)."""

    def __len__(self) -> int: ...

    def __contains__(self, key: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def __getitem__(self, key: str, /) -> AllReferencesToAFile: ...

    def __setitem__(self, key: str, value: AllReferencesToAFile, /) -> None: ...

    def __delitem__(self, key: str, /) -> None: ...

    def get(self, key: str, /) -> AllReferencesToAFile | None: ...

    def values(self) -> Iterable[AllReferencesToAFile]: ...

    def clear(self) -> None: ...

    def copy(self) -> FileEntries:
        """An independent copy (changes to either are not seen by the other)."""
        ...


@dataclass(frozen=True, slots=True)
class ReferenceColumns:
    """Some references of a files state as columns: lists of equal length, one item per reference, in state order
    (the order of ``FilesState.references``)."""

    filenames: list[str] = field(default_factory=list)
    partition_ids: list[str] = field(default_factory=list)
    number_of_rows: list[int] = field(default_factory=list)
    job_ids: list[str | None] = field(default_factory=list)
    count_approximate: list[bool] = field(default_factory=list)
    only_contains_data_for_this_partition: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.filenames)

    def append(self, ref: FileReference) -> None:
        """Adds a reference at the end."""
        self.filenames.append(ref.filename)
        self.partition_ids.append(ref.partition_id)
        self.number_of_rows.append(ref.number_of_rows)
        self.job_ids.append(ref.job_id)
        self.count_approximate.append(ref.count_approximate)
        self.only_contains_data_for_this_partition.append(ref.only_contains_data_for_this_partition)

    def extend(self, other: ReferenceColumns) -> None:
        """Adds another's references at the end."""
        self.filenames.extend(other.filenames)
        self.partition_ids.extend(other.partition_ids)
        self.number_of_rows.extend(other.number_of_rows)
        self.job_ids.extend(other.job_ids)
        self.count_approximate.extend(other.count_approximate)
        self.only_contains_data_for_this_partition.extend(other.only_contains_data_for_this_partition)


@runtime_checkable
class BulkFileEntries(FileEntries, Protocol):
    """File entries that also answer and apply a job assignment of many references at once (without an object per
    reference: ``sleeper.statestore.arrow_files``). The files state uses these when its entries have them."""

    def first_unassignable(self, filenames: Sequence[str], partition_ids: Sequence[str], /) -> int | None:
        """As :meth:`FilesState.first_unassignable`."""
        ...

    def assign_jobs(
        self, filenames: Sequence[str], partition_ids: Sequence[str], job_ids: Sequence[str], time: datetime, /
    ) -> bool:
        """As :meth:`FilesState.assign_jobs`; returns False, having changed nothing, if it leaves the assignment to
        the files state (which then assigns one reference at a time)."""
        ...

    def references_by_partition(self, partition_ids: Collection[str], /) -> dict[str, list[FileReference]]:
        """As :meth:`FilesState.references_by_partition`."""
        ...

    def job_ids(self) -> set[str]:
        """As :meth:`FilesState.job_ids`."""
        ...

    def reference_columns(self, partition_ids: Collection[str], /) -> ReferenceColumns:
        """As :meth:`FilesState.reference_columns`."""
        ...

    def unreferenced_files_before(self, time: datetime, /) -> list[str]:
        """As :meth:`FilesState.unreferenced_files_before`."""
        ...


class FilesState:
    """Every file of a table with its references, plus the ingest jobs whose files were added (with input hashes)
    and the pending row deletes."""

    def __init__(self) -> None:
        self._files: FileEntries = {}
        self._added_jobs: dict[str, str | None] = {}
        self._deletes: dict[int, PendingDelete] = {}

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

    def files_named(self, filenames: Collection[str]) -> list[AllReferencesToAFile]:
        """The tracked files among some names, in state order (the order of ``files``)."""
        wanted = filenames if isinstance(filenames, (set, frozenset, dict)) else set(filenames)
        return [f for name in self._files if name in wanted and (f := self._files.get(name)) is not None]

    def references_by_partition(self, partition_ids: Collection[str]) -> dict[str, list[FileReference]]:
        """The references on each of some partitions, in state order (the order of ``references``); a partition with
        none is left out. A state loaded from a snapshot answers from its columns, making an object of each reference
        returned but none of each file."""
        if isinstance(self._files, BulkFileEntries):
            return self._files.references_by_partition(partition_ids)
        wanted = partition_ids if isinstance(partition_ids, (set, frozenset, dict)) else set(partition_ids)
        out: dict[str, list[FileReference]] = {}
        for f in self._files.values():
            for pid, ref in f.references.items():
                if pid in wanted:
                    out.setdefault(pid, []).append(ref)
        return out

    def reference_columns(self, partition_ids: Collection[str]) -> ReferenceColumns:
        """The references on some partitions as columns, in state order (the order of ``references``). A state
        loaded from a snapshot reads them from its columns through its index by partition, making no object per
        reference or file."""
        if isinstance(self._files, BulkFileEntries):
            return self._files.reference_columns(partition_ids)
        wanted = partition_ids if isinstance(partition_ids, (set, frozenset, dict)) else set(partition_ids)
        out = ReferenceColumns()
        for f in self._files.values():
            for pid, ref in f.references.items():
                if pid in wanted:
                    out.append(ref)
        return out

    def job_ids(self) -> set[str]:
        """The distinct jobs references are assigned to (a state loaded from a snapshot reads its files' from the
        columns)."""
        if isinstance(self._files, BulkFileEntries):
            return self._files.job_ids()
        return {r.job_id for f in self._files.values() for r in f.references.values() if r.job_id is not None}

    def first_unassignable(self, filenames: Sequence[str], partition_ids: Sequence[str]) -> int | None:
        """The position of the first of some references (``filenames[i]`` on ``partition_ids[i]``) that could not
        be assigned to a job: its file is not tracked, has no reference on the partition, or the reference is
        assigned to a job already. None if every one can be.

        A state loaded from a snapshot answers from its columns, making no object per reference.
        """
        if isinstance(self._files, BulkFileEntries):
            return self._files.first_unassignable(filenames, partition_ids)
        files = self._files
        for i, (name, pid) in enumerate(zip(filenames, partition_ids, strict=True)):
            f = files.get(name)
            ref = None if f is None else f.references.get(pid)
            if ref is None or ref.job_id is not None:
                return i
        return None

    def unreferenced_files_before(self, time: datetime) -> list[str]:
        """Files with no references whose last update was before a time: ready for garbage collection, in state order.
        A state loaded from a snapshot finds its files from the columns, making no object per file."""
        if isinstance(self._files, BulkFileEntries):
            return self._files.unreferenced_files_before(time)
        return [
            f.filename
            for f in self._files.values()
            if not f.references and f.last_update_time is not None and f.last_update_time < time
        ]

    def has_added_job(self, job_id: str) -> bool:
        """Whether an ADD_FILES transaction carrying this job id has been applied."""
        return job_id in self._added_jobs

    def job_already_added(self, job_id: str, inputs_hash: str | None) -> bool:
        """Whether a job's files were added, so that running it again must add nothing.

        Args:
            job_id: The job id.
            inputs_hash: The :func:`input_files_hash` of the job's input files, or None if it has none (rows).

        Returns:
            False if no files were added under this job id; True if they were, from the same input files (or
            either side's input is unknown).

        Raises:
            JobIdReusedError: If files were added under this job id from other input files.
        """
        if job_id not in self._added_jobs:
            return False
        recorded = self._added_jobs[job_id]
        if recorded is not None and inputs_hash is not None and recorded != inputs_hash:
            raise JobIdReusedError(job_id)
        return True

    @property
    def added_job_ids(self) -> frozenset[str]:
        """Job ids of every ADD_FILES transaction applied (used to make ingest idempotent)."""
        return frozenset(self._added_jobs)

    @property
    def added_job_inputs(self) -> dict[str, str]:
        """The input files hash of each added job that recorded one, by job id."""
        return {job_id: h for job_id, h in self._added_jobs.items() if h is not None}

    @property
    def pending_deletes(self) -> tuple[PendingDelete, ...]:
        """The pending row deletes, oldest first (empty for a table that never deleted rows)."""
        return tuple(self._deletes.values())

    def pending_deletes_of(self, filenames: Collection[str]) -> list[PendingDelete]:
        """The pending deletes that list any of some files, oldest first."""
        wanted = filenames if isinstance(filenames, (set, frozenset, dict)) else set(filenames)
        return [d for d in self._deletes.values() if not d.files.isdisjoint(wanted)]

    # --- writes (only transactions call these) -----------------------------------------------------------------
    def put(self, entry: AllReferencesToAFile) -> None:
        """Adds or replaces a file entry."""
        self._files[entry.filename] = entry

    def set_references(self, filename: str, references: dict[str, FileReference], time: datetime) -> None:
        """Replaces the references of a tracked file, recording the update time."""
        self._files[filename] = AllReferencesToAFile(filename=filename, references=references, last_update_time=time)

    def assign_jobs(
        self, filenames: Sequence[str], partition_ids: Sequence[str], job_ids: Sequence[str], time: datetime
    ) -> None:
        """Assigns references to jobs, in order: ``filenames[i]`` on ``partition_ids[i]`` to ``job_ids[i]``. A
        reference that is missing or already assigned (also by an earlier one of these) is skipped. Each reference
        assigned, and its file, get the update time.

        A state loaded from a snapshot records the assignment of a file of the snapshot without making objects: the
        file becomes objects when it is read (``sleeper.statestore.arrow_files``).
        """
        files = self._files
        if isinstance(files, BulkFileEntries) and files.assign_jobs(filenames, partition_ids, job_ids, time):
            return
        for name, pid, job_id in zip(filenames, partition_ids, job_ids, strict=True):
            f = files.get(name)
            ref = None if f is None else f.references.get(pid)
            if f is None or ref is None or ref.job_id is not None:
                continue
            refs = dict(f.references)
            refs[pid] = ref.with_job(job_id).at(time)
            files[name] = AllReferencesToAFile(filename=name, references=refs, last_update_time=time)

    def remove(self, filename: str) -> None:
        """Stops tracking a file, which leaves every pending delete's set (a delete left with none is gone)."""
        del self._files[filename]
        if self._deletes:
            for number, d in list(self._deletes.items()):
                if filename in d.files:
                    rest = d.files - {filename}
                    if rest:
                        self._deletes[number] = PendingDelete(d.number, d.filter, rest)
                    else:
                        del self._deletes[number]

    def clear(self) -> None:
        """Stops tracking every file, so no delete is pending (the added job ids are kept: those jobs stay done)."""
        self._files.clear()
        self._deletes.clear()

    def add_pending_delete(self, delete: PendingDelete) -> None:
        """Records a pending delete (one with no files hides nothing and is not kept)."""
        if delete.files:
            self._deletes[delete.number] = delete

    def join_pending_deletes(self, numbers: Iterable[int], filename: str) -> None:
        """Adds a file to the sets of some pending deletes (a compaction output whose inputs were all in the set and
        that did not apply the delete); numbers of deletes no longer pending are skipped."""
        for number in numbers:
            d = self._deletes.get(number)
            if d is not None:
                self._deletes[number] = PendingDelete(d.number, d.filter, d.files | {filename})

    def record_added_job(self, job_id: str, inputs_hash: str | None = None) -> None:
        """Remembers that an ingest job's files were added, from input files with this hash if known."""
        self._added_jobs[job_id] = inputs_hash

    def copy(self) -> FilesState:
        """An independent copy (entries are immutable, so a shallow copy of the maps suffices)."""
        out = FilesState()
        out._files = self._files.copy()
        out._added_jobs = dict(self._added_jobs)
        out._deletes = dict(self._deletes)
        return out

    @property
    def entries(self) -> FileEntries:
        """The files by name, as this state keeps them (read them; only transactions change a state)."""
        return self._files

    @classmethod
    def over(
        cls,
        entries: FileEntries,
        added_job_ids: Iterable[str] = (),
        added_job_inputs: Mapping[str, str] | None = None,
        pending_deletes: Iterable[PendingDelete] = (),
    ) -> FilesState:
        """A state keeping its files in the given mapping (as loaded from a snapshot), which it then owns.

        Args:
            entries: The files by name.
            added_job_ids: The ids of the jobs whose files were added.
            added_job_inputs: The input files hash of those jobs that recorded one (the others have none).
            pending_deletes: The pending row deletes.
        """
        out = cls()
        out._files = entries
        for d in pending_deletes:
            out.add_pending_delete(d)
        inputs = added_job_inputs or {}
        for job_id in added_job_ids:
            out._added_jobs[job_id] = inputs.get(job_id)
        return out

    @classmethod
    def of(
        cls,
        files: Iterable[AllReferencesToAFile],
        added_job_ids: Iterable[str] = (),
        added_job_inputs: Mapping[str, str] | None = None,
        pending_deletes: Iterable[PendingDelete] = (),
    ) -> FilesState:
        """Builds a state from file entries and added jobs (as loaded from a snapshot).

        Args:
            files: The files with their references.
            added_job_ids: The ids of the jobs whose files were added.
            added_job_inputs: The input files hash of those jobs that recorded one (the others have none).
            pending_deletes: The pending row deletes.
        """
        out = cls()
        for d in pending_deletes:
            out.add_pending_delete(d)
        for f in files:
            out._files[f.filename] = f
        inputs = added_job_inputs or {}
        for job_id in added_job_ids:
            out._added_jobs[job_id] = inputs.get(job_id)
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FilesState)
            and len(self._files) == len(other._files)
            and all(other._files.get(name) == self._files[name] for name in self._files)
            and self._added_jobs == other._added_jobs
            and self._deletes == other._deletes
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
