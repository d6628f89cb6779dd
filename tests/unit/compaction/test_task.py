"""The compaction task loop over an in-memory queue with a fake clock."""

from __future__ import annotations

import threading

import pyarrow as pa

from sleeper.compaction.task import (
    CompactionJobRunner,
    JobRunOutcome,
    TaskExit,
    TaskSettings,
    run_compaction_task,
)
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.queue import Queue
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from tests.unit.compaction.execution_fixtures import FakeInstance, FakeTable, instance_properties, new_table, utc_clock

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])

QUICK = TaskSettings(wait_seconds=0, max_idle_seconds=0, delay_before_retry_seconds=10, max_consecutive_failures=3)


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})


def _instance_with_table() -> tuple[FakeInstance, FakeTable]:
    instance = FakeInstance()
    table = instance.add(new_table(SCHEMA))
    return instance, table


def _job(table: FakeTable, *keys: list[int]) -> CompactionJob:
    return table.job([table.add_file(_rows(k)) for k in keys])


def _run(instance: FakeInstance, settings: TaskSettings = QUICK, **kwargs: object):  # type: ignore[no-untyped-def]
    table = next(iter(instance.tables.values()), None)
    runner = kwargs.pop("runner", None) or CompactionJobRunner(
        instance, task_id="task-1", clock=utc_clock(), filesystem=table.filesystem if table else None
    )
    return run_compaction_task(
        instance,
        task_id="task-1",
        settings=settings,
        runner=runner,  # type: ignore[arg-type]
        monotonic=instance.clock,
        sleep=instance.clock.sleep,
        clock=utc_clock(),
        **kwargs,  # type: ignore[arg-type]
    )


def should_run_commit_and_delete_each_job_then_finish_when_idle() -> None:
    # Given
    instance, table = _instance_with_table()
    jobs = [_job(table, [1, 3], [2]), _job(table, [5], [4, 6])]
    queue = instance.queue("CompactionJobQ")
    for job in jobs:
        queue.send(job.to_json())

    # When
    summary = _run(instance)

    # Then
    assert summary.exit is TaskExit.IDLE
    assert summary.count(JobOutcome.FINISHED) == 2
    assert (summary.rows_read, summary.rows_written) == (6, 6)
    assert queue.approximate_counts() == (0, 0)
    table.state_store.refresh()
    assert sorted(r.filename for r in table.state_store.file_references()) == sorted(j.output_file for j in jobs)
    for job in jobs:
        status = instance.compaction_job_tracker.job(job.job_id)
        assert status is not None and status.status is CompactionJobStatusType.FINISHED
    task = instance.compaction_task_tracker.task("task-1")
    assert task is not None and task.is_finished
    assert (task.job_runs, task.rows_read, task.rows_written) == (2, 6, 6)


def should_wait_for_jobs_until_idle_for_the_maximum_idle_time() -> None:
    # Given
    instance, _ = _instance_with_table()
    settings = TaskSettings(wait_seconds=0, max_idle_seconds=30, delay_before_retry_seconds=10)
    start = instance.clock.now

    # When
    summary = _run(instance, settings)

    # Then it retried every 10 s and stopped once 30 s had passed without a job
    assert summary.exit is TaskExit.IDLE
    assert instance.clock.now - start == 30
    assert summary.outcomes == ()


def should_take_a_job_that_arrives_while_waiting() -> None:
    # Given a job sent during the task's first pause
    instance, table = _instance_with_table()
    job = _job(table, [1], [2])
    settings = TaskSettings(wait_seconds=0, max_idle_seconds=15, delay_before_retry_seconds=10)

    def sleep_then_send(seconds: float) -> None:
        instance.clock.sleep(seconds)
        if instance.clock.now - start == 10:
            instance.queue("CompactionJobQ").send(job.to_json())

    start = instance.clock.now

    # When
    runner = CompactionJobRunner(instance, task_id="task-1", filesystem=table.filesystem)
    summary = run_compaction_task(
        instance, settings=settings, runner=runner, monotonic=instance.clock, sleep=sleep_then_send
    )

    # Then the idle time counts from the job, not from the start
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert summary.exit is TaskExit.IDLE
    assert instance.clock.now - start == 30


def should_stop_after_the_maximum_consecutive_failures_and_return_the_messages() -> None:
    # Given messages that are not compaction jobs
    instance, _ = _instance_with_table()
    queue = instance.queue("CompactionJobQ")
    for i in range(5):
        queue.send(f'{{"notAJob": {i}}}')
    settings = TaskSettings(
        wait_seconds=0, max_idle_seconds=0, max_consecutive_failures=2, failed_visibility_seconds=60
    )

    # When
    summary = _run(instance, settings)

    # Then two failed, and both went back to the queue to be retried after the failed visibility timeout
    assert summary.exit is TaskExit.MAX_CONSECUTIVE_FAILURES
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FAILED] * 2
    assert queue.approximate_counts() == (3, 2)
    instance.clock.sleep(60)
    assert queue.approximate_counts() == (5, 0)


def should_reset_the_failure_count_after_a_successful_job() -> None:
    # Given failures either side of a good job
    instance, table = _instance_with_table()
    queue = instance.queue("CompactionJobQ")
    queue.send("not json")
    queue.send(_job(table, [1], [2]).to_json())
    queue.send("not json either")
    settings = TaskSettings(wait_seconds=0, max_idle_seconds=0, max_consecutive_failures=2)

    # When
    summary = _run(instance, settings)

    # Then
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FAILED, JobOutcome.FINISHED, JobOutcome.FAILED]
    assert summary.exit is TaskExit.IDLE


def should_move_a_poison_message_to_the_dead_letter_queue_after_the_maximum_receives() -> None:
    # Given a message that always fails, on a queue that allows 3 receives
    instance, _ = _instance_with_table()
    instance.queue("CompactionJobQ").send('{"tableId": "t"}')
    settings = TaskSettings(
        wait_seconds=0,
        max_idle_seconds=200,
        delay_before_retry_seconds=30,
        max_consecutive_failures=10,
        failed_visibility_seconds=60,
    )

    # When
    summary = _run(instance, settings)

    # Then
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FAILED] * 3
    (dead,) = instance.dead_letters("CompactionJobQ").receive(1)
    assert dead.body == '{"tableId": "t"}'
    assert instance.queue("CompactionJobQ").approximate_counts() == (0, 0)


def should_do_nothing_for_a_job_delivered_again_after_it_was_committed() -> None:
    # Given a job run once, then delivered again
    instance, table = _instance_with_table()
    job = _job(table, [1, 2], [3])
    queue = instance.queue("CompactionJobQ")
    queue.send(job.to_json())
    _run(instance)
    output = table.read(job.output_file)
    numbers = table.state_store.last_transaction_numbers()
    queue.send(job.to_json())

    # When
    summary = _run(instance)

    # Then the table, the output and the tracker are unchanged and the message is gone
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.ALREADY_COMMITTED]
    assert table.state_store.last_transaction_numbers() == numbers
    assert table.read(job.output_file).equals(output)
    assert queue.approximate_counts() == (0, 0)
    status = instance.compaction_job_tracker.job(job.job_id)
    assert status is not None and len(status.runs) == 1


def should_delete_jobs_of_missing_tables_and_jobs_whose_inputs_moved_on() -> None:
    # Given
    instance, table = _instance_with_table()
    files = [table.add_file(_rows([1])), table.add_file(_rows([2]))]
    table.job(files, job_id="other")
    stale = table.job(files, assign=False)
    gone = CompactionJob(table_id="no-such-table", job_id="j", input_files=("a",), output_file="b", partition_id="root")
    queue = instance.queue("CompactionJobQ")
    queue.send(stale.to_json())
    queue.send(gone.to_json())

    # When
    summary = _run(instance)

    # Then
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.REJECTED] * 2
    assert queue.approximate_counts() == (0, 0)
    assert not table.exists(stale.output_file)


class _CountingQueue:
    """A queue that counts visibility changes and signals after the second."""

    def __init__(self, inner: Queue) -> None:
        self.inner = inner
        self.changes: list[float] = []
        self.extended = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def change_visibility(self, receipt_handle: str, seconds: float) -> None:
        self.inner.change_visibility(receipt_handle, seconds)
        self.changes.append(seconds)
        if len(self.changes) >= 2:
            self.extended.set()


class _BlockingRunner:
    """Runs a job by waiting until its message's visibility has been extended twice."""

    def __init__(self, queue: _CountingQueue) -> None:
        self.queue = queue

    def run_message(self, body: str) -> JobRunOutcome:
        extended = self.queue.extended.wait(timeout=10)
        return JobRunOutcome(outcome=JobOutcome.FINISHED if extended else JobOutcome.FAILED)


def should_keep_the_message_invisible_while_the_job_runs() -> None:
    # Given
    instance, _ = _instance_with_table()
    counting = _CountingQueue(instance.queue("CompactionJobQ"))
    counting.send("{}")

    class Instance(FakeInstance):
        def queue(self, logical_name: str) -> Queue:
            return counting  # type: ignore[return-value]

    wrapped = Instance(clock=instance.clock)
    settings = TaskSettings(
        wait_seconds=0, max_idle_seconds=0, keep_alive_seconds=0.001, visibility_timeout_seconds=600
    )

    # When
    summary = _run(wrapped, settings, runner=_BlockingRunner(counting))

    # Then
    assert [o.outcome for o in summary.outcomes] == [JobOutcome.FINISHED]
    assert counting.changes[:2] == [600, 600]
    assert counting.approximate_counts() == (0, 0)


def should_stop_after_a_job_once_the_maximum_alive_time_has_passed() -> None:
    # Given
    instance, table = _instance_with_table()
    queue = instance.queue("CompactionJobQ")
    for _ in range(2):
        queue.send(_job(table, [1], [2]).to_json())
    settings = TaskSettings(wait_seconds=0, max_idle_seconds=0, max_alive_seconds=0)

    # When
    summary = _run(instance, settings)

    # Then
    assert summary.exit is TaskExit.MAX_ALIVE_TIME
    assert len(summary.outcomes) == 1
    assert queue.approximate_counts() == (1, 0)


def should_read_task_settings_from_the_instance_properties() -> None:
    # Given
    properties = instance_properties(
        {
            "sleeper.compaction.task.max.idle.time.seconds": "7",
            "sleeper.compaction.task.max.consecutive.failures": "5",
            "sleeper.compaction.keepalive.period.seconds": "11",
            "sleeper.compaction.task.max.alive.time.minutes": "100",
            "sleeper.compaction.task.max.alive.jitter.minutes": "20",
        }
    )

    # When
    settings = TaskSettings.from_instance_properties(properties, jitter=lambda: 0.5)

    # Then
    assert (settings.max_idle_seconds, settings.max_consecutive_failures, settings.keep_alive_seconds) == (7, 5, 11)
    assert settings.max_alive_seconds == 90 * 60
    assert (settings.wait_seconds, settings.failed_visibility_seconds) == (20, 60)
