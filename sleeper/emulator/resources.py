"""The resources of an emulated instance: what a deployment of an instance creates that the runtime reaches, created
on an emulator with the names the stacks give them (:mod:`sleeper.core.naming`), and ``instance.properties`` naming
them."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from sleeper.adapters.aws import AwsClients, AwsSettings, create_batcher_store_table, create_bucket
from sleeper.core import (
    BULK_EXPORT_CONTAINER_NAME,
    COMPACTION_CONTAINER_NAME,
    INGEST_CONTAINER_NAME,
    HandlerSpec,
    InstanceNames,
    SleeperError,
    TriggerKind,
    batcher_store_table_name,
    operations,
)
from sleeper.core.properties import SUBNETS, VPC_ID, InstanceProperties
from sleeper.core.properties import instance_cdk as cdk
from sleeper.emulator.aws_services import (
    create_ecs_cluster,
    create_emr_serverless_application,
    create_network,
    put_schedule_rule,
    register_task_definition,
)
from sleeper.emulator.eks import provision_eks_bulk_import
from sleeper.emulator.provision import provision_instance
from sleeper.runtime.aws import CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, AwsRuntimeConfig

__all__ = ["DEFAULT_ACCOUNT", "DEFAULT_REGION", "provision_emulated_instance", "schedule_period_seconds"]

_LOG = logging.getLogger(__name__)

DEFAULT_ACCOUNT = "123456789012"
"""The account moto reports (STS ``GetCallerIdentity``), so bucket names derived from it match."""
DEFAULT_REGION = "eu-west-2"
"""The region of an emulated instance unless another is given."""
_EMR_SERVERLESS_RELEASE = "emr-7.12.0"


def schedule_period_seconds(spec: HandlerSpec, properties: InstanceProperties | None) -> int:
    """The period of a scheduled handler's rule: its period property in the instance properties (if it has one and
    they could be read), else its fixed period, else 60 s."""
    trigger = spec.trigger
    if trigger.period_property is not None and properties is not None:
        try:
            return max(1, properties.get_int(trigger.period_property) * trigger.period_unit_seconds)
        except (SleeperError, ValueError, KeyError):
            _LOG.warning("%s: %s is not a whole number, using 60 s", spec.name, trigger.period_property)
            return 60
    return trigger.fixed_period_seconds or 60


def provision_emulated_instance(
    settings: AwsSettings,
    instance_id: str,
    *,
    account: str = DEFAULT_ACCOUNT,
    properties: Mapping[str, str] | None = None,
) -> AwsRuntimeConfig:
    """Creates everything a deployment of an instance creates that the runtime reaches, on an emulator: what
    :func:`~sleeper.runtime.aws.instance.provision_instance` creates (buckets, DynamoDB tables, every queue) plus a VPC
    with a subnet and a security group for tasks, the ingest batcher store, the bulk import bucket, the bulk export
    results bucket, the ECS clusters and task definitions (ingest, compaction, bulk export), the EMR Serverless
    application, the EKS bulk import state machine (:mod:`sleeper.emulator.eks`) and
    the scheduled rules, and writes ``instance.properties`` naming them.

    Returns:
        Where the instance is.
    """
    names = InstanceNames(instance_id=instance_id, account=account)
    clients = AwsClients(settings)
    network = create_network(clients.ec2, names.ecs_network)
    ecs = clients.ecs
    create_ecs_cluster(ecs, names.ingest_cluster)
    create_ecs_cluster(ecs, names.compaction_cluster)
    ingest = operations.container(operations.INGEST_IMAGE)
    compaction = operations.container(operations.COMPACTION_IMAGE)
    environment = {CONFIG_BUCKET_ENV: names.config_bucket, INSTANCE_ID_ENV: instance_id}
    register_task_definition(
        ecs, names.ingest_task_family, INGEST_CONTAINER_NAME, names.image(ingest.name), environment=environment
    )
    for family in (names.compaction_fargate_family, names.compaction_ec2_family):
        register_task_definition(
            ecs, family, COMPACTION_CONTAINER_NAME, names.image(compaction.name), environment=environment
        )
    create_ecs_cluster(ecs, names.bulk_export_cluster)
    bulk_export = operations.container(operations.BULK_EXPORT_IMAGE)
    register_task_definition(
        ecs,
        names.bulk_export_task_family,
        BULK_EXPORT_CONTAINER_NAME,
        names.image(bulk_export.name),
        environment=environment,
    )
    create_bucket(clients.s3, names.bulk_export_bucket, settings.region)
    application_id = create_emr_serverless_application(
        clients.emr_serverless, names.emr_serverless_application, _EMR_SERVERLESS_RELEASE
    )
    create_bucket(clients.s3, names.bulk_import_bucket, settings.region)
    create_batcher_store_table(clients.dynamodb, batcher_store_table_name(instance_id), wait=False)
    values = {
        VPC_ID.name: network.vpc_id,
        SUBNETS.name: network.subnet_id,
        cdk.ECS_SECURITY_GROUP.name: network.security_group_id,
        cdk.INGEST_CLUSTER.name: names.ingest_cluster,
        cdk.INGEST_TASK_DEFINITION_FAMILY.name: names.ingest_task_family,
        cdk.COMPACTION_CLUSTER.name: names.compaction_cluster,
        cdk.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY.name: names.compaction_fargate_family,
        cdk.COMPACTION_TASK_EC2_DEFINITION_FAMILY.name: names.compaction_ec2_family,
        cdk.BULK_EXPORT_CLUSTER.name: names.bulk_export_cluster,
        cdk.BULK_EXPORT_TASK_FARGATE_DEFINITION_FAMILY.name: names.bulk_export_task_family,
        cdk.BULK_EXPORT_S3_BUCKET.name: names.bulk_export_bucket,
        cdk.BULK_IMPORT_BUCKET.name: names.bulk_import_bucket,
        cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME.name: names.emr_serverless_application,
        cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID.name: application_id,
        cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN.name: names.bulk_import_role_arn,
        **provision_eks_bulk_import(clients.stepfunctions, names),
    }
    values.update(properties or {})
    config = provision_instance(settings, instance_id, account=account, properties=values)
    instance_properties = InstanceProperties(values)
    events = clients.events
    for spec in operations.HANDLERS:
        if spec.trigger.kind is TriggerKind.SCHEDULE and spec.trigger.rule is not None:
            put_schedule_rule(
                events,
                names.rule(spec.trigger.rule),
                schedule_period_seconds(spec, instance_properties),
                description=spec.description,
            )
    return config
