"""Tearing an instance down by its id, as Sleeper's ``tearDown.sh <id>`` does: everything goes, the data as the retain
properties say.

1. The instance's properties are read from its config bucket (an instance whose bucket is gone is torn down by the
   names its id gives, as Sleeper falls back to default properties).
2. Its processes are shut down: the scheduled rules are disabled (as ``sleeper admin pause``), the tasks of its ECS
   clusters stopped, its EMR clusters terminated and its EMR Serverless application stopped.
3. Its CloudFormation stack (named after the instance id) is deleted and waited for. The buckets and DynamoDB tables
   are deleted with it unless ``sleeper.retain.infra.after.destroy`` (the default: the stacks give them CloudFormation's
   ``Retain``), and the log groups unless ``sleeper.retain.logs.after.destroy``.
4. Its artefacts (the artefacts bucket and ECR repositories of :mod:`sleeper.core.deploy.artefacts`) are removed when
   they are its own (``sleeper.artefacts.deployment`` is the instance id), as Sleeper deletes ``<id>-artefacts``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleeper.adapters.aws import AwsError, EventBridgeRules, _untyped_client, translated
from sleeper.core import SleeperError, naming
from sleeper.core.deploy import ArtefactsPlan, artefacts_plan
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common
from sleeper.runtime.aws.api import scheduled_rule_names
from sleeper.runtime.aws.deployment import DeployedInstance, ecr_client

__all__ = ["TeardownPlan", "plan_teardown", "tear_down"]

_GONE = ("404", "NoSuchBucket", "NotFound", "ResourceNotFoundException", "ClusterNotFoundException",
         "RepositoryNotFoundException", "ValidationError")  # fmt: skip

_ACTIVE_EMR_STATES = ["STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING"]


@dataclass(frozen=True, slots=True)
class TeardownPlan:
    """What tearing an instance down does.

    Attributes:
        instance_id: The instance id, and the name of its CloudFormation stack.
        account: The account it is in.
        properties: Its saved properties (only ``sleeper.id`` when its config bucket is gone).
        saved: Whether the properties came from the config bucket.
        artefacts: Its artefacts bucket and repositories (every image's).
        remove_artefacts: Whether they are removed (its own, and not kept by the caller).
    """

    instance_id: str
    account: str
    properties: InstanceProperties
    saved: bool
    artefacts: ArtefactsPlan
    remove_artefacts: bool

    @property
    def names(self) -> naming.InstanceNames:
        """The instance's resource names."""
        return naming.InstanceNames(instance_id=self.instance_id, account=self.account)

    @property
    def retain_data(self) -> bool:
        """``sleeper.retain.infra.after.destroy``: buckets and tables outlive the stack."""
        return self.properties.get_bool(common.RETAIN_INFRA_AFTER_DESTROY)

    @property
    def retain_logs(self) -> bool:
        """``sleeper.retain.logs.after.destroy``: log groups outlive the stack."""
        return self.properties.get_bool(common.RETAIN_LOGS_AFTER_DESTROY)

    @property
    def clusters(self) -> list[str]:
        """The ECS clusters whose tasks are stopped."""
        return [self.names.ingest_cluster, self.names.compaction_cluster, self.names.bulk_export_cluster]

    @property
    def buckets(self) -> list[str]:
        """The instance's buckets (kept or removed with the stack by ``retain_data``)."""
        n = self.names
        return [n.config_bucket, n.data_bucket, n.query_results_bucket, n.bulk_import_bucket, n.bulk_export_bucket]

    def describe(self) -> list[str]:
        """The plan as lines for a person."""
        source = "from its config bucket" if self.saved else "by its id alone (no instance.properties was found)"
        lines = [
            f"Tearing down instance {self.instance_id} ({source}):",
            f"  pause: disable its scheduled rules ({len(scheduled_rule_names(self.instance_id))} rule names)",
            f"  stop the tasks of ECS clusters {', '.join(self.clusters)}",
            f"  terminate its EMR clusters (named {naming.resource_name(self.instance_id, '')}...) and stop EMR "
            "Serverless application "
            f"{self.names.emr_serverless_application}",
            f"  delete CloudFormation stack {self.instance_id} and wait for it",
        ]
        data = "kept" if self.retain_data else "deleted with the stack"
        logs = "kept" if self.retain_logs else "deleted with the stack"
        lines.append(f"  buckets {', '.join(self.buckets)} and the DynamoDB tables: {data} "
                     f"(sleeper.retain.infra.after.destroy={str(self.retain_data).lower()})")  # fmt: skip
        lines.append(f"  log groups: {logs} (sleeper.retain.logs.after.destroy={str(self.retain_logs).lower()})")
        artefacts = f"bucket s3://{self.artefacts.bucket} and ECR repositories {', '.join(self.artefacts.repositories)}"
        if self.remove_artefacts:
            lines.append(f"  remove the artefacts: {artefacts}")
        elif self.artefacts.owned_by_instance:
            lines.append(f"  keep the artefacts (asked): {artefacts}")
        else:
            lines.append(f"  keep the artefacts of deployment {self.artefacts.deployment_id} (shared): {artefacts}")
        return lines


def plan_teardown(instance: DeployedInstance, *, keep_artefacts: bool = False) -> TeardownPlan:
    """The tear down of an instance, from its saved properties (:func:`load_deployed_instance` with
    ``missing_ok=True``)."""
    artefacts = artefacts_plan(instance.properties, all_images=True)
    return TeardownPlan(instance_id=instance.instance_id, account=instance.account, properties=instance.properties,
                        saved=instance.saved, artefacts=artefacts,
                        remove_artefacts=artefacts.owned_by_instance and not keep_artefacts)  # fmt: skip


def _quietly(operation: str, call: Callable[..., Any], **kwargs: Any) -> Any:
    """Runs a call with keyword arguments; None if the resource is gone already (other failures raise)."""
    try:
        with translated(operation):
            return call(**kwargs)
    except AwsError as error:
        if error.code in _GONE:
            return None
        raise


def tear_down(
    plan: TeardownPlan,
    clients: Any,
    *,
    timeout_seconds: float = 3600.0,
    poll_seconds: float = 10.0,
    report: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Carries out a tear down plan (see the module docs) with an instance's clients
    (:class:`~sleeper.adapters.aws.instance_clients.AwsClients`).

    Raises:
        SleeperError: If the stack's deletion fails or does not finish within ``timeout_seconds``.
        AwsError: If AWS fails other than by a resource being gone already.
    """
    rules = EventBridgeRules(clients.events)
    paused = 0
    for name in scheduled_rule_names(plan.instance_id):
        if rules.state(name) == "ENABLED":
            rules.set_enabled(name, False)
            paused += 1
    report(f"paused: disabled {paused} scheduled rule(s)")
    for cluster in plan.clusters:
        listed = _quietly(f"ListTasks {cluster}", clients.ecs.list_tasks, cluster=cluster)
        for task in (listed or {}).get("taskArns", []):
            _quietly(f"StopTask {task}", clients.ecs.stop_task, cluster=cluster, task=task,
                     reason="Sleeper instance tear down")  # fmt: skip
            report(f"stopped task {task}")
    prefix = naming.resource_name(plan.instance_id, "")  # EMR clusters are sleeper-<id>-<table id>-<job id>
    listed = _quietly("ListClusters", clients.emr.list_clusters, ClusterStates=_ACTIVE_EMR_STATES)
    emr_ids = [c["Id"] for c in (listed or {}).get("Clusters", []) if str(c.get("Name", "")).startswith(prefix)]
    if emr_ids:
        _quietly("TerminateJobFlows", clients.emr.terminate_job_flows, JobFlowIds=emr_ids)
        report(f"terminated EMR clusters {', '.join(emr_ids)}")
    applications = _quietly("ListApplications", clients.emr_serverless.list_applications)
    for app in (applications or {}).get("applications", []):
        if app.get("name") == plan.names.emr_serverless_application and app.get("state") in ("STARTED", "STARTING"):
            _quietly("StopApplication", clients.emr_serverless.stop_application, applicationId=app["id"])
            report(f"stopped EMR Serverless application {app['id']}")
    _delete_stack(
        plan.instance_id,
        _untyped_client(clients.settings, "cloudformation"),
        timeout_seconds,
        poll_seconds,
        report,
        sleep,
    )
    kept = "kept" if plan.retain_data else "deleted"
    report(f"buckets and DynamoDB tables {kept} (sleeper.retain.infra.after.destroy)")
    if plan.remove_artefacts:
        _remove_artefacts(plan.artefacts, clients, report)


def _delete_stack(
    name: str,
    cloudformation: Any,
    timeout_seconds: float,
    poll_seconds: float,
    report: Callable[[str], None],
    sleep: Callable[[float], None],
) -> None:
    status = _stack_status(cloudformation, name)
    if status is None:
        report(f"CloudFormation stack {name} does not exist")
        return
    with translated(f"DeleteStack {name}"):
        cloudformation.delete_stack(StackName=name)
    report(f"deleting CloudFormation stack {name}")
    waited = 0.0
    while True:
        status = _stack_status(cloudformation, name)
        if status is None or status == "DELETE_COMPLETE":
            report(f"deleted CloudFormation stack {name}")
            return
        if status == "DELETE_FAILED":
            raise SleeperError(
                f"CloudFormation could not delete stack {name} (DELETE_FAILED): see its events in the console, "
                "fix the resource it names, then run the tear down again"
            )
        if waited >= timeout_seconds:
            raise SleeperError(f"stack {name} is still {status} after {timeout_seconds:.0f} s: run the tear down again")
        sleep(poll_seconds)
        waited += poll_seconds


def _stack_status(cloudformation: Any, name: str) -> str | None:
    try:
        with translated(f"DescribeStacks {name}"):
            stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except AwsError as error:
        if error.code == "ValidationError":  # "Stack with id <name> does not exist"
            return None
        raise
    return str(stacks[0]["StackStatus"]) if stacks else None


def _remove_artefacts(plan: ArtefactsPlan, clients: Any, report: Callable[[str], None]) -> None:
    ecr = ecr_client(clients)
    for repository in plan.repositories:
        removed = _quietly(
            f"DeleteRepository {repository}", ecr.delete_repository, repositoryName=repository, force=True
        )
        if removed is not None:
            report(f"removed ECR repository {repository}")
    s3 = clients.s3
    exists = _quietly(f"HeadBucket {plan.bucket}", s3.head_bucket, Bucket=plan.bucket)
    if exists is None:
        return
    paginator = s3.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=plan.bucket):
        objects = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                   for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]]  # fmt: skip
        if objects:
            with translated(f"DeleteObjects s3://{plan.bucket}"):
                s3.delete_objects(Bucket=plan.bucket, Delete={"Objects": objects, "Quiet": True})
    with translated(f"DeleteBucket {plan.bucket}"):
        s3.delete_bucket(Bucket=plan.bucket)
    report(f"removed artefacts bucket s3://{plan.bucket}")
