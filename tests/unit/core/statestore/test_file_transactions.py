"""Validation and effect of the six files-log transactions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sleeper.core.statestore.exceptions import (
    FileAlreadyExistsError,
    FileHasReferencesError,
    FileNotFoundInStateError,
    FileReferenceAlreadyExistsError,
    FileReferenceAssignedToJobError,
    FileReferenceNotAssignedToJobError,
    FileReferenceNotFoundError,
    InvalidTransactionError,
    JobIdReusedError,
)
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.state import FilesState, input_files_hash
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ClearFilesTransaction,
    DeleteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
    SplitFileReferenceRequest,
    SplitFileReferencesTransaction,
)
from tests.unit.core.statestore.builders import TIME, reference

LATER = TIME + timedelta(minutes=5)


def _state_with(*references: FileReference) -> FilesState:
    state = FilesState()
    AddFilesTransaction.of_references(references).apply(state, TIME)
    return state


def _assign(job_id: str, partition_id: str, *names: str) -> AssignJobIdsTransaction:
    return AssignJobIdsTransaction(
        requests=(AssignJobIdRequest(job_id=job_id, partition_id=partition_id, filenames=names),)
    )


def _compaction(
    job_id: str, inputs: tuple[str, ...], output: str, partition_id: str = "root", rows: int = 300
) -> ReplaceFileReferencesRequest:
    return ReplaceFileReferencesRequest(
        job_id=job_id, input_files=inputs, new_reference=reference(output, partition_id, rows)
    )


# --- ADD_FILES ---------------------------------------------------------------------------------------------------


def should_add_files_recording_the_update_time() -> None:
    # Given an empty state and a transaction adding a file referenced on two partitions
    state = FilesState()
    transaction = AddFilesTransaction.of_references([reference("a", "L", 50), reference("a", "R", 50)])
    # When it is validated and applied
    transaction.validate(state)
    transaction.apply(state, TIME)
    # Then the file is tracked with both references, stamped with the apply time
    file = state.file("a")
    assert file is not None and file.last_update_time == TIME
    assert {pid: (r.number_of_rows, r.last_update_time) for pid, r in file.references.items()} == {
        "L": (50, TIME),
        "R": (50, TIME),
    }


def should_skip_the_whole_add_when_any_file_exists_but_never_reject_it() -> None:
    # Given a state with file a
    state = _state_with(reference("a", rows=1))
    transaction = AddFilesTransaction.of_references([reference("a", rows=2), reference("b", rows=3)])
    # When a transaction adding a and b is validated and applied
    transaction.validate(state)
    transaction.apply(state, LATER)
    # Then nothing changed: b was not added and a keeps its rows
    assert "b" not in state
    assert state.reference("a", "root") == reference("a", rows=1, time=TIME)


def should_skip_an_add_of_a_job_whose_files_were_added() -> None:
    # Given an ingest job's files were added
    state = FilesState()
    AddFilesTransaction.of_references([reference("a")], job_id="job-1").apply(state, TIME)
    # When the same job is added again with other file names (a redelivered ingest)
    AddFilesTransaction.of_references([reference("b")], job_id="job-1").apply(state, LATER)
    # Then only the first files are there, and the job is recorded as added
    assert [f.filename for f in state.files()] == ["a"]
    assert state.has_added_job("job-1") and not state.has_added_job("job-2")


def should_refuse_an_add_of_a_job_id_whose_files_came_from_other_input_files() -> None:
    # Given an ingest job's files were added from one input file
    state = FilesState()
    first = input_files_hash(["/in/a.parquet"])
    AddFilesTransaction.of_references([reference("a")], job_id="job-1", inputs_hash=first).apply(state, TIME)
    # When the same job id comes again with another input file
    reused = AddFilesTransaction.of_references(
        [reference("b")], job_id="job-1", inputs_hash=input_files_hash(["/in/b.parquet"])
    )
    # Then it is refused, naming the job id and what to do, and applying it (as a reader of the log would) adds nothing
    with pytest.raises(JobIdReusedError, match="'job-1'.*new job id"):
        reused.validate(state)
    reused.apply(state, LATER)
    assert [f.filename for f in state.files()] == ["a"]
    assert state.added_job_inputs == {"job-1": first}


def should_accept_a_retry_of_a_job_with_the_same_input_files_as_already_done() -> None:
    # Given an ingest job's files were added from two input files
    state = FilesState()
    inputs = input_files_hash(["/in/a.parquet", "/in/b.parquet"])
    AddFilesTransaction.of_references([reference("a")], job_id="job-1", inputs_hash=inputs).apply(state, TIME)
    # When the job is retried with the same files named in another order
    retry = AddFilesTransaction.of_references(
        [reference("b")], job_id="job-1", inputs_hash=input_files_hash(["/in/b.parquet", "/in/a.parquet"])
    )
    retry.validate(state)
    # Then it is already done: applying it adds nothing
    assert state.job_already_added("job-1", retry.inputs_hash)
    retry.apply(state, LATER)
    assert [f.filename for f in state.files()] == ["a"]


def should_treat_a_job_added_without_an_input_hash_as_done_for_any_input() -> None:
    # Given a job added by a transaction holding only its id (an older log, or rows rather than files)
    state = FilesState()
    AddFilesTransaction.of_references([reference("a")], job_id="job-1").apply(state, TIME)
    # Then the id with any input files is already done, and a new id is not
    assert state.job_already_added("job-1", input_files_hash(["/in/b.parquet"]))
    assert not state.job_already_added("job-2", input_files_hash(["/in/b.parquet"]))


def should_write_the_input_files_hash_beside_sleepers_add_files_fields() -> None:
    # Given an add of a job's files with the hash of its inputs
    inputs = input_files_hash(["/in/a.parquet"])
    transaction = AddFilesTransaction.of_references([reference("a")], job_id="job-1", inputs_hash=inputs)
    # When written as JSON and read back
    written = transaction.to_dict()
    # Then Sleeper's fields are there with one extra field for the hash, and it reads back the same
    assert set(written) == {"jobId", "inputFilesHash", "files"}
    assert written["inputFilesHash"] == inputs
    assert AddFilesTransaction.from_dict(written) == transaction


# --- ASSIGN_JOB_IDS ----------------------------------------------------------------------------------------------


def should_assign_a_job_to_unassigned_references() -> None:
    # Given two files on root
    state = _state_with(reference("a"), reference("b"))
    transaction = _assign("job-1", "root", "a", "b")
    # When the job is assigned
    transaction.validate(state)
    transaction.apply(state, LATER)
    # Then both references belong to the job, with the new update time
    for name in ("a", "b"):
        ref = state.reference(name, "root")
        assert ref is not None and ref.job_id == "job-1" and ref.last_update_time == LATER


@pytest.mark.parametrize(
    ("transaction", "error"),
    [
        (_assign("job-2", "root", "a"), FileReferenceAssignedToJobError),
        (_assign("job-2", "root", "missing"), FileNotFoundInStateError),
        (_assign("job-2", "L", "b"), FileReferenceNotFoundError),
    ],
    ids=["already-assigned", "missing-file", "no-reference-on-partition"],
)
def should_refuse_an_assignment_that_does_not_fit(transaction: AssignJobIdsTransaction, error: type[Exception]) -> None:
    # Given file a assigned to job-1, and unassigned file b on root
    state = _state_with(reference("a"), reference("b"))
    _assign("job-1", "root", "a").apply(state, TIME)
    # When / Then the assignment is refused
    with pytest.raises(error):
        transaction.validate(state)


def should_refuse_two_jobs_claiming_one_reference_in_one_transaction() -> None:
    # Given file a
    state = _state_with(reference("a"))
    transaction = AssignJobIdsTransaction(
        requests=(
            AssignJobIdRequest(job_id="job-1", partition_id="root", filenames=("a",)),
            AssignJobIdRequest(job_id="job-2", partition_id="root", filenames=("a",)),
        )
    )
    # When / Then
    with pytest.raises(FileReferenceAssignedToJobError, match="job-1 and job-2"):
        transaction.validate(state)


def should_skip_assigned_references_when_applying_an_assignment() -> None:
    # Given a assigned to job-1
    state = _state_with(reference("a"), reference("b"))
    _assign("job-1", "root", "a").apply(state, TIME)
    # When job-2 is applied to a and b
    _assign("job-2", "root", "a", "b").apply(state, LATER)
    # Then a stays with job-1 and b gets job-2
    assert state.reference("a", "root").job_id == "job-1"  # type: ignore[union-attr]
    assert state.reference("b", "root").job_id == "job-2"  # type: ignore[union-attr]


# --- REPLACE_FILE_REFERENCES -------------------------------------------------------------------------------------


def should_replace_compacted_inputs_with_the_output() -> None:
    # Given a and b on root assigned to job-1, and a also referenced on another partition
    state = _state_with(reference("a"), reference("a", "other"), reference("b"))
    _assign("job-1", "root", "a", "b").apply(state, TIME)
    transaction = ReplaceFileReferencesTransaction(jobs=(_compaction("job-1", ("a", "b"), "c"),))
    # When the compaction is committed
    transaction.validate(state)
    transaction.apply(state, LATER)
    # Then the inputs lose their root reference (b awaits GC), a keeps its other one, and c is added
    assert set(state.file("a").references) == {"other"}  # type: ignore[union-attr]
    assert state.file("b").references == {}  # type: ignore[union-attr]
    assert state.unreferenced_files_before(LATER + timedelta(seconds=1)) == ["b"]
    assert state.reference("c", "root") == reference("c", rows=300, time=LATER)


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (_compaction("job-2", ("a",), "c"), FileReferenceNotAssignedToJobError),
        (_compaction("job-1", ("a", "missing"), "c"), FileNotFoundInStateError),
        (_compaction("job-1", ("a",), "x"), FileAlreadyExistsError),
        (_compaction("job-1", ("a",), "c", partition_id="L"), FileReferenceNotFoundError),
    ],
    ids=["other-job", "missing-input", "output-exists", "other-partition"],
)
def should_refuse_a_compaction_commit_that_does_not_fit(
    request_: ReplaceFileReferencesRequest, error: type[Exception]
) -> None:
    # Given a on root assigned to job-1, and an existing file x
    state = _state_with(reference("a"), reference("x"))
    _assign("job-1", "root", "a").apply(state, TIME)
    transaction = ReplaceFileReferencesTransaction(jobs=(request_,))
    # When / Then validation fails, and applying skips the job
    with pytest.raises(error):
        transaction.validate(state)
    before = state.copy()
    transaction.apply(state, LATER)
    assert state == before
    assert [job for job, _ in transaction.failed_jobs(state)] == [request_]


def should_refuse_a_compaction_whose_output_is_an_input() -> None:
    # When / Then
    with pytest.raises(InvalidTransactionError, match="also an input"):
        _compaction("job-1", ("a", "b"), "a")


def should_apply_the_valid_jobs_of_a_batch_and_skip_the_others() -> None:
    # Given a assigned to job-1 and b assigned to job-2
    state = _state_with(reference("a"), reference("b"))
    _assign("job-1", "root", "a").apply(state, TIME)
    _assign("job-2", "root", "b").apply(state, TIME)
    # And a batch committing job-1, then job-3 which claims b (not assigned to it)
    transaction = ReplaceFileReferencesTransaction(
        jobs=(_compaction("job-1", ("a",), "c"), _compaction("job-3", ("b",), "d"))
    )
    # When it is applied
    transaction.apply(state, LATER)
    # Then job-1 is committed and job-3 skipped
    assert "c" in state and "d" not in state
    assert state.reference("b", "root").job_id == "job-2"  # type: ignore[union-attr]


def should_fail_a_repeated_compaction_commit() -> None:
    # Given a compaction already committed
    state = _state_with(reference("a"))
    _assign("job-1", "root", "a").apply(state, TIME)
    transaction = ReplaceFileReferencesTransaction(jobs=(_compaction("job-1", ("a",), "c"),))
    transaction.apply(state, TIME)
    # When / Then committing it again is refused (its inputs are gone from the partition)
    with pytest.raises(FileReferenceNotFoundError):
        transaction.validate(state)


# --- SPLIT_FILE_REFERENCES ---------------------------------------------------------------------------------------


def should_split_a_reference_onto_child_partitions() -> None:
    # Given file a on root
    state = _state_with(reference("a", rows=100))
    old = reference("a", rows=100)
    transaction = SplitFileReferencesTransaction(
        requests=(SplitFileReferenceRequest(old_reference=old, new_references=(old.split_to("L"), old.split_to("R"))),)
    )
    # When it is split
    transaction.validate(state)
    transaction.apply(state, LATER)
    # Then a is referenced on L and R with half the rows each, approximately
    refs = state.file("a").references  # type: ignore[union-attr]
    assert set(refs) == {"L", "R"}
    assert all(
        r.number_of_rows == 50 and r.count_approximate and not r.only_contains_data_for_this_partition
        for r in refs.values()
    )


@pytest.mark.parametrize("case", ["assigned", "missing", "new-exists"])
def should_refuse_a_split_of_references_that_does_not_fit(case: str) -> None:
    # Given a on root assigned to a job, b on root and on L
    state = _state_with(reference("a"), reference("b"), reference("b", "L"))
    _assign("job-1", "root", "a").apply(state, TIME)
    name = {"assigned": "a", "missing": "m", "new-exists": "b"}[case]
    old = reference(name)
    transaction = SplitFileReferencesTransaction(
        requests=(SplitFileReferenceRequest(old_reference=old, new_references=(old.split_to("L"), old.split_to("R"))),)
    )
    error = {
        "assigned": FileReferenceAssignedToJobError,
        "missing": FileNotFoundInStateError,
        "new-exists": FileReferenceAlreadyExistsError,
    }[case]
    # When / Then validation fails and applying changes nothing
    with pytest.raises(error):
        transaction.validate(state)
    before = state.copy()
    transaction.apply(state, LATER)
    assert state == before


# --- DELETE_FILES and CLEAR_FILES --------------------------------------------------------------------------------


def should_delete_files_without_references() -> None:
    # Given b compacted away (no references left)
    state = _state_with(reference("a"), reference("b"))
    _assign("job-1", "root", "b").apply(state, TIME)
    ReplaceFileReferencesTransaction(jobs=(_compaction("job-1", ("b",), "c"),)).apply(state, TIME)
    transaction = DeleteFilesTransaction(filenames=("b",))
    # When it is deleted
    transaction.validate(state)
    transaction.apply(state, LATER)
    # Then it is no longer tracked
    assert sorted(f.filename for f in state.files()) == ["a", "c"]


@pytest.mark.parametrize(("name", "error"), [("a", FileHasReferencesError), ("m", FileNotFoundInStateError)])
def should_refuse_deleting_referenced_or_missing_files(name: str, error: type[Exception]) -> None:
    # Given a referenced file
    state = _state_with(reference("a"))
    # When / Then
    with pytest.raises(error):
        DeleteFilesTransaction(filenames=(name,)).validate(state)


def should_clear_files_but_remember_added_jobs() -> None:
    # Given files added by a job
    state = FilesState()
    AddFilesTransaction.of_references([reference("a"), reference("b")], job_id="job-1").apply(state, TIME)
    # When files are cleared
    ClearFilesTransaction().validate(state)
    ClearFilesTransaction().apply(state, LATER)
    # Then no file is tracked, and the job still counts as added
    assert len(state) == 0
    assert state.has_added_job("job-1")
