"""Two commit requests of one compaction job in one committer batch (two live runs of the job, docs/reliability.md B3):
the job is committed once and the tracker records one commit, not a second for the duplicate."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.compaction.commit import apply_compaction_commits
from sleeper.compaction.execution import run_compaction
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobCommitted, CompactionJobStatusType
from tests.unit.compaction.execution_fixtures import FakeInstance, new_table

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})


def should_record_one_commit_when_both_runs_of_a_job_reach_the_same_batch() -> None:
    # Given a job run twice: the second run found the first's output published and asks to commit it too
    instance = FakeInstance()
    table = instance.add(new_table(SCHEMA))
    job = table.job([table.add_file(_rows([1, 3])), table.add_file(_rows([2]))])
    first = run_compaction(job, table, filesystem=table.filesystem, run_id="run-1")
    second = run_compaction(job, table, filesystem=table.filesystem, run_id="run-2")
    assert (first.output_existed, second.output_existed) == (False, True)
    assert second.rows_written == first.rows_written == 3
    requests = [
        job.commit_request(task_id="t", job_run_id=run, rows_written=result.rows_written)
        for run, result in (("run-1", first), ("run-2", second))
    ]

    # When both requests are applied in one batch
    result = apply_compaction_commits(
        requests, instance.table_by_id, instance.compaction_job_tracker, filesystem=table.filesystem
    )

    # Then the job is committed once, and the tracker shows one commit
    assert [job_id for _, job_id in result.committed] == [job.job_id]
    assert [job_id for _, job_id in result.already_committed] == [job.job_id]
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    updates = [u for run in status.runs for u in run.updates]
    assert sum(isinstance(u, CompactionJobCommitted) for u in updates) == 1
