"""On the AWS runtime (moto), a compaction whose iterator cannot load fails on each receive, tracked with the cause,
and is then dead-lettered by the compaction job queue with its input files still assigned to it, as in Sleeper; sent
again from the dead-letter queue once the iterator's code is back, it compacts the files."""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.compaction.entry import create_jobs_for_table
from sleeper.compaction.retry import retry_dead_lettered_jobs
from sleeper.compaction.task import TaskSettings
from sleeper.core.operations import COMPACTION_JOB_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.emulator.resources import provision_emulated_instance
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers.compaction import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
QUICK_TASK = TaskSettings(
    wait_seconds=0,
    max_idle_seconds=0,
    delay_before_retry_seconds=0,
    failed_visibility_seconds=0,
    max_consecutive_failures=10,
)
ITERATOR_CODE = """
class PassThrough:
    def init(self, config, schema):
        pass

    def required_value_fields(self):
        return []

    def apply(self, batches):
        return batches
"""


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    config = provision_emulated_instance(aws_settings(), new_instance_id())
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


def should_retry_then_dead_letter_a_job_whose_iterator_cannot_load_and_run_it_again_once_mended(
    instance: AwsInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table of three files whose iterator is importable, and a compaction job over them created
    module = f"passthrough_{uuid.uuid4().hex[:8]}"
    code = tmp_path / f"{module}.py"
    code.write_text(ITERATOR_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    properties = {
        "sleeper.table.iterator.class.name": f"{module}.PassThrough",
        "sleeper.table.compaction.job.id.assignment.commit.async": "false",
        "sleeper.table.compaction.job.commit.async": "false",
    }
    table = instance.create_table(f"it-{uuid.uuid4().hex[:8]}", SCHEMA, properties=properties)
    for start in (0, 10, 20):
        keys = pa.array(range(start, start + 10), pa.int64())
        table.ingest(pa.table({"key": keys, "value": keys}), direct=True)
    assert create_jobs_for_table(instance, table, compact_all=True).jobs_created == 1
    (job_id,) = {r.job_id for r in table.file_references()}
    assert job_id is not None
    # And then the iterator's code is gone
    code.unlink()
    sys.modules.pop(module, None)
    importlib.invalidate_caches()

    # When the compaction task runs until idle
    summary = run_task(instance, settings=QUICK_TASK)

    # Then the job failed on each of its 3 receives, tracked with the cause, and the queue dead-lettered it with its
    # input files still assigned to it
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FAILED] * 3
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None
    assert [r.status for r in status.runs] == [CompactionJobStatusType.FAILED] * 3
    assert all(f"cannot import module {module!r}" in r.failure_reasons[0] for r in status.runs)
    dead_letters = instance.dead_letter_queue(COMPACTION_JOB_Q)
    table.state_store.refresh()
    assert {r.job_id for r in table.file_references()} == {job_id}

    # When the code is back and the table's dead-lettered jobs are sent again
    code.write_text(ITERATOR_CODE)
    importlib.invalidate_caches()
    assert retry_dead_lettered_jobs(instance.queue(COMPACTION_JOB_Q), dead_letters, table.table_id) == [job_id]
    summary = run_task(instance, settings=QUICK_TASK)

    # Then it compacts the files into one
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    table.state_store.refresh()
    (reference,) = table.file_references()
    assert reference.job_id is None and reference.number_of_rows == 30
    assert dead_letters.receive(1) == []
