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

from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import ReferenceColumns

__all__ = ["ArrowFileEntries", "PartitionFiles", "SnapshotFiles"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SINGLES_BEFORE_LISTS = 256
"""Files made one at a time from the columns before the columns are copied into Python lists (a few ms per 100k
references), from which each further file is made several times faster."""


class _Times:
    """UTC datetimes of epoch milliseconds, each distinct value made once (references share update times)."""

    def __init__(self) -> None:
        self._by_ms: dict[int, datetime] = {}

    def __call__(self, ms: int) -> datetime:
        time = self._by_ms.get(ms)
        if time is None:
            time = self._by_ms[ms] = _EPOCH + timedelta(milliseconds=ms)
        return time


class SnapshotFiles:
    """The files of a snapshot as columns, and the objects made from them so far (shared, never changed).

    Args:
        table: The snapshot's rows, of the files snapshot schema (``sleeper.statestore.snapshots.FILES_SCHEMA``).
    """

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._count: int = int(table.num_rows)
        self._rows: dict[str, int] | None = None
        self._names: list[str] = []
        lists = table.column("partitionReferences").combine_chunks()
        if isinstance(lists, pa.ChunkedArray):  # an empty table
            lists = pa.array([], type=table.schema.field("partitionReferences").type)
        self.offsets: np.ndarray = lists.offsets.to_numpy()
        values = lists.values
        self._partition_ids: pa.Array = values.field("partitionId")
        self._job_ids: pa.Array = values.field("jobId")
        self._ref_ms: np.ndarray = values.field("updateTime").cast(pa.int64()).to_numpy(zero_copy_only=False)
        self._ref_rows: np.ndarray = values.field("numberOfRows").to_numpy(zero_copy_only=False)
        self._approximate: np.ndarray = values.field("countApproximate").to_numpy(zero_copy_only=False)
        self._only_this: np.ndarray = values.field("onlyContainsDataForThisPartition").to_numpy(zero_copy_only=False)
        self._file_ms: np.ndarray = table.column("updateTime").cast(pa.int64()).to_numpy()
        self._by_partition: tuple[dict[str, tuple[int, int]], np.ndarray] | None = None
        self._names_by_partition: list[str] | None = None
        self._parents: np.ndarray | None = None
        self._assigned: np.ndarray | None = None
        self._times = _Times()
        self._made: dict[int, AllReferencesToAFile] = {}
        self._singles = 0
        self._lists: tuple[list[Any], ...] | None = None

    def __len__(self) -> int:
        return self._count

    @property
    def rows(self) -> dict[str, int]:
        """The row of each file (the last, should a snapshot name a file twice). Made when first needed, which is
        the first time a file is looked up by name: loading does not make a string per file."""
        if self._rows is None:
            self._index_names()
        assert self._rows is not None
        return self._rows

    def _file_names(self) -> list[str]:
        """The name of each row's file."""
        if self._rows is None:
            self._index_names()
        return self._names

    def _index_names(self) -> None:
        self._names = self.table.column("filename").to_pylist()
        self._rows = dict(zip(self._names, range(self._count), strict=True))

    @property
    def unique(self) -> bool:
        """Whether no file is named twice."""
        return len(self.rows) == self._count

    def entry(self, row: int) -> AllReferencesToAFile:
        """The file of a row, made now if not made before."""
        made = self._made.get(row)
        if made is None:
            self._singles += 1
            if self._lists is not None or self._singles > _SINGLES_BEFORE_LISTS:
                self._make_many([row])  # a transaction touching many files: read them from Python lists
                made = self._made[row]
            else:
                made = self._made[row] = self._make(row)
        return made

    def entries(self, rows: Iterable[int]) -> list[AllReferencesToAFile]:
        """The files of some rows, those not yet made made together (from Python lists of the columns)."""
        wanted = list(rows)
        missing = [row for row in wanted if row not in self._made]
        if len(missing) > 64:
            self._make_many(missing)
        return [self.entry(row) for row in wanted]

    def live_rows(self, removed: Sequence[str] | set[str]) -> np.ndarray:
        """A mask of the rows that hold a file still in the state: not removed or replaced, not shadowed by a later
        row of the same name."""
        keep = np.ones(self._count, dtype=np.bool_)
        if not self.unique:
            keep[:] = False
            keep[np.fromiter(self.rows.values(), dtype=np.int64, count=len(self.rows))] = True
        if removed:
            names = self.table.column("filename")
            gone = pc.is_in(names, value_set=pa.array(list(removed), pa.utf8())).to_numpy(zero_copy_only=False)
            keep &= ~gone
        return keep

    def state_rows(self) -> np.ndarray:
        """The rows holding the files in state order (each name's last row, in the order names first appear)."""
        if self.unique:
            return np.arange(self._count, dtype=np.int64)
        return np.fromiter(self.rows.values(), dtype=np.int64, count=len(self.rows))

    def unreferenced_before(self, before_ms: float) -> np.ndarray:
        """A mask of the rows whose file has no references and was updated before a time (epoch milliseconds)."""
        mask: np.ndarray = (np.diff(self.offsets) == 0) & (self._file_ms < before_ms)
        return mask

    def file_names_of(self, rows: np.ndarray) -> list[str]:
        """The names of the files of some rows."""
        if not len(rows):
            return []
        names: list[str] = self.table.column("filename").take(pa.array(rows, pa.int64())).to_pylist()
        return names

    def files_on(self, partition_id: str) -> list[str]:
        """The files of the snapshot referenced on a partition, in snapshot order (found through an index by
        partition built once, with numpy: no object per reference)."""
        spans, positions = self._partition_index()
        span = spans.get(partition_id)
        if span is None:
            return []
        if self._names_by_partition is None:  # made when first asked: planning from positions does not need it
            names = self._file_names()
            self._names_by_partition = [names[row] for row in self.parents[positions].tolist()]
        return self._names_by_partition[span[0] : span[1]]

    def partition_ids(self) -> list[str]:
        """The partitions the snapshot references a file on (from the index by partition)."""
        spans, _ = self._partition_index()
        return list(spans)

    def references_on(self, partition_ids: Iterable[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The positions of the references (in the flattened reference columns) on some partitions, grouped by
        partition in the order given and in snapshot order within each, through the index by partition.

        Returns:
            The partitions that have references, the positions, and where each partition's positions end.
        """
        spans, positions = self._partition_index()
        found: list[str] = []
        bounds: list[tuple[int, int]] = []
        for partition_id in partition_ids:
            span = spans.get(partition_id)
            if span is not None:
                found.append(partition_id)
                bounds.append(span)
        if not bounds:
            return [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        starts, ends = np.array(bounds, dtype=np.int64).T
        counts = ends - starts
        ranges = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts - starts, counts)
        return found, positions[ranges], np.cumsum(counts)

    @property
    def parents(self) -> np.ndarray:
        """The row of the file each reference position belongs to."""
        if self._parents is None:
            self._parents = np.repeat(np.arange(self._count, dtype=np.int64), np.diff(self.offsets))
        return self._parents

    def _partition_index(self) -> tuple[dict[str, tuple[int, int]], np.ndarray]:
        """For each partition, the span of an array of reference positions (grouped by partition, in snapshot order
        within each) holding its references. Built once."""
        if self._by_partition is not None:
            return self._by_partition
        if not len(self._partition_ids):
            self._by_partition = {}, np.zeros(0, dtype=np.int64)
            return self._by_partition
        codes = pc.dictionary_encode(self._partition_ids)
        indices = codes.indices.to_numpy(zero_copy_only=False)
        parents = self.parents
        positions = np.arange(len(parents), dtype=np.int64)
        if not self.unique:  # only the last row of a file named twice holds it
            live = self.live_rows(())[parents]
            indices, parents, positions = indices[live], parents[live], positions[live]
        order = np.argsort(indices, kind="stable")
        counts = np.bincount(indices, minlength=len(codes.dictionary))
        ends = np.cumsum(counts)
        starts = ends - counts
        partition_ids: list[str] = codes.dictionary.to_pylist()
        spans = dict(zip(partition_ids, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
        self._by_partition = spans, positions[order]
        return self._by_partition

    def positions_on(self, rows: np.ndarray, partition_ids: Sequence[str]) -> np.ndarray:
        """For each of some rows, the position of its file's reference on a partition (``partition_ids[i]`` for
        ``rows[i]``), or -1 if it has none there; compared as columns."""
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        starts = self.offsets[rows].astype(np.int64)
        counts = self.offsets[rows + 1].astype(np.int64) - starts
        wanted = pa.array(partition_ids, pa.utf8())
        if bool((counts == 1).all()):  # one reference per file: compared in place
            pairs, candidates = np.arange(len(rows), dtype=np.int64), starts
        else:
            pairs = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
            before = np.cumsum(counts) - counts
            candidates = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(starts - before, counts)
            wanted = wanted.take(pa.array(pairs))
        match = pc.equal(self._partition_ids.take(pa.array(candidates)), wanted)
        matched = match.to_numpy(zero_copy_only=False)
        out = np.full(len(rows), -1, dtype=np.int64)
        out[pairs[matched]] = candidates[matched]
        return out

    def assigned(self, positions: np.ndarray) -> np.ndarray:
        """Whether each of some reference positions is assigned to a job in the snapshot."""
        if self._assigned is None:
            self._assigned = np.asarray(self._job_ids.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
        out: np.ndarray = self._assigned[positions]
        return out

    def make_references(self, positions: np.ndarray) -> list[FileReference]:
        """The references at some positions as objects (made now, from Python lists of the columns; the files
        they belong to are not made)."""
        partition_ids, job_ids, ref_times, ref_rows, approximate, only_this, _, _ = self._python_lists()
        names = self._file_names()
        return [
            FileReference(
                filename=names[row],
                partition_id=partition_ids[j],
                number_of_rows=ref_rows[j],
                job_id=job_ids[j],
                count_approximate=approximate[j],
                only_contains_data_for_this_partition=only_this[j],
                last_update_time=ref_times[j],
            )
            for j, row in zip(positions.tolist(), self.parents[positions].tolist(), strict=True)
        ]

    @property
    def job_id_column(self) -> pa.Array:
        """The job id of each reference (null if unassigned)."""
        return self._job_ids

    def job_ids_of(self, row: int) -> list[str | None]:
        """The job ids of a row's file's references, without making its objects."""
        lists = self._python_lists()
        offsets = lists[7]
        return lists[1][offsets[row] : offsets[row + 1]]

    def reference_columns(self, positions: np.ndarray) -> ReferenceColumns:
        """The references at some positions as columns (Python lists; no object per reference)."""
        names = self._file_names()
        partition_ids = self._python_lists()[0]
        js = positions.tolist()
        return ReferenceColumns(
            filenames=[names[row] for row in self.parents[positions].tolist()],
            partition_ids=[partition_ids[j] for j in js],
            number_of_rows=self._ref_rows[positions].tolist(),
            job_ids=self._job_ids.take(pa.array(positions, pa.int64())).to_pylist(),
            count_approximate=self._approximate[positions].tolist(),
            only_contains_data_for_this_partition=self._only_this[positions].tolist(),
        )

    def append_columns(
        self, out: ReferenceColumns, row: int, wanted: Collection[str], assigned: tuple[str, str] | None = None
    ) -> None:
        """Adds the references of a row's file on the wanted partitions to some columns, one of them assigned to a
        job since (``assigned``: the partition and the job), without making objects."""
        partition_ids, job_ids, _, ref_rows, approximate, only_this, _, offsets = self._python_lists()
        name = self._file_names()[row]
        for j in range(offsets[row], offsets[row + 1]):
            partition_id = partition_ids[j]
            if partition_id not in wanted:
                continue
            out.filenames.append(name)
            out.partition_ids.append(partition_id)
            out.number_of_rows.append(ref_rows[j])
            out.job_ids.append(assigned[1] if assigned is not None and assigned[0] == partition_id else job_ids[j])
            out.count_approximate.append(approximate[j])
            out.only_contains_data_for_this_partition.append(only_this[j])

    def partitions_of(self, row: int) -> list[str]:
        """The partitions a row's file is referenced on, without making its objects."""
        lists = self._python_lists()
        offsets = lists[7]
        return lists[0][offsets[row] : offsets[row + 1]]

    def _make(self, row: int) -> AllReferencesToAFile:
        name = self._file_names()[row]
        times = self._times
        references: dict[str, FileReference] = {}
        for j in range(int(self.offsets[row]), int(self.offsets[row + 1])):
            partition_id: str = self._partition_ids[j].as_py()
            references[partition_id] = FileReference(
                filename=name,
                partition_id=partition_id,
                number_of_rows=int(self._ref_rows[j]),
                job_id=self._job_ids[j].as_py(),
                count_approximate=bool(self._approximate[j]),
                only_contains_data_for_this_partition=bool(self._only_this[j]),
                last_update_time=times(int(self._ref_ms[j])),
            )
        return AllReferencesToAFile(
            filename=name, references=references, last_update_time=times(int(self._file_ms[row]))
        )

    def _python_lists(self) -> tuple[list[Any], ...]:
        """The columns as Python lists (made once): partition ids, job ids, reference times, rows, approximate,
        only this partition, file times, offsets."""
        if self._lists is None:
            self._lists = (
                self._partition_ids.to_pylist(),
                self._job_ids.to_pylist(),
                _datetimes(self._ref_ms),
                self._ref_rows.tolist(),
                self._approximate.tolist(),
                self._only_this.tolist(),
                _datetimes(self._file_ms),
                self.offsets.tolist(),
            )
        return self._lists

    def _make_many(self, rows: list[int]) -> None:
        partition_ids, job_ids, ref_times, ref_rows, approximate, only_this, file_times, offsets = self._python_lists()
        names = self._file_names()
        made = self._made
        for row in rows:
            name = names[row]
            references: dict[str, FileReference] = {}
            for j in range(offsets[row], offsets[row + 1]):
                references[partition_ids[j]] = FileReference(
                    filename=name,
                    partition_id=partition_ids[j],
                    number_of_rows=ref_rows[j],
                    job_id=job_ids[j],
                    count_approximate=approximate[j],
                    only_contains_data_for_this_partition=only_this[j],
                    last_update_time=ref_times[j],
                )
            made[row] = AllReferencesToAFile(filename=name, references=references, last_update_time=file_times[row])


def _datetimes(epoch_ms: np.ndarray) -> list[datetime]:
    """UTC datetimes of epoch milliseconds, each distinct value made once (references share update times)."""
    if not len(epoch_ms):
        return []
    distinct, positions = np.unique(epoch_ms, return_inverse=True)
    times = [_EPOCH + timedelta(milliseconds=ms) for ms in distinct.tolist()]
    return [times[i] for i in positions.tolist()]


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
