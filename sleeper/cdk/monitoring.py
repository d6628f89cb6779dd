"""Where problems are reported and buckets log to: the alarm topic (encrypted) and the access logs bucket."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from sleeper.cdk import nag
from sleeper.cdk.common import SleeperCore, secure_bucket
from sleeper.core import naming
from sleeper.core.properties import instance_common as common


class MonitoringStack(cdk.NestedStack):
    """The errors topic that every alarm notifies (email from ``sleeper.errors.email``; dead letters here, the rest in
    :mod:`sleeper.cdk.alarms`) and the bucket that receives the server access logs of the instance's buckets."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper alarms and access logs")
        ctx = core.ctx
        key = kms.Key(
            self,
            "AlarmTopicKey",
            description=f"Encrypts the Sleeper {ctx.instance_id} alarm topic",
            enable_key_rotation=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                # CloudWatch alarms and the EventBridge rule sending failed ECS tasks publish to the topic.
                principals=[
                    iam.ServicePrincipal("cloudwatch.amazonaws.com"),
                    iam.ServicePrincipal("events.amazonaws.com"),
                ],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
            )
        )
        self.topic = sns.Topic(
            self,
            "AlarmTopic",
            topic_name=ctx.function_name("alarms"),
            display_name=f"Sleeper {ctx.instance_id} alarms",
            master_key=key,
            enforce_ssl=True,
        )
        email = ctx.get(common.EMAIL_ADDRESS_FOR_ERROR_NOTIFICATION)
        if email:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self.access_logs = secure_bucket(
            self,
            "AccessLogsBucket",
            ctx,
            name=naming.access_logs_bucket_name(ctx.instance_id, ctx.account),
            access_logs=None,
            removal_policy=ctx.log_removal_policy,
        )
        nag.acknowledge(self.access_logs, "S1", nag.S1_ACCESS_LOGS)
        # Server access logging delivers with the logging service principal (object ownership is enforced).
        self.access_logs.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
                actions=["s3:PutObject"],
                resources=[self.access_logs.arn_for_objects("*")],
                conditions={"StringEquals": {"aws:SourceAccount": ctx.account}},
            )
        )
        core.alarm_topic = self.topic
        core.access_logs_bucket = self.access_logs


class ConfigBucketStack(cdk.NestedStack):
    """The config bucket ``sleeper-<cid>-config-<account>``: ``instance.properties`` and table properties."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper config bucket")
        ctx = core.ctx
        self.bucket = secure_bucket(
            self,
            "ConfigBucket",
            ctx,
            name=naming.config_bucket_name(ctx.instance_id, ctx.account),
            access_logs=core.access_logs_bucket,
        )
        core.config_bucket = self.bucket
        core.set("sleeper.config.bucket", self.bucket.bucket_name)


class TableDataStack(cdk.NestedStack):
    """The table data bucket ``sleeper-<cid>-table-data-<account>`` (data, sketches, snapshots, large bodies)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper table data bucket")
        ctx = core.ctx
        self.bucket = secure_bucket(
            self,
            "TableDataBucket",
            ctx,
            name=naming.data_bucket_name(ctx.instance_id, ctx.account),
            access_logs=core.access_logs_bucket,
        )
        core.data_bucket = self.bucket
        core.set("sleeper.data.bucket", self.bucket.bucket_name)
