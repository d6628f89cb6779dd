"""A table's files held as the Arrow columns of the snapshot they were loaded from, made into objects when read.

Loading a files state used to make a ``FileReference`` and an ``AllReferencesToAFile`` per file of the snapshot
(1.4-1.8 s for 100,000 references here), most of which no caller ever reads: a commit checks a few files, a query
plans from an index by partition. :class:`ArrowFileEntries` is the mapping a loaded ``FilesState`` keeps its files in
(``sleeper.core.statestore.state.FileEntries``): the snapshot's columns (:class:`SnapshotFiles`, shared by every copy
of the state and never changed), the files added or replaced since as objects, and the names of the snapshot's files
removed or replaced since. A file of the snapshot becomes an object when it is first read, and stays made (in the
shared columns' cache; entries are immutable). Reading every file (``values``) makes the rest in one pass.

What is asked of the whole state is answered from the columns without making objects: the files on a partition a
query plans from (:class:`PartitionFiles`, through an index by partition built once per snapshot) and the Arrow table
a snapshot is written from (:meth:`ArrowFileEntries.to_table`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core.statestore.references import AllReferencesToAFile, FileReference

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
        self._by_partition: tuple[dict[str, tuple[int, int]], list[str]] | None = None
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

    def files_on(self, partition_id: str) -> list[str]:
        """The files of the snapshot referenced on a partition, in snapshot order (found through an index by
        partition built once, with numpy: no object per reference)."""
        if self._by_partition is None:
            self._by_partition = self._partition_index()
        spans, names = self._by_partition
        span = spans.get(partition_id)
        return [] if span is None else names[span[0] : span[1]]

    def _partition_index(self) -> tuple[dict[str, tuple[int, int]], list[str]]:
        """For each partition, the span of a list of file names (grouped by partition, in snapshot order within
        each) holding the files referenced on it."""
        if not len(self._partition_ids):
            return {}, []
        codes = pc.dictionary_encode(self._partition_ids)
        indices = codes.indices.to_numpy(zero_copy_only=False)
        parents = np.repeat(np.arange(self._count), np.diff(self.offsets))
        if not self.unique:  # only the last row of a file named twice holds it
            live = self.live_rows(())[parents]
            indices, parents = indices[live], parents[live]
        order = np.argsort(indices, kind="stable")
        rows = parents[order]
        counts = np.bincount(indices, minlength=len(codes.dictionary))
        ends = np.cumsum(counts)
        starts = ends - counts
        partition_ids: list[str] = codes.dictionary.to_pylist()
        names = self._file_names()
        spans = dict(zip(partition_ids, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
        return spans, [names[row] for row in rows.tolist()]

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

    def _make_many(self, rows: list[int]) -> None:
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
        partition_ids, job_ids, ref_times, ref_rows, approximate, only_this, file_times, offsets = self._lists
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


class ArrowFileEntries:
    """The files of a state by name: a snapshot's files as columns, and the changes since as objects.

    Implements ``sleeper.core.statestore.state.FileEntries``. Iteration gives the snapshot's files in its order, then
    the files added or replaced since in the order they were set.

    Args:
        base: The snapshot's files.
    """

    def __init__(self, base: SnapshotFiles) -> None:
        self._base: SnapshotFiles | None = base
        self._changed: dict[str, AllReferencesToAFile] = {}
        self._removed: set[str] = set()
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
            return changed
        if self._base is None or key in self._removed:
            return None
        row = self._base.rows.get(key)
        return None if row is None else self._base.entry(row)

    def __setitem__(self, key: str, value: AllReferencesToAFile) -> None:
        if self._base is not None and key in self._base.rows:
            self._removed.add(key)
        self._changed[key] = value
        self._changed_index = None

    def __delitem__(self, key: str) -> None:
        self._changed_index = None
        if key in self._changed:
            del self._changed[key]
            return
        if self._base is None or key not in self._base.rows or key in self._removed:
            raise KeyError(key)
        self._removed.add(key)

    def values(self) -> list[AllReferencesToAFile]:
        """Every file (the snapshot's not yet made are made together)."""
        out: list[AllReferencesToAFile] = []
        if self._base is not None:
            if self._removed or not self._base.unique:
                rows: Iterable[int] = (row for name, row in self._base.rows.items() if name not in self._removed)
            else:
                rows = range(len(self._base))
            out = self._base.entries(rows)
        out.extend(self._changed.values())
        return out

    def clear(self) -> None:
        """Removes every file."""
        self._base = None
        self._changed.clear()
        self._removed.clear()
        self._changed_index = None

    def copy(self) -> ArrowFileEntries:
        """An independent copy, sharing the snapshot's columns."""
        out = ArrowFileEntries.__new__(ArrowFileEntries)
        out._base = self._base
        out._changed = dict(self._changed)
        out._removed = set(self._removed)
        out._changed_index = None
        return out

    # --- whole-state answers from the columns ----------------------------------------------------------------------
    def files_on(self, partition_id: str) -> list[str]:
        """The files referenced on a partition: the snapshot's still in the state, then those changed since."""
        out: list[str] = []
        if self._base is not None:
            removed = self._removed
            out = [name for name in self._base.files_on(partition_id) if name not in removed]
        if self._changed:
            if self._changed_index is None:
                index: dict[str, list[str]] = {}
                for entry in self._changed.values():
                    for pid in entry.references:
                        index.setdefault(pid, []).append(entry.filename)
                self._changed_index = index
            out.extend(self._changed_index.get(partition_id, ()))
        return out

    def to_table(self, changed_table: Any) -> pa.Table:
        """The files as a snapshot's table: the snapshot's rows still in the state, then the changed files.

        Args:
            changed_table: Makes the table of some files given as objects (the snapshot writer's own).
        """
        parts: list[pa.Table] = []
        if self._base is not None and len(self._base):
            keep = self._base.live_rows(self._removed)
            table = self._base.table
            parts.append(table if keep.all() else table.filter(pa.array(keep)))
        if self._changed or not parts:
            parts.append(changed_table(list(self._changed.values())))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


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
