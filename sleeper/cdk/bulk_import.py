"""Bulk import with Spark: on EMR Serverless (default), on an EMR cluster per job and on a persistent EMR
cluster (:mod:`sleeper.cdk.persistent_emr`). Each platform has a job queue and a starter Lambda; the jobs run as a
role that may read the inputs and commit to the tables. The EMR platforms share the roles and security configuration of
:class:`CommonEmrBulkImportStack`."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_emrserverless as emrs
from aws_cdk import aws_iam as iam
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import SleeperCore, SleeperQueue, registered_queue, secure_bucket, sqs_trigger
from sleeper.cdk.context import DeployContext
from sleeper.cdk.ingest import grant_ingest_sources
from sleeper.cdk.networking import subnet_ids
from sleeper.core import BULK_IMPORT_IMAGE, naming, operations
from sleeper.core.properties import instance_bulk as bp
from sleeper.core.properties import instance_cdk as cdkp

BULK_IMPORT_PREFIX = "bulk_import/*"


class BulkImportBucketStack(cdk.NestedStack):
    """The bulk import bucket ``sleeper-<cid>-bulk-import-<account>`` (job specs, Spark logs)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import bucket")
        ctx = core.ctx
        self.bucket = secure_bucket(
            self,
            "BulkImportBucket",
            ctx,
            name=naming.bulk_import_bucket_name(ctx.instance_id, ctx.account),
            access_logs=core.access_logs_bucket,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            expiry_days=30,
        )
        core.set(cdkp.BULK_IMPORT_BUCKET, self.bucket.bucket_name)


def _job_role(scope: Construct, core: SleeperCore, bucket: cdk.aws_s3.IBucket, principal: iam.IPrincipal) -> iam.Role:
    role = iam.Role(scope, "JobRole", assumed_by=principal, description="Runs Sleeper bulk import Spark jobs")
    grant_job(role, core, bucket)
    return role


def grant_job(role: iam.IRole, core: SleeperCore, bucket: cdk.aws_s3.IBucket) -> None:
    """What a bulk import Spark job may do: read the config, commit to the tables, read and write table data, read
    the ingest sources, read and write the bulk import bucket (its job file) and record its run."""
    grants.config_read(role, core.config)
    core.grant_table_state_commit(role)
    grants.bucket_read_write(role, core.data, [grants.DATA_PREFIX])
    grant_ingest_sources(role, core)
    grants.bucket_read_write(role, bucket)
    grants.table_read_write(role, *core.ingest_tracker_tables)


def job_starter(
    scope: Construct,
    core: SleeperCore,
    *,
    platform: str,
    logical_name: str,
    bucket: cdk.aws_s3.IBucket,
) -> tuple[SleeperQueue, cdk.aws_lambda.Function]:
    """A platform's job queue (``JobQueue``) and the registry's bulk import starter fed by it (``JobStarter``), told
    its platform by ``BULK_IMPORT_PLATFORM``, allowed to validate jobs, write job files and track them."""
    queue = registered_queue(
        scope,
        "JobQueue",
        core,
        logical_name,
        max_receive_count=3,  # a job start is tried three times on every platform
        alarm_description=f"Bulk import jobs could not be started on {platform}",
    )
    starter = core.lambdas.function(
        scope,
        "JobStarter",
        handler=operations.BULK_IMPORT_STARTER,
        name_suffix=f"bulk-import-{platform.lower()}-start",
        description=f"Validates bulk import jobs and starts them on {platform}",
        environment={"BULK_IMPORT_PLATFORM": platform},
    )
    core.grant_table_state_read(starter)
    grant_ingest_sources(starter, core)
    grants.bucket_write(starter, bucket, [BULK_IMPORT_PREFIX])
    grants.table_read_write(starter, *core.ingest_tracker_tables)
    sqs_trigger(starter, queue.queue)
    return queue, starter


class EmrServerlessBulkImportStack(cdk.NestedStack):
    """An EMR Serverless Spark application, its job role, ``BulkImportEMRServerlessQ`` and its starter."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, bucket: cdk.aws_s3.IBucket) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import on EMR Serverless")
        ctx = core.ctx
        if core.vpc is None:
            raise RuntimeError("EMR Serverless needs the instance VPC")
        security_group = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=core.vpc, description="Sleeper bulk import Spark jobs", allow_all_outbound=True
        )
        subnets = subnet_ids(core)
        name = ctx.function_name(naming.BULK_IMPORT_APPLICATION)
        self.application = emrs.CfnApplication(
            self,
            "Application",
            name=name,
            release_label=ctx.get(bp.BULK_IMPORT_EMR_SERVERLESS_RELEASE) or "emr-7.12.0",
            type="SPARK",
            architecture=(ctx.get(bp.BULK_IMPORT_EMR_SERVERLESS_ARCHITECTURE) or "X86_64").upper(),
            image_configuration=emrs.CfnApplication.ImageConfigurationInputProperty(
                image_uri=core.images.image_uri(self, BULK_IMPORT_IMAGE)
            ),
            auto_start_configuration=emrs.CfnApplication.AutoStartConfigurationProperty(
                enabled=ctx.get_bool(bp.BULK_IMPORT_EMR_SERVERLESS_AUTOSTART)
            ),
            auto_stop_configuration=emrs.CfnApplication.AutoStopConfigurationProperty(
                enabled=ctx.get_bool(bp.BULK_IMPORT_EMR_SERVERLESS_AUTOSTOP),
                idle_timeout_minutes=ctx.get_int(bp.BULK_IMPORT_EMR_SERVERLESS_AUTOSTOP_TIMEOUT_MINUTES),
            ),
            network_configuration=emrs.CfnApplication.NetworkConfigurationProperty(
                subnet_ids=subnets, security_group_ids=[security_group.security_group_id]
            ),
            initial_capacity=_initial_capacity(ctx),
        )
        self.job_role = _job_role(self, core, bucket, iam.ServicePrincipal("emr-serverless.amazonaws.com"))
        self.queue, self.starter = job_starter(
            self,
            core,
            platform="EMRServerless",
            logical_name=operations.BULK_IMPORT_EMR_SERVERLESS_Q,
            bucket=bucket,
        )
        grants.allow(
            self.starter,
            ["emr-serverless:StartJobRun", "emr-serverless:GetApplication", "emr-serverless:StartApplication"],
            [self.application.attr_arn, f"{self.application.attr_arn}/jobruns/*"],
        )
        nag.acknowledge(self.starter.role, "IAM5[Resource::<Application.Arn>/jobruns/*]", nag.IAM5_RESOURCES)  # type: ignore[arg-type]
        grants.allow(self.starter, ["iam:PassRole"], [self.job_role.role_arn])
        core.set(cdkp.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME, name)
        core.set(cdkp.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID, self.application.attr_application_id)
        core.set(cdkp.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN, self.job_role.role_arn)


def _initial_capacity(ctx: DeployContext) -> list[emrs.CfnApplication.InitialCapacityConfigKeyValuePairProperty] | None:
    """The workers an EMR Serverless application keeps initialised, as ``...emr.serverless.initial.capacity.*`` say,
    or None unless ``...initial.capacity.enabled``."""
    if not ctx.get_bool(bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_ENABLED):
        return None
    workers = (
        (
            "Driver",
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_COUNT,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_CORES,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_MEMORY,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_DISK,
        ),
        (
            "Executor",
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_COUNT,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_CORES,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_MEMORY,
            bp.BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_DISK,
        ),
    )
    return [
        emrs.CfnApplication.InitialCapacityConfigKeyValuePairProperty(
            key=kind,
            value=emrs.CfnApplication.InitialCapacityConfigProperty(
                worker_count=ctx.get_int(count),
                worker_configuration=emrs.CfnApplication.WorkerConfigurationProperty(
                    cpu=ctx.get(cores) or "", memory=ctx.get(memory) or "", disk=ctx.get(disk) or ""
                ),
            ),
        )
        for kind, count, cores, memory, disk in workers
    ]


class CommonEmrBulkImportStack(cdk.NestedStack):
    """What EMR clusters of bulk import share, per job or persistent: the EMR service role, the role and instance
    profile of the clusters' hosts (the job role), and a security configuration encrypting local disks."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, bucket: cdk.aws_s3.IBucket) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import on EMR: roles and security")
        ctx = core.ctx
        self.service_role = iam.Role(
            self,
            "ServiceRole",
            role_name=ctx.policy_name("EMR-Role"),
            assumed_by=iam.ServicePrincipal("elasticmapreduce.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AmazonEMRServicePolicy_v2")],
        )
        nag.acknowledge(
            self.service_role,
            "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonEMRServicePolicy_v2]",
            nag.IAM4_EMR_SERVICE_ROLE,
        )
        self.instance_role = _job_role(self, core, bucket, iam.ServicePrincipal("ec2.amazonaws.com"))
        self.instance_profile = iam.CfnInstanceProfile(
            self,
            "InstanceProfile",
            instance_profile_name=ctx.policy_name("bulk-import-emr-ec2"),
            roles=[self.instance_role.role_name],
        )
        # sleeper.bulk.import.emr.ebs.encryption.key.arn: the KMS key of the clusters' local disks (EBS volumes); the
        # hosts' role may use it, as EMR needs. Unset, the account's AWS managed key for EBS.
        ebs_key = ctx.get(bp.BULK_IMPORT_EMR_EBS_ENCRYPTION_KEY_ARN)
        if ebs_key:
            grants.allow(
                self.instance_role,
                ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey",
                 "kms:CreateGrant"],
                [ebs_key],
            )  # fmt: skip
        self.security_configuration = cdk.aws_emr.CfnSecurityConfiguration(
            self,
            "SecurityConfiguration",
            name=ctx.policy_name("EMRSecurityConfigurationProps"),
            security_configuration={
                "EncryptionConfiguration": {
                    "EnableInTransitEncryption": False,
                    "EnableAtRestEncryption": True,
                    "AtRestEncryptionConfiguration": {
                        "S3EncryptionConfiguration": {"EncryptionMode": "SSE-S3"},
                        "LocalDiskEncryptionConfiguration": {"EncryptionKeyProviderType": "AwsKms",
                                                             "AwsKmsKey": ebs_key or "alias/aws/ebs"},
                    },
                },
                "InstanceMetadataServiceConfiguration": {"MinimumInstanceMetadataServiceVersion": 2,
                                                         "HttpPutResponseHopLimit": 1},
            },
        )  # fmt: skip
        core.set(cdkp.BULK_IMPORT_EMR_CLUSTER_ROLE_NAME, self.service_role.role_name)
        core.set(cdkp.BULK_IMPORT_EMR_EC2_ROLE_NAME, self.instance_profile.ref)
        core.set(cdkp.BULK_IMPORT_EMR_SECURITY_CONF_NAME, self.security_configuration.ref)


class EmrBulkImportStack(cdk.NestedStack):
    """``BulkImportNonPersistentEMRQ`` and a starter that creates an EMR cluster per job, with the roles and security
    configuration of :class:`CommonEmrBulkImportStack`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        core: SleeperCore,
        bucket: cdk.aws_s3.IBucket,
        common: CommonEmrBulkImportStack,
    ) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import on EMR")
        self.queue, self.starter = job_starter(
            self,
            core,
            platform="NonPersistentEMR",
            logical_name=operations.BULK_IMPORT_EMR_Q,
            bucket=bucket,
        )
        # RunJobFlow supports no resource-level permissions; the roles it may pass are named.
        grants.allow(self.starter, ["elasticmapreduce:RunJobFlow"], ["*"])
        grants.allow(self.starter, ["iam:PassRole"], [common.service_role.role_arn, common.instance_role.role_arn])
