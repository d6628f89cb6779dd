"""A snapshot's files as Arrow columns, made into objects when read and shared by every copy of a loaded state.

:class:`SnapshotFiles` holds the columns of one snapshot's files (names, references by partition, jobs and times),
never changed, with the index by partition a query plans from and the objects made from its rows so far. The files
state's mapping over it (``sleeper.statestore.arrow_files.ArrowFileEntries``) adds the changes since the snapshot.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core.statestore import AllReferencesToAFile, FileReference, ReferenceColumns

__all__ = ["SnapshotFiles"]

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
