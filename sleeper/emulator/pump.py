"""The pump: what AWS does with an emulated instance's rules, event source mappings and tasks, which moto stores but
acts on none of, one round at a time (:meth:`Pump.run_once`):

* each scheduled handler of the registry runs when its period has passed (the period from its instance property,
  read when it fires), with EventBridge's scheduled event, unless its rule ``<id>-<rule>`` is disabled;
* each SQS-triggered handler receives up to its batch size from each of its queues, as an SQS event shaped as
  Lambda's; the messages not in the ``batchItemFailures`` it returns are deleted, the others stay in flight until
  the queue's visibility timeout (then the redrive policy moves them to the dead-letter queue after its receive
  count), or until ``retry_failed_after_seconds`` if set. A handler that raises fails its whole batch;
* the stream handler (the transaction follower) receives the records of the files transaction log's DynamoDB
  stream written since the pump was made (the stack's mapping starts at ``LATEST``), up to 100 a round, as a
  stream event shaped as Lambda's; the shard is read again from a record named in ``batchItemFailures`` (or from
  the first, if the handler raised) in the next round, and a record still failing after ten retries is skipped;
* the tasks, job runs and steps started on the instance run as local processes (:mod:`sleeper.emulator.tasks`).

Handlers run in this process like warm Lambda invocations (:mod:`sleeper.emulator.functions`): loaded by their
``module:function``, with the function's environment, so they find the instance as they do when deployed. They are
found by name when they are needed, so a handler module that does not exist yet is skipped and used once it does.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from sleeper.adapters.aws import AwsSettings
from sleeper.core import (
    ContainerSpec,
    HandlerSpec,
    InstanceNames,
    QueueNotFoundError,
    SleeperError,
    StateStoreTableNames,
    TriggerKind,
    operations,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_cdk as cdk
from sleeper.emulator.aws_services import DynamoDBStreamSource, SqsEventSource, rule_state
from sleeper.emulator.functions import LambdaContext, function_environment, resolve_handler, scheduled_event
from sleeper.emulator.resources import DEFAULT_ACCOUNT, schedule_period_seconds
from sleeper.emulator.rounds import PumpRound
from sleeper.emulator.tasks import TaskRunner
from sleeper.runtime.aws import AwsInstance

__all__ = ["STREAM_BATCH_SIZE", "STREAM_RETRY_ATTEMPTS", "Pump"]

_LOG = logging.getLogger(__name__)

STREAM_BATCH_SIZE = 100
"""Records per stream invocation (the stack's event source mapping sets 100)."""
STREAM_RETRY_ATTEMPTS = 10
"""Times a failing stream record is retried before it is skipped (the stack's mapping sets 10)."""


class Pump:
    """Delivers what AWS would to an instance on an emulator: scheduled events, SQS batches, ECS tasks, EMR jobs.

    Args:
        instance: The instance (its settings reach the emulator).
        environment: The environment a deployed function or task of the instance has: the endpoint, region,
            credentials and config bucket (see :meth:`EmulatedAwsInstance.environment
            <sleeper.emulator.instance.EmulatedAwsInstance.environment>`). Set while a handler runs in this process,
            and given to each task's process on top of this process's environment.
        clock: Seconds since the epoch (injected in tests).
        handlers: The handlers to deliver to (default: the registry's, as it is when the pump is made).
        containers: The containers whose entry points run tasks (default: the registry's, as it is when the pump
            is made).
        max_running_tasks: Task processes allowed at once; further tasks wait for a free slot.
        retry_failed_after_seconds: Make failed messages visible again after this long instead of the queue's
            visibility timeout (None: as AWS does).
        task_log_dir: Where each task process writes its output (None: this process's stdout and stderr).
        python: The interpreter running task processes.
    """

    def __init__(
        self,
        instance: AwsInstance,
        *,
        environment: Mapping[str, str],
        clock: Callable[[], float] = time.time,
        handlers: Sequence[HandlerSpec] | None = None,
        containers: Sequence[ContainerSpec] | None = None,
        max_running_tasks: int = 2,
        retry_failed_after_seconds: float | None = None,
        task_log_dir: str | Path | None = None,
        python: str = sys.executable,
    ) -> None:
        self.instance = instance
        self._environment = dict(environment)
        self._clock = clock
        self._handlers = tuple(operations.HANDLERS if handlers is None else handlers)
        self._tasks = TaskRunner(
            instance,
            environment=self._environment,
            python=python,
            containers=operations.CONTAINERS if containers is None else containers,
            max_running_tasks=max_running_tasks,
            task_log_dir=task_log_dir,
        )
        self._retry_after = retry_failed_after_seconds
        self._next_due: dict[str, float] = {}
        self._sources: dict[str, SqsEventSource | None] = {}
        self._missing_logged: set[str] = set()
        self._lock = threading.Lock()
        self._stream_sources: dict[str, DynamoDBStreamSource | None] = {}
        self._stream_attempts: dict[str, int] = {}
        for spec in self._handlers:
            if spec.trigger.kind is TriggerKind.STREAM:
                self._stream_source(spec)  # read from now on, as a mapping created with LATEST does
        start = clock()
        props = self._properties()
        for spec in self._schedules:
            self._next_due[spec.name] = start + schedule_period_seconds(spec, props)

    # --- clients -------------------------------------------------------------------------------------------------
    @property
    def _settings(self) -> AwsSettings:
        return self.instance.config.settings

    @property
    def _sqs(self) -> Any:
        return self.instance.clients.sqs

    @property
    def _events(self) -> Any:
        return self.instance.clients.events

    @cached_property
    def _names(self) -> InstanceNames:
        return InstanceNames(instance_id=self.instance.instance_id, account=self._account)

    @property
    def _account(self) -> str:
        return self.instance.properties.get(cdk.ACCOUNT.name) or DEFAULT_ACCOUNT

    @property
    def _schedules(self) -> list[HandlerSpec]:
        return [h for h in self._handlers if h.trigger.kind is TriggerKind.SCHEDULE]

    def _properties(self) -> InstanceProperties | None:
        try:
            return self.instance.properties
        except SleeperError as e:
            _LOG.warning("cannot read the instance properties: %s", e)
            return None

    def _resolve(self, spec: HandlerSpec) -> Callable[..., Any] | None:
        found = resolve_handler(spec.handler)
        if found is None and spec.handler not in self._missing_logged:
            self._missing_logged.add(spec.handler)
            _LOG.info("handler %s (%s) does not exist yet: skipped until it does", spec.name, spec.handler)
        elif found is not None:
            self._missing_logged.discard(spec.handler)
        return found

    def _invoke_function(self, spec: HandlerSpec, handler: Callable[..., Any], event: Mapping[str, Any]) -> Any:
        """Invokes a handler as Lambda invokes the deployed function: in its environment, with its context."""
        context = LambdaContext(
            function_name=self._names.function(spec.name),
            timeout_seconds=spec.timeout_seconds,
            memory_limit_in_mb=spec.memory_mb,
        )
        with function_environment(self._environment):
            return handler(event, context)

    # --- rounds --------------------------------------------------------------------------------------------------
    def run_once(self, now: float | None = None) -> PumpRound:
        """One round: fire the schedules due at ``now`` (default: the clock), deliver one batch per SQS handler and
        queue, start the tasks ECS and EMR were asked to run, and collect the task processes that ended."""
        with self._lock:
            importlib.invalidate_caches()  # see handler modules written since the last round
            result = PumpRound()
            self._tasks.collect(result)
            self._fire_due(self._clock() if now is None else now, result)
            for spec in self._handlers:
                if spec.trigger.kind is TriggerKind.SQS:
                    self._deliver(spec, result)
                elif spec.trigger.kind is TriggerKind.STREAM:
                    self._deliver_stream(spec, result)
            self._tasks.start_tasks(self._properties, result)
            result.tasks_running = self._tasks.running
            return result

    def run_until_idle(self, *, timeout_seconds: float = 300.0, max_rounds: int = 10_000) -> PumpRound:
        """Runs rounds until one delivers nothing, starts and ends no task, and no task process is running.

        Raises:
            TimeoutError: If that does not happen within ``timeout_seconds`` (by the monotonic clock) or
                ``max_rounds``.
        """
        deadline = time.monotonic() + timeout_seconds
        total = PumpRound()
        for _ in range(max_rounds):
            result = self.run_once()
            total.add(result)
            if not result.active and not self._tasks.running:
                return total
            if not result.active:
                self._tasks.wait_for_a_task(min(0.5, max(0.0, deadline - time.monotonic())))
            if time.monotonic() > deadline:
                break
        raise TimeoutError(
            f"the emulated instance was still busy after {timeout_seconds:g} s: {self._tasks.running} tasks running"
        )

    def run_forever(self, stop: threading.Event, *, interval_seconds: float = 1.0) -> None:
        """Runs rounds until ``stop`` is set, waiting ``interval_seconds`` after a round with nothing to do; then
        stops the task processes still running."""
        try:
            while not stop.is_set():
                try:
                    result = self.run_once()
                except Exception:
                    _LOG.exception("pump round failed")
                    result = PumpRound()
                if not result.active:
                    stop.wait(interval_seconds)
        finally:
            self.close()

    def close(self) -> None:
        """Stops every task process still running."""
        self._tasks.close()

    # --- schedules -----------------------------------------------------------------------------------------------
    def fire(self, name: str, now: float | None = None) -> bool:
        """Runs a scheduled handler now, as its rule would; returns whether it ran (it exists and its rule is not
        disabled)."""
        spec = next((h for h in self._handlers if h.name == name), None) or operations.handler(name)
        with self._lock:
            return self._fire(spec, self._clock() if now is None else now)

    def _fire_due(self, now: float, result: PumpRound) -> None:
        for spec in self._schedules:
            if self._next_due.get(spec.name, now) > now:
                continue
            self.instance.reload()  # the rule's period is read from the properties as they are now
            props = self._properties()
            self._next_due[spec.name] = now + schedule_period_seconds(spec, props)
            if self._fire(spec, now):
                result.fired.append(spec.name)

    def _fire(self, spec: HandlerSpec, now: float) -> bool:
        handler = self._resolve(spec)
        if handler is None or spec.trigger.rule is None:
            return False
        rule = self._names.rule(spec.trigger.rule)
        try:
            if rule_state(self._events, rule) == "DISABLED":
                _LOG.info("rule %s is disabled: %s not run", rule, spec.name)
                return False
        except SleeperError as e:
            _LOG.warning("cannot read rule %s: %s", rule, e)
        region = self._settings.region
        arn = f"arn:aws:events:{region}:{self._account}:rule/{rule}"
        event = scheduled_event(arn, region, self._account, datetime.fromtimestamp(now, tz=UTC))
        try:
            outcome = self._invoke_function(spec, handler, event)
            _LOG.info("%s ran on schedule: %s", spec.name, outcome)
        except Exception:
            _LOG.exception("%s failed on schedule", spec.name)
        return True

    # --- SQS -----------------------------------------------------------------------------------------------------
    def _source(self, logical_name: str) -> SqsEventSource | None:
        if logical_name not in self._sources:
            try:
                url = self.instance.queue(logical_name).url
                self._sources[logical_name] = SqsEventSource(self._sqs, url, self._settings.region)
            except QueueNotFoundError:
                self._sources[logical_name] = None
        return self._sources[logical_name]

    def deliver(self, name: str) -> PumpRound:
        """Delivers one batch from each queue of an SQS-triggered handler now."""
        spec = next(h for h in self._handlers if h.name == name)
        result = PumpRound()
        with self._lock:
            self._deliver(spec, result)
        return result

    def _deliver(self, spec: HandlerSpec, result: PumpRound) -> None:
        handler: Callable[..., Any] | None = None
        for logical_name in spec.trigger.queues:
            source = self._source(logical_name)
            if source is None:
                continue
            if handler is None:
                handler = self._resolve(spec)
                if handler is None:
                    return
            records = source.receive(max(1, spec.trigger.batch_size))
            if not records:
                continue
            failed = self._invoke(spec, handler, records)
            done = [r["receiptHandle"] for r in records if r["messageId"] not in failed]
            source.delete(done)
            if failed and self._retry_after is not None:
                source.retry_after([r["receiptHandle"] for r in records if r["messageId"] in failed], self._retry_after)
            result.delivered[spec.name] = result.delivered.get(spec.name, 0) + len(records)
            if failed:
                result.failed[spec.name] = result.failed.get(spec.name, 0) + len(failed)

    def _invoke(self, spec: HandlerSpec, handler: Callable[..., Any], records: list[dict[str, Any]]) -> set[str]:
        ids = {r["messageId"] for r in records}
        try:
            response = self._invoke_function(spec, handler, {"Records": records})
        except Exception:
            _LOG.exception("%s failed a batch of %d messages", spec.name, len(records))
            return ids
        if not isinstance(response, Mapping):
            return set()
        failures = response.get("batchItemFailures") or []
        failed = {str(f.get("itemIdentifier")) for f in failures if isinstance(f, Mapping)}
        if not failed <= ids:  # Lambda fails the whole batch when a failure names no message of it
            _LOG.error("%s reported failures of messages not in its batch: %s", spec.name, failed - ids)
            return ids
        return failed

    # --- DynamoDB stream -------------------------------------------------------------------------------------------
    def _stream_source(self, spec: HandlerSpec) -> DynamoDBStreamSource | None:
        """The stream of the files transaction log (the one stream handlers follow), or None if it cannot be read."""
        if spec.name not in self._stream_sources:
            table = StateStoreTableNames.for_instance(self.instance.instance_id).files_log
            try:
                source: DynamoDBStreamSource | None = DynamoDBStreamSource(
                    self.instance.clients.dynamodb,
                    self.instance.clients.dynamodb_streams,
                    table,
                    self._settings.region,
                )
            except SleeperError as e:
                _LOG.warning("cannot read the stream of %s for %s: %s", table, spec.name, e)
                source = None
            self._stream_sources[spec.name] = source
        return self._stream_sources[spec.name]

    def _deliver_stream(self, spec: HandlerSpec, result: PumpRound) -> None:
        """Delivers the next records of the stream, as Lambda's mapping does: a failure named in
        ``batchItemFailures`` (or a handler error, which fails the first record) makes the shard be read again from
        that record; after ``STREAM_RETRY_ATTEMPTS`` retries the record is skipped (Lambda, with no on-failure
        destination, drops it). Lambda's bisecting of failed batches is not emulated."""
        source = self._stream_source(spec)
        if source is None:
            return
        handler = self._resolve(spec)
        if handler is None:
            return
        records = source.receive(STREAM_BATCH_SIZE)
        if not records:
            return
        sequence_numbers = [str(r["dynamodb"]["SequenceNumber"]) for r in records]
        failed: str | None
        try:
            response = self._invoke_function(spec, handler, {"Records": records})
            failures = (response.get("batchItemFailures") or []) if isinstance(response, Mapping) else []
            named = [str(f.get("itemIdentifier")) for f in failures if isinstance(f, Mapping)]
            failed = None if not named else min((n for n in named if n in sequence_numbers), default=None, key=int)
            if named and failed is None:  # a failure naming no record of the batch fails the whole batch
                failed = sequence_numbers[0]
        except Exception:
            _LOG.exception("%s failed a batch of %d stream records", spec.name, len(records))
            failed = sequence_numbers[0]
        result.delivered[spec.name] = result.delivered.get(spec.name, 0) + len(records)
        done = sequence_numbers if failed is None else sequence_numbers[: sequence_numbers.index(failed)]
        for sequence_number in done:
            self._stream_attempts.pop(sequence_number, None)
        if failed is None:
            return
        result.failed[spec.name] = result.failed.get(spec.name, 0) + 1
        attempts = self._stream_attempts[failed] = self._stream_attempts.get(failed, 0) + 1
        if attempts > STREAM_RETRY_ATTEMPTS:
            _LOG.error("%s: stream record %s failed %d times, skipped", spec.name, failed, attempts)
            del self._stream_attempts[failed]
            source.rewind(failed, skip=True)
        else:
            source.rewind(failed)
