"""Bulk import jobs rejected before Spark starts: the reasons are recorded in the ingest job tracker."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_import import run_bulk_import, run_bulk_import_message, validate_job
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table("t", SCHEMA)
    return instance


def _write(path: Path, table: pa.Table) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return str(path)


def _good(path: Path, rows: int = 10) -> str:
    return _write(path, pa.table({"key": [f"k{i}" for i in range(rows)], "value": pa.array(range(rows), pa.int64())}))


def _rejected_reasons(instance: LocalInstance, job_id: str) -> tuple[str, ...]:
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None
    assert status.status is IngestJobStatusType.REJECTED
    validated = status.latest_run.updates[0]
    return validated.reasons  # type: ignore[union-attr]


def should_expand_directories_to_their_parquet_files_and_count_the_rows(
    instance: LocalInstance, tmp_path: Path
) -> None:
    # Given
    single = _good(tmp_path / "in" / "single.parquet", rows=5)
    _good(tmp_path / "in" / "dir" / "a.parquet", rows=7)
    _good(tmp_path / "in" / "dir" / "nested" / "b.parquet", rows=11)
    (tmp_path / "in" / "dir" / "a.parquet.crc").write_bytes(b"not parquet")
    job = BulkImportJob(id="job-1", table_name="t", files=(single, f"file://{tmp_path / 'in' / 'dir'}/"))

    # When
    validation = validate_job(instance, job)

    # Then
    assert validation.accepted
    assert sorted(Path(f.uri).name for f in validation.files) == ["a.parquet", "b.parquet", "single.parquet"]
    assert validation.total_rows == 23


def should_reject_a_job_for_an_unknown_table_without_starting_spark(instance: LocalInstance, tmp_path: Path) -> None:
    # Given
    job = BulkImportJob(id="job-1", table_name="missing", files=(_good(tmp_path / "in.parquet"),))

    # When
    outcome = run_bulk_import(instance, job)

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert _rejected_reasons(instance, "job-1") == ("Table not found with name 'missing'",)


def should_reject_missing_paths_and_directories_without_parquet_files(instance: LocalInstance, tmp_path: Path) -> None:
    # Given
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no parquet here")
    job = BulkImportJob(id="job-2", table_name="t", files=(str(tmp_path / "nothing.parquet"), str(tmp_path / "empty")))

    # When
    outcome = run_bulk_import(instance, job)

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    reasons = _rejected_reasons(instance, "job-2")
    assert reasons == (f"No files found at {tmp_path / 'nothing.parquet'}", f"No files found at {tmp_path / 'empty'}")


def should_reject_files_whose_columns_do_not_match_the_schema(instance: LocalInstance, tmp_path: Path) -> None:
    # Given
    wrong_type = _write(tmp_path / "wrong.parquet", pa.table({"key": ["a"], "value": ["not a number"]}))
    missing = _write(tmp_path / "missing.parquet", pa.table({"key": ["a"]}))
    job = BulkImportJob(id="job-3", table_name="t", files=(wrong_type, missing))

    # When
    outcome = run_bulk_import(instance, job)

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert _rejected_reasons(instance, "job-3") == (
        f"File {wrong_type} column 'value' has type string, which cannot be read as int64",
        f"File {missing} has no column 'value' of the table",
    )
    assert instance.table("t").file_references() == []


def should_reject_a_message_with_an_invalid_job_id_keeping_the_message(instance: LocalInstance) -> None:
    # Given
    body = '{"id": "Not_Valid", "tableName": "t", "files": ["bucket/file.parquet"]}'

    # When
    outcome = run_bulk_import_message(instance, body)

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    status = instance.ingest_job_tracker.job(outcome.job_id)
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert "lowercase alphanumerics and dashes" in outcome.reasons[0]
    assert status.latest_run.updates[0].json_message == body  # type: ignore[union-attr]


def should_reject_a_job_id_reused_for_other_files_without_starting_spark(
    instance: LocalInstance, tmp_path: Path
) -> None:
    # Given rows added from one file under a job id
    first = _good(tmp_path / "a.parquet", rows=5)
    table = instance.table("t")
    table.ingest(first, job_id="same")
    job = BulkImportJob(id="same", table_name="t", files=(_good(tmp_path / "b7.parquet", rows=7),))

    # When a bulk import job with the same id names another file
    outcome = run_bulk_import(instance, job)

    # Then it is rejected before Spark starts, naming the job id, and the table keeps the first rows only
    assert outcome.outcome is JobOutcome.REJECTED
    (reason,) = _rejected_reasons(instance, "same")
    assert "'same'" in reason and "new job id" in reason
    assert sum(r.number_of_rows for r in table.file_references()) == 5
    # And with the same file it is a retry that adds nothing (no Spark either)
    again = run_bulk_import(instance, BulkImportJob(id="same", table_name="t", files=(first,)))
    assert again.outcome is JobOutcome.FINISHED
    assert again.result is not None and again.result.already_added


def should_reject_a_job_naming_an_unknown_algorithm_without_starting_spark(
    instance: LocalInstance, tmp_path: Path
) -> None:
    # Given a job naming a Java driver class this port does not run
    job = BulkImportJob(
        id="job-x", table_name="t", files=(_good(tmp_path / "in.parquet"),), class_name="com.example.MyDriver"
    )

    # When (no Spark session is given: one would be started if the job were accepted)
    outcome = run_bulk_import(instance, job)

    # Then it is rejected and tracked, naming the class and what is accepted, and nothing is written
    assert outcome.outcome is JobOutcome.REJECTED
    (reason,) = _rejected_reasons(instance, "job-x")
    assert reason.startswith("className 'com.example.MyDriver' is not a bulk import algorithm this port runs")
    assert "local-sort" in reason and "BulkImportJobDataframeDriver" in reason
    assert instance.table("t").file_references() == []


def should_reject_a_file_named_twice_without_starting_spark(instance: LocalInstance, tmp_path: Path) -> None:
    # Given a directory and a file inside it, and a file given twice under two spellings
    inside = _good(tmp_path / "dir" / "a.parquet")
    single = _good(tmp_path / "single.parquet")
    jobs = {
        "job-dir": (f"{tmp_path / 'dir'}/", inside),
        "job-twice": (single, f"file://{single}"),
    }

    for job_id, files in jobs.items():
        # When the validation runs and the job is run
        validation = validate_job(instance, BulkImportJob(id=job_id, table_name="t", files=files))
        outcome = run_bulk_import(instance, BulkImportJob(id=job_id, table_name="t", files=files))

        # Then the job is rejected, naming the file and what to do, and nothing is added
        assert not validation.accepted
        (reason,) = validation.reasons
        assert "is named more than once" in reason and "name each file or directory once" in reason, job_id
        assert outcome.outcome is JobOutcome.REJECTED
        assert _rejected_reasons(instance, job_id) == (reason,)
    assert instance.table("t").file_references() == []


def should_reject_a_job_for_an_upsert_table_without_a_sort_key(instance: LocalInstance, tmp_path: Path) -> None:
    # Given a table that keeps the last committed row of each row key (no sort key: commit order decides)
    instance.create_table("upserted", SCHEMA, properties={"sleeper.table.upsert": "true"})
    job = BulkImportJob(id="job-1", table_name="upserted", files=(_good(tmp_path / "in.parquet"),))

    # When the job is validated
    validation = validate_job(instance, job)

    # Then it is rejected, naming the way to write to such a table, rather than adding rows that keep duplicates
    assert not validation.accepted
    assert any("sleeper.table.upsert" in r and "Table.upsert" in r for r in validation.reasons)
