"""Provisioning an instance on an emulator (a moto server): the buckets, DynamoDB tables and queues a deployment of
the CDK stacks creates, with the same names, and the instance properties a deployment writes, so the AWS runtime's
handlers run against it unchanged. Production instances are deployed by the stacks, never from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sleeper.adapters.aws import (
    AwsClients,
    AwsSettings,
    S3PropertiesStore,
    create_bucket,
    create_job_tracker_tables,
    create_query_tracker_table,
    create_queue,
    create_state_store_tables,
    create_table_index_tables,
    create_task_tracker_table,
)
from sleeper.core import (
    InstanceNames,
    JobTrackerTableNames,
    QueueConfig,
    StateStoreTableNames,
    TableIndexTableNames,
    dead_letter_queue_name,
    operations,
    query_tracker_table_name,
    queue_name,
    task_tracker_table_name,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_cdk as cdk
from sleeper.runtime.aws import AwsRuntimeConfig, queue_url_properties

__all__ = ["provision_instance"]

_QUEUES_WITHOUT_DEAD_LETTERS = frozenset({operations.QUERY_RESULTS_Q})
"""Queues an emulated instance makes without a dead-letter queue (Sleeper records no DLQ for query results)."""
_EMULATED_MAX_RECEIVE_COUNT = 3
"""Receives before an emulated queue's messages go to its dead-letter queue (every queue, the committer's too)."""


def provision_instance(
    settings: AwsSettings,
    instance_id: str,
    *,
    account: str = "123456789012",
    queues: Iterable[str] | None = None,
    properties: Mapping[str, str] | None = None,
) -> AwsRuntimeConfig:
    """Creates an instance's buckets, DynamoDB tables and queues with the names the CDK stacks give them, and writes
    its ``instance.properties`` (user values plus the resource names and queue URLs a deployment sets).

    Meant for an emulator (a moto server): production instances are deployed by the stacks.

    Args:
        settings: How to reach the emulator.
        instance_id: The instance id.
        account: The account, for bucket names.
        queues: The logical names of the queues to create (default: every queue with a URL property in the registry).
        properties: Further instance properties.

    Returns:
        Where the instance is.
    """
    clients = AwsClients(settings)
    dynamodb, s3, sqs = clients.dynamodb, clients.s3, clients.sqs
    names = InstanceNames(instance_id=instance_id, account=account)
    config_bucket, data_bucket, results_bucket = names.config_bucket, names.data_bucket, names.query_results_bucket
    for bucket in (config_bucket, data_bucket, results_bucket):
        create_bucket(s3, bucket, settings.region)
    state_names = StateStoreTableNames.for_instance(instance_id)
    index_names = TableIndexTableNames.for_instance(instance_id)
    tracker_table = query_tracker_table_name(instance_id)
    create_state_store_tables(dynamodb, state_names, wait=False)
    create_table_index_tables(dynamodb, index_names, wait=False)
    create_job_tracker_tables(dynamodb, JobTrackerTableNames.ingest(instance_id), wait=False)
    compaction_tracker = JobTrackerTableNames.compaction(instance_id)
    create_job_tracker_tables(dynamodb, compaction_tracker, validation_index=False, wait=False)
    for kind in ("ingest", "compaction"):
        create_task_tracker_table(dynamodb, task_tracker_table_name(instance_id, kind), wait=False)
    create_query_tracker_table(dynamodb, tracker_table, wait=False)
    values: dict[str, str] = {
        "sleeper.id": instance_id,
        cdk.ACCOUNT.name: account,
        cdk.REGION.name: settings.region,
        "sleeper.filesystem": "s3a://",
        cdk.CONFIG_BUCKET.name: config_bucket,
        cdk.DATA_BUCKET.name: data_bucket,
        cdk.QUERY_RESULTS_BUCKET.name: results_bucket,
        cdk.QUERY_TRACKER_TABLE_NAME.name: tracker_table,
        cdk.TABLE_NAME_INDEX_DYNAMO_TABLENAME.name: index_names.by_name,
        cdk.TABLE_ID_INDEX_DYNAMO_TABLENAME.name: index_names.by_id,
        cdk.TABLE_ONLINE_INDEX_DYNAMO_TABLENAME.name: index_names.by_online,
        cdk.TRANSACTION_LOG_FILES_TABLENAME.name: state_names.files_log,
        cdk.TRANSACTION_LOG_PARTITIONS_TABLENAME.name: state_names.partitions_log,
        cdk.TRANSACTION_LOG_LATEST_SNAPSHOTS_TABLENAME.name: state_names.latest_snapshots,
        cdk.TRANSACTION_LOG_ALL_SNAPSHOTS_TABLENAME.name: state_names.all_snapshots,
    }
    url_properties = queue_url_properties()
    for logical in url_properties if queues is None else queues:
        spec = operations.queue(logical)
        name = queue_name(instance_id, logical)
        dead_letter = None if logical in _QUEUES_WITHOUT_DEAD_LETTERS else dead_letter_queue_name(instance_id, logical)
        config = QueueConfig(
            name=name,
            fifo=spec.fifo,
            visibility_timeout_seconds=spec.visibility_timeout_seconds,
            dead_letter_queue=dead_letter,
            max_receive_count=_EMULATED_MAX_RECEIVE_COUNT if dead_letter else None,
        )
        values[url_properties[logical]] = create_queue(sqs, name, config)
    values.update(properties or {})
    instance_properties = InstanceProperties(values)
    instance_properties.validate_all()
    S3PropertiesStore(s3, config_bucket).save_instance(dict(instance_properties.items()))
    return AwsRuntimeConfig(config_bucket=config_bucket, settings=settings)
