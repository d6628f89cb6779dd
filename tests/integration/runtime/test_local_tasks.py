"""Local tasks (sleeper.runtime.local.tasks): a process killed mid-job leaves no job in progress for ever, no message in
flight until its visibility timeout, and no temporary files, once the instance is next used; ``run --until-idle``
stops only when no queue holds a message, visible or in flight.

Processes are killed for real: a ``sleeper`` command run in a new process with a crash point armed ends with exit code
137 (``os._exit``, no cleanup, as ``kill -9``) in the middle of its work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.cli.main import run
from sleeper.core.faults import KILLED_EXIT_CODE
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.ingest import IngestJobStarted, IngestJobStatusType
from sleeper.runtime.faults_env import CRASH_AT_VARIABLE
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner
from sleeper.runtime.local.tasks import local_task, recover_dead_tasks

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
REPOSITORY = Path(sleeper.__file__).resolve().parent.parent
CLI = "from sleeper.cli.main import main; main()"


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table("t", SCHEMA, split_points=[500])
    return instance


def _parquet(path: Path, count: int) -> str:
    keys = pa.array(range(count), pa.int64())
    pq.write_table(pa.table({"key": keys, "value": keys}), path)
    return str(path)


def _python(code: str, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    environment.pop(CRASH_AT_VARIABLE, None)
    if crash_at is not None:
        environment[CRASH_AT_VARIABLE] = crash_at
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=environment,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _killed_at(point: str) -> str:
    """Python code that runs the sleeper command with a crash point armed to end the process there."""
    return f"from sleeper.core import faults; faults.arm({point!r}, faults.exit_process); {CLI}"


def _leftovers(instance: LocalInstance) -> list[str]:
    tmp = instance.directory / "tmp"
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")) if tmp.exists() else []


def _rows(instance: LocalInstance) -> int:
    table = instance.table("t")
    table.state_store.refresh()
    return sum(r.number_of_rows for r in table.file_references())


def should_fail_the_run_of_a_killed_direct_ingest_and_delete_its_spilled_files_when_a_report_is_made(
    instance: LocalInstance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a direct ingest killed while its sorted input was in its temporary directory
    source = _parquet(tmp_path / "rows.parquet", 1000)
    killed = _python(
        _killed_at("ingest.after_input_sorted"), "-i", str(instance.directory), "ingest", "t", source, "--job-id", "j1"
    )
    assert killed.returncode == KILLED_EXIT_CODE, killed.stderr
    # Then it left its run in progress and its temporary directory behind
    status = instance.ingest_job_tracker.job("j1")
    assert status is not None and status.status is IngestJobStatusType.IN_PROGRESS
    assert any("sleeper-ingest-" in name for name in _leftovers(instance))

    # When the instance's ingest jobs are reported
    capsys.readouterr()
    assert run(["-i", str(instance.directory), "report", "ingest-jobs", "t", "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)

    # Then the killed run is failed, naming the process that is gone, and its temporary files are deleted
    assert job["jobId"] == "j1" and job["status"] == "FAILED"
    (reason,) = job["reasons"]
    assert "ended without finishing" in reason and "process" in reason
    assert _leftovers(instance) == []
    # And the job can be run again under its id: it adds its rows once
    assert run(["-i", str(instance.directory), "ingest", "t", source, "--job-id", "j1"]) == 0
    assert _rows(instance) == 1000
    assert _leftovers(instance) == []


def should_deliver_the_messages_of_a_killed_runner_again_at_once_and_stop_only_when_idle(
    instance: LocalInstance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an ingest job on the queue, taken by a runner that was killed before it committed
    job = IngestJob(id="queued-1", files=(_parquet(tmp_path / "rows.parquet", 700),), table_name="t")
    instance.queue("IngestJobQ").send(job.to_json())
    killed = _python(CLI, "-i", str(instance.directory), "run", "--until-idle", crash_at="ingest.after_files_written")
    assert killed.returncode == KILLED_EXIT_CODE, killed.stderr
    counts = instance.queue("IngestJobQ").approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 1)

    # When the runner is started again until idle
    capsys.readouterr()
    assert run(["-i", str(instance.directory), "run", "--until-idle"]) == 0

    # Then the message was delivered again at once, not after its 900 s visibility timeout, and the job ran
    assert "Idle" in capsys.readouterr().out
    counts = instance.queue("IngestJobQ").approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 0)
    assert _rows(instance) == 700
    # And the killed run is failed, naming the task that is gone, beside the run that finished
    status = instance.ingest_job_tracker.job("queued-1")
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert [run.status for run in status.runs] == [IngestJobStatusType.FINISHED, IngestJobStatusType.FAILED]
    killed_run = status.runs[1]
    assert killed_run.task_id is not None and killed_run.task_id in killed_run.failure_reasons[0]
    assert _leftovers(instance) == []


_DIES_HOLDING_WORK = """
import os, sys
from datetime import UTC, datetime
from sleeper.core.trackers.compaction import CompactionJobStarted
from sleeper.core.trackers.ingest import IngestJobStarted
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.tasks import local_task

instance = LocalInstance(sys.argv[1])
table_id = instance.table("t").table_id
with local_task(instance) as task:
    instance.ingest_job_tracker.record(
        IngestJobStarted(job_id="dead-job", table_id=table_id, update_time=datetime.now(tz=UTC), job_run_id="dead-run",
                         task_id=task.task_id)
    )
    instance.compaction_job_tracker.record(
        CompactionJobStarted(job_id="dead-compaction", table_id=table_id, update_time=datetime.now(tz=UTC),
                             job_run_id="dead-compaction-run", task_id=task.task_id)
    )
    (task.directory / "sleeper-ingest-spill").mkdir()
    (message,) = instance.queue("IngestJobQ").receive(1)
    print(task.task_id, flush=True)
    os._exit(137)
"""


def should_recover_only_the_tasks_that_are_gone(instance: LocalInstance) -> None:
    # Given a message on the queue, a task of this process that is alive with a run in progress, and a directory left
    # directly in tmp/ by an older version
    instance.queue("IngestJobQ").send("body")
    legacy = instance.directory / "tmp" / "sleeper-ingest-legacy"
    legacy.mkdir(parents=True)
    table_id = instance.table("t").table_id
    with local_task(instance) as alive:
        instance.ingest_job_tracker.record(
            IngestJobStarted(
                job_id="live-job",
                table_id=table_id,
                update_time=datetime.now(tz=UTC),
                job_run_id="live-run",
                task_id=alive.task_id,
            )
        )
        # And a process that died as a task holding a run in progress, a temporary directory and the message
        died = _python(textwrap.dedent(_DIES_HOLDING_WORK), str(instance.directory))
        assert died.returncode == KILLED_EXIT_CODE, died.stderr
        dead_task = died.stdout.strip()
        assert instance.queue("IngestJobQ").approximate_counts().in_flight == 1

        # When the tasks that are gone are recovered
        recovery = recover_dead_tasks(instance)

        # Then only the dead task was: its run is failed, its message visible again, its directory deleted
        assert recovery.dead_tasks == (dead_task,)
        assert (recovery.ingest_runs_failed, recovery.compaction_runs_failed, recovery.messages_released) == (1, 1, 1)
        dead = instance.ingest_job_tracker.job("dead-job")
        assert dead is not None and dead.status is IngestJobStatusType.FAILED
        assert dead_task in dead.latest_run.failure_reasons[0]
        compaction = instance.compaction_job_tracker.job("dead-compaction")
        assert compaction is not None and compaction.status is CompactionJobStatusType.FAILED
        counts = instance.queue("IngestJobQ").approximate_counts()
        assert (counts.visible, counts.in_flight) == (1, 0)
        assert _leftovers(instance) == sorted([alive.task_id, f"{alive.task_id}.lock"])
        # And the live task's run, directory and lock are untouched, and the legacy directory is deleted
        live = instance.ingest_job_tracker.job("live-job")
        assert live is not None and live.status is IngestJobStatusType.IN_PROGRESS
        assert alive.directory.is_dir()
        assert not legacy.exists()
        # And recovering again finds nothing more
        assert recover_dead_tasks(instance).dead_tasks == ()
    # And a task that ends normally leaves nothing behind
    assert _leftovers(instance) == []


def should_retry_a_failing_message_until_it_is_dead_lettered_before_saying_idle(instance: LocalInstance) -> None:
    # Given a queue whose handler always fails on its one message (maxReceiveCount 3)
    attempts: list[str] = []

    def failing(_instance: LocalInstance, body: str) -> str:
        attempts.append(body)
        raise RuntimeError("boom")

    instance.queue("IngestJobQ").send("doomed")
    # When the runner runs until idle
    summary = LocalRunner(instance, {"IngestJobQ": failing}).run_until_idle()
    # Then it tried the message until the queue's receive limit moved it to the dead-letter queue, then was idle
    assert attempts == ["doomed"] * 3
    assert summary.failed == {"IngestJobQ": 3}
    assert summary.idle
    counts = instance.queue("IngestJobQ").approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 0)
    assert [m.body for m in instance.dead_letter_queue("IngestJobQ").receive(10)] == ["doomed"]


def should_wait_for_a_message_in_flight_in_a_live_process_before_saying_idle(instance: LocalInstance) -> None:
    # Given a message received by another task that is alive (this process holds its lock)
    queue = instance.queue("IngestJobQ")
    queue.send("held")
    handled: list[str] = []
    waits: list[float] = []
    with local_task(instance):
        (message,) = queue.receive(1)

        def other_process_finishes(seconds: float) -> None:
            waits.append(seconds)
            queue.delete(message.receipt_handle)

        runner = LocalRunner(
            LocalInstance(instance.directory),
            {"IngestJobQ": lambda _instance, body: handled.append(body) or ""},
            sleep=other_process_finishes,
        )
        # When a runner runs until idle
        summary = runner.run_until_idle(poll_seconds=0.5)
    # Then it waited for the other task to finish the message rather than saying idle while it was in flight
    assert waits == [0.5]
    assert summary.idle and handled == []
    counts = queue.approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 0)
