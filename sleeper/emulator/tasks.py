"""The tasks of an emulated instance: each ECS task started by ``RunTask`` on the ingest, compaction or bulk export
cluster, each EMR Serverless job run and each EMR step runs its container's entry point as a local process
(``python`` calling the registry's ``module:function``, with the container's command as arguments and the environment
the task would get plus the emulator's endpoint, region and credentials); when the process ends the task is stopped
(the job run cancelled, moto's only way to end it; a cluster made for one job terminated). Each running execution of
the EKS bulk import state machine runs its Kubernetes job's ``spark-submit`` on local Spark
(:mod:`sleeper.emulator.eks`)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from sleeper.core import (
    BULK_EXPORT_CONTAINER_NAME,
    BULK_IMPORT_EKS,
    COMPACTION_CONTAINER_NAME,
    IMAGE_ENVIRONMENT,
    INGEST_CONTAINER_NAME,
    ContainerSpec,
    SleeperError,
    function_name,
    operations,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_cdk as cdk
from sleeper.emulator import eks
from sleeper.emulator.aws_services import (
    EcsTask,
    active_emr_steps,
    cancel_emr_serverless_job_run,
    emr_serverless_job_runs,
    running_ecs_tasks,
    stop_ecs_task,
    terminate_emr_cluster,
)
from sleeper.emulator.functions import LambdaContext, function_environment, resolve_handler
from sleeper.emulator.rounds import PumpRound
from sleeper.runtime.aws import AwsInstance

__all__ = ["TaskRunner"]

_LOG = logging.getLogger(__name__)

_CONTAINER_BY_ECS_NAME = {
    INGEST_CONTAINER_NAME: operations.INGEST_IMAGE,
    COMPACTION_CONTAINER_NAME: operations.COMPACTION_IMAGE,
    BULK_EXPORT_CONTAINER_NAME: operations.BULK_EXPORT_IMAGE,
}
_BOOTSTRAP = (
    "import importlib, sys\n"
    "module, _, function = sys.argv.pop(1).partition(':')\n"
    "result = getattr(importlib.import_module(module), function)()\n"
    "sys.exit(result if isinstance(result, int) else 0)\n"
)


@dataclass(slots=True)
class _Process:
    key: str
    description: str
    process: subprocess.Popen[bytes]
    on_exit: Callable[[int], None]
    log: IO[bytes] | None
    container: str


class TaskRunner:
    """Runs the tasks, job runs and steps started on an instance as local processes, a few at a time.

    Args:
        instance: The instance (its settings reach the emulator).
        environment: What a task's process gets on top of this process's environment and the task's own.
        python: The interpreter running task processes.
        containers: The containers whose entry points run tasks.
        max_running_tasks: Task processes allowed at once; further tasks wait for a free slot.
        task_log_dir: Where each task process writes its output (None: this process's stdout and stderr).
    """

    def __init__(
        self,
        instance: AwsInstance,
        *,
        environment: Mapping[str, str],
        python: str,
        containers: Sequence[ContainerSpec],
        max_running_tasks: int,
        task_log_dir: str | Path | None,
    ) -> None:
        self.instance = instance
        self._environment = dict(environment)
        self._python = python
        self._containers = {c.name: c for c in containers}
        self._max_running = max(1, max_running_tasks)
        self._log_dir = Path(task_log_dir) if task_log_dir is not None else None
        self._seen: set[str] = set()
        self._running: dict[str, _Process] = {}
        self._missing_logged: set[str] = set()

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
    def running(self) -> int:
        """How many task processes are running."""
        return len(self._running)

    def _task_environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        env.update(IMAGE_ENVIRONMENT)  # as each image's Dockerfile sets it
        env.update(self._environment)
        env.update(extra)
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

    def collect(self, result: PumpRound) -> None:
        """Marks the tasks whose processes ended stopped (their job runs cancelled, their clusters terminated)."""
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

    def wait_for_a_task(self, seconds: float) -> None:
        """Waits up to ``seconds`` for a running task process to end."""
        for running in list(self._running.values()):
            try:
                running.process.wait(timeout=seconds)
                return
            except subprocess.TimeoutExpired:
                return

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

    def start_tasks(self, properties: Callable[[], InstanceProperties | None], result: PumpRound) -> None:
        """Starts the tasks, job runs and steps not yet run while there is a free slot, finding the clusters and the
        application in the instance properties (``properties``: None if they cannot be read)."""
        if len(self._running) >= self._max_running:
            return
        props = properties()
        if props is None:
            return
        for cluster_prop in (cdk.INGEST_CLUSTER, cdk.COMPACTION_CLUSTER, cdk.BULK_EXPORT_CLUSTER):
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
        state_machine = props.get(cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name)
        if state_machine and operations.BULK_IMPORT_EKS_IMAGE in self._containers:
            self._start_eks_executions(state_machine, result)

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

    def _bulk_import_container_if_free(self) -> ContainerSpec | None:
        """The bulk import container, if a slot is free and its entry point exists."""
        if len(self._running) >= self._max_running:
            return None
        return self._container(operations.BULK_IMPORT_IMAGE)

    def _start_job_runs(self, application_id: str, result: PumpRound) -> None:
        for run in emr_serverless_job_runs(self._emr_serverless, application_id):
            key = f"emr-serverless/{run.job_run_id}"
            if key in self._seen:
                continue
            container = self._bulk_import_container_if_free()
            if container is None:
                return

            def ended(code: int, run_id: str = run.job_run_id) -> None:
                cancel_emr_serverless_job_run(self._emr_serverless, application_id, run_id)

            self._start(key, f"EMR Serverless job run {run.job_run_id}", container, run.arguments, {}, ended, result)

    def _start_emr_steps(self, props: InstanceProperties, result: PumpRound) -> None:
        persistent = props.get(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name)
        try:
            steps = active_emr_steps(self._emr)
        except SleeperError as e:
            _LOG.debug("cannot list EMR steps: %s", e)
            return
        for step in steps:
            key = f"emr/{step.cluster_id}/{step.step_id}"
            if key in self._seen:
                continue
            container = self._bulk_import_container_if_free()
            if container is None:
                return
            # spark-submit [options] <driver> <config bucket> <job id> <task id> <job run id> EMR
            arguments = step.arguments[-5:] if len(step.arguments) >= 6 else step.arguments

            def ended(code: int, cluster_id: str = step.cluster_id, name: str = step.cluster_name) -> None:
                if name != persistent:
                    terminate_emr_cluster(self._emr, cluster_id)

            self._start(key, f"EMR step {step.step_id} of {step.cluster_name}", container, arguments, {}, ended, result)

    def _start_eks_executions(self, state_machine: str, result: PumpRound) -> None:
        """Runs the Kubernetes job of each running execution of the EKS state machine (:mod:`sleeper.emulator.eks`)."""
        try:
            seen = {key.removeprefix("eks/") for key in self._seen if key.startswith("eks/")}
            executions = eks.running_executions(self.instance.clients.stepfunctions, state_machine, skip=seen)
        except SleeperError as e:
            _LOG.warning("cannot list the executions of %s: %s", state_machine, e)
            return
        for execution in executions:
            key = f"eks/{execution.name}"
            if len(self._running) >= self._max_running:
                return
            container = self._container(operations.BULK_IMPORT_EKS_IMAGE)
            if container is None:
                return
            args = execution.input.get("args")
            job = execution.input.get("job")
            environment = {
                "EXECUTOR_POD_TEMPLATE": str(execution.input.get("executorPodTemplate", "")),
                "SLEEPER_SPARK_IMAGE": operations.BULK_IMPORT_EKS_IMAGE,
                eks.JOB_FILES_ENV: json.dumps(job.get("files", []) if isinstance(job, dict) else []),
            }

            def ended(code: int, run: eks.EksExecution = execution) -> None:
                if code != 0:
                    self._record_eks_failure(eks.failure_event(run.input, code))
                outcome = (
                    ("JobSucceeded", "the Spark job succeeded") if code == 0 else ("FailedJobState", "Spark job failed")
                )
                eks.stop_execution(self.instance.clients.stepfunctions, run.arn, error=outcome[0], cause=outcome[1])

            self._start(
                key,
                f"EKS job of execution {execution.name}",
                replace(container, entry_point=eks.ENTRY_POINT),
                [str(a) for a in args] if isinstance(args, list) else [],
                environment,
                ended,
                result,
            )

    def _record_eks_failure(self, event: Mapping[str, object]) -> None:
        """Invokes the failure recorder as the state machine's ``RecordFailure`` state does."""
        spec = operations.handler(operations.BULK_IMPORT_EKS_FAILURE)
        handler = resolve_handler(spec.handler)
        if handler is None:
            _LOG.warning("the EKS failure recorder %s cannot be loaded", spec.handler)
            return
        name = function_name(self.instance.instance_id, f"{BULK_IMPORT_EKS}-failure")
        try:
            with function_environment(self._environment):
                handler(event, LambdaContext(name, spec.timeout_seconds, memory_limit_in_mb=spec.memory_mb))
        except Exception as e:  # the invocation failed, as a Lambda error fails the state machine's task
            _LOG.warning("the EKS failure recorder failed: %s", e)
