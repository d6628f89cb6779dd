"""The front door (``sleeper.connect`` / ``sleeper.create_instance``): the instance's verbs, and its reports as Arrow
tables holding the rows ``sleeper report`` prints."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.instance import Instance, LocalOnlyError
from sleeper.core.exceptions import SleeperError
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.task import TaskStarted
from sleeper.query.results_reader import queued_query

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


@pytest.fixture
def instance(tmp_path: Path) -> Instance:
    created = sleeper.create_instance(tmp_path / "instance")
    created.create_table("t", SCHEMA, split_points=[50])
    return created


def _files(tmp_path: Path, start: int, n: int) -> str:
    path = tmp_path / f"in-{start}.parquet"
    keys = pa.array(range(start, start + n), pa.int64())
    pq.write_table(pa.table({"key": keys, "value": [f"v{i}" for i in range(start, start + n)]}), path)
    return str(path)


def should_report_jobs_tasks_queues_and_queries_as_arrow_tables(instance: Instance, tmp_path: Path) -> None:
    # Given two ingest jobs run through the front door, a compaction of everything and a query through the queue
    first = instance.ingest_files("t", [_files(tmp_path, 0, 100)], job_id="job-1")
    second = instance.ingest_files("t", [_files(tmp_path, 100, 20)], job_id="job-2", via_queue=True)
    instance.run(until_idle=True, poll_seconds=0.01)  # the ingest task takes the job from its queue
    instance.compact_now("t", compact_all=True)
    query = queued_query("t", SCHEMA, [Region.exact(SCHEMA, [7])], None, results="s3")
    rows = instance.run_queued_query(query, SCHEMA)
    instance.ingest_task_tracker.record(TaskStarted(task_id="task-1", update_time=datetime.now(tz=UTC)))

    # When the reports are read
    ingest_jobs = instance.ingest_jobs_report("t")
    compaction_jobs = instance.compaction_jobs_report("t")
    tasks = instance.tasks_report("ingest", unfinished=True)
    queues = instance.queues_report()
    queries = instance.queries_report(query.query_id)

    # Then each is an Arrow table of what happened
    assert (first.status, first.rows_written, second.status) == ("FINISHED", 100, "SENT")
    assert sorted(ingest_jobs.column("jobId").to_pylist()) == ["job-1", "job-2"]
    assert compaction_jobs.num_rows >= 1
    assert tasks.column("taskId").to_pylist() == ["task-1"]
    assert sorted(instance.table("t").scan().to_arrow().column("key").to_pylist()) == list(range(120))
    assert "IngestJobQ" in queues.column("queue").to_pylist()
    assert rows is not None and rows.column("key").to_pylist() == [7]
    assert queries.num_rows >= 1 and set(queries.column("queryId").to_pylist()) == {query.query_id}
    # And the rejected jobs of every table are the report without a table (none here)
    assert instance.ingest_jobs_report().num_rows == 0


def should_refuse_an_unknown_task_kind_naming_the_kinds(instance: Instance) -> None:
    # Given an instance
    # When the tasks of a kind that does not exist are asked for
    # Then the error names the kinds there are
    with pytest.raises(SleeperError, match="task kind must be compaction or ingest, got 'splitting'"):
        instance.tasks_report("splitting")


def should_say_where_it_is_and_refuse_creating_an_instance_on_aws(instance: Instance, tmp_path: Path) -> None:
    # Given a local instance opened through the front door
    # Then it says where it is, and that nothing deploys it
    assert instance.location == str((tmp_path / "instance").resolve())
    assert instance.location_fields == {"directory": instance.location}
    assert instance.deployed is False
    assert sleeper.connect(tmp_path / "instance").instance_id == instance.instance_id
    # And creating an instance named aws:ID is refused: those are deployed, not created here
    with pytest.raises(LocalOnlyError, match="works only on a local instance directory"):
        sleeper.create_instance("aws:my-instance")
