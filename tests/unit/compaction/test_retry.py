"""A table's dead-lettered compaction jobs are sent back to the job queue; other messages stay dead-lettered."""

from __future__ import annotations

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.compaction.retry import retry_dead_lettered_jobs
from sleeper.core.jobs.compaction import CompactionJob


def _job(table_id: str, job_id: str) -> str:
    return CompactionJob(
        table_id=table_id, job_id=job_id, input_files=("a",), output_file=f"{job_id}.parquet", partition_id="root"
    ).to_json()


def should_send_the_tables_dead_lettered_jobs_again_and_leave_the_rest() -> None:
    # Given a dead-letter queue holding jobs of two tables and an unreadable message
    queues = InMemoryQueues()
    job_queue = queues.queue("CompactionJobQ")
    dead_letters = queues.queue("CompactionJobDLQ")
    for body in (_job("t1", "j1"), _job("t2", "j2"), "not json", _job("t1", "j3")):
        dead_letters.send(body)

    # When the dead letters of table t1 are sent again
    retried = retry_dead_lettered_jobs(job_queue, dead_letters, "t1")

    # Then its two jobs are on the job queue, and the other messages are still dead-lettered and visible
    assert retried == ["j1", "j3"]
    assert sorted(m.body for m in job_queue.receive(10)) == sorted([_job("t1", "j1"), _job("t1", "j3")])
    assert sorted(m.body for m in dead_letters.receive(10)) == sorted([_job("t2", "j2"), "not json"])


def should_do_nothing_without_dead_letters() -> None:
    queues = InMemoryQueues()
    assert retry_dead_lettered_jobs(queues.queue("CompactionJobQ"), queues.queue("CompactionJobDLQ"), "t1") == []
