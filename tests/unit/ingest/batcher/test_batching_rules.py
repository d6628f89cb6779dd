"""The batcher's rules: table settings with size suffixes, when to batch, and first-fit batches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.ingest.batcher.job_creator import BatchingRules, create_batches, ingest_queue_name, is_batching_due
from sleeper.ingest.batcher.model import TrackedFile

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _file(name: str, size: int, *, age_seconds: float = 0) -> TrackedFile:
    return TrackedFile(
        file=f"bucket/{name}", file_size_bytes=size, table_id="t1", received_time=T0 - timedelta(seconds=age_seconds)
    )


def _rules(**overrides: object) -> BatchingRules:
    values: dict[str, object] = {
        "min_files": 1,
        "min_bytes": 0,
        "max_files": 100,
        "max_bytes": 1000,
        "max_age": timedelta(seconds=300),
    }
    values.update(overrides)
    return BatchingRules(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1234", 1234),
        ("2K", 2 * 1024),
        ("3M", 3 * 1024**2),
        ("1G", 1024**3),
        ("5T", 5 * 1024**4),
        ("7P", 7 * 1024**5),
    ],
)
def should_read_job_sizes_with_binary_suffixes(text: str, expected: int) -> None:
    # Given
    properties = TableProperties(
        InstanceProperties({"sleeper.id": "x"}),
        {"sleeper.table.ingest.batcher.job.min.size": text, "sleeper.table.ingest.batcher.job.max.size": text},
    )

    # When
    rules = BatchingRules.from_properties(properties)

    # Then
    assert rules.min_bytes == expected
    assert rules.max_bytes == expected


def should_read_sleepers_defaults_and_instance_defaults() -> None:
    # Given an instance default for the minimum size and nothing set on the table
    instance = InstanceProperties({"sleeper.id": "x", "sleeper.default.table.ingest.batcher.job.min.size": "64M"})

    # When
    rules = BatchingRules.from_properties(TableProperties(instance, {}))

    # Then
    assert rules == BatchingRules(
        min_files=1,
        min_bytes=64 * 1024**2,
        max_files=100,
        max_bytes=5 * 1024**3,
        max_age=timedelta(seconds=300),
        ingest_queue="bulk_import_emr_serverless",
    )


def should_reject_a_size_with_an_unknown_suffix() -> None:
    # Given
    properties = TableProperties(
        InstanceProperties({"sleeper.id": "x"}), {"sleeper.table.ingest.batcher.job.min.size": "1GB"}
    )

    # When / Then
    with pytest.raises(PropertyError, match="job.min.size"):
        BatchingRules.from_properties(properties)


def should_batch_when_any_file_is_older_than_the_maximum_age() -> None:
    # Given files far below the minimum count and size, one of them just past the maximum age
    rules = _rules(min_files=10, min_bytes=10_000)
    files = [_file("a", 1, age_seconds=300.001), _file("b", 1)]

    # When / Then
    assert is_batching_due(files, rules, T0)
    assert not is_batching_due(files, rules, T0 - timedelta(milliseconds=2))


def should_not_batch_a_file_exactly_at_the_maximum_age() -> None:
    # Given
    rules = _rules(min_files=10)

    # When / Then
    assert not is_batching_due([_file("a", 1, age_seconds=300)], rules, T0)


def should_batch_only_when_both_the_minimum_files_and_size_are_met() -> None:
    # Given
    rules = _rules(min_files=2, min_bytes=100)

    # When / Then
    assert is_batching_due([_file("a", 50), _file("b", 50)], rules, T0)
    assert not is_batching_due([_file("a", 100)], rules, T0)
    assert not is_batching_due([_file("a", 49), _file("b", 50)], rules, T0)
    assert not is_batching_due([], rules, T0)


def should_fill_batches_first_fit_within_the_maximum_size() -> None:
    # Given a maximum of 100 bytes per batch
    a, b, c, d = _file("a", 60), _file("b", 50), _file("c", 40), _file("d", 50)

    # When
    batches = create_batches([a, b, c, d], max_files=10, max_bytes=100)

    # Then c fits beside a; d fits beside b
    assert batches == [[a, c], [b, d]]


def should_limit_the_number_of_files_per_batch() -> None:
    # Given
    files = [_file(str(i), 1) for i in range(5)]

    # When
    batches = create_batches(files, max_files=2, max_bytes=1000)

    # Then
    assert batches == [files[0:2], files[2:4], files[4:5]]


def should_put_a_file_larger_than_the_maximum_size_alone_in_a_batch() -> None:
    # Given
    small1, huge, small2 = _file("small1", 10), _file("huge", 5000), _file("small2", 10)

    # When
    batches = create_batches([small1, huge, small2], max_files=10, max_bytes=1000)

    # Then
    assert batches == [[small1, small2], [huge]]


def should_fill_a_batch_to_exactly_the_maximum_size() -> None:
    # Given
    a, b, c = _file("a", 600), _file("b", 400), _file("c", 1)

    # When
    batches = create_batches([a, b, c], max_files=10, max_bytes=1000)

    # Then
    assert batches == [[a, b], [c]]


@pytest.mark.parametrize(
    ("mode", "queue"),
    [
        ("standard_ingest", "IngestJobQ"),
        ("STANDARD_INGEST", "IngestJobQ"),
        ("bulk_import_emr", "BulkImportNonPersistentEMRQ"),
        ("bulk_import_persistent_emr", "BulkImportPersistentEMRQ"),
        ("bulk_import_eks", "BulkImportEKSQ"),
        ("bulk_import_emr_serverless", "BulkImportEMRServerlessQ"),
    ],
)
def should_map_each_ingest_mode_to_sleepers_queue(mode: str, queue: str) -> None:
    # Given / When / Then
    assert ingest_queue_name(mode) == queue


def should_reject_an_unknown_ingest_mode() -> None:
    # Given / When / Then
    with pytest.raises(PropertyError, match="bulk_import_spark"):
        ingest_queue_name("bulk_import_spark")
