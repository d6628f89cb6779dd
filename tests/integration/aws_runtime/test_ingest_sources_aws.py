"""Ingest sources outside the allowed buckets are refused by the ingest port itself, before any read
(docs/reliability.md row E): an ingest job on the AWS runtime naming the config bucket, another table's
data files, a bucket ``sleeper.ingest.source.bucket`` does not list, or a local path is rejected in the ingest job
tracker with the path and what is allowed, and the table is unchanged; a job naming a listed bucket or the data bucket's
staging area runs."""

from __future__ import annotations

import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.resources import create_bucket
from sleeper.core.operations import INGEST_JOB_Q
from sleeper.core.properties.instance_ingest import INGEST_SOURCE_BUCKET
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest.sources import IngestSources
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _rows(start: int, count: int) -> pa.Table:
    keys = list(range(start, start + count))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})


def _write(instance: AwsInstance, path: str, rows: pa.Table) -> str:
    pq.write_table(rows, path, filesystem=instance.filesystem)
    return path


def _ingest(instance: AwsInstance, table_name: str, files: list[str]) -> tuple[str, JobOutcome]:
    job_id = str(uuid.uuid4())
    instance.queue(INGEST_JOB_Q).send(json.dumps({"id": job_id, "tableName": table_name, "files": files}))
    (outcome,) = [o.outcome for o in run_task(instance, wait_seconds=0).outcomes]
    return job_id, outcome


def should_reject_jobs_reading_outside_the_allowed_sources_before_any_read(
    instance: AwsInstance, reliability: Reliability
) -> None:
    # Given two tables, the second holding rows, a bucket the properties list and one they do not
    target = instance.create_table(
        f"src-{uuid.uuid4().hex[:8]}", SCHEMA, properties={"sleeper.table.ingest.job.files.commit.async": "false"}
    )
    other = instance.create_table(f"src-{uuid.uuid4().hex[:8]}", SCHEMA)
    other.ingest(_rows(0, 50), direct=True)
    listed, unlisted = (f"ingest-src-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for bucket in (listed, unlisted):
        create_bucket(instance.clients.s3, bucket, REGION)
    instance.properties.set(INGEST_SOURCE_BUCKET, listed)
    instance.__dict__.pop("ingest_sources", None)  # the properties were read when the instance was built
    assert instance.ingest_sources == IngestSources.for_aws_instance(instance.data_bucket, [listed])
    other_file = other.file_references()[0].filename
    refused = {
        "unlisted bucket": _write(instance, f"{unlisted}/rows.parquet", _rows(100, 5)),
        "config bucket": f"{os.environ['CONFIG_BUCKET']}/instance.properties",
        "another table's data file": other_file,
        "the whole data bucket": instance.data_bucket,
        "a local path": "/etc/passwd",
    }
    # When a job names each of them
    outcomes = {what: _ingest(instance, target.name, [path]) for what, path in refused.items()}
    # Then each is rejected, with a reason naming the path (not a read or schema error), and the table is unchanged
    for what, (job_id, outcome) in outcomes.items():
        assert outcome is JobOutcome.REJECTED, what
        status = instance.ingest_job_tracker.job(job_id)
        assert status is not None and status.status is IngestJobStatusType.REJECTED, what
        (reason,) = [r for run in status.runs for r in run.failure_reasons]
        assert reason.startswith(refused[what].removeprefix("s3a://")) or refused[what] in reason, (what, reason)
        assert "ingest may" in reason or "local paths cannot be ingested" in reason, (what, reason)
    assert target.file_references() == []
    # When jobs name a file in the listed bucket and one staged in the data bucket
    staged = f"{instance.data_bucket}/for_ingest/{uuid.uuid4()}.parquet"
    accepted = [
        _ingest(instance, target.name, [_write(instance, f"{listed}/in/rows.parquet", _rows(0, 10))]),
        _ingest(instance, target.name, [_write(instance, staged, _rows(10, 5))]),
    ]
    # Then both run
    assert [outcome for _, outcome in accepted] == [JobOutcome.FINISHED, JobOutcome.FINISHED]
    assert sum(r.number_of_rows for r in instance.table(target.name).file_references()) == 15
    reliability.record(
        "E",
        case="ingest source outside the allowed buckets (AWS runtime)",
        refused=len(refused),
        refused_typed=len(refused),
        accepted=len(accepted),
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
