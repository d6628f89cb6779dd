"""EksBulkImportStack as the example instance deploys it (``sleeper.optional.stacks`` names it): BulkImportEKSQ
feeding the bulk import starter, which may only start executions of the state machine; the EKS cluster on Fargate
with the jobs' namespace, Fargate profile, service accounts and namespaced roles; the state machine running
spark-submit as a Kubernetes job and recording a failed run; the deployment-set properties; the ingest batcher
allowed to send to the queue; and the settings refused at synthesis.

Then the same stack with ``sleeper.bulk.import.eks.cluster.type=automode``, synthesized once for this module: an EKS
Auto Mode cluster (compute, block storage and load balancing on, the node role's minimal policies, no Fargate
profile) with the same queue, state machine, namespace and service accounts, passing cdk-nag and cfn-lint."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sleeper.core.properties import instance_cdk as cdkp
from tests.stacks.conftest import cfn_lint

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
        ("automode", False, None),
        ("AUTOMODE", False, None),
        ("ec2", False, "must be one of fargate, automode"),
        ("fargate", True, "native"),
    ],
)
def should_refuse_eks_settings_this_port_does_not_deploy(cluster_type: str, native: bool, refused: str | None) -> None:
    from sleeper.cdk.eks_bulk_import import EksSettingsError, check_eks_settings

    if refused is None:
        assert check_eks_settings(cluster_type, native) == cluster_type.lower()
        return
    with pytest.raises(EksSettingsError, match=refused):
        check_eks_settings(cluster_type, native)


AUTOMODE_PROPERTIES = {
    "sleeper.id": "example",
    "sleeper.optional.stacks": "EksBulkImportStack",
    "sleeper.tags": "project,sleeper,environment,example",
    "sleeper.bulk.import.eks.cluster.type": "automode",
    "sleeper.bulk.import.eks.cluster.admin.roles": "sleeper-admin",
    "sleeper.bulk.import.eks.api.allowed.security.groups": "sg-0123456789abcdef0",
}


@dataclass(frozen=True)
class AutoMode:
    app: Any
    outdir: Path
    template: Mapping[str, Any]


@pytest.fixture(scope="module")
def automode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AutoMode]:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from sleeper.cdk import app as sleeper_app

    directory = tmp_path_factory.mktemp("automode")
    path = directory / "instance.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in AUTOMODE_PROPERTIES.items()), encoding="utf-8")
    app = cdk.App(
        analytics_reporting=False,
        outdir=str(directory / "cdk.out"),
        context={"artefacts": "ecr", "propertiesFile": str(path)},
    )
    stack = sleeper_app.build(app)
    app.synth()
    yield AutoMode(app, directory / "cdk.out", Template.from_stack(stack.parts["EksBulkImport"]).to_json())


def _of(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r.get("Properties", {}) for k, r in template["Resources"].items() if r["Type"] == kind}


def _managed_policies(role: dict[str, Any]) -> set[str]:
    return {json.dumps(arn).split(":iam::aws:policy/")[1].split('"')[0] for arn in role["ManagedPolicyArns"]}


def should_run_an_auto_mode_cluster_with_compute_storage_and_load_balancing(automode: AutoMode) -> None:
    # When the automode stack's cluster is read
    (cluster,) = _of(automode.template, "AWS::EKS::Cluster").values()

    # Then it is the native cluster on Auto Mode: the general-purpose node pool, block storage, load balancing
    assert cluster["Name"] == NAME and cluster["Version"] == "1.35"
    assert cluster["ComputeConfig"]["Enabled"] is True
    assert cluster["ComputeConfig"]["NodePools"] == ["general-purpose"]
    assert cluster["StorageConfig"] == {"BlockStorage": {"Enabled": True}}
    assert cluster["KubernetesNetworkConfig"]["ElasticLoadBalancing"] == {"Enabled": True}
    # And access is by access entries only, with no admin access for whoever deploys it
    assert cluster["AccessConfig"] == {"AuthenticationMode": "API", "BootstrapClusterCreatorAdminPermissions": False}
    assert len(cluster["Logging"]["ClusterLogging"]["EnabledTypes"]) == 5
    # And no Fargate profile, nor Fargate's pod log router
    assert _of(automode.template, "AWS::EKS::FargateProfile") == {}
    assert _of(automode.template, "Custom::AWSCDK-EKS-FargateProfile") == {}
    assert "aws-observability" not in json.dumps(automode.template)


def should_give_the_auto_mode_roles_only_the_policies_aws_documents(automode: AutoMode) -> None:
    # Given the cluster and its node role
    (cluster,) = _of(automode.template, "AWS::EKS::Cluster").values()
    roles = _of(automode.template, "AWS::IAM::Role")
    node_role = roles[cluster["ComputeConfig"]["NodeRoleArn"]["Fn::GetAtt"][0]]
    cluster_role = roles[cluster["RoleArn"]["Fn::GetAtt"][0]]

    # Then the node role has the minimal worker node and pull-only registry policies, trusted by EC2
    assert _managed_policies(node_role) == {"AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly"}
    assert node_role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    # And the cluster role the five Auto Mode policies, trusted by EKS with session tags
    assert _managed_policies(cluster_role) == {
        "AmazonEKSClusterPolicy",
        "AmazonEKSComputePolicy",
        "AmazonEKSBlockStoragePolicy",
        "AmazonEKSLoadBalancingPolicy",
        "AmazonEKSNetworkingPolicy",
    }
    (trust,) = cluster_role["AssumeRolePolicyDocument"]["Statement"]
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    # And the node role has no inline policy beside them
    assert not [
        p for p in _of(automode.template, "AWS::IAM::Policy").values() if "AutoModeNode" in json.dumps(p["Roles"])
    ]


def should_reach_the_auto_mode_cluster_with_the_same_access_and_accounts(automode: AutoMode) -> None:
    # When the access entries and manifests are read
    entries = list(_of(automode.template, "AWS::EKS::AccessEntry").values())
    groups = [e for e in entries if "KubernetesGroups" in e]
    admins = [e for e in entries if "AccessPolicies" in e]

    # Then the state machine's role maps to the step function group only, with no access policy
    (machine,) = groups
    assert machine["KubernetesGroups"] == ["sleeper-step-function"]
    assert "EksBulkImportStateMachineRole" in json.dumps(machine["PrincipalArn"])
    # And cluster admins are CDK's kubectl provider (applies the manifests) and the configured admin role only
    assert len(admins) == 2
    principals = json.dumps([a["PrincipalArn"] for a in admins])
    assert "KubectlProviderHandlerServiceRole" in principals and "role/sleeper-admin" in principals
    # And the namespace, service accounts and RBAC are the Fargate stack's
    manifests = json.dumps(
        [m["Manifest"] for m in _of(automode.template, "Custom::AWSCDK-EKS-KubernetesResource").values()]
    )
    for fragment in (
        '\\"kind\\":\\"Namespace\\",\\"metadata\\":{\\"name\\":\\"sleeper-example-bulk-import-eks\\"',
        '\\"kind\\":\\"ServiceAccount\\",\\"metadata\\":{\\"name\\":\\"spark-submit\\"',
        '\\"kind\\":\\"Group\\",\\"name\\":\\"sleeper-step-function\\"',
    ):
        assert fragment in manifests, fragment
    # And the spark account's role is assumed through the cluster's native OIDC provider (IRSA) with the jobs' grants
    assert len(_of(automode.template, "AWS::IAM::OIDCProvider")) == 1
    assert _of(automode.template, "Custom::AWSCDKOpenIdConnectProvider") == {}
    spark = [r for k, r in _of(automode.template, "AWS::IAM::Role").items() if "SparkServiceAccountRole" in k]
    assert spark[0]["AssumeRolePolicyDocument"]["Statement"][0]["Action"] == "sts:AssumeRoleWithWebIdentity"
    # And the allowed security group may reach the API
    (ingress,) = _of(automode.template, "AWS::EC2::SecurityGroupIngress").values()
    assert ingress["SourceSecurityGroupId"] == "sg-0123456789abcdef0" and ingress["FromPort"] == 443


def _without_cluster_ids(template: Mapping[str, Any], value: Any) -> str:
    """A resource's JSON with the cluster's logical id (which differs between the two constructs) replaced."""
    text = json.dumps(value, sort_keys=True)
    for kind in ("AWS::EKS::Cluster", "Custom::AWSCDK-EKS-Cluster"):
        for logical_id in _of(template, kind):
            text = text.replace(logical_id, "CLUSTER")
    return text


def should_deploy_the_same_queue_and_state_machine_as_on_fargate(automode: AutoMode, synthesized: Any) -> None:
    # Given the Fargate stack of the example instance
    fargate = synthesized.json("EksBulkImport")

    # Then the queues are the same
    def queues(template: Mapping[str, Any]) -> list[str]:
        return sorted(json.dumps(q, sort_keys=True) for q in _of(template, "AWS::SQS::Queue").values())

    assert queues(automode.template) == queues(fargate)
    # And the state machine is the same, naming the cluster by its name, endpoint and certificate authority
    (auto_machine,) = _of(automode.template, "AWS::StepFunctions::StateMachine").values()
    (fargate_machine,) = _of(fargate, "AWS::StepFunctions::StateMachine").values()
    assert auto_machine["StateMachineName"] == NAME
    assert _without_cluster_ids(automode.template, auto_machine["DefinitionString"]) == _without_cluster_ids(
        fargate, fargate_machine["DefinitionString"]
    )
    # And the starter may still only start its executions
    actions = _actions(
        [
            s
            for p in _of(automode.template, "AWS::IAM::Policy").values()
            if "JobStarterRole" in json.dumps(p["Roles"])
            for s in p["PolicyDocument"]["Statement"]
        ]
    )
    assert "states:StartExecution" in actions and not any(a.startswith("eks:") for a in actions)


def should_pass_cdk_nag_and_cfn_lint_on_auto_mode(automode: AutoMode) -> None:
    cdk_nag = pytest.importorskip("cdk_nag")
    pytest.importorskip("cfnlint.api")

    # When cdk-nag checks the app and cfn-lint every template (as tests/stacks/test_nag.py and test_iac_checks.py)
    report = cdk_nag.AwsSolutionsChecks().validate_scope(automode.app)
    matches = [
        (path.name, rule, message)
        for path in sorted(automode.outdir.glob("*.template.json"))
        for rule, message in cfn_lint(path.read_text(encoding="utf-8"), "eu-west-2")
    ]

    # Then nothing is left unacknowledged, and cfn-lint finds no error and only W3005 (see test_iac_checks.py)
    assert [(v.rule_name, [r.construct_path for r in v.violating_resources]) for v in report.violations] == []
    assert [m for m in matches if m[1].startswith("E")] == []
    assert {m[1] for m in matches} <= {"W3005"}
