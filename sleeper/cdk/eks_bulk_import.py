"""Bulk import on EKS (Sleeper's ``EksBulkImportStack``): ``BulkImportEKSQ`` feeding the bulk import starter, an EKS
cluster on Fargate or on EKS Auto Mode (``sleeper.bulk.import.eks.cluster.type``; Auto Mode in
:mod:`sleeper.cdk.eks_automode`) with the jobs' namespace and service accounts, and a Step Functions state machine that
runs each job's ``spark-submit`` as a Kubernetes job (the EKS ``runJob`` integration), deletes the finished job and
its driver pod, and records a run whose Kubernetes job did not succeed as failed in the ingest job tracker. Only the
cluster differs between the two types: everything else is applied to either in the same way.

Names: the cluster, namespace, Fargate profile (on Fargate) and state machine are
``sleeper-<id>-bulk-import-eks``; the service accounts ``spark-submit`` (the Kubernetes job: creates the driver pod)
and ``spark`` (the driver: creates executor pods; its IAM role, through the cluster's OIDC provider, is the only one
that may read the inputs and commit to the tables); the image is ``bulk-import-eks`` (``containers/bulk-import-eks``).

Least privilege: the starter may only start executions of this state machine (Sleeper gives it ``eks:*`` and
``states:*``); the state machine's role reaches the cluster through an access entry mapped to a Kubernetes group whose
role allows only jobs in the namespace, and reading and deleting pods there (Sleeper maps it to
``AmazonEKSEditPolicy``); the Spark roles are namespaced, limited to pods, services and config maps; the failure
recorder may only read the config and write the ingest job tracker.

Refused at synthesis, with the reason: ``sleeper.bulk.import.eks.is.native.libs.image=true`` (this port builds one
image, without Sleeper's native Hadoop libraries), and a cluster type other than fargate or automode (reachable only
with validation off).
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_eks_v2 as eks_v2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.bulk_import import grant_job, job_starter
from sleeper.cdk.common import SleeperCore
from sleeper.cdk.eks_automode import NATIVE_OIDC_PROVIDER, acknowledge_automode, automode_cluster
from sleeper.core import naming, operations
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_eks as eksp

__all__ = ["EksBulkImportStack", "EksSettingsError", "check_eks_settings"]

SUBMIT_ACCOUNT = "spark-submit"
SPARK_ACCOUNT = "spark"
STEP_FUNCTION_GROUP = "sleeper-step-function"
"""The Kubernetes group the state machine's role is mapped to."""
_SPARK_RULES = [{"apiGroups": [""], "resources": ["pods", "services", "configmaps"], "verbs": ["*"]}]
_STEP_FUNCTION_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch", "delete"]},
]

EKS_CLUSTER_RESOURCES = (
    "CDK's EKS cluster resource handlers and kubectl provider (Lambda functions and their roles, made by the "
    "aws_eks module) use AWS managed policies, wildcard resources where EKS and CloudFormation need them and a "
    "runtime chosen by CDK; they run only during deployment."
)
EKS_PUBLIC_ENDPOINT = (
    "The Kubernetes API endpoint is public and private, as in Sleeper: the EKS runJob integration of Step Functions "
    "and the deployment's kubectl provider reach it; every call is authenticated with IAM and authorised by "
    "Kubernetes RBAC. sleeper.bulk.import.eks.api.allowed.security.groups adds ingress from given security groups."
)
FARGATE_POD_LOGS = (
    "Fargate pods' log router (Fluent Bit) creates log streams under the bulk import EKS log group; its pod "
    "execution role may only write logs, on any stream AWS creates for it."
)
STATE_MACHINE_TASKS = (
    "The state machine's Lambda invoke of the failure recorder (CDK adds '<function>:*' for its versions) and the "
    "EKS integration, which needs no IAM permission beyond the cluster's access entry."
)


EksCluster = eks.FargateCluster | eks_v2.Cluster
"""The Fargate cluster (``aws_eks``, its cluster a custom resource) or the Auto Mode one (``aws_eks_v2``, the native
``AWS::EKS::Cluster``): both apply manifests through a kubectl provider, make IRSA service accounts and give the
name, endpoint and certificate authority the state machine's EKS tasks need, so everything else is shared."""


class EksSettingsError(ValueError):
    """The EKS properties ask for something this port does not deploy."""


def check_eks_settings(cluster_type: str | None, native_libs_image: bool) -> str:
    """The cluster type to deploy (``fargate`` or ``automode``), refusing EKS settings this port cannot honour (see the
    module docstring).

    Raises:
        EksSettingsError: Naming the property and what to set instead.
    """
    kind = (cluster_type or "fargate").lower()
    if kind not in eksp.EKS_CLUSTER_TYPES:
        raise EksSettingsError(
            f"{eksp.BULK_IMPORT_EKS_CLUSTER_TYPE.name}={cluster_type}: the EKS cluster type must be one of "
            f"{', '.join(eksp.EKS_CLUSTER_TYPES)}"
        )
    if native_libs_image:
        raise EksSettingsError(
            f"{eksp.EKS_IS_NATIVE_LIBS_IMAGE.name}=true: this port builds one EKS image (containers/bulk-import-eks), "
            "without Sleeper's native Hadoop libraries; set it to false"
        )
    return kind


def _eks_state(state_json: dict[str, Any], cluster: EksCluster, namespace: str) -> dict[str, Any]:
    """An EKS task state's JSON with the cluster's connection parameters."""
    parameters = {
        "ClusterName": cluster.cluster_name,
        "CertificateAuthority": cluster.cluster_certificate_authority_data,
        "Endpoint": cluster.cluster_endpoint,
        **state_json.pop("Parameters"),
    }
    if "Job" in parameters:
        parameters["Namespace"] = namespace
    return {"Type": "Task", "Parameters": parameters, **state_json}


class EksBulkImportStack(cdk.NestedStack):
    """``sleeper-<id>-BulkImportEKSQ`` and its starter, the ``sleeper-<id>-bulk-import-eks`` cluster on Fargate or Auto
    Mode, its namespace, service accounts and roles, and the state machine running jobs on it."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, bucket: cdk.aws_s3.IBucket) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import on EKS")
        ctx = core.ctx
        self.cluster_type = check_eks_settings(
            ctx.get(eksp.BULK_IMPORT_EKS_CLUSTER_TYPE), ctx.get_bool(eksp.EKS_IS_NATIVE_LIBS_IMAGE)
        )
        if self.cluster_type == "automode":  # before any child construct: context cannot be set after
            self.node.set_context(NATIVE_OIDC_PROVIDER, True)
        if core.vpc is None:
            raise RuntimeError("EKS bulk import needs the instance VPC")
        name = ctx.function_name(naming.BULK_IMPORT_EKS)
        self.queue, self.starter = job_starter(
            self,
            core,
            platform="EKS",
            logical_name=operations.BULK_IMPORT_EKS_Q,
            bucket=bucket,
        )
        # Both cluster constructs apply manifests through their kubectl provider and make IRSA service accounts, so
        # the namespace, accounts, RBAC, access entries and state machine below are the same for either.
        self.cluster: EksCluster
        if self.cluster_type == "automode":
            self.cluster = self._automode_cluster(core, name)
        else:
            self.cluster = self._cluster(core, name)
        self.namespace = self.cluster.add_manifest(
            "EksBulkImportNamespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        self.spark_account = self.cluster.add_service_account("SparkServiceAccount", name=SPARK_ACCOUNT, namespace=name)
        self.spark_account.node.add_dependency(self.namespace)
        grant_job(self.spark_account.role, core, bucket)
        self._manifests(name)
        self.failure_recorder = core.lambdas.function(
            self,
            "JobFailureRecorder",
            handler=operations.BULK_IMPORT_EKS_FAILURE,
            name_suffix=f"{naming.BULK_IMPORT_EKS}-failure",
            description="Records a bulk import run failed when its Kubernetes job on EKS did not succeed",
        )
        grants.config_read(self.failure_recorder, core.config)
        grants.table_read_write(self.failure_recorder, *core.ingest_tracker_tables)
        self.state_machine = self._state_machine(core, name)
        self.state_machine.grant_start_execution(self.starter)
        eks.CfnAccessEntry(
            self,
            "StateMachineAccessEntry",
            cluster_name=self.cluster.cluster_name,
            principal_arn=self.state_machine.role.role_arn,
            kubernetes_groups=[STEP_FUNCTION_GROUP],
            type="STANDARD",
        )
        for role in ctx.get_list(eksp.EKS_CLUSTER_ADMIN_ROLES):
            role_arn = iam.Role.from_role_name(self, f"Role{role}", role).role_arn
            if isinstance(self.cluster, eks_v2.Cluster):
                self.cluster.grant_cluster_admin(f"ClusterAccessFor{role}", role_arn)
            else:
                admin = eks.AccessPolicy.from_access_policy_name(
                    "AmazonEKSClusterAdminPolicy", access_scope_type=eks.AccessScopeType.CLUSTER
                )
                self.cluster.grant_access(f"ClusterAccessFor{role}", role_arn, [admin])
        for group in ctx.get_list(eksp.EKS_API_ALLOWED_SECURITY_GROUPS):
            self.cluster.cluster_security_group.add_ingress_rule(
                ec2.Peer.security_group_id(group), ec2.Port.tcp(443), f"Allow {group} to reach the Kubernetes API"
            )
        core.set(cdkp.BULK_IMPORT_EKS_CLUSTER_NAME, self.cluster.cluster_name)
        core.set(cdkp.BULK_IMPORT_EKS_CLUSTER_ENDPOINT, self.cluster.cluster_endpoint)
        core.set(cdkp.BULK_IMPORT_EKS_CLUSTER_CA_DATA, self.cluster.cluster_certificate_authority_data)
        core.set(cdkp.BULK_IMPORT_EKS_NAMESPACE, name)
        core.set(cdkp.BULK_IMPORT_EKS_STATE_MACHINE_ARN, self.state_machine.state_machine_arn)
        self._acknowledge_state_machine()
        if isinstance(self.cluster, eks_v2.Cluster):
            acknowledge_automode(self, self.cluster)
        else:
            self._acknowledge(name)

    def _acknowledge_state_machine(self) -> None:
        recorder = self.get_logical_id(self.failure_recorder.node.default_child)  # type: ignore[arg-type]
        for rule in ("IAM5[Resource::*]", f"IAM5[Resource::<{recorder}.Arn>:*]"):
            nag.acknowledge(self.state_machine, rule, STATE_MACHINE_TASKS)
        nag.acknowledge(self.cluster, "EKS1", EKS_PUBLIC_ENDPOINT)

    def _acknowledge(self, name: str) -> None:
        """The cdk-nag findings of the Fargate cluster: CDK's own EKS machinery (the cluster's roles and resource
        handlers, the kubectl provider) and the pod logs' generated policy, each acknowledged by its exact id."""
        for policy in (
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonEKSClusterPolicy",
            "AmazonEKSFargatePodExecutionRolePolicy",
            "service-role/AWSLambdaBasicExecutionRole",
            "service-role/AWSLambdaVPCAccessExecutionRole",
        ):
            nag.acknowledge(self, f"IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]", EKS_CLUSTER_RESOURCES)
        public_ecr = "AmazonElasticContainerRegistryPublicReadOnly"
        condition = self.cluster.node.try_find_child("HasEcrPublic")
        if isinstance(condition, cdk.CfnCondition):  # CDK's kubectl role may pull from ECR Public
            policy = json.dumps(
                {
                    "Fn::If": [
                        self.get_logical_id(condition),
                        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::aws:policy/{public_ecr}"]]},
                        {"Ref": "AWS::NoValue"},
                    ]
                },
                separators=(",", ":"),
            )  # fmt: skip
            nag.acknowledge(self, f"IAM4[Policy::{policy}]", EKS_CLUSTER_RESOURCES)
        for rule in ("IAM5[Resource::*]", *self._provider_resources(name)):
            nag.acknowledge(self.cluster, rule, EKS_CLUSTER_RESOURCES)
        for construct in ("@aws-cdk--aws-eks.ClusterResourceProvider", "@aws-cdk--aws-eks.KubectlProvider"):
            provider = self.node.try_find_child(construct)
            if provider is not None:
                for rule in ("SF1", "SF2", "L1", *self._provider_resources(name)):
                    nag.acknowledge(provider, rule, EKS_CLUSTER_RESOURCES)
        logs_id = self.get_logical_id(self.log_group.node.default_child)  # type: ignore[arg-type]
        nag.acknowledge(self.cluster, f"IAM5[Resource::<{logs_id}.Arn>:*]", FARGATE_POD_LOGS)

    def _provider_resources(self, name: str) -> list[str]:
        """The resource wildcards in the policies of CDK's EKS handlers: each handler's versions, and the cluster's
        and its Fargate profiles' sub-resources."""
        ids = [
            "Handler886CB40B",
            "IsCompleteHandler7073F4DA",
            "OnEventHandler42BEBAE0",
            "ProviderframeworkisComplete26D7B0CB",
            "ProviderframeworkonTimeout0B47CA38",
        ]
        arn = grants.shown(f"arn:{cdk.Aws.PARTITION}:eks:{self.region}:{self.account}")  # concrete given an env
        return [
            *(f"IAM5[Resource::<{i}.Arn>:*]" for i in ids),
            f"IAM5[Resource::{arn}:cluster/{name}/*]",
            f"IAM5[Resource::{arn}:fargateprofile/{name}/*]",
        ]

    def _automode_cluster(self, core: SleeperCore, name: str) -> eks_v2.Cluster:
        assert core.vpc is not None
        selection = core.subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        return automode_cluster(self, name, core.vpc, selection, core.ctx.get(eksp.BULK_IMPORT_EKS_AWSCLI_LAYER_ARN))

    def _cluster(self, core: SleeperCore, name: str) -> eks.FargateCluster:
        from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

        ctx = core.ctx
        selection = core.subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        awscli = ctx.get(eksp.BULK_IMPORT_EKS_AWSCLI_LAYER_ARN)
        cluster = eks.FargateCluster(
            self,
            "EksBulkImportCluster",
            cluster_name=name,
            version=eks.KubernetesVersion.V1_35,
            kubectl_layer=KubectlV35Layer(self, "KubectlLayer"),
            awscli_layer=lambda_.LayerVersion.from_layer_version_arn(self, "AwsCliLayer", awscli) if awscli else None,
            vpc=core.vpc,
            vpc_subnets=[selection],
            authentication_mode=eks.AuthenticationMode.API_AND_CONFIG_MAP,
            cluster_logging=list(eks.ClusterLoggingTypes),
        )
        profile = cluster.add_fargate_profile(
            "EksBulkImportFargateProfile",
            fargate_profile_name=name,
            selectors=[eks.Selector(namespace=name)],
            vpc=core.vpc,
            subnet_selection=selection,
        )
        self._pod_logging(core, cluster, profile, name)
        return cluster

    def _pod_logging(
        self, core: SleeperCore, cluster: eks.FargateCluster, profile: eks.FargateProfile, name: str
    ) -> None:
        """Fargate's log router sends the pods' output to ``sleeper-<id>-bulk-import-eks`` in CloudWatch Logs."""
        ctx = core.ctx
        self.log_group = logs.LogGroup(
            self,
            "PodLogs",
            log_group_name=name,
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=ctx.log_removal_policy,
        )
        observability = cluster.add_manifest(
            "LoggingNamespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "aws-observability", "labels": {"aws-observability": "enabled"}},
            },
        )
        output = (
            "[OUTPUT]\n    Name cloudwatch_logs\n    Match *\n"
            f"    region {cdk.Stack.of(self).region}\n    log_group_name {self.log_group.log_group_name}\n"
            "    log_stream_prefix pod-\n    auto_create_group false\n"
        )
        config = cluster.add_manifest(
            "LoggingConfig",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "aws-logging", "namespace": "aws-observability"},
                "data": {"flb_log_cw": "false", "output.conf": output},
            },
        )
        config.node.add_dependency(observability)
        profile.pod_execution_role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn, f"{self.log_group.log_group_arn}:*"],
            )
        )
        nag.acknowledge(profile, "IAM5", FARGATE_POD_LOGS)

    def _manifests(self, namespace: str) -> None:
        """The ``spark-submit`` service account, and the namespaced roles of the two Spark accounts and of the state
        machine's group, with their bindings."""

        def metadata(name: str) -> dict[str, str]:
            return {"name": name, "namespace": namespace}

        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(SUBMIT_ACCOUNT)}
        manifests: list[tuple[str, dict[str, Any]]] = [("SparkSubmitServiceAccount", account)]
        rbac = "rbac.authorization.k8s.io/v1"
        for construct, role, rules, subject in (
            ("SparkSubmit", SUBMIT_ACCOUNT, _SPARK_RULES, {"kind": "ServiceAccount", "name": SUBMIT_ACCOUNT}),
            ("Spark", SPARK_ACCOUNT, _SPARK_RULES, {"kind": "ServiceAccount", "name": SPARK_ACCOUNT}),
            ("StepFunction", "step-function", _STEP_FUNCTION_RULES, {"kind": "Group", "name": STEP_FUNCTION_GROUP}),
        ):
            if subject["kind"] == "ServiceAccount":
                subject = {**subject, "namespace": namespace}
            else:
                subject = {**subject, "apiGroup": "rbac.authorization.k8s.io"}
            role_manifest = {"apiVersion": rbac, "kind": "Role", "metadata": metadata(role), "rules": rules}
            manifests.append((f"{construct}Role", role_manifest))
            manifests.append(
                (
                    f"{construct}RoleBinding",
                    {
                        "apiVersion": rbac,
                        "kind": "RoleBinding",
                        "metadata": metadata(role),
                        "subjects": [subject],
                        "roleRef": {"kind": "Role", "name": role, "apiGroup": "rbac.authorization.k8s.io"},
                    },
                )
            )
        for construct_id, manifest in manifests:
            self.cluster.add_manifest(construct_id, manifest).node.add_dependency(self.namespace)

    def _state_machine(self, core: SleeperCore, namespace: str) -> sfn.StateMachine:
        ctx = core.ctx
        image = core.images.image_uri(self, operations.BULK_IMPORT_EKS_IMAGE)
        partition = cdk.Aws.PARTITION
        run_job = sfn.CustomState(
            self,
            "RunSparkJob",
            state_json=_eks_state(
                {
                    "Resource": f"arn:{partition}:states:::eks:runJob.sync",
                    "Parameters": {
                        "Job": {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "metadata": {"name.$": "$.job.id"},
                            "spec": {
                                "ttlSecondsAfterFinished": 600,
                                "backoffLimit": 0,
                                "template": {
                                    "spec": {
                                        "serviceAccountName": SUBMIT_ACCOUNT,
                                        "restartPolicy": "Never",
                                        "containers": [
                                            {
                                                "name": "spark-submit",
                                                "image": image,
                                                "args.$": "$.args",
                                                "env": [
                                                    {
                                                        "name": "EXECUTOR_POD_TEMPLATE",
                                                        "value.$": "$.executorPodTemplate",
                                                    },
                                                    {"name": "SLEEPER_SPARK_IMAGE", "value": image},
                                                ],
                                            }
                                        ],
                                    }
                                },
                            },
                        },
                        "LogOptions": {"RetrieveLogs": True, "LogParameters": {"tailLines": ["10"]}},
                    },
                    "ResultSelector": {"succeeded.$": "$.status.succeeded"},
                    "ResultPath": "$.jobResult",
                },
                self.cluster,
                namespace,
            ),
        )
        delete_driver_pod = sfn.CustomState(
            self,
            "DeleteDriverPod",
            state_json=_eks_state(
                {
                    "Resource": f"arn:{partition}:states:::eks:call",
                    "Parameters": {
                        "Method": "DELETE",
                        "Path.$": f"States.Format('/api/v1/namespaces/{namespace}/pods/{{}}', $.jobPodPrefix)",
                    },
                    "ResultPath": "$.deleteDriverPodOutput",
                },
                self.cluster,
                namespace,
            ),
        )
        delete_job = sfn.CustomState(
            self,
            "DeleteJob",
            state_json=_eks_state(
                {
                    "Resource": f"arn:{partition}:states:::eks:call",
                    "Parameters": {
                        "Method": "DELETE",
                        "Path.$": f"States.Format('/apis/batch/v1/namespaces/{namespace}/jobs/{{}}', $.job.id)",
                        "QueryParameters": {"propagationPolicy": ["Foreground"]},
                    },
                    "ResultPath": "$.deleteJobOutput",
                },
                self.cluster,
                namespace,
            ),
        )
        record_failure = tasks.LambdaInvoke(
            self,
            "RecordFailure",
            lambda_function=self.failure_recorder,
            payload_response_only=True,
            result_path="$.recorded",
        )
        failed = sfn.Fail(self, "FailedJobState", cause="Spark job failed")
        run_job.add_catch(record_failure, errors=["States.ALL"], result_path="$.error")
        record_failure.next(failed)
        definition = run_job.next(
            sfn.Choice(self, "CheckSparkJobResult")
            .when(
                sfn.Condition.number_greater_than("$.jobResult.succeeded", 0),
                delete_driver_pod.next(delete_job).next(sfn.Succeed(self, "JobSucceeded")),
            )
            .otherwise(record_failure)
        )
        log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            log_group_name=f"{namespace}-state-machine",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=ctx.log_removal_policy,
        )
        return sfn.StateMachine(
            self,
            "EksBulkImportStateMachine",
            state_machine_name=namespace,
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
            tracing_enabled=True,
        )
