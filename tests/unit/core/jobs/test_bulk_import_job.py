from __future__ import annotations

import json

import pytest

from sleeper.core.jobs.bulk_import import BulkImportJob, check_bulk_import_job_id
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    InvalidJobIdError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnsafePathError,
)
from sleeper.core.jobs.ingest import IngestJob


def should_read_full_job() -> None:
    # Given
    text = (
        '{"id":"my-job","tableName":"t","files":["b/a.parquet"],"className":"com.example.MyClass",'
        '"platformSpec":{"sleeper.table.bulk.import.emr.executor.initial.instances":2},"sparkConf":{"key":"value"}}'
    )
    # When
    job = BulkImportJob.from_json(text)
    # Then
    assert job == BulkImportJob(
        id="my-job",
        table_name="t",
        files=("b/a.parquet",),
        class_name="com.example.MyClass",
        platform_spec={"sleeper.table.bulk.import.emr.executor.initial.instances": "2"},
        spark_conf={"key": "value"},
    )
    assert job.json_message == text


def should_generate_a_valid_id_when_absent() -> None:
    # When
    job = BulkImportJob.from_json('{"tableName":"t","files":["b/k"]}', id_supplier=lambda: "generated-0001")
    # Then
    assert job.id == "generated-0001"
    assert job.to_ingest_job() == IngestJob(id="generated-0001", table_name="t", files=("b/k",))


@pytest.mark.parametrize("job_id", ["MyJob", "my_job", "job.1", "x" * 64])
def should_reject_ids_sleeper_cannot_use_for_cluster_names(job_id: str) -> None:
    # Given
    text = json.dumps({"id": job_id, "tableName": "t", "files": ["b/k"]})
    # When
    with pytest.raises(InvalidJobIdError) as e:
        BulkImportJob.from_json(text)
    # Then
    assert e.value.path == "$.id"
    assert e.value.job_id == job_id


@pytest.mark.parametrize("job_id", ["job id", "../escape", "a|b"])
def should_track_the_rejection_of_an_unsafe_id_under_a_new_id(job_id: str) -> None:
    # Given an id that may not key tracker records or name files
    text = json.dumps({"id": job_id, "tableName": "t", "files": ["b/k"]})
    # When
    with pytest.raises(InvalidJobIdError) as e:
        BulkImportJob.from_json(text, id_supplier=lambda: "new-id")
    # Then the bulk import rule names the problem, and the rejection is tracked under the new id with the message
    assert e.value.path == "$.id"
    assert "lowercase alphanumerics and dashes" in e.value.reason
    assert (e.value.job_id, e.value.json_message) == ("new-id", text)


def should_accept_the_longest_allowed_id() -> None:
    # When / Then
    assert check_bulk_import_job_id("a-" * 31 + "b") == "a-" * 31 + "b"


def should_name_every_broken_rule_of_an_id() -> None:
    # When
    with pytest.raises(InvalidJobIdError) as e:
        check_bulk_import_job_id("X" * 64)
    # Then
    assert "lowercase" in e.value.reason and "63" in e.value.reason


@pytest.mark.parametrize(
    ("text", "error", "path"),
    [
        ('{"id":"j","tableName":"t","files":[]}', InvalidFieldError, "$.files"),
        ('{"id":"j","tableName":"t"}', MissingFieldError, "$.files"),
        ('{"id":"j","files":["b/k"]}', MissingFieldError, "$.tableName"),
        ('{"id":"j","tableName":"t","files":["b/k"],"sparkConf":[]}', InvalidFieldError, "$.sparkConf"),
        ('{"id":"j","tableName":"t","files":["b/k"],"platformSpec":{"a":{}}}', InvalidFieldError, "$.platformSpec.a"),
        ('{"id":"j","tableName":"t","files":["b/k"],"className":7}', InvalidFieldError, "$.className"),
        ('{"id":"j","tableName":"t","files":["b/k"],"platform":"EMR"}', UnknownFieldError, "$.platform"),
        ('{"id":"j","tableName":"t","files":["b/../k"]}', UnsafePathError, "$.files[0]"),
    ],
)
def should_reject_invalid_messages_naming_the_path(text: str, error: type[MessageError], path: str) -> None:
    # When
    with pytest.raises(error) as e:
        BulkImportJob.from_json(text)
    # Then
    assert e.value.path == path
    assert e.value.job_id == "j"


def should_round_trip_through_json_in_sleeper_field_order() -> None:
    # Given
    job = BulkImportJob(
        id="j", table_id="abc", files=("b/k",), class_name="C", platform_spec={"p": "1"}, spark_conf={"s": "2"}
    )
    # When
    text = job.to_json()
    # Then
    assert BulkImportJob.from_json(text) == job
    assert text == (
        '{"id":"j","tableId":"abc","files":["b/k"],"className":"C","platformSpec":{"p":"1"},"sparkConf":{"s":"2"}}'
    )


def should_check_rules_when_built_directly() -> None:
    # When / Then
    with pytest.raises(InvalidJobIdError):
        BulkImportJob(id="Bad", table_name="t", files=("b/k",))
    with pytest.raises(InvalidFieldError):
        BulkImportJob(id="ok", table_name="t", files=())
