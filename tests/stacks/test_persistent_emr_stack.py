"""The persistent EMR bulk import stack: its queue with a dead-letter queue, an EMR cluster kept alive between jobs with
the instance's release label, fleets and scaling, the registry's starter fed by the queue and allowed to act on that
cluster only, and the properties the starter reads to find the cluster and requeue jobs."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from sleeper.cdk import persistent_emr
from sleeper.core import operations
from sleeper.core.properties import InstanceProperties

pytestmark = pytest.mark.slow

TEMPLATE = "PersistentEmrBulkImport"
EMR_ACTIONS = {"elasticmapreduce:AddJobFlowSteps", "elasticmapreduce:ListSteps", "elasticmapreduce:DescribeCluster"}


def _resources(synthesized: Any, kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in synthesized.json(TEMPLATE)["Resources"].items()
        if resource["Type"] == kind
    }


def _cluster(synthesized: Any) -> tuple[str, dict[str, Any]]:
    ((logical_id, properties),) = _resources(synthesized, "AWS::EMR::Cluster").items()
    return logical_id, properties


def _starter(synthesized: Any) -> tuple[str, dict[str, Any]]:
    spec = operations.handler(operations.BULK_IMPORT_STARTER)
    ((logical_id, properties),) = [
        (logical_id, p)
        for logical_id, p in _resources(synthesized, "AWS::Lambda::Function").items()
        if p.get("Environment", {}).get("Variables", {}).get("SLEEPER_HANDLER") == spec.handler
    ]
    return logical_id, properties


def _statements(synthesized: Any, role_logical_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in _resources(synthesized, "AWS::IAM::Policy").values()
        if {"Ref": role_logical_id} in policy["Roles"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def should_queue_jobs_with_a_dead_letter_queue(synthesized: Any) -> None:
    # When the queues of the stack are read
    queues = {p["QueueName"]: p for p in _resources(synthesized, "AWS::SQS::Queue").values()}
    # Then the job queue has Sleeper's name, is encrypted and redrives to its dead-letter queue
    job_queue = queues["sleeper-example-BulkImportPersistentEMRQ"]
    assert set(queues) == {"sleeper-example-BulkImportPersistentEMRQ", "sleeper-example-BulkImportPersistentEMRDLQ"}
    assert job_queue["SqsManagedSseEnabled"] is True
    assert job_queue["RedrivePolicy"]["maxReceiveCount"] >= 1
    (dead_letter_id,) = [i for i, p in _resources(synthesized, "AWS::SQS::Queue").items() if "DLQ" in p["QueueName"]]
    assert job_queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dead_letter_id, "Arn"]}


def should_keep_the_cluster_alive_with_the_configured_release_label_and_scaling(synthesized: Any) -> None:
    # Given the example's properties (defaults for the persistent cluster)
    properties = synthesized.stack.core.ctx.properties
    # When the cluster is read
    _, cluster = _cluster(synthesized)
    # Then it is Sleeper's named Spark cluster, kept alive without steps, in the instance's subnets
    assert cluster["Name"] == "sleeper-example-persistentEMR"
    assert cluster["ReleaseLabel"] == properties.get("sleeper.bulk.import.persistent.emr.release.label") == "emr-7.12.0"
    assert cluster["Applications"] == [{"Name": "Spark"}]
    instances = cluster["Instances"]
    assert instances["KeepJobFlowAliveWhenNoSteps"] is True
    assert len(instances["Ec2SubnetIds"]) >= 1
    assert cluster["StepConcurrencyLevel"] == 2
    # And its fleets and managed scaling follow the persistent EMR properties (arm64 by default)
    assert instances["MasterInstanceFleet"]["TargetOnDemandCapacity"] == 1
    assert [c["InstanceType"] for c in instances["MasterInstanceFleet"]["InstanceTypeConfigs"]] == ["m7g.xlarge"]
    assert instances["CoreInstanceFleet"]["TargetOnDemandCapacity"] == 1
    assert [c["InstanceType"] for c in instances["CoreInstanceFleet"]["InstanceTypeConfigs"]] == ["m7g.4xlarge"]
    assert cluster["ManagedScalingPolicy"]["ComputeLimits"] == {
        "UnitType": "InstanceFleetUnits",
        "MinimumCapacityUnits": 1,
        "MaximumCapacityUnits": 10,
    }
    # And it runs with the roles, instance profile and security configuration shared with per-job clusters
    for key in ("ServiceRole", "JobFlowRole", "SecurityConfiguration"):
        assert "Ref" in cluster[key], key
    assert "logs" in str(cluster["LogUri"])


def should_hold_the_spark_settings_the_emr_launcher_gives_per_job_clusters(synthesized: Any) -> None:
    # Given the launcher's Spark settings for EMR hosts (per-job clusters)
    launchers = pytest.importorskip("sleeper.adapters.aws.launchers.emr")
    properties = synthesized.stack.core.ctx.properties
    # When the persistent cluster's executor hosts are read
    _, cluster = _cluster(synthesized)
    (executor,) = cluster["Instances"]["CoreInstanceFleet"]["InstanceTypeConfigs"]
    defaults = {c["Classification"]: c for c in executor["Configurations"]}["spark-defaults"]
    # Then their spark-defaults are exactly the launcher's, so steps need pass only the job's own sparkConf
    assert defaults["ConfigurationProperties"] == launchers.emr_spark_conf(properties, "arm64")


def should_build_fleets_from_weighted_instance_types_of_each_architecture() -> None:
    # Given properties asking for both architectures and weighted executor types
    properties = InstanceProperties(
        {
            "sleeper.id": "p",
            "sleeper.bulk.import.persistent.emr.instance.architecture": "x86_64,arm64",
            "sleeper.bulk.import.persistent.emr.executor.x86.instance.types": "m7i.4xlarge,2,m7i.8xlarge,4",
            "sleeper.bulk.import.persistent.emr.executor.arm.instance.types": "m7g.4xlarge",
        }
    )
    # When the executor fleet is built
    instances = persistent_emr._instances(properties, ["subnet-1"])
    fleet = instances.core_instance_fleet
    # Then every type of each architecture is there with its weight, and the cluster outlives its steps
    types = [(c.instance_type, c.weighted_capacity) for c in fleet.instance_type_configs]  # type: ignore[union-attr]
    assert types == [("m7i.4xlarge", 2), ("m7i.8xlarge", 4), ("m7g.4xlarge", None)]
    assert instances.keep_job_flow_alive_when_no_steps is True
    with pytest.raises(ValueError, match="without an instance type"):
        persistent_emr.instance_types(["3", "m7g.xlarge"])


def should_feed_the_registry_starter_from_the_queue_on_the_persistent_platform(synthesized: Any) -> None:
    # Given the starter and the job queue
    spec = operations.handler(operations.BULK_IMPORT_STARTER)
    starter_id, starter = _starter(synthesized)
    (queue_id,) = [
        i
        for i, p in _resources(synthesized, "AWS::SQS::Queue").items()
        if p["QueueName"] == "sleeper-example-BulkImportPersistentEMRQ"
    ]
    # When its event source mappings are read
    mappings = [m for m in _resources(synthesized, "AWS::Lambda::EventSourceMapping").values()
                if m["FunctionName"] == {"Ref": starter_id}]  # fmt: skip
    # Then it runs the registry's handler on the persistent platform, fed by the queue one job at a time
    assert starter["ImageConfig"]["Command"] == [spec.lambda_command]
    assert starter["Environment"]["Variables"]["BULK_IMPORT_PLATFORM"] == "PersistentEMR"
    assert [m["EventSourceArn"] for m in mappings] == [{"Fn::GetAtt": [queue_id, "Arn"]}]
    assert mappings[0]["BatchSize"] == 1
    assert mappings[0]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def should_scope_the_starters_emr_permissions_to_the_cluster(synthesized: Any) -> None:
    # Given the starter's role and the cluster
    _, starter = _starter(synthesized)
    cluster_id, _ = _cluster(synthesized)
    statements = _statements(synthesized, starter["Role"]["Fn::GetAtt"][0])
    # When its EMR statements are read
    emr = [s for s in statements if any(a.startswith("elasticmapreduce:") for a in _actions(s))]
    on_cluster = [s for s in emr if set(_actions(s)) == EMR_ACTIONS]
    elsewhere = {a for s in emr if s not in on_cluster for a in _actions(s)}
    # Then steps may be added, listed and the cluster described only on that cluster's ARN
    assert len(on_cluster) == 1
    assert {"Ref": cluster_id} in on_cluster[0]["Resource"]["Fn::Join"][1]
    assert ":cluster/" in str(on_cluster[0]["Resource"])
    # And the only EMR call on every resource is ListClusters, which has no resource-level permissions
    assert elsewhere == {"elasticmapreduce:ListClusters"}
    assert not any("iam:PassRole" in _actions(s) for s in statements)


def should_let_the_starter_requeue_jobs_when_the_cluster_is_full(synthesized: Any) -> None:
    # Given the starter's role and the job queue
    _, starter = _starter(synthesized)
    statements = _statements(synthesized, starter["Role"]["Fn::GetAtt"][0])
    (queue_id,) = [
        i
        for i, p in _resources(synthesized, "AWS::SQS::Queue").items()
        if p["QueueName"] == "sleeper-example-BulkImportPersistentEMRQ"
    ]
    # Then it may send to its own queue
    sends = [s for s in statements if "sqs:SendMessage" in _actions(s)]
    assert any(s["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]} for s in sends)


def should_record_the_cluster_name_and_queue_for_the_starter(synthesized: Any) -> None:
    # When the deployment-set properties are read
    properties = synthesized.stack.core.cdk_properties
    # Then the starter finds the cluster by name and the queue to requeue on
    assert properties["sleeper.bulk.import.persistent.emr.cluster.name"] == "sleeper-example-persistentEMR"
    assert "sleeper.bulk.import.persistent.emr.job.queue.url" in properties
    assert "sleeper.bulk.import.persistent.emr.job.queue.arn" in properties
    synthesized.template(TEMPLATE).has_resource_properties(
        "AWS::EMR::Cluster",
        {"VisibleToAllUsers": True, "Instances": Match.object_like({"TerminationProtected": False})},
    )
