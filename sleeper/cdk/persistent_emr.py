"""Bulk import on a persistent EMR cluster (Sleeper's ``PersistentEmrBulkImportStack``).

``BulkImportPersistentEMRQ`` feeds the registry's bulk import starter, which adds each job as a step of one EMR
cluster that stays up between jobs (``KeepJobFlowAliveWhenNoSteps``), found by its name in
``sleeper.bulk.import.persistent.emr.cluster.name``; when the cluster's active steps are at
``sleeper.bulk.import.persistent.emr.step.concurrency.level`` the starter puts the job back on the queue.

The cluster: the ``sleeper.bulk.import.persistent.emr.*`` release label, instance architectures and types, capacity
and managed scaling; the EBS volumes, key pair and extra master security group of the ``sleeper.bulk.import.emr.*``
properties; the instance's subnets; the roles, instance profile and security configuration shared with per-job
clusters (:class:`~sleeper.cdk.bulk_import.CommonEmrBulkImportStack`); logs under ``logs/`` of the bulk import bucket.
Its hosts hold the instance's Spark settings (``spark-defaults``), as per-job clusters do, so each step's
``spark-submit`` passes only the job's own ``sparkConf``.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_emr as emr
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.bulk_import import CommonEmrBulkImportStack, job_starter
from sleeper.cdk.common import SleeperCore
from sleeper.cdk.networking import subnet_ids
from sleeper.core import BULK_IMPORT_PERSISTENT_EMR_Q, naming
from sleeper.core.properties import EMR_JAVA_HOME, InstanceProperties, PropertyDefinition, emr_spark_conf
from sleeper.core.properties import instance_bulk as bp
from sleeper.core.properties import instance_cdk as cdkp

PLATFORM = "PersistentEMR"
"""The starter's ``BULK_IMPORT_PLATFORM``."""

CLUSTER_SUFFIX = "persistentEMR"
"""The cluster is named ``sleeper-<id>-persistentEMR``, as in Sleeper."""

LIST_CLUSTERS_REASON = (
    "elasticmapreduce:ListClusters supports no resource-level permissions; the starter lists active clusters to find "
    "the persistent cluster's id by its name. Every call that acts on a cluster is limited to that cluster's ARN."
)


def cluster_name(instance_id: str) -> str:
    """The persistent cluster's name: ``sleeper-<id>-persistentEMR``."""
    return naming.resource_name(instance_id, CLUSTER_SUFFIX)


def _configurations(properties: InstanceProperties, architecture: str) -> list[emr.CfnCluster.ConfigurationProperty]:
    """The EMR configurations of a host: Spark and YARN settings as on per-job clusters, and the release's Java."""
    java_home = emr.CfnCluster.ConfigurationProperty(
        classification="export", configuration_properties={"JAVA_HOME": EMR_JAVA_HOME[architecture]}
    )
    return [
        emr.CfnCluster.ConfigurationProperty(
            classification="spark", configuration_properties={"maximizeResourceAllocation": "false"}
        ),
        emr.CfnCluster.ConfigurationProperty(
            classification="yarn-site",
            configuration_properties={
                "yarn.nodemanager.vmem-check-enabled": "false",
                "yarn.nodemanager.pmem-check-enabled": "false",
            },
        ),
        emr.CfnCluster.ConfigurationProperty(
            classification="spark-defaults", configuration_properties=emr_spark_conf(properties, architecture)
        ),
        emr.CfnCluster.ConfigurationProperty(classification="spark-env", configurations=[java_home]),
        emr.CfnCluster.ConfigurationProperty(
            classification="mapred-site", configuration_properties={"mapreduce.map.output.compress": "true"}
        ),
        emr.CfnCluster.ConfigurationProperty(classification="hadoop-env", configurations=[java_home]),
    ]


def instance_types(entries: Sequence[str]) -> list[tuple[str, int | None]]:
    """Instance types each optionally followed by a weight (``m7g.4xlarge,5,m7g.8xlarge``), as Sleeper reads them.

    Raises:
        ValueError: If a weight comes before any instance type.
    """
    out: list[tuple[str, int | None]] = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        if entry.isdigit():
            if not out:
                raise ValueError(f"instance type capacity given without an instance type: {entry}")
            out[-1] = (out[-1][0], int(entry))
        else:
            out.append((entry, None))
    return out


def _fleet_types(
    properties: InstanceProperties,
    *,
    x86: PropertyDefinition,
    arm: PropertyDefinition,
    weighted: bool,
    ebs: emr.CfnCluster.EbsConfigurationProperty,
) -> list[emr.CfnCluster.InstanceTypeConfigProperty]:
    configs = []
    for architecture in properties.get_list(bp.BULK_IMPORT_PERSISTENT_EMR_INSTANCE_ARCHITECTURE):
        architecture = architecture.strip().lower()
        for instance_type, weight in instance_types(properties.get_list(arm if architecture == "arm64" else x86)):
            configs.append(
                emr.CfnCluster.InstanceTypeConfigProperty(
                    instance_type=instance_type,
                    weighted_capacity=weight if weighted else None,
                    ebs_configuration=ebs,
                    configurations=_configurations(properties, architecture),
                )
            )
    return configs


class PersistentEmrBulkImportStack(cdk.NestedStack):
    """``BulkImportPersistentEMRQ``, its starter and the persistent EMR cluster the starter adds job steps to.

    Attributes:
        queue: The job queue (with its dead-letter queue).
        starter: The bulk import starter fed by the queue.
        cluster: The EMR cluster.
        cluster_arn: The cluster's ARN, the only cluster the starter may act on.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        core: SleeperCore,
        bucket: cdk.aws_s3.IBucket,
        common: CommonEmrBulkImportStack,
    ) -> None:
        super().__init__(scope, construct_id, description="Sleeper bulk import on a persistent EMR cluster")
        ctx = core.ctx
        if core.vpc is None:
            raise RuntimeError("the persistent EMR cluster needs the instance VPC")
        subnets = subnet_ids(core)
        name = cluster_name(ctx.instance_id)
        self.cluster = emr.CfnCluster(
            self,
            "Cluster",
            name=name,
            release_label=ctx.get(bp.BULK_IMPORT_PERSISTENT_EMR_RELEASE_LABEL) or "",
            applications=[emr.CfnCluster.ApplicationProperty(name="Spark")],
            instances=_instances(ctx.properties, subnets),
            managed_scaling_policy=_managed_scaling(ctx.properties),
            step_concurrency_level=ctx.get_int(bp.BULK_IMPORT_PERSISTENT_EMR_STEP_CONCURRENCY_LEVEL),
            service_role=common.service_role.role_name,
            job_flow_role=common.instance_profile.ref,
            security_configuration=common.security_configuration.ref,
            log_uri=f"s3://{bucket.bucket_name}/logs",
            visible_to_all_users=True,
        )
        nag.acknowledge(self.cluster, "EMR4", nag.EMR4_SHARED_SECURITY_CONFIGURATION)
        nag.acknowledge(self.cluster, "EMR5", nag.EMR5_IN_TRANSIT)
        if not ctx.get(bp.BULK_IMPORT_EMR_EC2_KEYPAIR_NAME):
            nag.acknowledge(self.cluster, "EMR6", nag.EMR6_NO_LOGINS)
        self.cluster_arn = cdk.Stack.of(self).format_arn(
            service="elasticmapreduce",
            resource="cluster",
            resource_name=self.cluster.ref,
            arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
        )
        self.queue, self.starter = job_starter(
            self,
            core,
            platform=PLATFORM,
            logical_name=BULK_IMPORT_PERSISTENT_EMR_Q,
            bucket=bucket,
        )
        # A job that finds the cluster full goes back on the queue after a delay.
        grants.queue_send(self.starter, self.queue.queue)
        grants.allow(self.starter, ["elasticmapreduce:ListClusters"], ["*"], reason=LIST_CLUSTERS_REASON)
        grants.allow(
            self.starter,
            ["elasticmapreduce:AddJobFlowSteps", "elasticmapreduce:ListSteps", "elasticmapreduce:DescribeCluster"],
            [self.cluster_arn],
        )
        core.set(cdkp.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME, name)
        core.set(cdkp.BULK_IMPORT_PERSISTENT_EMR_MASTER_DNS, self.cluster.attr_master_public_dns)


def _instances(properties: InstanceProperties, subnets: Sequence[str]) -> emr.CfnCluster.JobFlowInstancesConfigProperty:
    """A driver fleet of one on-demand instance and an executor fleet at the minimum capacity, kept alive when no
    steps run."""
    ebs = emr.CfnCluster.EbsConfigurationProperty(
        ebs_block_device_configs=[
            emr.CfnCluster.EbsBlockDeviceConfigProperty(
                volume_specification=emr.CfnCluster.VolumeSpecificationProperty(
                    size_in_gb=properties.get_int(bp.BULK_IMPORT_EMR_EBS_VOLUME_SIZE_IN_GB),
                    volume_type=properties.get(bp.BULK_IMPORT_EMR_EBS_VOLUME_TYPE) or "gp2",
                ),
                volumes_per_instance=properties.get_int(bp.BULK_IMPORT_EMR_EBS_VOLUMES_PER_INSTANCE),
            )
        ],
        ebs_optimized=True,
    )
    driver = emr.CfnCluster.InstanceFleetConfigProperty(
        name="Driver",
        instance_type_configs=_fleet_types(
            properties,
            x86=bp.BULK_IMPORT_PERSISTENT_EMR_MASTER_X86_INSTANCE_TYPES,
            arm=bp.BULK_IMPORT_PERSISTENT_EMR_MASTER_ARM_INSTANCE_TYPES,
            weighted=False,
            ebs=ebs,
        ),
        target_on_demand_capacity=1,
    )
    executors = emr.CfnCluster.InstanceFleetConfigProperty(
        name="Executors",
        instance_type_configs=_fleet_types(
            properties,
            x86=bp.BULK_IMPORT_PERSISTENT_EMR_EXECUTOR_X86_INSTANCE_TYPES,
            arm=bp.BULK_IMPORT_PERSISTENT_EMR_EXECUTOR_ARM_INSTANCE_TYPES,
            weighted=True,
            ebs=ebs,
        ),
        target_on_demand_capacity=properties.get_int(bp.BULK_IMPORT_PERSISTENT_EMR_MIN_CAPACITY),
    )
    key_name = properties.get(bp.BULK_IMPORT_EMR_EC2_KEYPAIR_NAME)
    extra_group = properties.get(bp.BULK_IMPORT_EMR_MASTER_ADDITIONAL_SECURITY_GROUP)
    return emr.CfnCluster.JobFlowInstancesConfigProperty(
        ec2_subnet_ids=list(subnets),
        master_instance_fleet=driver,
        core_instance_fleet=executors,
        keep_job_flow_alive_when_no_steps=True,
        termination_protected=False,
        ec2_key_name=key_name or None,
        additional_master_security_groups=[extra_group] if extra_group else None,
    )


def _managed_scaling(properties: InstanceProperties) -> emr.CfnCluster.ManagedScalingPolicyProperty | None:
    """EMR managed scaling of the executor fleet between the minimum and maximum capacity, when enabled."""
    if not properties.get_bool(bp.BULK_IMPORT_PERSISTENT_EMR_USE_MANAGED_SCALING):
        return None
    return emr.CfnCluster.ManagedScalingPolicyProperty(
        compute_limits=emr.CfnCluster.ComputeLimitsProperty(
            unit_type="InstanceFleetUnits",
            minimum_capacity_units=properties.get_int(bp.BULK_IMPORT_PERSISTENT_EMR_MIN_CAPACITY),
            maximum_capacity_units=properties.get_int(bp.BULK_IMPORT_PERSISTENT_EMR_MAX_CAPACITY),
        )
    )
