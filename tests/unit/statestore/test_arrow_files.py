"""A files state loaded from a snapshot keeps the snapshot's columns (sleeper.statestore.arrow_files) and behaves as
one holding an object per file: checked against a dict under random changes, and through its whole-state answers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.statestore.arrow_files import ArrowFileEntries, PartitionFiles, SnapshotFiles
from sleeper.statestore.snapshots import read_files_snapshot, write_files_snapshot

T0 = datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)


def _entry(rng: random.Random, name: str) -> AllReferencesToAFile:
    time = T0 + timedelta(milliseconds=rng.randint(0, 5))
    references = {
        pid: FileReference(
            filename=name,
            partition_id=pid,
            number_of_rows=rng.randint(0, 2**40),
            job_id=rng.choice([None, "job-a", "job-b"]),
            count_approximate=rng.random() < 0.3,
            only_contains_data_for_this_partition=rng.random() < 0.7,
            last_update_time=time,
        )
        for pid in rng.sample([f"p{i}" for i in range(8)], rng.randint(0, 3))
    }
    return AllReferencesToAFile(filename=name, references=references, last_update_time=time)


def _loaded(files: list[AllReferencesToAFile]) -> FilesState:
    """A state as loaded from a snapshot of these files."""
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, FilesState.of(files), transaction_number=1, batch_size=7)
    return read_files_snapshot(sink.getvalue()).state


def should_behave_as_a_dict_of_files_under_random_changes() -> None:
    # Given a state loaded from a snapshot, and a dict of the same files
    rng = random.Random(1)
    files = [_entry(rng, f"f{i}") for i in range(60)]
    state = _loaded(files)
    assert isinstance(state.entries, ArrowFileEntries)
    entries = state.entries
    expected = {f.filename: f for f in files}
    copies: list[tuple[ArrowFileEntries, dict[str, AllReferencesToAFile]]] = []

    for step in range(400):
        # When a file is added, replaced, removed or read, or the state copied
        name = f"f{rng.randint(0, 90)}"
        action = rng.random()
        if action < 0.3:
            entries[name] = expected[name] = _entry(rng, name)
        elif action < 0.5 and name in expected:
            del entries[name]
            del expected[name]
        elif action < 0.55:
            copies.append((entries.copy(), dict(expected)))

        # Then it holds exactly the dict's files
        assert (name in entries) == (name in expected)
        assert entries.get(name) == expected.get(name)
        if step % 40 == 0:
            assert len(entries) == len(expected)
            assert sorted(entries) == sorted(expected)
            assert sorted(entries.values(), key=lambda f: f.filename) == sorted(
                expected.values(), key=lambda f: f.filename
            )

    # And every copy kept the files it had when copied
    for copied, at_copy in copies:
        assert {name: copied[name] for name in copied} == at_copy


def should_answer_the_files_on_each_partition_from_the_columns_and_the_changes() -> None:
    # Given a loaded state changed by transactions
    rng = random.Random(2)
    files = [_entry(rng, f"f{i}") for i in range(200)]
    state = _loaded(files)
    for k in range(5):
        AddFilesTransaction.of_references(
            [FileReference(filename=f"new{k}-{i}", partition_id=f"p{i % 8}", number_of_rows=1) for i in range(10)]
        ).apply(state, T0)
    del state.entries["f3"]
    state.set_references("f4", {"p9": FileReference(filename="f4", partition_id="p9", number_of_rows=2)}, T0)

    # When
    index = PartitionFiles(state.entries)
    by_dict = PartitionFiles({f.filename: f for f in state.files()})

    # Then: the same files per partition, in state order, as going through every file
    for pid in [f"p{i}" for i in range(10)]:
        expected = [f.filename for f in state.files() if pid in f.references]
        assert index.files_on(pid) == expected
        assert by_dict.files_on(pid) == expected
    assert index.files_on("p9") == ["f4"]
    assert "f3" not in index.files_on("p0") + index.files_on("p1")


def should_write_a_loaded_and_changed_state_to_a_snapshot_holding_the_same_files() -> None:
    # Given a loaded state with files added, replaced and removed
    rng = random.Random(3)
    state = _loaded([_entry(rng, f"f{i}") for i in range(100)])
    for i in range(0, 100, 7):
        del state.entries[f"f{i}"]
    for i in range(1, 100, 11):
        state.entries[f"f{i}"] = _entry(rng, f"f{i}")
    state.entries["extra"] = _entry(rng, "extra")
    state.record_added_job("job-x", "hash")
    expected = {f.filename: f for f in state.files()}

    # When it is written and read again
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, state, transaction_number=9, batch_size=10)
    again = read_files_snapshot(sink.getvalue())

    # Then
    assert {f.filename: f for f in again.state.files()} == expected
    assert again.state.added_job_inputs == {"job-x": "hash"}
    assert again.transaction_number == 9


def should_load_without_making_an_object_per_file_until_files_are_read() -> None:
    # Given a snapshot of 1,000 files
    rng = random.Random(4)
    state = _loaded([_entry(rng, f"f{i}") for i in range(1000)])
    entries = state.entries
    assert isinstance(entries, ArrowFileEntries)
    base = entries._base
    assert isinstance(base, SnapshotFiles)

    # When one file is read, then the files on a partition are listed
    one = entries.get("f500")
    PartitionFiles(entries).files_on("p1")

    # Then only that file was made into objects
    assert one is not None and one.filename == "f500"
    assert list(base._made) == [500]


def should_keep_the_last_of_a_file_named_twice_in_a_snapshot() -> None:
    # Given a snapshot naming a file twice (as a dict of objects keeps the last)
    rng = random.Random(5)
    first, second = _entry(rng, "dup"), _entry(rng, "dup")
    other = _entry(rng, "other")
    state = _loaded([first, other])
    table = state.entries.to_table(lambda files: None)
    twice = pa.concat_tables([table, _loaded([second]).entries.to_table(lambda files: None)])

    # When
    entries = ArrowFileEntries(SnapshotFiles(twice))

    # Then
    assert len(entries) == 2
    assert entries["dup"] == second
    assert sorted(f.filename for f in entries.values()) == ["dup", "other"]
    assert PartitionFiles(entries).files_on(next(iter(second.references), "none")) == (
        ["dup"] if second.references else []
    )


def should_find_the_unreferenced_files_from_the_columns_as_from_every_file() -> None:
    # Given a loaded state, some of its files with no references, then files removed, replaced, added and assigned
    rng = random.Random(4)
    files = [_entry(rng, f"f{i}") for i in range(150)]
    state = _loaded(files)
    for i in range(0, 150, 9):
        del state.entries[f"f{i}"]
    for i in range(1, 150, 13):
        state.entries[f"f{i}"] = _entry(rng, f"f{i}")
    state.entries["unreferenced-new"] = AllReferencesToAFile(
        filename="unreferenced-new", references={}, last_update_time=T0
    )
    free = [r for r in state.references() if r.job_id is None][:5]
    state.assign_jobs([r.filename for r in free], [r.partition_id for r in free], ["job-z"] * len(free), T0)
    assert isinstance(state.entries, ArrowFileEntries)

    for before in (T0, T0 + timedelta(milliseconds=2), T0 + timedelta(microseconds=3500), T0 + timedelta(days=1)):
        # When the files ready for garbage collection at a time are found
        found = state.unreferenced_files_before(before)
        # Then they are those every file read as an object gives, in the same order
        expected = [
            f.filename
            for f in state.files()
            if not f.references and f.last_update_time is not None and f.last_update_time < before
        ]
        assert found == expected
    assert "unreferenced-new" in state.unreferenced_files_before(T0 + timedelta(days=1))
    assert len(state.unreferenced_files_before(T0 + timedelta(days=1))) > 5


def should_name_every_partition_with_files_among_those_it_may_reference() -> None:
    # Given a loaded state changed by transactions: a file moved to a partition no snapshot file is on, one removed
    rng = random.Random(3)
    files = [_entry(rng, f"f{i}") for i in range(100)]
    state = _loaded(files)
    state.set_references("f4", {"p9": FileReference(filename="f4", partition_id="p9", number_of_rows=2)}, T0)
    del state.entries["f5"]

    # When
    index = PartitionFiles(state.entries)
    by_dict = PartitionFiles({f.filename: f for f in state.files()})

    # Then every partition holding a file is named (p9 from the changes), from the columns and from a dict alike
    with_files = {pid for f in state.files() for pid in f.references}
    assert "p9" in with_files
    assert with_files <= index.maybe_referenced_partitions()
    assert by_dict.maybe_referenced_partitions() == with_files
    # And what it names beyond them has no files
    assert all(not index.files_on(pid) for pid in index.maybe_referenced_partitions() - with_files)
