"""The transactions on a table's files log, with their JSON, validation and effect: Sleeper's six, and DELETE_ROWS
beyond Sleeper (a row delete by filter, recorded as a pending delete: ``sleeper.core.statestore.deletes``) and
OVERWRITE_FILES (every row replaced by new files' in one commit) and UPSERT_FILES (new files with a pending delete of
the older rows of their keys)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain, repeat
from typing import Any, ClassVar

from sleeper.core.exceptions import SerDeError
from sleeper.core.statestore.deletes import PendingDelete
from sleeper.core.statestore.exceptions import (
    FileAlreadyExistsError,
    FileHasReferencesError,
    FileNotFoundInStateError,
    FileReferenceAlreadyExistsError,
    FileReferenceAssignedToJobError,
    FileReferenceNotAssignedToJobError,
    FileReferenceNotFoundError,
    InvalidTransactionError,
    PartitionNotFoundError,
    PendingDeleteNotAppliedError,
    StateStoreError,
)
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import FilesState, PartitionsState
from sleeper.core.statestore.transactions.log import (
    LogType,
    TransactionType,
    epoch_ms,
    from_epoch_ms,
    int_value,
    list_field,
    object_items,
    optional_str_field,
    str_field,
    str_list_field,
)


class FileTransaction(ABC):
    """A transaction on the files log."""

    TYPE: ClassVar[TransactionType]
    LOG: ClassVar[LogType] = LogType.FILES

    @abstractmethod
    def validate(self, state: FilesState) -> None:
        """Checks the transaction against the current state.

        Raises:
            StateStoreError: If it does not apply.
        """

    @abstractmethod
    def apply(self, state: FilesState, time: datetime) -> None:
        """Applies the transaction to the state, skipping parts that Sleeper skips. Never raises."""

    def apply_numbered(self, state: FilesState, time: datetime, number: int) -> None:
        """Applies the transaction as its log's entry ``number`` (readers of a log call this: a row delete records
        the number it was committed at). Never raises."""
        self.apply(state, time)

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Sleeper's JSON body of the transaction."""

    @classmethod
    @abstractmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileTransaction:
        """Reads Sleeper's JSON body of the transaction."""

    def named_files(self) -> Iterator[str]:
        """Every file the transaction names (each must lie under the table's data prefix)."""
        return iter(())

    def files_it_may_track(self) -> Iterator[str]:
        """The files the transaction may start tracking: the ones whose place the state store checks (each must lie
        under the table's data prefix). A transaction that names files only as ones the state already tracks (its
        ``validate`` refuses any other) names none here: they were checked when they were added."""
        return self.named_files()

    def new_reference_partitions(self) -> Iterator[str]:
        """The partitions the transaction adds references on without needing an earlier reference there (these
        must exist when it is validated: see ``validate_partitions``)."""
        return iter(())

    def validate_partitions(self, partitions: PartitionsState) -> None:
        """Checks that the partitions the transaction adds references on exist now.

        A reference on a partition that does not exist is never read by a query: an ingest that planned against a
        partition tree that was replaced since (``table reinit``) must fail rather than commit rows no query returns.

        Raises:
            PartitionNotFoundError: Naming the first partition that does not exist.
        """
        for partition_id in self.new_reference_partitions():
            if partition_id not in partitions:
                raise PartitionNotFoundError(
                    f"{self.TYPE.value} names partition {partition_id}, which does not exist in the table (its "
                    f"partitions were replaced, or the table was deleted or never initialised)"
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class AddFilesTransaction(FileTransaction):
    """Adds new files with their references (ingest, bulk import). Carries the job that wrote them, if any, and the
    hash of the job's input files (``sleeper.core.statestore.state.input_files_hash``), if known."""

    TYPE: ClassVar[TransactionType] = TransactionType.ADD_FILES
    files: tuple[AllReferencesToAFile, ...]
    job_id: str | None = None
    task_id: str | None = None
    job_run_id: str | None = None
    written_time: datetime | None = None
    inputs_hash: str | None = None

    @classmethod
    def of_references(cls, references: Iterable[FileReference], **kwargs: Any) -> AddFilesTransaction:
        """Groups references by file into one transaction."""
        by_file: dict[str, dict[str, FileReference]] = {}
        for r in references:
            by_file.setdefault(r.filename, {})[r.partition_id] = r
        files = tuple(AllReferencesToAFile(filename=n, references=refs) for n, refs in by_file.items())
        return cls(files=files, **kwargs)

    @property
    def references(self) -> list[FileReference]:
        """Every reference added."""
        return [r for f in self.files for r in f.references.values()]

    def is_skipped(self, state: FilesState) -> bool:
        """Whether applying adds nothing: a file exists already, or the job's files were added before."""
        if self.job_id is not None and state.has_added_job(self.job_id):
            return True
        return any(f.filename in state for f in self.files)

    def validate(self, state: FilesState) -> None:
        """As in Sleeper, adding files is not rejected (a duplicate is skipped at apply time), except under a job id
        whose files were added from other input files.

        Raises:
            JobIdReusedError: If the job id was added before with another input files hash.
        """
        if self.job_id is not None:
            state.job_already_added(self.job_id, self.inputs_hash)

    def named_files(self) -> Iterator[str]:
        for f in self.files:
            yield f.filename
            for r in f.references.values():
                if r.filename != f.filename:
                    yield r.filename

    def new_reference_partitions(self) -> Iterator[str]:
        for f in self.files:
            yield from f.references

    def apply(self, state: FilesState, time: datetime) -> None:
        if self.is_skipped(state):
            return
        for f in self.files:
            refs = {pid: r.at(time) for pid, r in f.references.items()}
            state.set_references(f.filename, refs, time)
        if self.job_id is not None:
            state.record_added_job(self.job_id, self.inputs_hash)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.job_id is not None:
            out["jobId"] = self.job_id
        if self.task_id is not None:
            out["taskId"] = self.task_id
        if self.job_run_id is not None:
            out["jobRunId"] = self.job_run_id
        if self.written_time is not None:
            out["writtenTime"] = epoch_ms(self.written_time)
        if self.inputs_hash is not None:
            out["inputFilesHash"] = self.inputs_hash
        out["files"] = [
            {
                "filename": f.filename,
                "references": [r.to_dict(with_filename=False) for r in f.references.values()],
            }
            for f in self.files
        ]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AddFilesTransaction:
        files = []
        for path, item in object_items(data, "files"):
            name = item.get("filename")
            if not isinstance(name, str) or not name:
                raise SerDeError(f"{path}.filename must be a non-empty string")
            refs = [
                FileReference.from_dict(r, filename=name, path=f"{path}.references[{j}]")
                for j, r in enumerate(list_field(item, "references", path))
            ]
            files.append(AllReferencesToAFile(filename=name, references={r.partition_id: r for r in refs}))
        written = data.get("writtenTime")
        return cls(
            files=tuple(files),
            job_id=optional_str_field(data, "jobId"),
            task_id=optional_str_field(data, "taskId"),
            job_run_id=optional_str_field(data, "jobRunId"),
            written_time=None if written is None else from_epoch_ms(int_value(written, "writtenTime")),
            inputs_hash=optional_str_field(data, "inputFilesHash"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignJobIdRequest:
    """Assigns a compaction job to input files' references on one partition."""

    job_id: str
    partition_id: str
    filenames: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignJobIdsTransaction(FileTransaction):
    """Assigns compaction jobs to their input file references."""

    TYPE: ClassVar[TransactionType] = TransactionType.ASSIGN_JOB_IDS
    requests: tuple[AssignJobIdRequest, ...]

    def _names(self) -> tuple[list[str], list[str]]:
        """The references the requests name, one per input file in request order: the files and the partitions."""
        names = list(chain.from_iterable(req.filenames for req in self.requests))
        partition_ids = list(chain.from_iterable(repeat(req.partition_id, len(req.filenames)) for req in self.requests))
        return names, partition_ids

    def _job_ids(self) -> list[str]:
        """The job of each reference named, as ``_names``."""
        return list(chain.from_iterable(repeat(req.job_id, len(req.filenames)) for req in self.requests))

    def validate(self, state: FilesState) -> None:
        """Checks that every reference named is tracked and assigned to no job, and that no two jobs request the
        same reference (Sleeper's rules). The state answers for all the references at once
        (``FilesState.first_unassignable``); the first problem in request order is reported.

        Raises:
            FileNotFoundInStateError: If a file is not tracked.
            FileReferenceNotFoundError: If a file has no reference on the job's partition.
            FileReferenceAssignedToJobError: If a reference is assigned to a job already, or requested by two jobs.
        """
        names, partition_ids = self._names()
        first_bad = state.first_unassignable(names, partition_ids)
        first_conflict = None
        job_ids: list[str] = []
        if len(set(names)) != len(names) and len(set(zip(names, partition_ids, strict=True))) != len(names):
            job_ids = self._job_ids()
            claimed: dict[tuple[str, str], str] = {}
            for i, key in enumerate(zip(names, partition_ids, strict=True)):
                if claimed.setdefault(key, job_ids[i]) != job_ids[i]:
                    first_conflict = i
                    break
        # A reference named again is found unassignable where it was first named, so the earlier problem wins.
        if first_bad is not None and (first_conflict is None or first_bad < first_conflict):
            name, partition_id = names[first_bad], partition_ids[first_bad]
            ref = _reference(state, name, partition_id)
            raise FileReferenceAssignedToJobError(
                f"reference of {name} on partition {partition_id} is already assigned to job {ref.job_id}"
            )
        if first_conflict is not None:
            name, partition_id = names[first_conflict], partition_ids[first_conflict]
            other = next(
                job_ids[i] for i in range(first_conflict) if (names[i], partition_ids[i]) == (name, partition_id)
            )
            raise FileReferenceAssignedToJobError(
                f"reference of {name} on partition {partition_id} is requested by jobs {other} and "
                f"{job_ids[first_conflict]}"
            )

    def named_files(self) -> Iterator[str]:
        for req in self.requests:
            yield from req.filenames

    def files_it_may_track(self) -> Iterator[str]:
        return iter(())  # validate refuses a file without a reference on the job's partition

    def apply(self, state: FilesState, time: datetime) -> None:
        names, partition_ids = self._names()
        state.assign_jobs(names, partition_ids, self._job_ids(), time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": [
                {"jobId": r.job_id, "partitionId": r.partition_id, "filenames": list(r.filenames)}
                for r in self.requests
            ]
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AssignJobIdsTransaction:
        reqs = []
        for path, item in object_items(data, "requests"):
            reqs.append(
                AssignJobIdRequest(
                    job_id=str_field(item, "jobId", path),
                    partition_id=str_field(item, "partitionId", path),
                    filenames=tuple(str_list_field(item, "filenames", path)),
                )
            )
        return cls(requests=tuple(reqs))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaceFileReferencesRequest:
    """A compaction commit: the job's input files are replaced on its partition by one output file.

    Raises:
        InvalidTransactionError: If the output is also an input, or the output is on another partition.
    """

    job_id: str
    input_files: tuple[str, ...]
    new_reference: FileReference
    task_id: str | None = None
    job_run_id: str | None = None
    applied_deletes: tuple[int, ...] = ()
    """Beyond Sleeper: the transaction numbers of the pending row deletes the job removed from its inputs' rows
    (``appliedDeletes`` in JSON, absent when none, so the request is Sleeper's for a table without deletes)."""

    def __post_init__(self) -> None:
        if self.new_reference.filename in self.input_files:
            raise InvalidTransactionError(
                f"job {self.job_id}: output file {self.new_reference.filename} is also an input"
            )
        if len(set(self.input_files)) != len(self.input_files):
            raise InvalidTransactionError(f"job {self.job_id}: an input file is named twice")

    @property
    def partition_id(self) -> str:
        """The partition the job compacted."""
        return self.new_reference.partition_id

    def validate(self, state: FilesState) -> None:
        """Checks every input is referenced on the partition and assigned to this job, and the output is new.

        Raises:
            StateStoreError: Naming the first problem.
        """
        for name in self.input_files:
            ref = _reference(state, name, self.partition_id)
            if ref.job_id != self.job_id:
                raise FileReferenceNotAssignedToJobError(
                    f"reference of {name} on partition {self.partition_id} is assigned to "
                    f"{ref.job_id or 'no job'}, not job {self.job_id}"
                )
        if self.new_reference.filename in state:
            raise FileAlreadyExistsError(f"job {self.job_id}: output file {self.new_reference.filename} already exists")
        self.deletes_joined(state)

    def deletes_joined(self, state: FilesState) -> list[int]:
        """The pending deletes the output joins: those listing every input that the job did not apply (its rows all
        predate them, so hiding stays right).

        Raises:
            PendingDeleteNotAppliedError: If a delete the job did not apply lists some inputs but not all (it was
                committed after the job read the state, and the job also read files added after it).
        """
        if not state.pending_deletes:
            return []
        joined = []
        applied = set(self.applied_deletes)
        for d in state.pending_deletes_of(self.input_files):
            if d.number in applied:
                continue
            if all(name in d.files for name in self.input_files):
                joined.append(d.number)
                continue
            raise PendingDeleteNotAppliedError(
                f"job {self.job_id}: the row delete committed at transaction {d.number} lists some of its input "
                f"files and the job did not apply it; run the job again"
            )
        return joined

    def to_dict(self) -> dict[str, Any]:
        """The request's JSON as in Sleeper's REPLACE_FILE_REFERENCES jobs (with ``appliedDeletes`` beyond Sleeper
        only when the job applied any)."""
        out: dict[str, Any] = {"jobId": self.job_id}
        if self.task_id is not None:
            out["taskId"] = self.task_id
        if self.job_run_id is not None:
            out["jobRunId"] = self.job_run_id
        out["inputFiles"] = list(self.input_files)
        out["newReference"] = self.new_reference.to_dict()
        if self.applied_deletes:
            out["appliedDeletes"] = list(self.applied_deletes)
        return out

    @classmethod
    def from_dict(cls, item: object, path: str = "job") -> ReplaceFileReferencesRequest:
        """Reads one job of a REPLACE_FILE_REFERENCES transaction."""
        if not isinstance(item, Mapping):
            raise SerDeError(f"{path} must be an object")
        return cls(
            job_id=str_field(item, "jobId", path),
            task_id=optional_str_field(item, "taskId", path),
            job_run_id=optional_str_field(item, "jobRunId", path),
            input_files=tuple(str_list_field(item, "inputFiles", path)),
            new_reference=FileReference.from_dict(item.get("newReference"), path=f"{path}.newReference"),
            applied_deletes=_applied_deletes(item, path),
        )


def _applied_deletes(item: Mapping[str, Any], path: str) -> tuple[int, ...]:
    raw = item.get("appliedDeletes")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SerDeError(f"{path}.appliedDeletes must be a list")
    return tuple(int_value(v, f"{path}.appliedDeletes[{i}]") for i, v in enumerate(raw))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaceFileReferencesTransaction(FileTransaction):
    """Commits compaction jobs. Each job is checked at apply time and skipped if it no longer fits."""

    TYPE: ClassVar[TransactionType] = TransactionType.REPLACE_FILE_REFERENCES
    jobs: tuple[ReplaceFileReferencesRequest, ...]

    def validate(self, state: FilesState) -> None:
        """Checks every job (used for synchronous commits, which throw rather than skip)."""
        for job in self.jobs:
            job.validate(state)

    def named_files(self) -> Iterator[str]:
        for job in self.jobs:
            yield from job.input_files
            yield job.new_reference.filename

    def failed_jobs(self, state: FilesState) -> list[tuple[ReplaceFileReferencesRequest, StateStoreError]]:
        """The jobs that would be skipped if applied now, with the reason."""
        out = []
        trial = state.copy()
        for job in self.jobs:
            try:
                job.validate(trial)
            except StateStoreError as e:
                out.append((job, e))
                continue
            _apply_replace(trial, job, datetime.now(tz=UTC))
        return out

    def apply(self, state: FilesState, time: datetime) -> None:
        for job in self.jobs:
            try:
                job.validate(state)
            except StateStoreError:
                continue
            _apply_replace(state, job, time)

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [j.to_dict() for j in self.jobs]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplaceFileReferencesTransaction:
        return cls(
            jobs=tuple(
                ReplaceFileReferencesRequest.from_dict(item, f"jobs[{i}]")
                for i, item in enumerate(list_field(data, "jobs"))
            )
        )


def _apply_replace(state: FilesState, job: ReplaceFileReferencesRequest, time: datetime) -> None:
    joined = job.deletes_joined(state)  # validated before: raises nothing here
    for name in job.input_files:
        f = state.file(name)
        if f is None:
            continue
        refs = {pid: r for pid, r in f.references.items() if pid != job.partition_id}
        state.set_references(name, refs, time)
    new_ref = job.new_reference.at(time)
    state.set_references(new_ref.filename, {new_ref.partition_id: new_ref}, time)
    state.join_pending_deletes(joined, new_ref.filename)


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitFileReferenceRequest:
    """Replaces a reference on a non-leaf partition by references on its children."""

    old_reference: FileReference
    new_references: tuple[FileReference, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitFileReferencesTransaction(FileTransaction):
    """Moves file references down the partition tree (compaction's pre-split)."""

    TYPE: ClassVar[TransactionType] = TransactionType.SPLIT_FILE_REFERENCES
    requests: tuple[SplitFileReferenceRequest, ...]

    def validate(self, state: FilesState) -> None:
        trial = state.copy()
        for req in self.requests:
            old = req.old_reference
            ref = _reference(trial, old.filename, old.partition_id)
            if ref.job_id is not None:
                raise FileReferenceAssignedToJobError(
                    f"reference of {old.filename} on partition {old.partition_id} is assigned to job {ref.job_id}"
                )
            for new in req.new_references:
                if new.filename != old.filename:
                    raise InvalidTransactionError(f"split of {old.filename} names another file {new.filename}")
                if trial.reference(new.filename, new.partition_id) is not None:
                    raise FileReferenceAlreadyExistsError(
                        f"{new.filename} already has a reference on partition {new.partition_id}"
                    )
            _apply_split(trial, req, datetime.now(tz=UTC))

    def named_files(self) -> Iterator[str]:
        for req in self.requests:
            yield req.old_reference.filename
            for new in req.new_references:
                if new.filename != req.old_reference.filename:
                    yield new.filename

    def new_reference_partitions(self) -> Iterator[str]:
        for req in self.requests:
            for new in req.new_references:
                yield new.partition_id

    def apply(self, state: FilesState, time: datetime) -> None:
        for req in self.requests:
            old = req.old_reference
            ref = state.reference(old.filename, old.partition_id)
            if ref is None or ref.job_id is not None:
                continue
            if any(state.reference(n.filename, n.partition_id) is not None for n in req.new_references):
                continue
            _apply_split(state, req, time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": [
                {
                    "oldReference": r.old_reference.to_dict(),
                    "newReferences": [n.to_dict() for n in r.new_references],
                }
                for r in self.requests
            ]
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SplitFileReferencesTransaction:
        reqs = []
        for path, item in object_items(data, "requests"):
            reqs.append(
                SplitFileReferenceRequest(
                    old_reference=FileReference.from_dict(item.get("oldReference"), path=f"{path}.oldReference"),
                    new_references=tuple(
                        FileReference.from_dict(n, path=f"{path}.newReferences[{j}]")
                        for j, n in enumerate(list_field(item, "newReferences", path))
                    ),
                )
            )
        return cls(requests=tuple(reqs))


def _apply_split(state: FilesState, req: SplitFileReferenceRequest, time: datetime) -> None:
    f = state.file(req.old_reference.filename)
    assert f is not None
    refs = {pid: r for pid, r in f.references.items() if pid != req.old_reference.partition_id}
    for new in req.new_references:
        refs[new.partition_id] = new.at(time)
    state.set_references(f.filename, refs, time)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteFilesTransaction(FileTransaction):
    """Stops tracking files that have no references (after garbage collection deleted them)."""

    TYPE: ClassVar[TransactionType] = TransactionType.DELETE_FILES
    filenames: tuple[str, ...]

    def validate(self, state: FilesState) -> None:
        for name in self.filenames:
            f = state.file(name)
            if f is None:
                raise FileNotFoundInStateError(f"file {name} is not tracked")
            if f.references:
                raise FileHasReferencesError(
                    f"file {name} is still referenced by partitions {', '.join(sorted(f.references))}"
                )

    def named_files(self) -> Iterator[str]:
        return iter(self.filenames)

    def apply(self, state: FilesState, time: datetime) -> None:
        for name in self.filenames:
            f = state.file(name)
            if f is not None and not f.references:
                state.remove(name)

    def to_dict(self) -> dict[str, Any]:
        return {"filenames": list(self.filenames)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeleteFilesTransaction:
        return cls(filenames=tuple(str_list_field(data, "filenames")))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearFilesTransaction(FileTransaction):
    """Stops tracking every file of the table."""

    TYPE: ClassVar[TransactionType] = TransactionType.CLEAR_FILES

    def validate(self, state: FilesState) -> None:
        return

    def apply(self, state: FilesState, time: datetime) -> None:
        state.clear()

    def to_dict(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClearFilesTransaction:
        return cls()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRowsTransaction(FileTransaction):
    """Beyond Sleeper (port-only): deletes the rows matching a filter among those committed before it.

    Applied as the log's entry N, it records a pending delete (``sleeper.core.statestore.deletes``) of the filter over
    every file referenced at that moment; a table with no referenced file records none. The body is
    ``{"filter": "<canonical filter text>"}``, in the language of ``sleeper.core.filter``.
    """

    TYPE: ClassVar[TransactionType] = TransactionType.DELETE_ROWS
    filter: str

    def validate(self, state: FilesState) -> None:
        if not self.filter.strip():
            raise InvalidTransactionError("a row delete needs a filter")

    def apply(self, state: FilesState, time: datetime) -> None:
        """Applies the delete with no log number (numbered 0): readers of a log use :meth:`apply_numbered`."""
        self.apply_numbered(state, time, 0)

    def apply_numbered(self, state: FilesState, time: datetime, number: int) -> None:
        files = frozenset(f.filename for f in state.files() if f.references)
        state.add_pending_delete(PendingDelete(number=number, filter=self.filter, files=files))

    def to_dict(self) -> dict[str, Any]:
        return {"filter": self.filter}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeleteRowsTransaction:
        return cls(filter=str_field(data, "filter"))


@dataclass(frozen=True, slots=True, kw_only=True)
class OverwriteFilesTransaction(FileTransaction):
    """Beyond Sleeper (port-only): replaces every row of the table by the rows of new files, in one commit.

    Applying it removes every reference of every file (the files stay tracked, unreferenced, so the garbage collector
    deletes them after its delay and time travel to before it still reads them) and adds the new files with their
    references, as ADD_FILES does. A reader sees every old row or every new one, never a mix and never none. A
    compaction of old files committed after it finds its inputs' references gone and is skipped. Applied again (a
    redelivery), it is skipped when a new file is already tracked. The body is ADD_FILES's (``{"files": [...]}``).
    """

    TYPE: ClassVar[TransactionType] = TransactionType.OVERWRITE_FILES
    add: AddFilesTransaction

    def validate(self, state: FilesState) -> None:
        """Checks no new file is tracked already.

        Raises:
            FileAlreadyExistsError: Naming the first new file the table tracks.
        """
        for f in self.add.files:
            if f.filename in state:
                raise FileAlreadyExistsError(f"file {f.filename} to overwrite the table with is already tracked")

    def named_files(self) -> Iterator[str]:
        return self.add.named_files()

    def new_reference_partitions(self) -> Iterator[str]:
        return self.add.new_reference_partitions()

    def apply(self, state: FilesState, time: datetime) -> None:
        if any(f.filename in state for f in self.add.files):
            return
        referenced = [f.filename for f in state.files() if f.references]
        for name in referenced:
            state.set_references(name, {}, time)
        for f in self.add.files:
            state.set_references(f.filename, {pid: r.at(time) for pid, r in f.references.items()}, time)

    def to_dict(self) -> dict[str, Any]:
        return self.add.to_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OverwriteFilesTransaction:
        return cls(add=AddFilesTransaction.from_dict(data))


@dataclass(frozen=True, slots=True, kw_only=True)
class UpsertFilesTransaction(FileTransaction):
    """Beyond Sleeper (port-only): adds new files and hides, in every file referenced before them, the rows whose row
    key the new files hold, in one commit (``Table.upsert`` on an upsert table without a sort key).

    Applied as the log's entry N, it records a pending delete (``sleeper.core.statestore.deletes``) numbered N of the
    filter (a row key membership test, ``key in (...)``) over every file referenced at that moment, then adds the
    files as ADD_FILES does. So the rows of those keys committed before N are hidden, the new ones are not, and a
    reader sees all the new rows with the old ones hidden or neither. Files known to hold none of those keys (those an
    earlier commit of the same upsert added, ``unaffected``) are left out of the delete. Applied again (a
    redelivery), it is skipped when a new file is already tracked. The body is ADD_FILES's with the filter, and the
    unaffected files when there are some: ``{"files": [...], "filter": "...", "unaffectedFiles": [...]}``.
    """

    TYPE: ClassVar[TransactionType] = TransactionType.UPSERT_FILES
    add: AddFilesTransaction
    filter: str
    unaffected: tuple[str, ...] = ()

    def validate(self, state: FilesState) -> None:
        """Checks the filter is given and no new file is tracked already.

        Raises:
            InvalidTransactionError: If the filter is blank.
            FileAlreadyExistsError: Naming the first new file the table tracks.
        """
        if not self.filter.strip():
            raise InvalidTransactionError("an upsert needs the filter of the row keys it replaces")
        for f in self.add.files:
            if f.filename in state:
                raise FileAlreadyExistsError(f"file {f.filename} to upsert is already tracked")

    def named_files(self) -> Iterator[str]:
        return self.add.named_files()

    def new_reference_partitions(self) -> Iterator[str]:
        return self.add.new_reference_partitions()

    def apply(self, state: FilesState, time: datetime) -> None:
        """Applies the upsert with no log number (numbered 0): readers of a log use :meth:`apply_numbered`."""
        self.apply_numbered(state, time, 0)

    def apply_numbered(self, state: FilesState, time: datetime, number: int) -> None:
        if any(f.filename in state for f in self.add.files):
            return
        skipped = frozenset(self.unaffected)
        files = frozenset(f.filename for f in state.files() if f.references and f.filename not in skipped)
        state.add_pending_delete(PendingDelete(number=number, filter=self.filter, files=files))
        for f in self.add.files:
            state.set_references(f.filename, {pid: r.at(time) for pid, r in f.references.items()}, time)

    def to_dict(self) -> dict[str, Any]:
        body = {**self.add.to_dict(), "filter": self.filter}
        if self.unaffected:
            body["unaffectedFiles"] = list(self.unaffected)
        return body

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UpsertFilesTransaction:
        unaffected = tuple(str_list_field(data, "unaffectedFiles")) if "unaffectedFiles" in data else ()
        return cls(add=AddFilesTransaction.from_dict(data), filter=str_field(data, "filter"), unaffected=unaffected)


FILE_TRANSACTIONS: dict[TransactionType, type[FileTransaction]] = {
    t.TYPE: t
    for t in (
        AddFilesTransaction,
        AssignJobIdsTransaction,
        ReplaceFileReferencesTransaction,
        SplitFileReferencesTransaction,
        DeleteFilesTransaction,
        ClearFilesTransaction,
        DeleteRowsTransaction,
        OverwriteFilesTransaction,
        UpsertFilesTransaction,
    )
}


def _reference(state: FilesState, filename: str, partition_id: str) -> FileReference:
    f = state.file(filename)
    if f is None:
        raise FileNotFoundInStateError(f"file {filename} is not tracked")
    ref = f.references.get(partition_id)
    if ref is None:
        raise FileReferenceNotFoundError(f"file {filename} has no reference on partition {partition_id}")
    return ref
