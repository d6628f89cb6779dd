"""Compaction messages: jobs, job batch files, pending batch messages and commit requests.

- Job (``sleeper-<id>-CompactionJobQ``): ``{"tableId", "jobId", "inputFiles": […], "outputFile", "partitionId",
  "iteratorClassName"?, "iteratorConfig"?, "filterConfig"?, "aggregationConfig"?}``.
- Batch file (``<tableId>/compactions/<batchId>.json`` in the data bucket): ``{"jobs": [job, …]}``.
- Pending batch message (``sleeper-<id>-PendingCompactionJobBatchQ``): ``{"tableId", "batchKey", "createTime": ms}``.
- Commit request (``sleeper-<id>-CompactionCommitQ``): ``{"tableId", "request": {"jobId", "taskId", "jobRunId",
  "inputFiles", "newReference"}}``, the request being one job of a REPLACE_FILE_REFERENCES transaction.

File names are checked for path traversal (local paths are allowed, for the local runtime); pointers to batch files
must lie under the table's own ``compactions/`` prefix. Job ids name output files and key tracker records, so they
must be safe ids (``sleeper.core.paths.SAFE_ID_RULE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sleeper.core.exceptions import SleeperError
from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import InvalidFieldError, MessageError
from sleeper.core.paths import check_key_under, check_safe_id, check_safe_path
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import ReplaceFileReferencesRequest

COMPACTION_JOB_FIELDS = frozenset(
    {
        "tableId",
        "jobId",
        "inputFiles",
        "outputFile",
        "partitionId",
        "iteratorClassName",
        "iteratorConfig",
        "filterConfig",
        "aggregationConfig",
    }
)
"""The fields of a compaction job."""

_OPTIONAL_CONFIG = (
    ("iteratorClassName", "iterator_class_name"),
    ("iteratorConfig", "iterator_config"),
    ("filterConfig", "filter_config"),
    ("aggregationConfig", "aggregation_config"),
)
_REQUEST_FIELDS = frozenset({"jobId", "taskId", "jobRunId", "inputFiles", "newReference"})
_REFERENCE_FIELDS = frozenset(
    {"filename", "partitionId", "numberOfRows", "jobId", "countApproximate", "onlyContainsDataForThisPartition"}
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the largest time Python can hold


def to_epoch_ms(time: datetime) -> int:
    """Milliseconds since the epoch, exactly (no float rounding), as Sleeper writes instants."""
    return (time - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(ms: int) -> datetime:
    """The UTC time of an epoch milliseconds value, exactly."""
    return _EPOCH + timedelta(milliseconds=ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJob(wire.JsonMessage):
    """A compaction of some files of one partition into one output file.

    Attributes:
        table_id: The table.
        job_id: The job id; the output file is named after it.
        input_files: The files to compact, all referenced on the partition and assigned to this job.
        output_file: The file to write.
        partition_id: The partition whose part of the inputs is compacted.
        iterator_class_name: The table's custom iterator, copied from its properties.
        iterator_config: The iterator's configuration.
        filter_config: The table's filters (``sleeper.table.filters``).
        aggregation_config: The table's aggregations (``sleeper.table.aggregations``).

    Raises:
        UnsafeIdError: If the job id breaks the safe id rule.
        InvalidFieldError: If there are no inputs, an input is repeated, or the output is also an input.
    """

    table_id: str
    job_id: str
    input_files: tuple[str, ...]
    output_file: str
    partition_id: str
    iterator_class_name: str | None = None
    iterator_config: str | None = None
    filter_config: str | None = None
    aggregation_config: str | None = None

    def __post_init__(self) -> None:
        check_safe_id(self.job_id, where="$.jobId", what="compaction job id")
        object.__setattr__(self, "input_files", tuple(self.input_files))
        if not self.input_files:
            raise InvalidFieldError("a compaction job needs at least one input file", path="$.inputFiles")
        if len(set(self.input_files)) != len(self.input_files):
            raise InvalidFieldError("an input file is named twice", path="$.inputFiles")
        if self.output_file in self.input_files:
            raise InvalidFieldError("the output file is also an input file", path="$.outputFile")

    def commit_request(self, *, task_id: str, job_run_id: str, rows_written: int) -> CompactionJobCommitRequest:
        """The request to commit this job once its output is written: the output gets one exact reference
        on the job's partition, replacing the inputs' references there."""
        reference = FileReference(
            filename=self.output_file,
            partition_id=self.partition_id,
            number_of_rows=rows_written,
            count_approximate=False,
            only_contains_data_for_this_partition=True,
        )
        request = ReplaceFileReferencesRequest(
            job_id=self.job_id,
            task_id=task_id,
            job_run_id=job_run_id,
            input_files=self.input_files,
            new_reference=reference,
        )
        return CompactionJobCommitRequest(table_id=self.table_id, request=request)

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's compaction job JSON as a dictionary (nulls omitted, fields in Sleeper's order)."""
        out: dict[str, Any] = {
            "tableId": self.table_id,
            "jobId": self.job_id,
            "inputFiles": list(self.input_files),
            "outputFile": self.output_file,
            "partitionId": self.partition_id,
        }
        for key, attr in _OPTIONAL_CONFIG:
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: object, *, path: str = "$") -> CompactionJob:
        """Reads a parsed compaction job.

        Raises:
            MessageError: If it is not a valid compaction job.
        """
        obj = wire.expect_object(data, path)
        wire.check_fields(obj, COMPACTION_JOB_FIELDS, path)
        inputs = wire.str_list(obj, "inputFiles", path, non_empty=True)
        for i, name in enumerate(inputs):
            check_safe_path(name, where=wire.item(wire.child(path, "inputFiles"), i), allow_local=True)
        output = wire.required_str(obj, "outputFile", path)
        check_safe_path(output, where=wire.child(path, "outputFile"), allow_local=True)
        table_id = wire.required_str(obj, "tableId", path)
        job_id = wire.required_id(obj, "jobId", path, what="compaction job id")
        partition_id = wire.required_str(obj, "partitionId", path)
        iterator_class_name = wire.optional_str(obj, "iteratorClassName", path)
        iterator_config = wire.optional_str(obj, "iteratorConfig", path)
        filter_config = wire.optional_str(obj, "filterConfig", path)
        aggregation_config = wire.optional_str(obj, "aggregationConfig", path)
        try:
            return cls(
                table_id=table_id,
                job_id=job_id,
                input_files=inputs,
                output_file=output,
                partition_id=partition_id,
                iterator_class_name=iterator_class_name,
                iterator_config=iterator_config,
                filter_config=filter_config,
                aggregation_config=aggregation_config,
            )
        except MessageError as e:
            # The constructor's checks name paths from the job's root; put them under this job's path.
            raise type(e)(e.reason, path=path + e.path[1:]) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobBatch(wire.JsonMessage):
    """The compaction jobs created together, written to one batch file in the data bucket before they are sent."""

    jobs: tuple[CompactionJob, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))

    @classmethod
    def of(cls, jobs: Iterable[CompactionJob]) -> CompactionJobBatch:
        """A batch of jobs."""
        return cls(jobs=tuple(jobs))

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's batch file JSON as a dictionary."""
        return {"jobs": [j.to_dict() for j in self.jobs]}

    @classmethod
    def from_dict(cls, data: object) -> CompactionJobBatch:
        """Reads a parsed batch file.

        Raises:
            MessageError: If it is not a valid batch.
        """
        obj = wire.expect_object(data)
        wire.check_fields(obj, {"jobs"})
        jobs = obj.get("jobs")
        if not isinstance(jobs, list):
            if jobs is None:
                raise wire.missing("$.jobs")
            raise InvalidFieldError("must be a list", path="$.jobs")
        return cls(jobs=tuple(CompactionJob.from_dict(j, path=f"$.jobs[{i}]") for i, j in enumerate(jobs)))


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobDispatchRequest(wire.JsonMessage):
    """The pending batch message: asks the dispatcher to send a batch's jobs once their files are assigned.

    Attributes:
        table_id: The table.
        batch_key: The batch file's key in the data bucket, under ``<tableId>/compactions/``.
        create_time: When the batch was created; the dispatcher gives up a while after it.

    Raises:
        UnsafePathError: If the batch key is not a safe key under the table's ``compactions/`` prefix.
    """

    table_id: str
    batch_key: str
    create_time: datetime

    def __post_init__(self) -> None:
        check_key_under(self.batch_key, batch_key_prefix(self.table_id), where="$.batchKey")

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's pending batch message as a dictionary."""
        return {"tableId": self.table_id, "batchKey": self.batch_key, "createTime": to_epoch_ms(self.create_time)}

    @classmethod
    def from_dict(cls, data: object) -> CompactionJobDispatchRequest:
        """Reads a parsed pending batch message.

        Raises:
            MessageError: If it is not valid.
        """
        obj = wire.expect_object(data)
        wire.check_fields(obj, {"tableId", "batchKey", "createTime"})
        ms = wire.required_int(obj, "createTime", minimum=0, maximum=_MAX_EPOCH_MS)
        return cls(
            table_id=wire.required_str(obj, "tableId"),
            batch_key=wire.required_str(obj, "batchKey"),
            create_time=from_epoch_ms(ms),
        )


def batch_key_prefix(table_id: str) -> str:
    """The prefix of a table's compaction batch files in the data bucket."""
    return f"{table_id}/compactions/"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCommitRequest(wire.JsonMessage):
    """A finished compaction job, sent to the commit queue to be batched into REPLACE_FILE_REFERENCES transactions.

    Attributes:
        table_id: The table.
        request: The job's commit: inputs replaced by one output reference on the partition.

    Raises:
        MessageError: When read, if it is not valid (including an output also named as an input).
    """

    table_id: str
    request: ReplaceFileReferencesRequest

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's compaction commit message as a dictionary."""
        return {"tableId": self.table_id, "request": self.request.to_dict()}

    @classmethod
    def from_dict(cls, data: object) -> CompactionJobCommitRequest:
        """Reads a parsed compaction commit message.

        Raises:
            MessageError: If it is not valid.
        """
        obj = wire.expect_object(data)
        wire.check_fields(obj, {"tableId", "request"})
        table_id = wire.required_str(obj, "tableId")
        raw = obj.get("request")
        if raw is None:
            raise wire.missing("$.request")
        request_obj = wire.expect_object(raw, "$.request")
        wire.check_fields(request_obj, _REQUEST_FIELDS, "$.request")
        reference = wire.expect_object(request_obj.get("newReference"), "$.request.newReference")
        wire.check_fields(reference, _REFERENCE_FIELDS, "$.request.newReference")
        inputs = wire.str_list(request_obj, "inputFiles", "$.request", non_empty=True)
        for i, name in enumerate(inputs):
            check_safe_path(name, where=f"$.request.inputFiles[{i}]", allow_local=True)
        wire.required_id(request_obj, "jobId", "$.request", what="compaction job id")
        wire.optional_str(request_obj, "taskId", "$.request")
        wire.optional_str(request_obj, "jobRunId", "$.request")
        output = wire.required_str(reference, "filename", "$.request.newReference")
        check_safe_path(output, where="$.request.newReference.filename", allow_local=True)
        try:
            request = ReplaceFileReferencesRequest.from_dict(request_obj, "$.request")
        except SleeperError as e:
            raise wire.from_serde_error(e, "$.request") from None
        return cls(table_id=table_id, request=request)


def commit_requests_by_table(
    requests: Sequence[CompactionJobCommitRequest],
) -> Mapping[str, list[ReplaceFileReferencesRequest]]:
    """Groups commit requests by table, keeping their order, as the commit batcher does before it sends one
    REPLACE_FILE_REFERENCES transaction per table."""
    out: dict[str, list[ReplaceFileReferencesRequest]] = {}
    for r in requests:
        out.setdefault(r.table_id, []).append(r.request)
    return out
