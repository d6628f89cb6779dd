"""An emulated AWS instance on this machine (issue 6 item 7): a moto server, the instance's resources named as the CDK
stacks name them, and a :class:`Pump` doing what AWS would do with them.

:class:`EmulatedAwsInstance` starts moto's server in this process on ``127.0.0.1:<port>``, creates every bucket,
DynamoDB table, queue (with its dead-letter queue and redrive policy), ECS cluster and task definition, the EMR
Serverless application and the EventBridge rules of an instance, and writes ``instance.properties`` to the config
bucket ``sleeper-<id>-config-<account>`` with the names and queue URLs a deployment sets. Any boto3 client with
``AWS_ENDPOINT_URL`` set to the server then sees the instance (:meth:`EmulatedAwsInstance.environment` lists the
variables to export).

moto stores rules, event source mappings, ECS tasks and EMR job runs but acts on none of them. The :class:`Pump`
does, one round at a time (:meth:`Pump.run_once`):

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
* each ECS task started by ``RunTask`` on the ingest or compaction cluster, each EMR Serverless job run and each EMR
  step runs its container's entry point as a local process (``python`` calling the registry's ``module:function``,
  with the container's command as arguments and the environment the task would get plus the emulator's endpoint,
  region and credentials); when the process ends the task is stopped (the job run cancelled, moto's only way to end
  it; a cluster made for one job terminated).

Handlers run in this process through ``lambdas._common.use_instance``, like warm Lambda invocations. They are found
by name when they are needed, so a handler module that does not exist yet is skipped and used once it does.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import IO, Any

from sleeper.adapters.aws.batcher_store import create_batcher_store_table
from sleeper.adapters.aws.clients import AwsSettings
from sleeper.adapters.aws.emulated import (
    DynamoDBStreamSource,
    EcsTask,
    SqsEventSource,
    active_emr_steps,
    cancel_emr_serverless_job_run,
    create_ecs_cluster,
    create_emr_serverless_application,
    create_network,
    emr_serverless_job_runs,
    put_schedule_rule,
    register_task_definition,
    rule_state,
    running_ecs_tasks,
    stop_ecs_task,
    terminate_emr_cluster,
)
from sleeper.adapters.aws.instance_clients import AwsClients
from sleeper.adapters.aws.resources import create_bucket
from sleeper.core import operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.naming import (
    COMPACTION_CONTAINER_NAME,
    INGEST_CONTAINER_NAME,
    InstanceNames,
    StateStoreTableNames,
    batcher_store_table_name,
)
from sleeper.core.operations import ContainerSpec, HandlerSpec, TriggerKind
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties.instance_common import SUBNETS, VPC_ID
from sleeper.core.properties.javaprops import load as load_java_properties
from sleeper.core.queue import QueueNotFoundError
from sleeper.runtime.aws import (
    ACCOUNT_ENV,
    CONFIG_BUCKET_ENV,
    ENDPOINT_ENV,
    INSTANCE_ID_ENV,
    AwsInstance,
    AwsRuntimeConfig,
    provision_instance,
)

__all__ = [
    "DEFAULT_ACCOUNT",
    "DEFAULT_REGION",
    "EmulatedAwsInstance",
    "Pump",
    "PumpRound",
    "load_properties_file",
    "provision_emulated_instance",
    "resolve_handler",
    "scheduled_event",
    "serve",
]

_LOG = logging.getLogger(__name__)

DEFAULT_ACCOUNT = "123456789012"
"""The account moto reports (STS ``GetCallerIdentity``), so bucket names derived from it match."""
DEFAULT_REGION = "eu-west-2"
"""The region of an emulated instance unless another is given."""
_CREDENTIALS = "testing"
STREAM_BATCH_SIZE = 100
"""Records per stream invocation (the stack's event source mapping sets 100)."""
STREAM_RETRY_ATTEMPTS = 10
"""Times a failing stream record is retried before it is skipped (the stack's mapping sets 10)."""
_EMR_SERVERLESS_RELEASE = "emr-7.12.0"
_CONTAINER_BY_ECS_NAME = {
    INGEST_CONTAINER_NAME: operations.INGEST_IMAGE,
    COMPACTION_CONTAINER_NAME: operations.COMPACTION_IMAGE,
}
_BOOTSTRAP = (
    "import importlib, sys\n"
    "module, _, function = sys.argv.pop(1).partition(':')\n"
    "result = getattr(importlib.import_module(module), function)()\n"
    "sys.exit(result if isinstance(result, int) else 0)\n"
)


class EmulatorError(SleeperError):
    """The emulated instance could not be started."""


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Instance properties from a Java properties file.

    Raises:
        EmulatorError: If the file cannot be read.
    """
    try:
        return load_java_properties(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise EmulatorError(f"cannot read properties file {path}: {e}") from e


def _schedule_period_seconds(spec: HandlerSpec, properties: InstanceProperties | None) -> int:
    trigger = spec.trigger
    if trigger.period_property is not None and properties is not None:
        try:
            return max(1, properties.get_int(trigger.period_property) * trigger.period_unit_seconds)
        except (SleeperError, ValueError, KeyError):
            _LOG.warning("%s: %s is not a whole number, using 60 s", spec.name, trigger.period_property)
            return 60
    return trigger.fixed_period_seconds or 60


def provision_emulated_instance(
    settings: AwsSettings,
    instance_id: str,
    *,
    account: str = DEFAULT_ACCOUNT,
    properties: Mapping[str, str] | None = None,
) -> AwsRuntimeConfig:
    """Creates everything a deployment of an instance creates that the runtime reaches, on an emulator: what
    :func:`~sleeper.runtime.aws.provision_instance` creates (buckets, DynamoDB tables, every queue) plus a VPC with a
    subnet and a security group for tasks, the ingest batcher store, the bulk import bucket, the ECS clusters and
    task definitions, the EMR Serverless application and
    the scheduled rules, and writes ``instance.properties`` naming them.

    Returns:
        Where the instance is.
    """
    names = InstanceNames(instance_id=instance_id, account=account)
    clients = AwsClients(settings)
    network = create_network(clients.ec2, names.ecs_network)
    ecs = clients.ecs
    create_ecs_cluster(ecs, names.ingest_cluster)
    create_ecs_cluster(ecs, names.compaction_cluster)
    ingest = operations.container(operations.INGEST_IMAGE)
    compaction = operations.container(operations.COMPACTION_IMAGE)
    environment = {CONFIG_BUCKET_ENV: names.config_bucket, INSTANCE_ID_ENV: instance_id}
    register_task_definition(
        ecs, names.ingest_task_family, INGEST_CONTAINER_NAME, names.image(ingest.name), environment=environment
    )
    for family in (names.compaction_fargate_family, names.compaction_ec2_family):
        register_task_definition(
            ecs, family, COMPACTION_CONTAINER_NAME, names.image(compaction.name), environment=environment
        )
    application_id = create_emr_serverless_application(
        clients.emr_serverless, names.emr_serverless_application, _EMR_SERVERLESS_RELEASE
    )
    create_bucket(clients.s3, names.bulk_import_bucket, settings.region)
    create_batcher_store_table(clients.dynamodb, batcher_store_table_name(instance_id), wait=False)
    values = {
        VPC_ID.name: network.vpc_id,
        SUBNETS.name: network.subnet_id,
        cdk.ECS_SECURITY_GROUP.name: network.security_group_id,
        cdk.INGEST_CLUSTER.name: names.ingest_cluster,
        cdk.INGEST_TASK_DEFINITION_FAMILY.name: names.ingest_task_family,
        cdk.COMPACTION_CLUSTER.name: names.compaction_cluster,
        cdk.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY.name: names.compaction_fargate_family,
        cdk.COMPACTION_TASK_EC2_DEFINITION_FAMILY.name: names.compaction_ec2_family,
        cdk.BULK_IMPORT_BUCKET.name: names.bulk_import_bucket,
        cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME.name: names.emr_serverless_application,
        cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID.name: application_id,
        cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN.name: names.bulk_import_role_arn,
    }
    values.update(properties or {})
    config = provision_instance(settings, instance_id, account=account, properties=values)
    instance_properties = InstanceProperties(values)
    events = clients.events
    for spec in operations.HANDLERS:
        if spec.trigger.kind is TriggerKind.SCHEDULE and spec.trigger.rule is not None:
            put_schedule_rule(
                events,
                names.rule(spec.trigger.rule),
                _schedule_period_seconds(spec, instance_properties),
                description=spec.description,
            )
    return config


# --- the pump ------------------------------------------------------------------------------------------------------


def _lambdas_root() -> str | None:
    """The directory holding the ``lambdas`` package (the repository root), put on ``sys.path`` if it is not there:
    the package is not installed with ``sleeper``, so the ``sleeper`` command would not find it otherwise."""
    spec = importlib.util.find_spec("lambdas")
    if spec is not None and spec.origin is not None:
        return str(Path(spec.origin).resolve().parent.parent)
    root = Path(__file__).resolve().parents[2]
    if not (root / "lambdas" / "__init__.py").is_file():
        return None
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    return str(root)


def resolve_handler(path: str) -> Callable[..., Any] | None:
    """The function ``module:function`` names, or None if its module does not exist (yet) or cannot be imported."""
    module_name, _, function = path.partition(":")
    if module_name.split(".")[0] == "lambdas":
        _lambdas_root()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name == e.name or module_name.startswith(e.name + ".")):
            return None
        _LOG.warning("cannot import %s: %s", module_name, e)
        return None
    except Exception as e:  # a module being written may not import yet: skip it until it does
        _LOG.warning("cannot import %s: %s", module_name, e)
        return None
    found = getattr(module, function, None)
    return found if callable(found) else None


def scheduled_event(rule_arn: str, region: str, account: str, when: datetime) -> dict[str, Any]:
    """The event EventBridge sends a target of a scheduled rule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


@dataclass(slots=True)
class _LambdaContext:
    """The parts of Lambda's context object a handler may read."""

    function_name: str
    timeout_seconds: int
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 1024
    _deadline: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass(slots=True)
class PumpRound:
    """What one or more rounds of the pump did.

    Attributes:
        fired: The scheduled handlers run, in order.
        delivered: Messages (stream records) delivered per SQS (stream) handler.
        failed: Per SQS handler, messages reported failed or in a batch whose handler raised; per stream handler,
            batches that failed (each is read again from its failed record).
        tasks_started: The tasks, job runs and steps started as local processes.
        tasks_finished: Those that ended, with their exit codes.
        tasks_running: How many are still running.
    """

    fired: list[str] = field(default_factory=list)
    delivered: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    tasks_started: list[str] = field(default_factory=list)
    tasks_finished: list[tuple[str, int]] = field(default_factory=list)
    tasks_running: int = 0

    @property
    def active(self) -> bool:
        """Whether anything was delivered, started or finished."""
        return bool(sum(self.delivered.values()) or self.tasks_started or self.tasks_finished)

    def add(self, other: PumpRound) -> None:
        """Adds another round's work to this one."""
        self.fired.extend(other.fired)
        for name, count in other.delivered.items():
            self.delivered[name] = self.delivered.get(name, 0) + count
        for name, count in other.failed.items():
            self.failed[name] = self.failed.get(name, 0) + count
        self.tasks_started.extend(other.tasks_started)
        self.tasks_finished.extend(other.tasks_finished)
        self.tasks_running = other.tasks_running


@dataclass(slots=True)
class _Process:
    key: str
    description: str
    process: subprocess.Popen[bytes]
    on_exit: Callable[[int], None]
    log: IO[bytes] | None
    container: str


class Pump:
    """Delivers what AWS would to an instance on an emulator: scheduled events, SQS batches, ECS tasks, EMR jobs.

    Args:
        instance: The instance (its settings reach the emulator).
        environment: What a task's process gets on top of this process's environment: the endpoint, region and
            credentials (see :meth:`EmulatedAwsInstance.environment`).
        clock: Seconds since the epoch (injected in tests).
        handlers: The handlers to deliver to (default: the registry's).
        containers: The containers whose entry points run tasks (default: the registry's).
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
        handlers: Sequence[HandlerSpec] = operations.HANDLERS,
        containers: Sequence[ContainerSpec] = operations.CONTAINERS,
        max_running_tasks: int = 2,
        retry_failed_after_seconds: float | None = None,
        task_log_dir: str | Path | None = None,
        python: str = sys.executable,
    ) -> None:
        self.instance = instance
        self._environment = dict(environment)
        self._clock = clock
        self._handlers = tuple(handlers)
        self._containers = {c.name: c for c in containers}
        self._max_running = max(1, max_running_tasks)
        self._retry_after = retry_failed_after_seconds
        self._log_dir = Path(task_log_dir) if task_log_dir is not None else None
        self._python = python
        self._next_due: dict[str, float] = {}
        self._sources: dict[str, SqsEventSource | None] = {}
        self._seen: set[str] = set()
        self._running: dict[str, _Process] = {}
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
            self._next_due[spec.name] = start + _schedule_period_seconds(spec, props)

    # --- clients -------------------------------------------------------------------------------------------------
    @property
    def _settings(self) -> AwsSettings:
        return self.instance.config.settings

    @property
    def _sqs(self) -> Any:
        return self.instance.clients.sqs

    @property
    def _ecs(self) -> Any:
        return self.instance.clients.ecs

    @property
    def _emr_serverless(self) -> Any:
        return self.instance.clients.emr_serverless

    @property
    def _emr(self) -> Any:
        return self.instance.clients.emr

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

    @contextmanager
    def _using_instance(self) -> Iterator[None]:
        common = importlib.import_module("lambdas._common")
        previous = common._instance
        common.use_instance(self.instance)
        try:
            yield
        finally:
            common.use_instance(previous)

    def _resolve(self, spec: HandlerSpec) -> Callable[..., Any] | None:
        found = resolve_handler(spec.handler)
        if found is None and spec.handler not in self._missing_logged:
            self._missing_logged.add(spec.handler)
            _LOG.info("handler %s (%s) does not exist yet: skipped until it does", spec.name, spec.handler)
        elif found is not None:
            self._missing_logged.discard(spec.handler)
        return found

    def _context(self, spec: HandlerSpec) -> _LambdaContext:
        return _LambdaContext(
            function_name=self._names.function(spec.name),
            timeout_seconds=spec.timeout_seconds,
            memory_limit_in_mb=spec.memory_mb,
        )

    # --- rounds --------------------------------------------------------------------------------------------------
    def run_once(self, now: float | None = None) -> PumpRound:
        """One round: fire the schedules due at ``now`` (default: the clock), deliver one batch per SQS handler and
        queue, start the tasks ECS and EMR were asked to run, and collect the task processes that ended."""
        with self._lock:
            importlib.invalidate_caches()  # see handler modules written since the last round
            result = PumpRound()
            self._collect(result)
            self._fire_due(self._clock() if now is None else now, result)
            for spec in self._handlers:
                if spec.trigger.kind is TriggerKind.SQS:
                    self._deliver(spec, result)
                elif spec.trigger.kind is TriggerKind.STREAM:
                    self._deliver_stream(spec, result)
            self._start_tasks(result)
            result.tasks_running = len(self._running)
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
            if not result.active and not self._running:
                return total
            if not result.active:
                self._wait_for_a_task(min(0.5, max(0.0, deadline - time.monotonic())))
            if time.monotonic() > deadline:
                break
        raise TimeoutError(
            f"the emulated instance was still busy after {timeout_seconds:g} s: {len(self._running)} tasks running"
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
        for process in list(self._running.values()):
            process.process.terminate()
        for process in list(self._running.values()):
            try:
                process.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.process.kill()
            if process.log is not None:
                process.log.close()
        self._running.clear()

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
            self.instance.reload()  # a rule's target reads the properties as they are now
            props = self._properties()
            self._next_due[spec.name] = now + _schedule_period_seconds(spec, props)
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
            with self._using_instance():
                outcome = handler(event, self._context(spec))
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
            with self._using_instance():
                response = handler({"Records": records}, self._context(spec))
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
            with self._using_instance():
                response = handler({"Records": records}, self._context(spec))
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

    # --- tasks ---------------------------------------------------------------------------------------------------
    def _entry_root(self) -> str | None:
        return _lambdas_root()

    def _task_environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self._environment)
        env.update(extra)
        root = self._entry_root()
        if root is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        return env

    def _start(
        self,
        key: str,
        description: str,
        container: ContainerSpec,
        arguments: Sequence[str],
        environment: Mapping[str, str],
        on_exit: Callable[[int], None],
        result: PumpRound,
    ) -> None:
        assert container.entry_point is not None
        log: IO[bytes] | None = None
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log = (self._log_dir / f"{container.name}-{key.rsplit('/', 1)[-1]}.log").open("ab")
        process = subprocess.Popen(
            [self._python, "-c", _BOOTSTRAP, container.entry_point, *arguments],
            env=self._task_environment(environment),
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
        )
        self._seen.add(key)
        self._running[key] = _Process(key, description, process, on_exit, log, container.name)
        result.tasks_started.append(description)
        _LOG.info("started %s as process %d", description, process.pid)

    def _collect(self, result: PumpRound) -> None:
        for key, running in list(self._running.items()):
            code = running.process.poll()
            if code is None:
                continue
            del self._running[key]
            if running.log is not None:
                running.log.close()
            _LOG.info("%s ended with exit code %d", running.description, code)
            try:
                running.on_exit(code)
            except SleeperError as e:
                _LOG.warning("could not mark %s ended: %s", running.description, e)
            result.tasks_finished.append((running.description, code))

    def _wait_for_a_task(self, seconds: float) -> None:
        for running in list(self._running.values()):
            try:
                running.process.wait(timeout=seconds)
                return
            except subprocess.TimeoutExpired:
                return

    def _container(self, name: str | None) -> ContainerSpec | None:
        container = self._containers.get(name or "")
        if container is None or container.module is None:
            return None
        if resolve_handler(container.entry_point or "") is None:
            if container.name not in self._missing_logged:
                self._missing_logged.add(container.name)
                _LOG.info("entry point %s of container %s does not exist yet", container.entry_point, container.name)
            return None
        self._missing_logged.discard(container.name)
        return container

    def _start_tasks(self, result: PumpRound) -> None:
        if len(self._running) >= self._max_running:
            return
        props = self._properties()
        if props is None:
            return
        for cluster_prop in (cdk.INGEST_CLUSTER, cdk.COMPACTION_CLUSTER):
            cluster = props.get(cluster_prop.name)
            if cluster:
                for task in running_ecs_tasks(self._ecs, cluster):
                    if len(self._running) >= self._max_running:
                        return
                    if task.arn not in self._seen:
                        self._start_ecs_task(task, result)
        application_id = props.get(cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID.name)
        if application_id:
            self._start_job_runs(application_id, result)
        self._start_emr_steps(props, result)

    def _start_ecs_task(self, task: EcsTask, result: PumpRound) -> None:
        name = _CONTAINER_BY_ECS_NAME.get(task.container)
        if name is None:
            name = next((c for c in self._containers if c in task.family.lower()), None)
        container = self._container(name)
        if container is None:
            return
        if container.consumes is not None and self._idle_duplicate(container):
            self._seen.add(task.arn)
            stop_ecs_task(self._ecs, task.cluster, task.arn, "emulator: no visible jobs, another task is running")
            result.tasks_finished.append((f"ECS task {task.arn} ({container.name}, not run: no work)", 0))
            return

        def stopped(code: int) -> None:
            stop_ecs_task(self._ecs, task.cluster, task.arn, f"Essential container in task exited (exit code {code})")

        self._start(
            task.arn,
            f"ECS task {task.arn} ({container.name})",
            container,
            task.command,
            task.environment,
            stopped,
            result,
        )

    def _idle_duplicate(self, container: ContainerSpec) -> bool:
        """A task of a container taking work from a queue that another running task of it will drain anyway."""
        if not any(p.container == container.name for p in self._running.values()):
            return False
        try:
            return self.instance.queue(container.consumes or "").approximate_counts().visible == 0
        except SleeperError:
            return False

    def _start_job_runs(self, application_id: str, result: PumpRound) -> None:
        container = None
        for run in emr_serverless_job_runs(self._emr_serverless, application_id):
            key = f"emr-serverless/{run.job_run_id}"
            if key in self._seen:
                continue
            if len(self._running) >= self._max_running:
                return
            container = container or self._container(operations.BULK_IMPORT_IMAGE)
            if container is None:
                return

            def ended(code: int, run_id: str = run.job_run_id) -> None:
                cancel_emr_serverless_job_run(self._emr_serverless, application_id, run_id)

            self._start(key, f"EMR Serverless job run {run.job_run_id}", container, run.arguments, {}, ended, result)

    def _start_emr_steps(self, props: InstanceProperties, result: PumpRound) -> None:
        persistent = props.get(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name)
        container = None
        try:
            steps = active_emr_steps(self._emr)
        except SleeperError as e:
            _LOG.debug("cannot list EMR steps: %s", e)
            return
        for step in steps:
            key = f"emr/{step.cluster_id}/{step.step_id}"
            if key in self._seen:
                continue
            if len(self._running) >= self._max_running:
                return
            container = container or self._container(operations.BULK_IMPORT_IMAGE)
            if container is None:
                return
            # spark-submit [options] <driver> <config bucket> <job id> <task id> <job run id> EMR
            arguments = step.arguments[-5:] if len(step.arguments) >= 6 else step.arguments

            def ended(code: int, cluster_id: str = step.cluster_id, name: str = step.cluster_name) -> None:
                if name != persistent:
                    terminate_emr_cluster(self._emr, cluster_id)

            self._start(key, f"EMR step {step.step_id} of {step.cluster_name}", container, arguments, {}, ended, result)


# --- the emulated instance -----------------------------------------------------------------------------------------


def _check_free(host: str, port: int) -> None:
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            raise EmulatorError(f"cannot serve on {host}:{port}: {e.strerror or e}") from e


class EmulatedAwsInstance:
    """A moto server in this process holding one instance, and the pump that drives it.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        instance_id: The instance id.
        port: The port on 127.0.0.1 (0: any free port).
        host: The address to listen on.
        region: The region.
        account: The account (moto's, so names derived through STS match).
        properties: Further instance properties.
    """

    def __init__(
        self,
        instance_id: str,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        region: str = DEFAULT_REGION,
        account: str = DEFAULT_ACCOUNT,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        self.instance_id = instance_id
        self.region = region
        self.account = account
        self._host = host
        self._port = port
        self._properties = dict(properties or {})
        self._server: Any = None
        self._endpoint: str | None = None
        self._config: AwsRuntimeConfig | None = None

    def __enter__(self) -> EmulatedAwsInstance:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Starts the moto server and provisions the instance.

        Raises:
            EmulatorError: If moto's server is not installed or cannot listen on the port.
        """
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as e:
            raise EmulatorError("the emulated instance needs moto's server: pip install 'moto[server]'") from e
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # werkzeug logs every request at INFO otherwise
        _check_free(self._host, self._port)  # moto's server thread would die on a taken port and start() wait forever
        server = ThreadedMotoServer(ip_address=self._host, port=self._port, verbose=False)
        server.start()
        self._server = server
        host, port = server.get_host_and_port()
        self._endpoint = f"http://{host}:{port}"
        self._config = provision_emulated_instance(
            self.settings, self.instance_id, account=self.account, properties=self._properties
        )

    def stop(self) -> None:
        """Stops the server (everything in it is lost)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    @property
    def endpoint(self) -> str:
        """The server's URL, ``http://127.0.0.1:<port>``."""
        if self._endpoint is None:
            raise EmulatorError("the emulated instance is not started")
        return self._endpoint

    @property
    def settings(self) -> AwsSettings:
        """How to reach the server."""
        return AwsSettings(self.region, self.endpoint, access_key_id=_CREDENTIALS, secret_access_key=_CREDENTIALS)

    @property
    def config(self) -> AwsRuntimeConfig:
        """Where the instance is."""
        if self._config is None:
            raise EmulatorError("the emulated instance is not started")
        return self._config

    def environment(self) -> dict[str, str]:
        """The environment variables that make a boto3 client, a handler, a container or the CLI reach the
        instance."""
        return {
            ENDPOINT_ENV: self.endpoint,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": _CREDENTIALS,
            "AWS_SECRET_ACCESS_KEY": _CREDENTIALS,
            CONFIG_BUCKET_ENV: self.config.config_bucket,
            INSTANCE_ID_ENV: self.instance_id,
            ACCOUNT_ENV: self.account,
        }

    def instance(self) -> AwsInstance:
        """A new handle on the instance."""
        return AwsInstance(self.config)

    def pump(self, *, environment_extra: Mapping[str, str] | None = None, **options: Any) -> Pump:
        """A pump for the instance (``options`` go to :class:`Pump`); task processes get :meth:`environment` and
        ``environment_extra``."""
        return Pump(self.instance(), environment={**self.environment(), **(environment_extra or {})}, **options)


def serve(
    instance_id: str,
    *,
    port: int,
    properties: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    on_ready: Callable[[EmulatedAwsInstance], None] | None = None,
    interval_seconds: float = 1.0,
    **pump_options: Any,
) -> None:
    """Runs an emulated instance in the foreground until ``stop`` is set (or the process is interrupted).

    Args:
        instance_id: The instance id.
        port: The port on 127.0.0.1.
        properties: Further instance properties.
        stop: Set to stop.
        on_ready: Called once the instance is provisioned, before the pump starts.
        interval_seconds: The wait after a pump round with nothing to do.
        pump_options: Options of the :class:`Pump`.
    """
    stop = stop or threading.Event()
    with EmulatedAwsInstance(instance_id, port=port, properties=properties) as emulated:
        if on_ready is not None:
            on_ready(emulated)
        pump = emulated.pump(**pump_options)
        try:
            pump.run_forever(stop, interval_seconds=interval_seconds)
        except KeyboardInterrupt:
            stop.set()
        finally:
            pump.close()
