"""On the AWS runtime (moto), an ingest job naming one file twice (the same key in two spellings, or a directory and
a file inside it) is rejected by the ingest task in the tracker, naming the file; ``Table.ingest`` of local files
named twice is refused before anything is staged. Without the check the file's rows were added twice."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from sleeper.core.operations import INGEST_JOB_Q, STATE_STORE_COMMITTER_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.emulator.provision import provision_instance
from sleeper.ingest.exceptions import IngestError
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    config = provision_instance(aws_settings(), new_instance_id(), queues=(INGEST_JOB_Q, STATE_STORE_COMMITTER_Q))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        use_instance(None)
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


def _rows(start: int, count: int) -> pa.Table:
    keys = pa.array(range(start, start + count), pa.int64())
    return pa.table({"key": keys, "value": keys})


def should_reject_an_ingest_job_naming_a_file_twice(instance: AwsInstance) -> None:
    # Given a table, a staged file and a staged directory holding a file
    table = instance.create_table(
        f"dup-{uuid.uuid4().hex[:8]}", SCHEMA, properties={"sleeper.table.ingest.job.files.commit.async": "false"}
    )
    staged = f"{instance.data_bucket}/for_ingest/{uuid.uuid4()}"
    pq.write_table(_rows(0, 1000), f"{staged}/x.parquet", filesystem=instance.filesystem)
    pq.write_table(_rows(1000, 500), f"{staged}/dir/a.parquet", filesystem=instance.filesystem)
    jobs = {
        "the same key in two spellings": [f"{staged}/x.parquet", f"s3a://{staged}/x.parquet"],
        "a directory and a file inside it": [f"{staged}/dir", f"{staged}/dir/a.parquet"],
    }
    ids = {what: str(uuid.uuid4()) for what in jobs}
    for what, files in jobs.items():
        instance.queue(INGEST_JOB_Q).send(json.dumps({"id": ids[what], "tableName": table.name, "files": files}))

    # When the ingest task runs
    outcomes = [o.outcome for o in run_task(instance, wait_seconds=0).outcomes]

    # Then each job is rejected in the tracker naming the file, and the table holds no rows
    assert outcomes == [JobOutcome.REJECTED, JobOutcome.REJECTED]
    for what, job_id in ids.items():
        status = instance.ingest_job_tracker.job(job_id)
        assert status is not None and status.status is IngestJobStatusType.REJECTED, what
        (reason,) = status.latest_run.failure_reasons
        assert "is named more than once" in reason and "name each file or directory once" in reason, what
    assert instance.table(table.name).file_references() == []


def should_refuse_table_ingest_of_local_files_named_twice_before_staging(instance: AwsInstance, tmp_path: Path) -> None:
    # Given a local file and a table of the AWS instance
    table = instance.create_table(f"dup-{uuid.uuid4().hex[:8]}", SCHEMA)
    pq.write_table(_rows(0, 10), tmp_path / "x.parquet")

    # When it is ingested twice over in one call (sent as an ingest job, as on AWS)
    with pytest.raises(IngestError, match="x.parquet is named more than once"):
        table.ingest([str(tmp_path / "x.parquet"), f"{tmp_path}/./x.parquet"], wait=False)

    # Then nothing was staged or sent
    assert instance.queue(INGEST_JOB_Q).approximate_counts().visible == 0
    listed = instance.filesystem.get_file_info(
        pafs.FileSelector(f"{instance.data_bucket}/for_ingest", allow_not_found=True)
    )
    assert [f.path for f in listed if f.type == pafs.FileType.File] == []
