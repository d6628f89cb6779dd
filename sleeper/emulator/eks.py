"""Bulk import on EKS on an emulated instance: the state machine exists in moto's Step Functions, and the emulator
plays what it does with each execution, since moto runs none of its states and there is no Kubernetes.

On AWS, :class:`~sleeper.adapters.aws.launchers.eks.EksPlatform` starts an execution of ``EksBulkImportStack``'s
state machine per job, which runs the job's ``spark-submit`` (the ``args`` of the execution's input) as a Kubernetes
job in the ``bulk-import-eks`` image; the Spark driver then runs as a pod, records the run in the ingest job tracker
and commits the files. The state machine deletes the driver pod and the Kubernetes job when it succeeded, or calls
the failure recorder Lambda (:func:`sleeper.bulk_import.outcome.record_platform_failure`) when it did not.

Here, :func:`provision_eks_bulk_import` creates the state machine (its states named as the stack names them; moto
records executions but runs no state, so the pump plays them) and the properties the stack sets, and the pump
(:mod:`sleeper.emulator.tasks`) takes each running execution of it:

* the Kubernetes job's container is a local process running :func:`main` with the execution's ``args`` and the
  container's environment (``EXECUTOR_POD_TEMPLATE``, ``SLEEPER_SPARK_IMAGE``). :func:`main` turns the cluster
  submission into a local one (:func:`local_submit_command`: ``--master local[2]`` in client mode; the Kubernetes
  settings dropped; every other ``--conf`` of the job kept as given) and runs PySpark's ``spark-submit`` with it, so
  the same driver (:func:`sleeper.runtime.aws.containers.bulk_import.main`) runs with the same arguments in a Spark
  session ``spark-submit`` made with the job's settings;
* Spark here has no ``s3a://`` connector (``hadoop-aws``), so :func:`main` first copies the job's S3 input files to
  local disk (:func:`mirror_input`) and points Hadoop's ``s3a`` scheme at the copy; the driver reads
  ``s3a://<bucket>/<key>`` as deployed. Everything else (the driver script, validation, the tracker, the
  partitioning, writing the files to S3 with pyarrow, the commit) is the deployed code, unchanged;
* when the process ends the execution is stopped (moto's only way to end one: it shows ``ABORTED`` whatever the
  outcome); when it failed, the failure recorder's handler is first invoked with the state the state machine's
  ``Catch`` would hand it (:func:`failure_event`).

Not emulated: the EKS cluster, its Fargate profile or Auto Mode nodes, pods, service accounts and RBAC, the executor
pod template (written for the container, unused by local Spark), and the state machine's own definition.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws import AwsClients, translate
from sleeper.core import InstanceNames, SleeperError
from sleeper.core.properties import instance_cdk as cdk

__all__ = [
    "ENTRY_POINT",
    "LOCAL_MASTER",
    "EksExecution",
    "EksJobError",
    "failure_event",
    "local_submit_command",
    "JOB_FILES_ENV",
    "main",
    "mirror_input",
    "provision_eks_bulk_import",
    "running_executions",
    "stop_execution",
]

_LOG = logging.getLogger(__name__)

ENTRY_POINT = "sleeper.emulator.eks:main"
"""What the emulator runs in place of the ``bulk-import-eks`` image's entry point for the state machine's job."""
LOCAL_MASTER = "local[2]"
"""The Spark master of an emulated job, in place of the cluster's ``k8s://`` endpoint."""
_LOCAL_CONF = ("spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.enabled=false")
_DROPPED_OPTIONS = frozenset({"--deploy-mode", "--master"})
_DRIVER_SCRIPT = "from sleeper.runtime.aws.containers.bulk_import import main\n\nraise SystemExit(main())\n"
"""The image's ``/opt/sleeper/bulk_import_driver.py`` (``containers/bulk-import/bulk_import_driver.py``)."""
JOB_FILES_ENV = "EMULATED_JOB_FILES"
"""The job's input files (a JSON list), which the emulator gives the job's container so it can mirror them."""
_S3_SCHEMES = ("s3://", "s3a://", "s3n://")
_ENDPOINT = "https://eks.emulated.invalid"
"""The cluster endpoint an emulated instance records: nothing answers there; the emulator plays the cluster."""
_STATES = ("RunSparkJob", "CheckSparkJobResult", "DeleteDriverPod", "DeleteJob", "RecordFailure")


class EksJobError(SleeperError):
    """An execution's input is not the state machine's (no ``args`` holding a ``spark-submit`` command)."""


@dataclass(frozen=True, slots=True)
class EksExecution:
    """A running execution of the EKS state machine, and its input."""

    arn: str
    name: str
    input: Mapping[str, Any]


def _definition() -> str:
    """The state machine's states as ``EksBulkImportStack`` names them, each a ``Pass`` standing in for it (moto
    executes no state; the pump plays them)."""
    states: dict[str, Any] = {}
    for name, following in zip(_STATES, (*_STATES[1:], None), strict=True):
        states[name] = {"Type": "Pass", **({"Next": following} if following else {"End": True})}
    return json.dumps({"Comment": "Emulated: the pump plays these states", "StartAt": _STATES[0], "States": states})


def provision_eks_bulk_import(client: Any, names: InstanceNames) -> dict[str, str]:
    """Creates the EKS bulk import state machine ``sleeper-<id>-bulk-import-eks`` in moto's Step Functions; returns
    the instance properties ``EksBulkImportStack`` sets (state machine, cluster name, endpoint, namespace).

    Raises:
        AwsError: If Step Functions refuses.
    """
    name = names.bulk_import_eks
    role = f"arn:aws:iam::{names.account}:role/{name}-state-machine"
    try:
        arn = client.create_state_machine(name=name, definition=_definition(), roleArn=role)["stateMachineArn"]
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CreateStateMachine {name}") from e
    return {
        cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name: str(arn),
        cdk.BULK_IMPORT_EKS_CLUSTER_NAME.name: name,
        cdk.BULK_IMPORT_EKS_CLUSTER_ENDPOINT.name: _ENDPOINT,
        cdk.BULK_IMPORT_EKS_NAMESPACE.name: name,
    }


def running_executions(client: Any, state_machine_arn: str, *, skip: Container[str] = ()) -> list[EksExecution]:
    """The state machine's running executions, oldest first, with their input, but those named in ``skip``.

    Raises:
        AwsError: If Step Functions fails.
    """
    try:
        pages = client.get_paginator("list_executions").paginate(
            stateMachineArn=state_machine_arn, statusFilter="RUNNING"
        )
        summaries = [s for page in pages for s in page.get("executions", [])]
        out: list[EksExecution] = []
        for summary in sorted(summaries, key=lambda s: s["startDate"]):
            if summary["name"] in skip:
                continue
            described = client.describe_execution(executionArn=summary["executionArn"])
            out.append(EksExecution(str(summary["executionArn"]), str(summary["name"]), json.loads(described["input"])))
        return out
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"ListExecutions {state_machine_arn}") from e
    except ValueError as e:
        raise EksJobError(f"an execution of {state_machine_arn} has input that is not JSON: {e}") from e


def stop_execution(client: Any, execution_arn: str, *, error: str, cause: str) -> None:
    """Ends an execution (moto records it ``ABORTED``).

    Raises:
        AwsError: If Step Functions refuses.
    """
    try:
        client.stop_execution(executionArn=execution_arn, error=error, cause=cause)
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"StopExecution {execution_arn}") from e


def failure_event(execution_input: Mapping[str, Any], exit_code: int) -> dict[str, Any]:
    """The state the state machine's ``Catch`` hands the failure recorder when its Kubernetes job failed: the
    execution's input with Step Functions' ``error``."""
    cause = f"the Kubernetes job's container (spark-submit) exited with code {exit_code}"
    return {**execution_input, "error": {"Error": "States.TaskFailed", "Cause": cause}}


def local_submit_command(
    args: Sequence[str],
    driver_script: str | Path,
    *,
    spark_submit: str,
    s3_mirrors: Mapping[str, Path] | None = None,
) -> list[str]:
    """The ``spark-submit`` command of an execution's ``args`` (``spark-submit [options] <driver> <arguments>``) run
    on this machine: ``--master local[2]`` in client mode, the ``spark.master`` and ``spark.kubernetes.*`` settings
    dropped, the driver on loopback without its UI, the image's driver script replaced by ``driver_script``, every
    other option and the driver's arguments as given. Spark has no ``s3a://`` connector here, so with
    ``s3_mirrors`` (bucket: local directory) Hadoop's ``s3a`` scheme is overloaded with a mount table
    (``ViewFileSystemOverloadScheme``) reading ``s3a://<bucket>/<key>`` from ``<directory>/<key>``.

    Raises:
        EksJobError: If ``args`` is not a ``spark-submit`` command naming a driver.
    """
    if not args or args[0] != "spark-submit":
        raise EksJobError(f"the execution's args are not a spark-submit command: {list(args)[:3]}")
    options: list[str] = []
    index = 1
    while index < len(args) and args[index].startswith("--"):
        if index + 1 >= len(args):
            raise EksJobError(f"spark-submit option {args[index]} has no value")
        option, value = args[index], args[index + 1]
        key = value.partition("=")[0]
        kubernetes = option == "--conf" and (key == "spark.master" or key.startswith("spark.kubernetes."))
        if option not in _DROPPED_OPTIONS and not kubernetes:
            options += [option, value]
        index += 2
    if index >= len(args):
        raise EksJobError("the execution's spark-submit command names no driver script")
    local_conf = list(_LOCAL_CONF)
    if s3_mirrors:
        local_conf.append("spark.hadoop.fs.s3a.impl=org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme")
        for bucket, directory in s3_mirrors.items():
            local_conf.append(f"spark.hadoop.fs.viewfs.mounttable.{bucket}.linkFallback={directory.resolve().as_uri()}")
    local = [item for conf in local_conf for item in ("--conf", conf)]
    return [spark_submit, "--master", LOCAL_MASTER, *options, *local, str(driver_script), *args[index + 1 :]]


def _spark_home() -> Path:
    try:
        import pyspark
    except ImportError as e:
        raise EksJobError("the emulated EKS job needs PySpark: install the spark extra") from e
    return Path(pyspark.__file__).parent


def mirror_input(s3: Any, files: Sequence[str], mirror: Path) -> dict[str, Path]:
    """Copies the job's S3 input files to ``mirror/<bucket>/<key>``; returns each bucket's directory (for
    :func:`local_submit_command`). A file that cannot be read is left out (the driver reports it).

    Raises:
        AwsError: If S3 fails other than by a missing object.
    """
    buckets: dict[str, Path] = {}
    for uri in files:
        bucket, _, key = uri.split("://", 1)[-1].partition("/")
        if not bucket or not key:
            continue
        local = mirror / bucket / key
        local.parent.mkdir(parents=True, exist_ok=True)
        buckets[bucket] = mirror / bucket
        try:
            s3.download_file(bucket, key, str(local))
        except ClientError as e:
            if str(e.response.get("Error", {}).get("Code")) not in ("404", "NoSuchKey"):
                raise translate(e, f"GetObject s3://{bucket}/{key}") from e
            _LOG.warning("input file s3://%s/%s is missing: not mirrored", bucket, key)
    return buckets


def main(argv: Sequence[str] | None = None) -> int:
    """The Kubernetes job's container: runs the execution's ``spark-submit`` (``argv``) on local Spark, Spark's S3
    reads served from a local copy of the job's input files (``EMULATED_JOB_FILES``: a JSON list of their URIs);
    returns its exit code (2 if the command is not one)."""
    from sleeper.runtime.aws import AwsRuntimeConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        home = _spark_home()
        files = json.loads(os.environ.get(JOB_FILES_ENV) or "[]")
        with tempfile.TemporaryDirectory(prefix="sleeper-eks-job-") as scratch:
            template = os.environ.get("EXECUTOR_POD_TEMPLATE")
            if template:
                (Path(scratch) / "executor-template.yaml").write_text(template, encoding="utf-8")
            driver = Path(scratch) / "bulk_import_driver.py"
            driver.write_text(_DRIVER_SCRIPT, encoding="utf-8")
            s3 = AwsClients(AwsRuntimeConfig.from_environment().settings).s3
            buckets = mirror_input(s3, [str(f) for f in files], Path(scratch) / "s3")
            command = local_submit_command(
                args, driver, spark_submit=str(home / "bin" / "spark-submit"), s3_mirrors=buckets
            )
            _LOG.info("emulated EKS job: %s", " ".join(command))
            environment = {
                **os.environ,
                "SPARK_HOME": str(home),
                "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable,
            }
            return subprocess.run(command, env=environment, check=False).returncode
    except (EksJobError, ValueError) as e:
        _LOG.error("%s", e)
        return 2
