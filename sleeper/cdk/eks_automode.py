"""The EKS Auto Mode cluster of bulk import on EKS (``sleeper.bulk.import.eks.cluster.type=automode``).

Built with ``aws_cdk.aws_eks_v2`` (in aws-cdk-lib, no new dependency), whose ``Cluster`` is the native
``AWS::EKS::Cluster`` with Auto Mode: compute (the ``general-purpose`` node pool only, so EKS launches and retires EC2
nodes for the jobs' pods), block storage and load balancing enabled, and authentication by access entries only (API
mode). Its cluster role carries the managed policies Auto Mode needs (``AmazonEKSClusterPolicy``,
``AmazonEKSComputePolicy``, ``AmazonEKSBlockStoragePolicy``, ``AmazonEKSLoadBalancingPolicy``,
``AmazonEKSNetworkingPolicy``) and its node role ``AmazonEKSWorkerNodeMinimalPolicy`` and
``AmazonEC2ContainerRegistryPullOnly``, all added by the construct.

What :mod:`sleeper.cdk.eks_bulk_import` shares between the two cluster types works here unchanged: the module's kubectl
provider (asked for with ``kubectl_provider_options``, reaching the cluster through its own cluster-admin access
entry) applies the namespace and RBAC manifests, the ``spark`` service account gets its IAM role through the
cluster's OIDC provider (IRSA, as on Fargate), and the state machine's EKS tasks name the cluster by name, endpoint
and certificate authority, with its role's access entry mapped to the same Kubernetes group. The cluster creator
(the CloudFormation deployment role) is given no admin access: only the kubectl provider and
``sleeper.bulk.import.eks.cluster.admin.roles`` are admins.

Not deployed on Auto Mode: Fargate's log router, so pods' output is not sent to CloudWatch Logs; the state machine's
run job task still returns the tail of the Spark driver's log into the execution history.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks_v2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sleeper.cdk import nag

__all__ = ["CLUSTER_POLICIES", "NATIVE_OIDC_PROVIDER", "NODE_POLICIES", "acknowledge_automode", "automode_cluster"]

NODE_POOL = "general-purpose"
"""The one built-in node pool the jobs' pods need; ``system`` (for add-ons tainted CriticalAddonsOnly) is left off."""
CLUSTER_POLICIES = (
    "AmazonEKSClusterPolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
)
"""The AWS managed policies of the Auto Mode cluster role (added by ``aws_eks_v2.Cluster``)."""
NODE_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
"""The AWS managed policies of the Auto Mode node role, as AWS documents it (the construct's own node role would
have the broader AmazonEKSWorkerNodePolicy and AmazonEC2ContainerRegistryReadOnly)."""
KUBECTL_POLICIES = (
    "service-role/AWSLambdaBasicExecutionRole",
    "service-role/AWSLambdaVPCAccessExecutionRole",
    "AmazonEC2ContainerRegistryReadOnly",
)
"""The AWS managed policies CDK gives its kubectl provider's handler and provider framework."""
PUBLIC_ECR = "AmazonElasticContainerRegistryPublicReadOnly"
NATIVE_OIDC_PROVIDER = "@aws-cdk/aws-eks:useNativeOidcProvider"
"""The feature flag making ``aws_eks_v2`` create the cluster's OIDC provider as ``AWS::IAM::OIDCProvider`` instead of
its deprecated custom resource; set on the EKS stack only, so other stacks are unaffected."""

AUTO_MODE_ROLES = (
    "The EKS Auto Mode cluster and node roles use the AWS managed policies AWS documents for Auto Mode (cluster: "
    "AmazonEKSClusterPolicy, AmazonEKSComputePolicy, AmazonEKSBlockStoragePolicy, AmazonEKSLoadBalancingPolicy, "
    "AmazonEKSNetworkingPolicy; nodes: AmazonEKSWorkerNodeMinimalPolicy, AmazonEC2ContainerRegistryPullOnly); EKS "
    "scopes them to resources it tags for the cluster, and a hand-written copy would drift from what Auto Mode needs."
)
KUBECTL_PROVIDER = (
    "CDK's kubectl provider for the Auto Mode cluster (a Lambda function, its role and provider framework, made by "
    "the aws_eks_v2 module) uses AWS managed policies, wildcards on its own function versions and a runtime chosen "
    "by CDK; it runs only during deployment, to apply the namespace, service account and RBAC manifests."
)


def automode_cluster(
    scope: Construct, name: str, vpc: ec2.IVpc, selection: ec2.SubnetSelection, awscli_layer_arn: str | None
) -> eks_v2.Cluster:
    """The ``name`` cluster on EKS Auto Mode, in the instance VPC's subnets, every control-plane log type on."""
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    awscli = (
        lambda_.LayerVersion.from_layer_version_arn(scope, "AwsCliLayer", awscli_layer_arn)
        if awscli_layer_arn
        else None
    )
    node_role = iam.Role(
        scope,
        "AutoModeNodeRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_POLICIES],
        description=f"The EC2 nodes EKS Auto Mode launches for {name}",
    )
    return eks_v2.Cluster(
        scope,
        "EksBulkImportCluster",
        cluster_name=name,
        version=eks_v2.KubernetesVersion.V1_35,
        default_capacity_type=eks_v2.DefaultCapacityType.AUTOMODE,
        compute=eks_v2.ComputeConfig(node_pools=[NODE_POOL], node_role=node_role),
        kubectl_provider_options=eks_v2.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(scope, "KubectlLayer"), awscli_layer=awscli
        ),
        bootstrap_cluster_creator_admin_permissions=False,
        vpc=vpc,
        vpc_subnets=[selection],
        cluster_logging=list(eks_v2.ClusterLoggingTypes),
    )


def acknowledge_automode(stack: cdk.Stack, cluster: eks_v2.Cluster) -> None:
    """The cdk-nag findings of the Auto Mode roles and of CDK's kubectl provider, each by its exact id."""
    for policy in (*CLUSTER_POLICIES, *NODE_POLICIES):
        nag.acknowledge(stack, f"IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]", AUTO_MODE_ROLES)
    provider = cluster.node.find_child("KubectlProvider")
    rules = ["L1"]
    for construct in provider.node.find_all():
        if isinstance(construct, cdk.CfnCondition):  # the handler may pull from ECR Public
            policy = json.dumps(
                {"Fn::If": [stack.get_logical_id(construct), _managed(PUBLIC_ECR), {"Ref": "AWS::NoValue"}]},
                separators=(",", ":"),
            )
            rules.append(f"IAM4[Policy::{policy}]")
        elif isinstance(construct, lambda_.CfnFunction) and construct.node.scope is not None:
            if construct.node.scope.node.id == "Handler":  # the provider framework may invoke its versions
                rules.append(f"IAM5[Resource::<{stack.get_logical_id(construct)}.Arn>:*]")
    for policy in KUBECTL_POLICIES:
        rules.append(f"IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]")
    for rule in rules:
        nag.acknowledge(provider, rule, KUBECTL_PROVIDER)


def _managed(policy: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::aws:policy/{policy}"]]}
