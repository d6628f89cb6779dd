"""A job assignment (ASSIGN_JOB_IDS) on a files state loaded from a snapshot is checked and applied from the
snapshot's columns (``ArrowFileEntries.first_unassignable`` / ``assign_jobs``), recording each file as assigned
without making its objects. It must refuse and change exactly what the same transaction does on a state holding an
object per file, and the state must read the same afterwards (files, order, files by partition, job ids, a snapshot
written of it)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from sleeper.core.statestore.exceptions import StateStoreError
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    FileTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.statestore.arrow_files import ArrowFileEntries, PartitionFiles, SnapshotFiles
from sleeper.statestore.snapshots import read_files_snapshot, write_files_snapshot

T0 = datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
PARTITIONS = [f"p{i}" for i in range(6)]


def _entry(rng: random.Random, name: str, assigned: float = 0.2) -> AllReferencesToAFile:
    time = T0 + timedelta(milliseconds=rng.randint(0, 5))
    references = {
        pid: FileReference(
            filename=name,
            partition_id=pid,
            number_of_rows=rng.randint(0, 1000),
            job_id=f"old-{rng.randint(0, 3)}" if rng.random() < assigned else None,
            count_approximate=rng.random() < 0.3,
            only_contains_data_for_this_partition=rng.random() < 0.7,
            last_update_time=time,
        )
        for pid in rng.sample(PARTITIONS, rng.choice([0, 1, 1, 1, 2, 3]))
    }
    return AllReferencesToAFile(filename=name, references=references, last_update_time=time)


def _loaded(files: list[AllReferencesToAFile]) -> FilesState:
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, FilesState.of(files), transaction_number=1, batch_size=7)
    return read_files_snapshot(sink.getvalue()).state


class _OneAtATime:
    """The mapping of a loaded state without its bulk operations: the files state then checks and assigns one
    reference at a time, setting each file, as before the bulk operations."""

    def __init__(self, entries: ArrowFileEntries) -> None:
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __getitem__(self, key: str) -> AllReferencesToAFile:
        return self.entries[key]

    def __setitem__(self, key: str, value: AllReferencesToAFile) -> None:
        self.entries[key] = value

    def __delitem__(self, key: str) -> None:
        del self.entries[key]

    def get(self, key: str) -> AllReferencesToAFile | None:
        return self.entries.get(key)

    def values(self) -> list[AllReferencesToAFile]:
        return self.entries.values()

    def clear(self) -> None:
        self.entries.clear()

    def copy(self) -> _OneAtATime:
        return _OneAtATime(self.entries.copy())


def _random_assignment(rng: random.Random, state: FilesState, step: int) -> AssignJobIdsTransaction:
    """Jobs over references that mostly can be assigned, sometimes naming a missing file or reference, an assigned
    reference, a reference twice (by one job or two), or a file on two partitions."""
    references = list(state.references())
    requests = []
    for j in range(rng.randint(1, 4)):
        job_id = f"job-{step}-{j}"
        partition_id = rng.choice(PARTITIONS)
        candidates = [r.filename for r in references if r.partition_id == partition_id and r.job_id is None]
        names = rng.sample(candidates, min(len(candidates), rng.randint(1, 6)))
        roll = rng.random()
        if roll < 0.05:
            names.append("missing-file")
        elif roll < 0.1:
            names.append(rng.choice(references).filename)  # maybe no reference on this partition
        elif roll < 0.15:
            assigned = [r.filename for r in references if r.partition_id == partition_id and r.job_id is not None]
            names.extend(assigned[:1])
        if names:
            requests.append(AssignJobIdRequest(job_id=job_id, partition_id=partition_id, filenames=tuple(names)))
    if requests and rng.random() < 0.05:  # the same references requested again, by the same job or another
        again = requests[0]
        job_id = again.job_id if rng.random() < 0.5 else "another-job"
        requests.append(AssignJobIdRequest(job_id=job_id, partition_id=again.partition_id, filenames=again.filenames))
    return AssignJobIdsTransaction(requests=tuple(requests))


def _outcome(transaction: FileTransaction, state: FilesState, time: datetime, *, validate: bool = True) -> str | None:
    """Validates and applies the transaction; without validating, applies it as a log replay does (skipping what
    does not fit)."""
    try:
        if validate:
            transaction.validate(state)
    except StateStoreError as e:
        return f"{type(e).__name__}: {e}"
    transaction.apply(state, time)
    return None


def _snapshot_of(state: FilesState) -> list[AllReferencesToAFile]:
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, state, transaction_number=2, batch_size=5)
    return list(read_files_snapshot(sink.getvalue()).state.files())


def _same_state(arrow: FilesState, one_at_a_time: FilesState, objects: FilesState) -> None:
    assert list(arrow.entries) == list(one_at_a_time.entries)
    assert len(arrow) == len(one_at_a_time) == len(objects)
    assert list(arrow.files()) == list(one_at_a_time.files())
    assert sorted(arrow.files(), key=lambda f: f.filename) == sorted(objects.files(), key=lambda f: f.filename)
    assert arrow.job_ids() == one_at_a_time.job_ids() == objects.job_ids()
    wanted = PARTITIONS[:4]
    assert arrow.references_by_partition(wanted) == one_at_a_time.references_by_partition(wanted)
    by_columns, by_objects = PartitionFiles(arrow.entries), PartitionFiles(one_at_a_time.entries)
    for pid in PARTITIONS:
        assert by_columns.files_on(pid) == by_objects.files_on(pid)


@pytest.mark.parametrize("seed", range(6))
def should_assign_as_a_state_of_objects_does_under_random_transactions(seed: int) -> None:
    # Given a state loaded from a snapshot, the same assigning one reference at a time, and a state holding the
    # same files as objects in a dict (whose order differs: a dict keeps a replaced file in its place)
    rng = random.Random(seed)
    files = [_entry(rng, f"f{i}") for i in range(80)]
    arrow = _loaded(files)
    assert isinstance(arrow.entries, ArrowFileEntries)
    one_at_a_time = FilesState.over(_OneAtATime(_loaded(files).entries))  # type: ignore[arg-type]
    objects = FilesState.of(files)

    for step in range(60):
        # When the same transactions are validated and applied to both: assignments, with files added and
        # compactions committed between them (so that files changed since the snapshot are assigned too)
        time = T0 + timedelta(seconds=step)
        roll = rng.random()
        transaction: FileTransaction
        if roll < 0.1:
            transaction = AddFilesTransaction(files=tuple(_entry(rng, f"new{step}-{k}", 0) for k in range(3)))
        elif roll < 0.2:
            assigned = [r for r in objects.references() if r.job_id is not None]
            if not assigned:
                continue
            ref = rng.choice(assigned)
            inputs = tuple(
                r.filename for r in assigned if r.job_id == ref.job_id and r.partition_id == ref.partition_id
            )
            new = FileReference(filename=f"out{step}", partition_id=ref.partition_id, number_of_rows=5)
            transaction = ReplaceFileReferencesTransaction(
                jobs=(ReplaceFileReferencesRequest(job_id=ref.job_id or "", input_files=inputs, new_reference=new),)
            )
        else:
            transaction = _random_assignment(rng, objects, step)

        # Then all refuse it alike or apply it alike
        validate = rng.random() < 0.8
        outcome = _outcome(transaction, arrow, time, validate=validate)
        assert outcome == _outcome(transaction, one_at_a_time, time, validate=validate)
        assert outcome == _outcome(transaction, objects, time, validate=validate)
        if step % 10 == 0:
            _same_state(arrow, one_at_a_time, objects)

    _same_state(arrow, one_at_a_time, objects)
    assert _snapshot_of(arrow) == _snapshot_of(one_at_a_time)


def should_refuse_the_first_problem_in_request_order() -> None:
    # Given a loaded state of an unassigned, an assigned and a two-partition file
    free = AllReferencesToAFile(
        filename="free", references={"p0": FileReference(filename="free", partition_id="p0", number_of_rows=1)}
    )
    taken = AllReferencesToAFile(
        filename="taken",
        references={"p0": FileReference(filename="taken", partition_id="p0", number_of_rows=1, job_id="old")},
    )
    state = _loaded([free, taken])

    def refused(*requests: tuple[str, str, tuple[str, ...]]) -> str:
        transaction = AssignJobIdsTransaction(
            requests=tuple(AssignJobIdRequest(job_id=j, partition_id=p, filenames=f) for j, p, f in requests)
        )
        with pytest.raises(StateStoreError) as e:
            transaction.validate(state)
        return f"{type(e.value).__name__}: {e.value}"

    # When / Then
    assert refused(("a", "p0", ("free", "taken"))) == (
        "FileReferenceAssignedToJobError: reference of taken on partition p0 is already assigned to job old"
    )
    assert refused(("a", "p0", ("free", "gone"))) == "FileNotFoundInStateError: file gone is not tracked"
    assert refused(("a", "p1", ("free",))) == "FileReferenceNotFoundError: file free has no reference on partition p1"
    assert refused(("a", "p0", ("free",)), ("b", "p0", ("free",)), ("c", "p0", ("gone",))) == (
        "FileReferenceAssignedToJobError: reference of free on partition p0 is requested by jobs a and b"
    )
    # The same job naming a reference twice is not a conflict
    AssignJobIdsTransaction(
        requests=(
            AssignJobIdRequest(job_id="a", partition_id="p0", filenames=("free",)),
            AssignJobIdRequest(job_id="a", partition_id="p0", filenames=("free",)),
        )
    ).validate(state)


def should_assign_a_snapshot_file_without_making_its_objects_until_it_is_read() -> None:
    # Given a loaded state of 1,000 one-reference files
    rng = random.Random(7)
    files = [
        AllReferencesToAFile(
            filename=f"f{i}",
            references={"p0": FileReference(filename=f"f{i}", partition_id="p0", number_of_rows=rng.randint(1, 9))},
            last_update_time=T0,
        )
        for i in range(1000)
    ]
    state = _loaded(files)
    entries = state.entries
    assert isinstance(entries, ArrowFileEntries)
    base = entries._base
    assert isinstance(base, SnapshotFiles)
    time = T0 + timedelta(minutes=1)

    # When 900 of them are assigned to jobs
    transaction = AssignJobIdsTransaction(
        requests=tuple(
            AssignJobIdRequest(job_id=f"job{j}", partition_id="p0", filenames=tuple(f"f{i}" for i in range(j, j + 9)))
            for j in range(0, 900, 9)
        )
    )
    transaction.validate(state)
    transaction.apply(state, time)

    # Then no file was made into objects, and one read makes that file only, assigned
    assert base._made == {}
    assert state.job_ids() == {f"job{j}" for j in range(0, 900, 9)}
    one = state.file("f10")
    assert one is not None
    assert one.references["p0"] == FileReference(
        filename="f10",
        partition_id="p0",
        number_of_rows=files[10].references["p0"].number_of_rows,
        job_id="job9",
        last_update_time=time,
    )
    assert one.last_update_time == time
    assert list(base._made) == [10]
    # And the assigned files come after the unassigned ones, in assignment order, as setting each would put them
    assert list(state.entries)[:100] == [f"f{i}" for i in range(900, 1000)]
    assert list(state.entries)[100:103] == ["f0", "f1", "f2"]
