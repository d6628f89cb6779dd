from __future__ import annotations

import json

import pytest

from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnsafePathError,
)
from sleeper.core.jobs.ingest import IngestJob


def fixed_id() -> str:
    return "generated-id"


def should_read_job_by_table_name() -> None:
    # Given
    text = '{"id":"test-job-id","tableName":"test-table","files":["file1.parquet","file2.parquet"]}'
    # When
    job = IngestJob.from_json(text)
    # Then
    assert job == IngestJob(id="test-job-id", table_name="test-table", files=("file1.parquet", "file2.parquet"))
    assert job.json_message == text


def should_generate_id_when_absent_or_blank() -> None:
    # Given
    absent = '{"tableName":"test-table","files":["f.parquet"]}'
    blank = '{"id":"  ","tableName":"test-table","files":["f.parquet"]}'
    # When
    jobs = [IngestJob.from_json(t, id_supplier=fixed_id) for t in (absent, blank)]
    # Then
    assert [j.id for j in jobs] == ["generated-id", "generated-id"]


def should_prefer_table_id_over_table_name() -> None:
    # Given
    job = IngestJob.from_json('{"id":"j","tableName":"by-name","tableId":"abc123","files":["b/f.parquet"]}')
    tables = {"abc123": "table found by id"}
    names = {"by-name": "table found by name"}
    # When
    found = job.resolve_table(by_id=tables.get, by_name=names.get)
    # Then
    assert found == "table found by id"


def should_resolve_by_name_when_no_id_given() -> None:
    # Given
    job = IngestJob.from_json('{"id":"j","tableName":"by-name","files":["b/f.parquet"]}')
    # When
    found = job.resolve_table(by_id=lambda _: "wrong", by_name=lambda n: f"table {n}")
    # Then
    assert found == "table by-name"


def should_write_fields_in_sleeper_order_omitting_nulls() -> None:
    # Given
    job = IngestJob(id="j", table_id="abc", files=("b/k",)).with_table(table_id="abc", table_name="t")
    # When
    text = job.to_json()
    # Then
    assert text == '{"id":"j","tableName":"t","tableId":"abc","files":["b/k"]}'
    assert list(json.loads(IngestJob(id="j", table_name="t", files=("b/k",)).to_json())) == ["id", "tableName", "files"]


@pytest.mark.parametrize(
    ("text", "error", "path"),
    [
        ("{", MalformedJsonError, "$"),
        ("[]", InvalidFieldError, "$"),
        ('{"id":"j","tableName":"t"}', MissingFieldError, "$.files"),
        ('{"id":"j","tableName":"t","files":null}', MissingFieldError, "$.files"),
        ('{"id":"j","tableName":"t","files":[]}', InvalidFieldError, "$.files"),
        ('{"id":"j","tableName":"t","files":"b/k"}', InvalidFieldError, "$.files"),
        ('{"id":"j","tableName":"t","files":["b/k",null]}', MissingFieldError, "$.files[1]"),
        ('{"id":"j","tableName":"t","files":[1]}', InvalidFieldError, "$.files[0]"),
        ('{"id":"j","files":["b/k"]}', MissingFieldError, "$.tableName"),
        ('{"id":"j","tableName":"","files":["b/k"]}', InvalidFieldError, "$.tableName"),
        ('{"id":"j","tableId":7,"files":["b/k"]}', InvalidFieldError, "$.tableId"),
        ('{"id":5,"tableName":"t","files":["b/k"]}', InvalidFieldError, "$.id"),
        ('{"id":"j","tableName":"t","files":["b/k"],"table":"x"}', UnknownFieldError, "$.table"),
        ('{"id":"j","tableName":"t","files":["b/../other/k"]}', UnsafePathError, "$.files[0]"),
        ('{"id":"j","tableName":"t","files":["b/ok","b/%2e%2e/k"]}', UnsafePathError, "$.files[1]"),
        ('{"id":"j","tableName":"t","files":["/etc/passwd"]}', UnsafePathError, "$.files[0]"),
        ('{"id":"j","tableName":"t","files":["b\\\\k"]}', UnsafePathError, "$.files[0]"),
        ('{"id":"j","tableName":"t","files":["b/k\\u0000"]}', UnsafePathError, "$.files[0]"),
    ],
)
def should_reject_invalid_messages_naming_the_path(text: str, error: type[MessageError], path: str) -> None:
    # When
    with pytest.raises(error) as e:
        IngestJob.from_json(text, id_supplier=fixed_id)
    # Then
    assert e.value.path == path
    assert e.value.json_message == text


def should_report_the_given_id_or_a_generated_one_with_a_rejection() -> None:
    # Given one message with an id and one without, both without files
    with_id = '{"id":"my-job","tableName":"t"}'
    without_id = '{"tableName":"t"}'
    # When
    errors = []
    for text in (with_id, without_id, "{"):
        with pytest.raises(MessageError) as e:
            IngestJob.from_json(text, id_supplier=fixed_id)
        errors.append(e.value)
    # Then
    assert [e.job_id for e in errors] == ["my-job", "generated-id", "generated-id"]


def should_call_the_id_supplier_at_most_once() -> None:
    # Given
    ids = iter(["first", "second"])
    # When
    job = IngestJob.from_json('{"tableName":"t","files":["b/k"]}', id_supplier=ids.__next__)
    # Then
    assert job.id == "first"


def should_accept_local_paths_and_restrict_buckets_when_asked() -> None:
    # Given
    local = '{"id":"j","tableName":"t","files":["/data/in/f.parquet"]}'
    other_bucket = '{"id":"j","tableName":"t","files":["s3a://other/f.parquet"]}'
    # When / Then
    assert IngestJob.from_json(local, allow_local=True).files == ("/data/in/f.parquet",)
    with pytest.raises(UnsafePathError, match="not allowed"):
        IngestJob.from_json(other_bucket, allowed_buckets={"ingest"})


def should_round_trip_through_json() -> None:
    # Given
    job = IngestJob(id="j", table_name="t", table_id="abc", files=("s3a://b/k.parquet", "b/dir/"))
    # When
    found = IngestJob.from_json(job.to_json())
    # Then
    assert found == job


def should_need_a_table_when_built_directly() -> None:
    # When / Then
    with pytest.raises(MissingFieldError):
        IngestJob(id="j", files=("b/k",))
