"""The nine transaction types of Sleeper's transaction log, with their JSON, validation and effect (spec 2.2).

A transaction is validated against the current state before it is appended to the log, and applied to the state
once it is in the log. Validation raises a ``StateStoreError`` naming what is wrong; applying never raises: where
Sleeper skips an invalid part at apply time (ADD_FILES with a file that exists, REPLACE_FILE_REFERENCES jobs that
no longer fit), so do we, so every reader of the log reaches the same state.

Beyond Sleeper: ADD_FILES carrying a job id that was already added is skipped, which makes ingest idempotent. It may
also carry the hash of the job's input files (``inputFilesHash``, ignored by Sleeper): the same job id with other input
files is then refused by validation (``JobIdReusedError``) rather than skipped as a retry. A file transaction also
says which files it names (``named_files``) and on which partitions it adds references (``new_reference_partitions``),
so the state store of a table can refuse files outside the table's data prefix and references on partitions that do
not exist (see ``sleeper.statestore.log_head.FilesLogHead``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, ClassVar

from sleeper.core.exceptions import PartitionTreeError, SerDeError
from sleeper.core.partition import Partition, PartitionTree, validate_split
from sleeper.core.schema import Schema
from sleeper.core.statestore.exceptions import (
    FileAlreadyExistsError,
    FileHasReferencesError,
    FileNotFoundInStateError,
    FileReferenceAlreadyExistsError,
    FileReferenceAssignedToJobError,
    FileReferenceNotAssignedToJobError,
    FileReferenceNotFoundError,
    InvalidTransactionError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PartitionNotLeafError,
    StateStoreError,
)
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import FilesState, PartitionsState


class TransactionType(Enum):
    """The transaction types, named as in Sleeper's log."""

    INITIALISE_PARTITIONS = "INITIALISE_PARTITIONS"
    SPLIT_PARTITION = "SPLIT_PARTITION"
    EXTEND_PARTITION_TREE = "EXTEND_PARTITION_TREE"
    ADD_FILES = "ADD_FILES"
    ASSIGN_JOB_IDS = "ASSIGN_JOB_IDS"
    REPLACE_FILE_REFERENCES = "REPLACE_FILE_REFERENCES"
    SPLIT_FILE_REFERENCES = "SPLIT_FILE_REFERENCES"
    DELETE_FILES = "DELETE_FILES"
    CLEAR_FILES = "CLEAR_FILES"


class LogType(Enum):
    """The two logs of a table."""

    FILES = "files"
    PARTITIONS = "partitions"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_ms(time: datetime) -> int:
    """Milliseconds since the epoch, as Sleeper serialises instants (exact, no float rounding)."""
    return (time - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(ms: int) -> datetime:
    """The UTC time of an epoch milliseconds value.

    Raises:
        SerDeError: If the value is outside the range of representable times.
    """
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise SerDeError(f"time {ms} ms is out of range") from None


# ---------------------------------------------------------------------------------------------------------------
# File transactions
# ---------------------------------------------------------------------------------------------------------------


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
        for i, item in enumerate(_list(data, "files")):
            path = f"files[{i}]"
            if not isinstance(item, Mapping):
                raise SerDeError(f"{path} must be an object")
            name = item.get("filename")
            if not isinstance(name, str) or not name:
                raise SerDeError(f"{path}.filename must be a non-empty string")
            refs = [
                FileReference.from_dict(r, filename=name, path=f"{path}.references[{j}]")
                for j, r in enumerate(_list(item, "references", path))
            ]
            files.append(AllReferencesToAFile(filename=name, references={r.partition_id: r for r in refs}))
        written = data.get("writtenTime")
        return cls(
            files=tuple(files),
            job_id=_opt_str(data, "jobId"),
            task_id=_opt_str(data, "taskId"),
            job_run_id=_opt_str(data, "jobRunId"),
            written_time=None if written is None else from_epoch_ms(_int(written, "writtenTime")),
            inputs_hash=_opt_str(data, "inputFilesHash"),
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

    def validate(self, state: FilesState) -> None:
        claimed: dict[tuple[str, str], str] = {}
        for req in self.requests:
            for name in req.filenames:
                ref = _reference(state, name, req.partition_id)
                if ref.job_id is not None:
                    raise FileReferenceAssignedToJobError(
                        f"reference of {name} on partition {req.partition_id} is already assigned to job {ref.job_id}"
                    )
                other = claimed.setdefault((name, req.partition_id), req.job_id)
                if other != req.job_id:
                    raise FileReferenceAssignedToJobError(
                        f"reference of {name} on partition {req.partition_id} is requested by jobs {other} and "
                        f"{req.job_id}"
                    )

    def named_files(self) -> Iterator[str]:
        for req in self.requests:
            yield from req.filenames

    def apply(self, state: FilesState, time: datetime) -> None:
        for req in self.requests:
            for name in req.filenames:
                f = state.file(name)
                ref = None if f is None else f.references.get(req.partition_id)
                if f is None or ref is None or ref.job_id is not None:
                    continue
                refs = dict(f.references)
                refs[req.partition_id] = ref.with_job(req.job_id).at(time)
                state.set_references(name, refs, time)

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
        for i, item in enumerate(_list(data, "requests")):
            path = f"requests[{i}]"
            if not isinstance(item, Mapping):
                raise SerDeError(f"{path} must be an object")
            reqs.append(
                AssignJobIdRequest(
                    job_id=_str(item, "jobId", path),
                    partition_id=_str(item, "partitionId", path),
                    filenames=tuple(_strs(item, "filenames", path)),
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

    def to_dict(self) -> dict[str, Any]:
        """The request's JSON as in Sleeper's REPLACE_FILE_REFERENCES jobs."""
        out: dict[str, Any] = {"jobId": self.job_id}
        if self.task_id is not None:
            out["taskId"] = self.task_id
        if self.job_run_id is not None:
            out["jobRunId"] = self.job_run_id
        out["inputFiles"] = list(self.input_files)
        out["newReference"] = self.new_reference.to_dict()
        return out

    @classmethod
    def from_dict(cls, item: object, path: str = "job") -> ReplaceFileReferencesRequest:
        """Reads one job of a REPLACE_FILE_REFERENCES transaction."""
        if not isinstance(item, Mapping):
            raise SerDeError(f"{path} must be an object")
        return cls(
            job_id=_str(item, "jobId", path),
            task_id=_opt_str(item, "taskId", path),
            job_run_id=_opt_str(item, "jobRunId", path),
            input_files=tuple(_strs(item, "inputFiles", path)),
            new_reference=FileReference.from_dict(item.get("newReference"), path=f"{path}.newReference"),
        )


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
                ReplaceFileReferencesRequest.from_dict(item, f"jobs[{i}]") for i, item in enumerate(_list(data, "jobs"))
            )
        )


def _apply_replace(state: FilesState, job: ReplaceFileReferencesRequest, time: datetime) -> None:
    for name in job.input_files:
        f = state.file(name)
        if f is None:
            continue
        refs = {pid: r for pid, r in f.references.items() if pid != job.partition_id}
        state.set_references(name, refs, time)
    new_ref = job.new_reference.at(time)
    state.set_references(new_ref.filename, {new_ref.partition_id: new_ref}, time)


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
        for i, item in enumerate(_list(data, "requests")):
            path = f"requests[{i}]"
            if not isinstance(item, Mapping):
                raise SerDeError(f"{path} must be an object")
            reqs.append(
                SplitFileReferenceRequest(
                    old_reference=FileReference.from_dict(item.get("oldReference"), path=f"{path}.oldReference"),
                    new_references=tuple(
                        FileReference.from_dict(n, path=f"{path}.newReferences[{j}]")
                        for j, n in enumerate(_list(item, "newReferences", path))
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
        return cls(filenames=tuple(_strs(data, "filenames")))


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


# ---------------------------------------------------------------------------------------------------------------
# Partition transactions
# ---------------------------------------------------------------------------------------------------------------


class PartitionTransaction(ABC):
    """A transaction on the partitions log."""

    TYPE: ClassVar[TransactionType]
    LOG: ClassVar[LogType] = LogType.PARTITIONS

    @abstractmethod
    def validate(self, state: PartitionsState, schema: Schema) -> None:
        """Checks the transaction against the current partitions.

        Raises:
            StateStoreError: If it does not apply.
        """

    @abstractmethod
    def apply(self, state: PartitionsState, time: datetime) -> None:
        """Applies the transaction to the partitions. Never raises."""

    @abstractmethod
    def to_dict(self, schema: Schema) -> dict[str, Any]:
        """Sleeper's JSON body of the transaction."""

    @classmethod
    @abstractmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> PartitionTransaction:
        """Reads Sleeper's JSON body of the transaction."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InitialisePartitionsTransaction(PartitionTransaction):
    """Replaces every partition (an empty list clears them)."""

    TYPE: ClassVar[TransactionType] = TransactionType.INITIALISE_PARTITIONS
    partitions: tuple[Partition, ...]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        if self.partitions:
            try:
                PartitionTree(schema, self.partitions).validate()
            except PartitionTreeError as e:
                raise StateStoreError(f"invalid partition tree: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        state.clear()
        for p in self.partitions:
            state.put(p)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {"partitions": [p.to_dict(schema) for p in self.partitions]}

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> InitialisePartitionsTransaction:
        return cls(partitions=_partitions(schema, data, "partitions"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPartitionTransaction(PartitionTransaction):
    """Splits a leaf into two new leaves: applies only while the parent is still a leaf."""

    TYPE: ClassVar[TransactionType] = TransactionType.SPLIT_PARTITION
    parent: Partition
    new_children: tuple[Partition, Partition]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        existing = state.get(self.parent.id)
        if existing is None:
            raise PartitionNotFoundError(f"partition {self.parent.id} does not exist")
        if not existing.is_leaf:
            raise PartitionNotLeafError(f"partition {self.parent.id} is not a leaf: it has already been split")
        for child in self.new_children:
            if child.id in state:
                raise PartitionAlreadyExistsError(f"partition {child.id} already exists")
            if not child.is_leaf:
                raise StateStoreError(f"new child partition {child.id} must be a leaf")
        if existing.region != self.parent.region or existing.parent_id != self.parent.parent_id:
            raise StateStoreError(f"split parent {self.parent.id} does not match the stored partition")
        try:
            validate_split(schema, self.parent, self.new_children)
        except PartitionTreeError as e:
            raise StateStoreError(f"invalid split of partition {self.parent.id}: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        existing = state.get(self.parent.id)
        if existing is None or not existing.is_leaf:
            return
        state.put(self.parent)
        for child in self.new_children:
            state.put(child)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {"parent": self.parent.to_dict(schema), "newChildren": [c.to_dict(schema) for c in self.new_children]}

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> SplitPartitionTransaction:
        children = _partitions(schema, data, "newChildren")
        if len(children) != 2:
            raise SerDeError(f"newChildren must hold 2 partitions, has {len(children)}")
        return cls(
            parent=Partition.from_dict(schema, data.get("parent"), path="parent"),
            new_children=(children[0], children[1]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendPartitionTreeTransaction(PartitionTransaction):
    """Splits several leaves at once, possibly several levels deep (bulk import's pre-split)."""

    TYPE: ClassVar[TransactionType] = TransactionType.EXTEND_PARTITION_TREE
    update_partitions: tuple[Partition, ...]
    new_partitions: tuple[Partition, ...]

    def validate(self, state: PartitionsState, schema: Schema) -> None:
        for p in self.update_partitions:
            existing = state.get(p.id)
            if existing is None:
                raise PartitionNotFoundError(f"partition {p.id} does not exist")
            if not existing.is_leaf:
                raise PartitionNotLeafError(f"partition {p.id} is not a leaf: it has already been split")
            if p.is_leaf:
                raise StateStoreError(f"updated partition {p.id} must become a non-leaf")
        for p in self.new_partitions:
            if p.id in state:
                raise PartitionAlreadyExistsError(f"partition {p.id} already exists")
        trial = state.copy()
        self.apply(trial, datetime.now(tz=UTC))
        try:
            trial.tree(schema).validate()
        except PartitionTreeError as e:
            raise StateStoreError(f"extended partition tree is invalid: {e}") from None

    def apply(self, state: PartitionsState, time: datetime) -> None:
        for p in (*self.update_partitions, *self.new_partitions):
            state.put(p)

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        return {
            "updatePartitions": [p.to_dict(schema) for p in self.update_partitions],
            "newPartitions": [p.to_dict(schema) for p in self.new_partitions],
        }

    @classmethod
    def from_dict(cls, schema: Schema, data: Mapping[str, Any]) -> ExtendPartitionTreeTransaction:
        return cls(
            update_partitions=_partitions(schema, data, "updatePartitions"),
            new_partitions=_partitions(schema, data, "newPartitions"),
        )


Transaction = FileTransaction | PartitionTransaction

FILE_TRANSACTIONS: dict[TransactionType, type[FileTransaction]] = {
    t.TYPE: t
    for t in (
        AddFilesTransaction,
        AssignJobIdsTransaction,
        ReplaceFileReferencesTransaction,
        SplitFileReferencesTransaction,
        DeleteFilesTransaction,
        ClearFilesTransaction,
    )
}
PARTITION_TRANSACTIONS: dict[TransactionType, type[PartitionTransaction]] = {
    t.TYPE: t for t in (InitialisePartitionsTransaction, SplitPartitionTransaction, ExtendPartitionTreeTransaction)
}


def log_type_of(transaction_type: TransactionType) -> LogType:
    """Which log a transaction type belongs to."""
    return LogType.FILES if transaction_type in FILE_TRANSACTIONS else LogType.PARTITIONS


@dataclass(frozen=True, slots=True)
class TransactionSerDe:
    """Reads and writes transaction bodies as Sleeper's JSON, for one table schema."""

    schema: Schema
    _indent: int | None = field(default=None)

    def to_dict(self, transaction: Transaction) -> dict[str, Any]:
        """The transaction's JSON body as a dictionary."""
        if isinstance(transaction, FileTransaction):
            return transaction.to_dict()
        return transaction.to_dict(self.schema)

    def to_json(self, transaction: Transaction) -> str:
        """The transaction's JSON body."""
        return json.dumps(self.to_dict(transaction), indent=self._indent, separators=(",", ":"))

    def from_json(self, transaction_type: TransactionType | str, body: str) -> Transaction:
        """Reads a transaction body of a given type.

        Raises:
            SerDeError: If the type is unknown or the body is not valid; the message names the bad path.
        """
        try:
            data = json.loads(body)
        except json.JSONDecodeError as e:
            raise SerDeError(f"transaction body is not valid JSON: {e}") from None
        return self.from_dict(transaction_type, data)

    def from_dict(self, transaction_type: TransactionType | str, data: object) -> Transaction:
        """Reads a parsed transaction body of a given type."""
        try:
            ttype = TransactionType(transaction_type)
        except ValueError:
            raise SerDeError(f"unknown transaction type {transaction_type!r}") from None
        if not isinstance(data, Mapping):
            raise SerDeError(f"{ttype.value} body must be an object")
        if ttype in FILE_TRANSACTIONS:
            return FILE_TRANSACTIONS[ttype].from_dict(data)
        return PARTITION_TRANSACTIONS[ttype].from_dict(self.schema, data)


# ---------------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------------


def _reference(state: FilesState, filename: str, partition_id: str) -> FileReference:
    f = state.file(filename)
    if f is None:
        raise FileNotFoundInStateError(f"file {filename} is not tracked")
    ref = f.references.get(partition_id)
    if ref is None:
        raise FileReferenceNotFoundError(f"file {filename} has no reference on partition {partition_id}")
    return ref


def _list(data: Mapping[str, Any], key: str, path: str = "") -> list[Any]:
    value = data.get(key)
    where = f"{path}.{key}" if path else key
    if value is None:
        raise SerDeError(f"{where} is missing")
    if not isinstance(value, list):
        raise SerDeError(f"{where} must be a list")
    return value


def _strs(data: Mapping[str, Any], key: str, path: str = "") -> list[str]:
    values = _list(data, key, path)
    where = f"{path}.{key}" if path else key
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise SerDeError(f"{where}[{i}] must be a non-empty string")
    return values


def _str(data: Mapping[str, Any], key: str, path: str = "") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise SerDeError(f"{path + '.' if path else ''}{key} must be a non-empty string")
    return value


def _opt_str(data: Mapping[str, Any], key: str, path: str = "") -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SerDeError(f"{path + '.' if path else ''}{key} must be a string")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerDeError(f"{where} must be an integer")
    return value


def _partitions(schema: Schema, data: Mapping[str, Any], key: str) -> tuple[Partition, ...]:
    return tuple(Partition.from_dict(schema, p, path=f"{key}[{i}]") for i, p in enumerate(_list(data, key)))
