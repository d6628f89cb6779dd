"""cdk-nag (AwsSolutions) acknowledgements: each rule the instance does not meet, where, and why that is justified.

``tests/stacks/test_nag.py`` runs ``AwsSolutionsChecks`` over the example instance and fails on any unacknowledged
error. ``tests/stacks/test_least_privilege.py`` independently checks that no policy grants wildcard actions, which is
what makes the broad IAM5 acknowledgement below safe: what remains of IAM5 are resource wildcards only.
"""

from __future__ import annotations

import aws_cdk as cdk
from constructs import IConstruct

IAM5_RESOURCES = (
    "Resource wildcards only (wildcard actions are rejected by tests/stacks): object keys under a key prefix of a "
    "bucket (table ids are generated at run time, so '<bucket>/*/data/*' is as narrow as S3 allows), DynamoDB index "
    "ARNs, task definition revisions ('family:*'), EMR Serverless job runs of one application, and the few calls "
    "with no resource-level permissions (ecs:ListTasks pinned to the cluster by condition, "
    "cloudwatch:PutMetricData pinned to the namespace, autoscaling/EC2 describe calls, elasticmapreduce:RunJobFlow, "
    "dynamodb:ListStreams for the stream event source, and X-Ray's PutTraceSegments and PutTelemetryRecords when "
    "sleeper.tracing.enabled is true)."
)
ECS2_ENVIRONMENT = (
    "Containers get only the config bucket name and the instance id in their environment; no secrets. Everything "
    "else is read from instance.properties at start-up, as in Sleeper."
)
AS3_NOTIFICATIONS = (
    "The compaction EC2 pool is scaled by its ECS capacity provider and the task creator; scaling activity is "
    "recorded in the Auto Scaling and ECS consoles, and failures surface as dead-lettered compaction jobs, which alarm."
)
IAM4_EMR_SERVICE_ROLE = (
    "The EMR service role uses AWS's AmazonEMRServicePolicy_v2, which AWS maintains for EMR and scopes to resources "
    "tagged for EMR; a hand-written copy would drift from what EMR needs."
)
S1_ACCESS_LOGS = "This is the bucket that receives the server access logs of the instance's other buckets."
CUSTOM_RESOURCE_PROVIDER = (
    "CDK's AwsCustomResource provider (writes instance.properties) uses the AWS Lambda basic execution policy and a "
    "runtime chosen by CDK; its own permissions are limited to PutObject/DeleteObject of instance.properties."
)

DDB3_BY_PROPERTY = (
    "Point-in-time recovery of this table is the instance's choice: the transaction logs and snapshot tables follow "
    "sleeper.statestore.dynamo.pointintimerecovery and the table index sleeper.tables.index.dynamo.pointintimerecovery "
    "(on by default in this port, off in Sleeper); trackers, the query table and the batcher store hold status "
    "records that expire."
)

ECS_AGENT = (
    "CDK's ECS agent permissions for the compaction EC2 hosts: the agent's Submit* state reports and its "
    "registration calls have no narrower form that ECS supports."
)
ECR_AUTH = "ecr:GetAuthorizationToken (added by CDK to task execution roles) supports no resource-level permissions."
XRAY_TRACING = (
    "Active X-Ray tracing (sleeper.tracing.enabled) adds xray:PutTraceSegments and xray:PutTelemetryRecords, which "
    "support no resource-level permissions, to each function's role."
)
STREAM_EVENT_SOURCE = (
    "dynamodb:ListStreams, added by CDK for the DynamoDB stream event source, supports no resource-level permissions."
)

EMR4_SHARED_SECURITY_CONFIGURATION = (
    "The persistent EMR cluster uses the security configuration of the CommonEmrBulkImport stack, shared with per-job "
    "clusters, which encrypts local disks with KMS (alias/aws/ebs); cdk-nag looks for it only in the cluster's own "
    "nested stack, where it sees a parameter."
)
EMR5_IN_TRANSIT = (
    "EMR in-transit encryption needs a TLS certificate provider (a PEM archive or custom provider) the instance "
    "does not have, as in Sleeper. The cluster runs in the instance's private subnets with no inbound access, and "
    "its traffic to S3, DynamoDB and SQS is TLS (buckets and queues deny other requests)."
)
EMR6_NO_LOGINS = (
    "No one logs in to the persistent cluster: only the bulk import starter adds steps, through the EMR API. An EC2 "
    "key pair is set when sleeper.bulk.import.emr.keypair.name is given, as in Sleeper; Kerberos is not needed for a "
    "cluster that runs only the instance's own Spark jobs."
)


def run_checks(app: cdk.App) -> None:
    """Runs cdk-nag's AwsSolutions checks over the app when it synthesizes (``-c nag=true``), as a policy validation
    plugin: an unacknowledged error fails the synthesis with a report naming the rule and the resource."""
    import cdk_nag

    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(verbose=True))


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledges an AwsSolutions rule on a construct and everything under it."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions-{rule}", reason=reason))
