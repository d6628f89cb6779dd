"""Tracked files: Sleeper's key, job id and time precision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.ingest.batcher.model import NOT_ASSIGNED_TO_JOB, TrackedFile

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def should_key_a_file_by_table_and_path_and_split_the_key_back() -> None:
    # Given
    file = TrackedFile(file="bucket/dir/a.parquet", file_size_bytes=1, table_id="abc", received_time=T0)

    # When
    key = file.key

    # Then
    assert key == "abc/bucket/dir/a.parquet"
    assert TrackedFile.split_key(key) == ("abc", "bucket/dir/a.parquet")
    assert TrackedFile.split_key("abc//local/dir/a.parquet") == ("abc", "/local/dir/a.parquet")


def should_be_pending_until_assigned_to_a_job() -> None:
    # Given
    file = TrackedFile(file="bucket/a", file_size_bytes=1, table_id="t", received_time=T0, job_id=NOT_ASSIGNED_TO_JOB)

    # When
    assigned = file.assigned_to("job-1")

    # Then
    assert (file.is_assigned_to_job, file.job_id, file.job_id_or_unassigned) == (False, None, NOT_ASSIGNED_TO_JOB)
    assert (assigned.is_assigned_to_job, assigned.job_id_or_unassigned) == (True, "job-1")


def should_keep_milliseconds_of_the_received_time_and_seconds_of_the_expiry() -> None:
    # Given
    received = T0 + timedelta(milliseconds=1234, microseconds=567)

    # When
    file = TrackedFile(file="bucket/a", file_size_bytes=1, table_id="t", received_time=received)

    # Then
    assert file.received_time == T0 + timedelta(milliseconds=1234)
    assert file.received_millis == int(T0.timestamp()) * 1000 + 1234
    assert file.expiry_time == T0 + timedelta(minutes=10080, seconds=1)
    assert file.expiry_seconds == int(T0.timestamp()) + 10080 * 60 + 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"file": ""},
        {"table_id": ""},
        {"table_id": "a/b"},
        {"file_size_bytes": -1},
        {"received_time": datetime(2024, 1, 1)},  # noqa: DTZ001 - a naive time is what is being rejected
    ],
)
def should_reject_an_invalid_file(kwargs: dict[str, object]) -> None:
    # Given
    values: dict[str, object] = {"file": "bucket/a", "file_size_bytes": 1, "table_id": "t", "received_time": T0}
    values.update(kwargs)

    # When / Then
    with pytest.raises(ValueError):
        TrackedFile(**values)  # type: ignore[arg-type]


def _at(modified: datetime | None, *, size: int = 5, table: str = "t", path: str = "bucket/a") -> TrackedFile:
    return TrackedFile(file=path, file_size_bytes=size, table_id=table, received_time=T0, file_modified_time=modified)


def should_tell_a_file_unchanged_by_table_path_size_and_modification_time() -> None:
    # Given
    batched = _at(T0 - timedelta(hours=1)).assigned_to("job-1")

    # When / Then the same file is unchanged, even received later; any difference, or an unknown time, is a change
    assert _at(T0 - timedelta(hours=1, microseconds=-999)).is_unchanged_since(batched)  # kept to the millisecond
    assert not _at(T0).is_unchanged_since(batched)
    assert not _at(T0 - timedelta(hours=1), size=6).is_unchanged_since(batched)
    assert not _at(T0 - timedelta(hours=1), table="u").is_unchanged_since(batched)
    assert not _at(T0 - timedelta(hours=1), path="bucket/b").is_unchanged_since(batched)
    assert not _at(None).is_unchanged_since(_at(None))
    assert not _at(T0).is_unchanged_since(_at(None))


def should_refuse_a_naive_modification_time() -> None:
    # Given / When / Then
    with pytest.raises(ValueError, match="file_modified_time"):
        _at(datetime(2024, 5, 1, 12, 0, 0))  # noqa: DTZ001
