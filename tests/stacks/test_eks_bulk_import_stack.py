"""EksBulkImportStack as the example instance deploys it (``sleeper.optional.stacks`` names it): BulkImportEKSQ
feeding the bulk import starter, which may only start executions of the state machine; the EKS cluster on Fargate
with the jobs' namespace, Fargate profile, service accounts and namespaced roles; the state machine running
spark-submit as a Kubernetes job and recording a failed run; the deployment-set properties; the ingest batcher
allowed to send to the queue; and the settings refused at synthesis."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sleeper.core.properties import instance_cdk as cdkp

pytestmark = pytest.mark.slow

NAME = "sleeper-example-bulk-import-eks"


def _resources(synthesized: Any, kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in synthesized.json("EksBulkImport")["Resources"].values() if r["Type"] == kind]


def _statements(synthesized: Any, template: str, role_fragment: str) -> list[dict[str, Any]]:
    """The statements of the inline policies attached to roles whose logical id holds a fragment."""
    found = []
    for resource in synthesized.json(template)["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        roles = json.dumps(resource["Properties"]["Roles"])
        if role_fragment in roles:
            found += resource["Properties"]["PolicyDocument"]["Statement"]
    return found


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for s in statements:
        out |= {s["Action"]} if isinstance(s["Action"], str) else set(s["Action"])
    return out


def should_deploy_the_queue_and_a_starter_that_may_only_start_this_state_machine(synthesized: Any) -> None:
    queues = {q["QueueName"]: q for q in _resources(synthesized, "AWS::SQS::Queue")}
    assert set(queues) == {"sleeper-example-BulkImportEKSQ", "sleeper-example-BulkImportEKSDLQ"}
    starter = [
        f
        for f in _resources(synthesized, "AWS::Lambda::Function")
        if f.get("FunctionName") == "sleeper-example-bulk-import-eks-start"
    ]
    assert len(starter) == 1 and starter[0]["Environment"]["Variables"]["BULK_IMPORT_PLATFORM"] == "EKS"
    actions = _actions(_statements(synthesized, "EksBulkImport", "JobStarterRole"))
    assert "states:StartExecution" in actions
    assert not any(a.startswith("eks:") or a in ("states:*", "*") for a in actions)
    (mapping,) = _resources(synthesized, "AWS::Lambda::EventSourceMapping")
    assert "JobQueue" in json.dumps(mapping["EventSourceArn"])


def should_run_the_cluster_on_fargate_with_the_jobs_namespace(synthesized: Any) -> None:
    (cluster,) = _resources(synthesized, "Custom::AWSCDK-EKS-Cluster")
    assert cluster["Config"]["name"] == NAME and cluster["Config"]["version"] == "1.35"
    assert cluster["Config"]["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    profiles = [p["Config"] for p in _resources(synthesized, "Custom::AWSCDK-EKS-FargateProfile")]
    assert {"namespace": NAME} in [s for p in profiles for s in p["selectors"]]
    manifests = json.dumps([m["Manifest"] for m in _resources(synthesized, "Custom::AWSCDK-EKS-KubernetesResource")])
    for fragment in (
        '\\"kind\\":\\"Namespace\\",\\"metadata\\":{\\"name\\":\\"sleeper-example-bulk-import-eks\\"',
        '\\"kind\\":\\"ServiceAccount\\",\\"metadata\\":{\\"name\\":\\"spark-submit\\"',
        '\\"kind\\":\\"Role\\",\\"metadata\\":{\\"name\\":\\"step-function\\"',
        '\\"kind\\":\\"Group\\",\\"name\\":\\"sleeper-step-function\\"',
        "aws-observability",
    ):
        assert fragment in manifests, fragment
    # And the step function's Kubernetes role may only run jobs and read or delete pods in the namespace
    assert (
        '\\"resources\\":[\\"jobs\\"],\\"verbs\\":[\\"create\\",\\"get\\",\\"list\\",\\"watch\\",\\"delete\\"]'
        in manifests
    )
    (entry,) = _resources(synthesized, "AWS::EKS::AccessEntry")
    assert entry["KubernetesGroups"] == ["sleeper-step-function"] and "AccessPolicies" not in entry


def should_give_the_spark_service_account_the_jobs_permissions_only(synthesized: Any) -> None:
    statements = _statements(synthesized, "EksBulkImport", "SparkServiceAccountRole")
    actions = _actions(statements)
    assert {"s3:GetObject", "s3:PutObject", "dynamodb:PutItem"} <= actions
    assert not any(a.endswith(":*") or a == "*" for a in actions)
    assert not any(a.startswith(("states:", "eks:", "iam:")) for a in actions)
    assert {a for a in actions if a.startswith("sqs:")} <= {
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
    }


def should_run_spark_submit_as_a_kubernetes_job_and_record_a_failed_run(synthesized: Any) -> None:
    (machine,) = _resources(synthesized, "AWS::StepFunctions::StateMachine")
    assert machine["StateMachineName"] == NAME
    definition = json.dumps(machine["DefinitionString"])
    for fragment in (
        "states:::eks:runJob.sync",
        '\\"serviceAccountName\\":\\"spark-submit\\"',
        '\\"args.$\\":\\"$.args\\"',
        "EXECUTOR_POD_TEMPLATE",
        "SLEEPER_SPARK_IMAGE",
        "states:::eks:call",
        "/api/v1/namespaces/sleeper-example-bulk-import-eks/pods/{}",
        "/apis/batch/v1/namespaces/sleeper-example-bulk-import-eks/jobs/{}",
        '\\"RecordFailure\\"',
        "CheckSparkJobResult",
    ):
        assert fragment in definition, fragment
    recorder = [
        f
        for f in _resources(synthesized, "AWS::Lambda::Function")
        if f.get("FunctionName") == "sleeper-example-bulk-import-eks-failure"
    ]
    assert len(recorder) == 1


def should_record_every_deployment_set_eks_property(synthesized: Any) -> None:
    properties = synthesized.stack.core.cdk_properties
    for prop in (
        cdkp.BULK_IMPORT_EKS_JOB_QUEUE_URL,
        cdkp.BULK_IMPORT_EKS_JOB_QUEUE_ARN,
        cdkp.BULK_IMPORT_EKS_STATE_MACHINE_ARN,
        cdkp.BULK_IMPORT_EKS_NAMESPACE,
        cdkp.BULK_IMPORT_EKS_CLUSTER_NAME,
        cdkp.BULK_IMPORT_EKS_CLUSTER_ENDPOINT,
        cdkp.BULK_IMPORT_EKS_CLUSTER_CA_DATA,
    ):
        assert prop.name in properties, prop.name
    assert properties[cdkp.BULK_IMPORT_EKS_NAMESPACE.name] == NAME


def should_let_the_ingest_batcher_send_jobs_to_the_eks_queue(synthesized: Any) -> None:
    statements = _statements(synthesized, "IngestBatcher", "JobCreator")
    sends = [s for s in statements if "sqs:SendMessage" in _actions([s])]
    assert "EksBulkImport" in json.dumps(sends)


@pytest.mark.parametrize(
    ("cluster_type", "native", "refused"),
    [
        ("fargate", False, None),
        ("FARGATE", False, None),
        ("automode", False, "on Fargate only"),
        ("fargate", True, "native"),
    ],
)
def should_refuse_eks_settings_this_port_does_not_deploy(cluster_type: str, native: bool, refused: str | None) -> None:
    from stacks.eks_bulk_import import EksSettingsError, check_eks_settings

    if refused is None:
        check_eks_settings(cluster_type, native)
        return
    with pytest.raises(EksSettingsError, match=refused):
        check_eks_settings(cluster_type, native)
