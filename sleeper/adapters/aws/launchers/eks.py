"""Bulk import jobs on the instance's EKS cluster, through its Step Functions state machine (a ``BulkImportPlatform``
of :mod:`sleeper.bulk_import.launch_ports`; Sleeper's ``StateMachinePlatformExecutor``).

:class:`EksPlatform` starts one execution of ``sleeper.bulk.import.eks.statemachine.arn`` per job, named
``<tableId>-<jobId>`` (the table id cut so the name fits Step Functions' 80 characters, as Sleeper's
``DeriveJobExecutionName``), with the input the state machine of ``EksBulkImportStack`` reads:

* ``job``: the job as the starter wrote it (its id names the Kubernetes job), ``jobRunId`` (the run the starter
  recorded) and ``taskId`` (the state machine), with which the state machine records the run failed if the
  Kubernetes job does not succeed and the driver did not record its end (:mod:`sleeper.bulk_import.outcome`);
* ``jobPodPrefix``: ``job-<first 26 characters of the job id>``, the Spark driver pod's name, which the state machine
  deletes once the job is done;
* ``args``: the ``spark-submit`` command the Kubernetes job's container runs: cluster deploy mode on the cluster's
  endpoint and namespace, the ``spark`` service account, the executor pod template, the Spark settings of the
  ``sleeper.bulk.import.eks.spark.*`` properties overridden by the job's ``sparkConf``, then the driver script in the
  image and its arguments (config bucket, job id, task id = the state machine, job run id, ``EKS``);
* ``executorPodTemplate``: the executor pod template (``sleeper.bulk.import.eks.spark.executor.ephemeral.storage`` as
  the executors' ephemeral storage request and limit, the executors placed in the driver's zone), which the image's
  entry point writes to the file the ``args`` name.

The job's ``className`` travels in the job file (the Python driver has no ``--class``). No mypy stubs for the Step
Functions client are installed, so it is typed ``Any``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sleeper.adapters.aws.exceptions import translated
from sleeper.adapters.aws.launchers.bulk_import import conf_options, driver_arguments, merge_spark_conf
from sleeper.adapters.aws.launchers.common import required_property
from sleeper.bulk_import import BulkImportRun, PlatformStart
from sleeper.core.properties import BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE, InstanceProperties, eks_spark_conf
from sleeper.core.properties import instance_cdk as cdk

__all__ = [
    "EKS_DRIVER_SCRIPT",
    "EXECUTOR_POD_TEMPLATE_FILE",
    "EksPlatform",
    "eks_execution_name",
    "eks_start_execution_request",
    "executor_pod_template",
    "job_pod_prefix",
]

_LOG = logging.getLogger(__name__)

EKS_DRIVER_SCRIPT = "local:///opt/sleeper/bulk_import_driver.py"
"""The Spark driver script inside the EKS bulk import image (``containers/bulk-import-eks``)."""
EXECUTOR_POD_TEMPLATE_FILE = "/tmp/executor-template.yaml"
"""Where the image's entry point writes the executor pod template it is given (``EXECUTOR_POD_TEMPLATE``)."""
SERVICE_ACCOUNT = "spark"
"""The service account the Spark driver runs as (the stack grants it the job's permissions)."""
_MAX_EXECUTION_NAME = 80
_MAX_POD_PREFIX_ID = 26

_EXECUTOR_POD_TEMPLATE = """apiVersion: v1
kind: Pod
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchExpressions:
              - key: spark-app-name
                operator: In
                values:
                  - {app}
              - key: spark-role
                operator: In
                values:
                  - driver
          topologyKey: topology.kubernetes.io/zone
  containers:
    - name: spark-kubernetes-executor
      resources:
        requests:
          ephemeral-storage: "{storage}"
        limits:
          ephemeral-storage: "{storage}"
"""


def eks_execution_name(table_id: str, job_id: str) -> str:
    """``<tableId>-<jobId>``, the table id cut so the name has at most 80 characters (Step Functions' limit)."""
    room = _MAX_EXECUTION_NAME - len(job_id) - 1
    return f"{table_id[: max(room, 0)]}-{job_id}"


def job_pod_prefix(job_id: str) -> str:
    """The Spark driver pod's name and the executors' name prefix: ``job-`` and at most 26 characters of the job id
    (Spark adds up to 17 characters to a prefix of at most 47, which must start with a letter)."""
    return f"job-{job_id[:_MAX_POD_PREFIX_ID]}"


def executor_pod_template(job_id: str, ephemeral_storage: str) -> str:
    """The executors' pod template: their ephemeral storage request and limit, placed in the zone of the job's
    driver."""
    return _EXECUTOR_POD_TEMPLATE.format(app=job_id, storage=ephemeral_storage)


def eks_start_execution_request(properties: InstanceProperties, run: BulkImportRun) -> dict[str, Any]:
    """The ``StartExecution`` request of a job on the instance's EKS state machine (see the module docstring).

    Raises:
        PropertyError: If the state machine, the cluster's endpoint or namespace, or the config bucket is not set
            (``EksBulkImportStack`` is not deployed).
    """
    state_machine = required_property(properties, cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN)
    job = run.job
    prefix = job_pod_prefix(job.id)
    conf = {
        **eks_spark_conf(properties),
        "spark.master": f"k8s://{required_property(properties, cdk.BULK_IMPORT_EKS_CLUSTER_ENDPOINT)}",
        "spark.kubernetes.namespace": required_property(properties, cdk.BULK_IMPORT_EKS_NAMESPACE),
        "spark.kubernetes.authenticate.driver.serviceAccountName": SERVICE_ACCOUNT,
        "spark.kubernetes.executor.podTemplateFile": EXECUTOR_POD_TEMPLATE_FILE,
        "spark.app.name": job.id,
        "spark.kubernetes.driver.pod.name": prefix,
        "spark.kubernetes.executor.podNamePrefix": prefix,
    }
    args = [
        "spark-submit",
        "--deploy-mode",
        "cluster",
        *conf_options(merge_spark_conf(conf, job)),
        EKS_DRIVER_SCRIPT,
        *driver_arguments(properties, job, state_machine, run.job_run_id)[:-1],
        "EKS",
    ]
    storage = properties.get(BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE) or "175Gi"
    execution_input = {
        "job": job.to_dict(),
        "jobRunId": run.job_run_id,
        "taskId": state_machine,
        "jobPodPrefix": prefix,
        "args": args,
        "executorPodTemplate": executor_pod_template(job.id, storage),
    }
    table_id = job.table_id or ""
    return {
        "stateMachineArn": state_machine,
        "name": eks_execution_name(table_id, job.id),
        "input": json.dumps(execution_input),
    }


class EksPlatform:
    """Starts bulk import jobs on the instance's EKS cluster through its state machine (a ``BulkImportPlatform``)."""

    def __init__(self, client: Any, properties: InstanceProperties) -> None:
        self._client = client
        self._properties = properties

    def start(self, run: BulkImportRun) -> PlatformStart:
        """Calls ``StartExecution``.

        Raises:
            AwsError: If Step Functions refuses the execution (among others, ``ExecutionAlreadyExists`` for a job
                already started with other input: its table and job id name the execution).
        """
        request = eks_start_execution_request(self._properties, run)
        with translated(f"StartExecution {request['stateMachineArn']}"):
            response = self._client.start_execution(**request)
        _LOG.info("started bulk import job %s as execution %s", run.job.id, response.get("executionArn"))
        return PlatformStart.STARTED
