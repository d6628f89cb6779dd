from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sleeper.core.jobs.compaction import (
    CompactionJob,
    CompactionJobBatch,
    CompactionJobCommitRequest,
    CompactionJobDispatchRequest,
    commit_requests_by_table,
    from_epoch_ms,
    to_epoch_ms,
)
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnsafePathError,
)
from sleeper.core.statestore.references import FileReference

JOB = CompactionJob(
    table_id="t",
    job_id="job-1",
    input_files=("s3a://b/t/data/partition_p/f1.parquet", "s3a://b/t/data/partition_p/f2.parquet"),
    output_file="s3a://b/t/data/partition_p/job-1.parquet",
    partition_id="p",
)


def should_round_trip_job_with_optional_fields_omitted_when_null() -> None:
    # When
    data = JOB.to_dict()
    # Then
    assert CompactionJob.from_dict(data) == JOB
    assert set(data) == {"tableId", "jobId", "inputFiles", "outputFile", "partitionId"}


@pytest.mark.parametrize(
    ("change", "error", "path"),
    [
        ({"inputFiles": []}, InvalidFieldError, "$.inputFiles"),
        ({"inputFiles": None}, MissingFieldError, "$.inputFiles"),
        ({"inputFiles": ["a", "a"]}, InvalidFieldError, "$.inputFiles"),
        ({"outputFile": "s3a://b/t/data/partition_p/f1.parquet"}, InvalidFieldError, "$.outputFile"),
        ({"outputFile": None}, MissingFieldError, "$.outputFile"),
        ({"tableId": None}, MissingFieldError, "$.tableId"),
        ({"partitionId": 3}, InvalidFieldError, "$.partitionId"),
        ({"iteratorConfig": {}}, InvalidFieldError, "$.iteratorConfig"),
        ({"inputFiles": ["s3a://b/t/../u/f.parquet"]}, UnsafePathError, "$.inputFiles[0]"),
        ({"outputFile": "s3a://b/t/%2e%2e/x.parquet"}, UnsafePathError, "$.outputFile"),
        ({"jobID": "x"}, UnknownFieldError, "$.jobID"),
    ],
)
def should_reject_invalid_jobs(change: dict[str, object], error: type[MessageError], path: str) -> None:
    # Given
    data = {**JOB.to_dict(), **change}
    # When
    with pytest.raises(error) as e:
        CompactionJob.from_dict(data)
    # Then
    assert e.value.path == path


def should_name_the_job_in_a_batch_that_is_invalid() -> None:
    # Given
    bad = {**JOB.to_dict(), "outputFile": None}
    batch = {"jobs": [JOB.to_dict(), bad]}
    # When
    with pytest.raises(MissingFieldError) as e:
        CompactionJobBatch.from_dict(batch)
    # Then
    assert e.value.path == "$.jobs[1].outputFile"


def should_name_the_job_in_a_batch_that_breaks_a_rule() -> None:
    # Given
    bad = {**JOB.to_dict(), "outputFile": JOB.input_files[0]}
    # When
    with pytest.raises(InvalidFieldError) as e:
        CompactionJobBatch.from_dict({"jobs": [bad]})
    # Then
    assert e.value.path == "$.jobs[0].outputFile"


def should_reject_batch_without_jobs_list() -> None:
    # When / Then
    with pytest.raises(MissingFieldError):
        CompactionJobBatch.from_json("{}")
    with pytest.raises(InvalidFieldError):
        CompactionJobBatch.from_json('{"jobs":{}}')


def should_round_trip_batch() -> None:
    # Given
    batch = CompactionJobBatch.of([JOB, JOB])
    # When / Then
    assert CompactionJobBatch.from_json(batch.to_json()) == batch


def should_write_dispatch_request_time_as_epoch_millis() -> None:
    # Given
    request = CompactionJobDispatchRequest(
        table_id="t",
        batch_key="t/compactions/batch-1.json",
        create_time=datetime(2024, 11, 18, 12, 1, 0, 123000, tzinfo=UTC),
    )
    # When
    data = request.to_dict()
    # Then
    assert data["createTime"] == 1731931260123
    assert CompactionJobDispatchRequest.from_dict(data) == request


def should_convert_epoch_millis_exactly() -> None:
    # Given times whose float seconds are not exact
    for ms in (1731931260123, 1, 999, 253_402_300_799_999):
        # When / Then
        assert to_epoch_ms(from_epoch_ms(ms)) == ms


@pytest.mark.parametrize(
    ("change", "error", "path"),
    [
        ({"batchKey": "other/compactions/b.json"}, UnsafePathError, "$.batchKey"),
        ({"batchKey": "t/compactions/../../other/b.json"}, UnsafePathError, "$.batchKey"),
        ({"createTime": "2024-11-18T12:01:00Z"}, InvalidFieldError, "$.createTime"),
        ({"createTime": -1}, InvalidFieldError, "$.createTime"),
        ({"createTime": 10**20}, InvalidFieldError, "$.createTime"),
        ({"createTime": None}, MissingFieldError, "$.createTime"),
    ],
)
def should_reject_invalid_dispatch_requests(change: dict[str, object], error: type[MessageError], path: str) -> None:
    # Given
    data = {"tableId": "t", "batchKey": "t/compactions/b.json", "createTime": 1731931260000, **change}
    # When
    with pytest.raises(error) as e:
        CompactionJobDispatchRequest.from_dict(data)
    # Then
    assert e.value.path == path


def should_build_commit_request_with_exact_output_reference() -> None:
    # When
    request = JOB.commit_request(task_id="task", job_run_id="run", rows_written=123)
    # Then
    assert request.request.new_reference == FileReference(
        filename=JOB.output_file,
        partition_id="p",
        number_of_rows=123,
        count_approximate=False,
        only_contains_data_for_this_partition=True,
    )
    assert request.request.input_files == JOB.input_files
    assert CompactionJobCommitRequest.from_json(request.to_json()) == request


def _commit_data() -> dict[str, object]:
    return JOB.commit_request(task_id="task", job_run_id="run", rows_written=10).to_dict()


@pytest.mark.parametrize(
    ("request_change", "error", "path"),
    [
        ({"jobId": None}, MissingFieldError, "$.request.jobId"),
        ({"taskId": 5}, InvalidFieldError, "$.request.taskId"),
        ({"inputFiles": []}, InvalidFieldError, "$.request.inputFiles"),
        ({"inputFiles": ["s3a://b/t/data/partition_p/job-1.parquet"]}, InvalidFieldError, "$.request"),
        ({"inputFiles": ["s3a://b/../x"]}, UnsafePathError, "$.request.inputFiles[0]"),
        ({"newReference": None}, InvalidFieldError, "$.request.newReference"),
        ({"extra": 1}, UnknownFieldError, "$.request.extra"),
    ],
)
def should_reject_invalid_commit_requests(
    request_change: dict[str, object], error: type[MessageError], path: str
) -> None:
    # Given
    data = _commit_data()
    request = data["request"]
    assert isinstance(request, dict)
    data["request"] = {**request, **request_change}
    # When
    with pytest.raises(error) as e:
        CompactionJobCommitRequest.from_dict(data)
    # Then
    assert e.value.path == path


def should_name_bad_fields_of_the_new_reference() -> None:
    # Given
    data = _commit_data()
    request = data["request"]
    assert isinstance(request, dict)
    reference = {**request["newReference"], "numberOfRows": -1}
    data["request"] = {**request, "newReference": reference}
    # When
    with pytest.raises(MessageError) as e:
        CompactionJobCommitRequest.from_dict(data)
    # Then
    assert e.value.path == "$.request.newReference.numberOfRows"


def should_group_commit_requests_by_table_in_order() -> None:
    # Given
    a1 = JOB.commit_request(task_id="t1", job_run_id="r1", rows_written=1)
    b1 = CompactionJobCommitRequest(table_id="other", request=a1.request)
    a2 = JOB.commit_request(task_id="t2", job_run_id="r2", rows_written=2)
    # When
    grouped = commit_requests_by_table([a1, b1, a2])
    # Then
    assert grouped == {"t": [a1.request, a2.request], "other": [a1.request]}
