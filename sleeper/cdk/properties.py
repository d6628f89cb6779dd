"""Writes ``instance.properties`` (the user's properties plus those the deployment sets) to the config bucket."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from sleeper.cdk import nag
from sleeper.cdk.common import SleeperCore
from sleeper.core.properties import INSTANCE_PROPERTIES_KEY, javaprops
from sleeper.core.properties import instance_cdk as cdkp

PROVIDER_ID = "AWS679f53fac002430cb0da5b7982bd2287"
"""The construct id CDK gives the singleton provider function of AwsCustomResource."""


def instance_properties_text(core: SleeperCore) -> str:
    """The ``instance.properties`` text: user values, then deployment-set values (tokens resolve at deploy time)."""
    values = dict(core.ctx.properties.to_dict())
    values[cdkp.ACCOUNT.name] = core.ctx.account
    values[cdkp.REGION.name] = core.ctx.region
    values[cdkp.PARTITION.name] = cdk.Aws.PARTITION
    values[cdkp.DNS_SUFFIX.name] = cdk.Aws.URL_SUFFIX
    values.update(core.cdk_properties)
    return javaprops.dump(values, header="Written by the Sleeper CDK app; edit with the admin client.")


class InstancePropertiesWriter(Construct):
    """An S3 PutObject custom resource, re-run whenever the properties text changes; the object is deleted with
    the instance."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id)
        bucket = core.config
        text = instance_properties_text(core)
        put = cr.AwsSdkCall(
            service="S3",
            action="putObject",
            parameters={"Bucket": bucket.bucket_name, "Key": INSTANCE_PROPERTIES_KEY, "Body": text},
            physical_resource_id=cr.PhysicalResourceId.of(INSTANCE_PROPERTIES_KEY),
        )
        self.resource = cr.AwsCustomResource(
            self,
            "Writer",
            on_create=put,
            on_update=put,
            on_delete=cr.AwsSdkCall(
                service="S3",
                action="deleteObject",
                parameters={"Bucket": bucket.bucket_name, "Key": INSTANCE_PROPERTIES_KEY},
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["s3:PutObject", "s3:DeleteObject"],
                        resources=[bucket.arn_for_objects(INSTANCE_PROPERTIES_KEY)],
                    )
                ]
            ),
            install_latest_aws_sdk=False,
        )
        provider = cdk.Stack.of(self).node.try_find_child(PROVIDER_ID)
        if provider is not None:
            nag.acknowledge(
                provider,
                "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                nag.CUSTOM_RESOURCE_PROVIDER,
            )
            nag.acknowledge(provider, "L1", nag.CUSTOM_RESOURCE_PROVIDER)
