"""A table's files held as the Arrow columns of the snapshot they were loaded from, made into objects when read.

Loading a files state used to make a ``FileReference`` and an ``AllReferencesToAFile`` per file of the snapshot
(1.4-1.8 s for 100,000 references here), most of which no caller ever reads: a commit checks a few files, a query
plans from an index by partition. :class:`ArrowFileEntries` is the mapping a loaded ``FilesState`` keeps its files in
(``sleeper.core.statestore.state.FileEntries``): the snapshot's columns (:class:`SnapshotFiles`, shared by every copy
of the state and never changed), the files added or replaced since as objects, and the names of the snapshot's files
removed or replaced since. A file of the snapshot becomes an object when it is first read, and stays made (in the
shared columns' cache; entries are immutable). Reading every file (``values``) makes the rest in one pass.

What is asked of the whole state is answered from the columns without making objects: the files on a partition a
query plans from (:class:`PartitionFiles`, through an index by partition built once per snapshot), the references on
some partitions as columns that compaction job creation plans from (``reference_columns``), the jobs references are
assigned to (``job_ids``) and the Arrow table a snapshot is written from (:meth:`ArrowFileEntries.to_table`).

A job assignment (ASSIGN_JOB_IDS) is checked and applied for all its files at once (``first_unassignable``,
``assign_jobs``): a dict look-up per file finds its row, the reference on the job's partition and its job are read
from the columns, and each snapshot file assigned is recorded as its row, partition, job and time, made into objects
when it is read, in the place in the state's order that setting the file would give it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core.statestore import AllReferencesToAFile, FileReference, ReferenceColumns
from sleeper.statestore.snapshot_files import SnapshotFiles

__all__ = ["ArrowFileEntries", "PartitionFiles", "SnapshotFiles"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_Assigned = tuple[int | AllReferencesToAFile, str, str, datetime]
"""A file one of whose references was assigned to a job since, not yet made into objects: the file before (a row of
the snapshot, or its objects), the partition, the job id and the time."""


class ArrowFileEntries:
    """The files of a state by name: a snapshot's files as columns, and the changes since as objects.

    Implements ``sleeper.core.statestore.state.FileEntries`` and ``BulkFileEntries``. Iteration gives the snapshot's
    files in its order, then the files added or replaced since in the order they were set.

    A job assignment (``assign_jobs``) records each file it changes as the file before and the assignment
    (``_Assigned``), checked and recorded with a few column operations, a dict update and a set update for all of
    them; such a file becomes objects when it is read.

    Args:
        base: The snapshot's files.
    """

    def __init__(self, base: SnapshotFiles) -> None:
        self._base: SnapshotFiles | None = base
        self._changed: dict[str, AllReferencesToAFile | _Assigned] = {}
        self._removed: set[str] = set()
        self._gone: np.ndarray | None = None  # the rows of the files in _removed, once any is
        self._changed_index: dict[str, list[str]] | None = None

    # --- the mapping ---------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        base = 0 if self._base is None else len(self._base.rows) - len(self._removed)
        return base + len(self._changed)

    def __contains__(self, key: object) -> bool:
        if key in self._changed:
            return True
        return self._base is not None and key in self._base.rows and key not in self._removed

    def __iter__(self) -> Iterator[str]:
        if self._base is not None:
            removed = self._removed
            yield from (name for name in self._base.rows if name not in removed)
        yield from self._changed

    def __getitem__(self, key: str) -> AllReferencesToAFile:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str) -> AllReferencesToAFile | None:
        """A file by name, or None."""
        changed = self._changed.get(key)
        if changed is not None:
            return self._made(key, changed) if isinstance(changed, tuple) else changed
        if self._base is None or key in self._removed:
            return None
        row = self._base.rows.get(key)
        return None if row is None else self._base.entry(row)

    def __setitem__(self, key: str, value: AllReferencesToAFile) -> None:
        if self._base is not None and key in self._base.rows:
            self._remove(key)
        self._changed[key] = value
        self._changed_index = None

    def __delitem__(self, key: str) -> None:
        self._changed_index = None
        if key in self._changed:
            del self._changed[key]
            return
        if self._base is None or key not in self._base.rows or key in self._removed:
            raise KeyError(key)
        self._remove(key)

    def values(self) -> list[AllReferencesToAFile]:
        """Every file (the snapshot's not yet made are made together)."""
        out: list[AllReferencesToAFile] = []
        if self._base is not None:
            if self._removed or not self._base.unique:
                rows: Iterable[int] = (row for name, row in self._base.rows.items() if name not in self._removed)
            else:
                rows = range(len(self._base))
            out = self._base.entries(rows)
        self._make_assigned()
        out.extend(self._changed.values())  # type: ignore[arg-type]  # all made above
        return out

    def clear(self) -> None:
        """Removes every file."""
        self._base = None
        self._changed.clear()
        self._removed.clear()
        self._gone = None
        self._changed_index = None

    def copy(self) -> ArrowFileEntries:
        """An independent copy, sharing the snapshot's columns."""
        out = ArrowFileEntries.__new__(ArrowFileEntries)
        out._base = self._base
        out._changed = dict(self._changed)
        out._removed = set(self._removed)
        out._gone = None if self._gone is None else self._gone.copy()
        out._changed_index = None
        return out

    def _remove(self, key: str) -> None:
        """Records that a file of the snapshot was removed or replaced."""
        assert self._base is not None
        self._removed.add(key)
        if self._gone is None:
            self._gone = np.zeros(len(self._base), dtype=np.bool_)
        self._gone[self._base.rows[key]] = True

    def _live(self) -> np.ndarray:
        """A mask of the snapshot's rows holding a file still in the state unchanged."""
        assert self._base is not None
        keep = self._base.live_rows(())
        if self._gone is not None:
            keep &= ~self._gone
        return keep

    # --- files assigned to jobs, made when read ----------------------------------------------------------------------
    def _made(self, key: str, assigned: _Assigned) -> AllReferencesToAFile:
        """The objects of a file recorded by ``assign_jobs``, made now and kept in its place."""
        source, partition_id, job_id, time = assigned
        if isinstance(source, int):
            assert self._base is not None  # clear() drops the assignments with the snapshot
            before = self._base.entry(source)
        else:
            before = source
        references = dict(before.references)
        references[partition_id] = references[partition_id].with_job(job_id).at(time)
        made = AllReferencesToAFile(filename=key, references=references, last_update_time=time)
        self._changed[key] = made
        return made

    def _make_assigned(self) -> None:
        """Makes the objects of every file recorded by ``assign_jobs`` (the snapshot's rows together)."""
        pending = [(key, value) for key, value in self._changed.items() if isinstance(value, tuple)]
        if not pending:
            return
        if self._base is not None:
            self._base.entries(value[0] for _, value in pending if isinstance(value[0], int))
        for key, value in pending:
            self._made(key, value)

    def _partitions_of(self, value: AllReferencesToAFile | _Assigned) -> Iterable[str]:
        if not isinstance(value, tuple):
            return value.references
        source = value[0]
        if isinstance(source, int):
            assert self._base is not None
            return self._base.partitions_of(source)
        return source.references

    def _rows_of(self, filenames: Sequence[str]) -> np.ndarray:
        """For each name: its snapshot row if the snapshot's file is in the state unchanged, -2 if the file was
        added or replaced since, -1 if it is not tracked."""
        assert self._base is not None
        rows = self._base.rows
        count = len(filenames)
        found = np.fromiter(map(rows.get, filenames, repeat(-1, count)), dtype=np.int64, count=count)
        if self._gone is not None:  # removed or replaced since
            in_snapshot = found >= 0
            found[np.flatnonzero(in_snapshot)[self._gone[found[in_snapshot]]]] = -1
        if self._changed:  # a file changed since is not in the snapshot, or its row is gone
            changed = self._changed
            found[[i for i in np.flatnonzero(found == -1).tolist() if filenames[i] in changed]] = -2
        return found

    def _unassigned_in_snapshot(
        self, rows: np.ndarray, partition_ids: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Of the names whose ``rows`` are the snapshot's: their positions among the names, and for each its
        reference position on its partition and whether that reference exists and is assigned to no job."""
        assert self._base is not None
        in_snapshot = np.flatnonzero(rows >= 0)
        wanted = partition_ids if len(in_snapshot) == len(rows) else [partition_ids[i] for i in in_snapshot.tolist()]
        positions = self._base.positions_on(rows[in_snapshot], wanted)
        found = positions >= 0
        free = found.copy()
        free[found] = ~self._base.assigned(positions[found])
        return in_snapshot, positions, free

    def _changed_free(self, filename: str, partition_id: str) -> AllReferencesToAFile | None:
        """A changed file, if it has an unassigned reference on the partition."""
        entry = self.get(filename)
        ref = None if entry is None else entry.references.get(partition_id)
        return entry if ref is not None and ref.job_id is None else None

    def first_unassignable(self, filenames: Sequence[str], partition_ids: Sequence[str]) -> int | None:
        """As ``FilesState.first_unassignable``, from the columns for the snapshot's files."""
        if self._base is None:
            return _first_unassignable_of(self, filenames, partition_ids)
        rows = self._rows_of(filenames)
        in_snapshot, _, free = self._unassigned_in_snapshot(rows, partition_ids)
        bad = [int(i) for i in in_snapshot[~free][:1]]
        bad.extend(np.flatnonzero(rows == -1)[:1].tolist())
        for i in np.flatnonzero(rows == -2).tolist():
            if self._changed_free(filenames[i], partition_ids[i]) is None:
                bad.append(i)
                break
        return min(bad) if bad else None

    def assign_jobs(
        self, filenames: Sequence[str], partition_ids: Sequence[str], job_ids: Sequence[str], time: datetime
    ) -> bool:
        """As ``FilesState.assign_jobs``: the snapshot's files are checked as columns and recorded as assigned
        without making objects (``_Assigned``). Leaves to the files state (returns False) an assignment naming a
        file of the snapshot twice."""
        if self._base is None:
            return False
        rows = self._rows_of(filenames)
        in_snapshot, positions, free = self._unassigned_in_snapshot(rows, partition_ids)
        snapshot_rows = np.sort(rows[in_snapshot])
        if bool((snapshot_rows[1:] == snapshot_rows[:-1]).any()):  # a file named twice
            return False
        # Files added or replaced since the snapshot (objects, or assigned before): one at a time, in order. They
        # are in the state already, so their places do not move.
        for i in np.flatnonzero(rows == -2).tolist():
            name, partition_id = filenames[i], partition_ids[i]
            entry = self._changed_free(name, partition_id)
            if entry is not None:
                self._changed[name] = (entry, partition_id, job_ids[i], time)
        # The snapshot's files: each recorded as assigned, in order (each is new to the changes: they go at the end
        # in this order, as setting each file would put them).
        chosen = in_snapshot[free].tolist()
        if chosen:
            names = [filenames[i] for i in chosen]
            assigned = zip(
                rows[chosen].tolist(),
                [partition_ids[i] for i in chosen],
                [job_ids[i] for i in chosen],
                repeat(time),
                strict=False,
            )
            self._changed.update(zip(names, assigned, strict=False))
            self._removed.update(names)
            if self._gone is None:
                self._gone = np.zeros(len(self._base), dtype=np.bool_)
            self._gone[rows[chosen]] = True
        self._changed_index = None
        return True

    def references_by_partition(self, partition_ids: Collection[str]) -> dict[str, list[FileReference]]:
        """As ``FilesState.references_by_partition``: the snapshot's references found through its index by
        partition and made into objects (not their files), then those of the files changed since."""
        wanted = partition_ids if isinstance(partition_ids, (set, frozenset, dict)) else set(partition_ids)
        out: dict[str, list[FileReference]] = {}
        base = self._base
        if base is not None and not base.unique:
            return _references_by_partition_of(self, wanted)
        if base is not None:
            found, positions, ends = base.references_on(partition_ids)
            if self._removed and len(positions):
                live = self._live()[base.parents[positions]]
                positions = positions[live]
                ends = np.concatenate(([0], np.cumsum(live)))[ends]
            references = base.make_references(positions)
            start = 0
            for partition_id, end in zip(found, ends.tolist(), strict=True):
                if end > start:
                    out[partition_id] = references[start:end]
                start = end
        if self._changed:
            for key, value in list(self._changed.items()):
                if any(pid in wanted for pid in self._partitions_of(value)):
                    entry = self._made(key, value) if isinstance(value, tuple) else value
                    for pid, ref in entry.references.items():
                        if pid in wanted:
                            out.setdefault(pid, []).append(ref)
        return out

    def reference_columns(self, partition_ids: Collection[str]) -> ReferenceColumns:
        """As ``FilesState.reference_columns``: the snapshot's references found through its index by partition and
        read from its columns, then those of the files changed since (a file assigned since from its row too)."""
        wanted = partition_ids if isinstance(partition_ids, (set, frozenset, dict)) else set(partition_ids)
        base = self._base
        out = ReferenceColumns()
        if base is not None and not base.unique:
            for entry in self.values():
                for pid, ref in entry.references.items():
                    if pid in wanted:
                        out.append(ref)
            return out
        if base is not None:
            _, positions, _ = base.references_on(partition_ids)
            if len(positions):
                positions = np.sort(positions)  # the snapshot's order
                if self._removed:
                    positions = positions[self._live()[base.parents[positions]]]
                out = base.reference_columns(positions)
        for value in self._changed.values():
            if not isinstance(value, tuple):
                for pid, ref in value.references.items():
                    if pid in wanted:
                        out.append(ref)
                continue
            source, assigned_on, job_id, _ = value
            if isinstance(source, int):
                assert base is not None
                base.append_columns(out, source, wanted, (assigned_on, job_id))
                continue
            for pid, ref in source.references.items():
                if pid in wanted:
                    out.append(ref.with_job(job_id) if pid == assigned_on else ref)
        return out

    def job_ids(self) -> set[str]:
        """As ``FilesState.job_ids``: the snapshot's from its column (of the files still in the state unchanged),
        then those of the files changed since."""
        out: set[str] = set()
        base = self._base
        if base is not None and len(base):
            jobs = base.job_id_column
            if self._removed or not base.unique:
                jobs = jobs.filter(pa.array(self._live()[base.parents]))
            out.update(job for job in pc.unique(jobs).to_pylist() if job is not None)
        for value in self._changed.values():
            if not isinstance(value, tuple):
                out.update(r.job_id for r in value.references.values() if r.job_id is not None)
                continue
            source, _, job_id, _ = value
            out.add(job_id)
            if isinstance(source, int):
                assert base is not None
                out.update(job for job in base.job_ids_of(source) if job is not None)
            else:
                out.update(r.job_id for r in source.references.values() if r.job_id is not None)
        return out

    # --- whole-state answers from the columns ----------------------------------------------------------------------
    def unreferenced_files_before(self, time: datetime) -> list[str]:
        """As ``FilesState.unreferenced_files_before``: the snapshot's files (still in the state unchanged) with no
        references and updated before the time, from its columns, then those changed since."""
        out: list[str] = []
        base = self._base
        if base is not None and len(base):
            rows = base.state_rows()
            if self._gone is not None:
                rows = rows[~self._gone[rows]]
            before_ms = (time - _EPOCH) / timedelta(milliseconds=1)
            found = rows[base.unreferenced_before(before_ms)[rows]]
            names = base.file_names_of(found)
            out.extend(names)
        for name, value in self._changed.items():
            if isinstance(value, tuple):
                continue  # a file assigned to a job since holds that reference
            if not value.references and value.last_update_time is not None and value.last_update_time < time:
                out.append(name)
        return out

    def files_on(self, partition_id: str) -> list[str]:
        """The files referenced on a partition: the snapshot's still in the state, then those changed since."""
        out: list[str] = []
        if self._base is not None:
            removed = self._removed
            out = [name for name in self._base.files_on(partition_id) if name not in removed]
        if self._changed:
            if self._changed_index is None:
                index: dict[str, list[str]] = {}
                for name, value in self._changed.items():
                    for pid in self._partitions_of(value):
                        index.setdefault(pid, []).append(name)
                self._changed_index = index
            out.extend(self._changed_index.get(partition_id, ()))
        return out

    def maybe_referenced_partitions(self) -> set[str]:
        """Every partition a file may be referenced on: the snapshot's (some of whose files may have gone since) and
        the changed files'. A superset, from the indexes alone; ``files_on`` tells whether a partition has files."""
        out: set[str] = set() if self._base is None else set(self._base.partition_ids())
        for value in self._changed.values():
            out.update(self._partitions_of(value))
        return out

    def to_table(self, changed_table: Any) -> pa.Table:
        """The files as a snapshot's table: the snapshot's rows still in the state, then the changed files.

        Args:
            changed_table: Makes the table of some files given as objects (the snapshot writer's own).
        """
        parts: list[pa.Table] = []
        if self._base is not None and len(self._base):
            keep = self._live()
            table = self._base.table
            parts.append(table if keep.all() else table.filter(pa.array(keep)))
        if self._changed or not parts:
            self._make_assigned()
            parts.append(changed_table(list(self._changed.values())))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _first_unassignable_of(
    entries: ArrowFileEntries, filenames: Sequence[str], partition_ids: Sequence[str]
) -> int | None:
    for i, (name, pid) in enumerate(zip(filenames, partition_ids, strict=True)):
        entry = entries.get(name)
        ref = None if entry is None else entry.references.get(pid)
        if ref is None or ref.job_id is not None:
            return i
    return None


def _references_by_partition_of(entries: ArrowFileEntries, wanted: Collection[str]) -> dict[str, list[FileReference]]:
    out: dict[str, list[FileReference]] = {}
    for entry in entries.values():
        for pid, ref in entry.references.items():
            if pid in wanted:
                out.setdefault(pid, []).append(ref)
    return out


class PartitionFiles:
    """The files referenced on each partition of a files state, as it was when this was made.

    For a state loaded from a snapshot the snapshot's part comes from its columns (an index by partition built once
    per snapshot); otherwise every file is gone through once here.

    Args:
        entries: The state's files (``FilesState.entries``); read now, so later changes to the state are not seen
            (except through the snapshot's columns, which never change).
    """

    def __init__(self, entries: Any) -> None:
        self._entries: ArrowFileEntries | None = None
        self._index: dict[str, list[str]] = {}
        if isinstance(entries, ArrowFileEntries):
            self._entries = entries.copy()
        else:
            for entry in entries.values():
                for partition_id in entry.references:
                    self._index.setdefault(partition_id, []).append(entry.filename)

    def files_on(self, partition_id: str) -> list[str]:
        """The files referenced on a partition, in state order."""
        if self._entries is not None:
            return self._entries.files_on(partition_id)
        return list(self._index.get(partition_id, ()))

    def maybe_referenced_partitions(self) -> set[str]:
        """Every partition a file may be referenced on: a superset (for a state loaded from a snapshot, a partition
        whose files have all gone since may be in it), found from the indexes without going through every reference.
        ``files_on`` tells whether one has files."""
        if self._entries is not None:
            return self._entries.maybe_referenced_partitions()
        return set(self._index)
