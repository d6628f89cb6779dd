"""Instance properties that only a deployment sets: resource names, queue URLs, ARNs.

Users never set these. The CDK stacks (or the local runtime, for its own equivalents) write them into the instance
properties so that every component can find the resources. Names are Sleeper's, so that Sleeper's Python client can
use an instance deployed by this port.
"""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList

_common = PropertyList(InstancePropertyGroup.COMMON)

VERSION = _common.cdk(
    "sleeper.version",
    "The version of Sleeper deployed, used to pick the matching artefacts and container image tags.",
)
ACCOUNT = _common.cdk("sleeper.account", "The AWS account the instance is deployed in.")
REGION = _common.cdk("sleeper.region", "The AWS region the instance is deployed in.")
PARTITION = _common.cdk("sleeper.partition", "The AWS partition the instance is deployed in, e.g. `aws`.")
DNS_SUFFIX = _common.cdk(
    "sleeper.dns.suffix", "The DNS suffix of the AWS partition the instance is deployed in, e.g. `amazonaws.com`."
)
CDK_APP = _common.cdk(
    "sleeper.cdk.app",
    "Which of Sleeper's CDK apps deployed the instance; empty for a custom CDK app.",
    not_used="this port has one CDK app, sleeper.cdk.app, which does not record itself",
)
ADMIN_ROLE_ARN = _common.cdk(
    "sleeper.admin.role.arn",
    "The ARN of a role allowed to administer the instance.",
    not_used=(
        "the deployment creates the managed policies sleeper-<id>-IngestPolicy, -QueryPolicy and -AdminPolicy "
        "for users to attach, not roles"
    ),
)
ECS_SECURITY_GROUP = _common.cdk("sleeper.ecs.security.group.id", "The security group of ECS tasks and services.")
CONFIG_BUCKET = _common.cdk(
    "sleeper.config.bucket",
    "The S3 bucket holding the configuration: `instance.properties` and `tables/table-<id>.properties`.",
)
DATA_BUCKET = _common.cdk("sleeper.data.bucket", "The S3 bucket holding table data.")
TABLE_NAME_INDEX_DYNAMO_TABLENAME = _common.cdk(
    "sleeper.tables.name.index.dynamo.table", "The DynamoDB table indexing Sleeper tables by name."
)
TABLE_ID_INDEX_DYNAMO_TABLENAME = _common.cdk(
    "sleeper.tables.id.index.dynamo.table", "The DynamoDB table indexing Sleeper tables by id."
)
TABLE_ONLINE_INDEX_DYNAMO_TABLENAME = _common.cdk(
    "sleeper.tables.online.index.dynamo.table",
    "The DynamoDB table indexing Sleeper tables by whether they are online, sorted by name.",
)
TRANSACTION_LOG_FILES_TABLENAME = _common.cdk(
    "sleeper.statestore.transactionlog.dynamo.file.log.table",
    "The DynamoDB table holding the transaction log of files.",
)
TRANSACTION_LOG_PARTITIONS_TABLENAME = _common.cdk(
    "sleeper.statestore.transactionlog.dynamo.partition.log.table",
    "The DynamoDB table holding the transaction log of partitions.",
)
TRANSACTION_LOG_ALL_SNAPSHOTS_TABLENAME = _common.cdk(
    "sleeper.statestore.transactionlog.dynamo.all.snapshots.table",
    "The DynamoDB table recording every transaction log snapshot.",
)
TRANSACTION_LOG_LATEST_SNAPSHOTS_TABLENAME = _common.cdk(
    "sleeper.statestore.transactionlog.dynamo.latest.snapshots.table",
    "The DynamoDB table recording the latest transaction log snapshots of each table.",
)
(
    TRANSACTION_LOG_SNAPSHOT_CREATION_QUEUE_URL,
    TRANSACTION_LOG_SNAPSHOT_CREATION_QUEUE_ARN,
    TRANSACTION_LOG_SNAPSHOT_CREATION_DLQ_URL,
    TRANSACTION_LOG_SNAPSHOT_CREATION_DLQ_ARN,
) = _common.queue(
    "sleeper.statestore.transactionlog.snapshots.creation", "requests to create transaction log snapshots"
)
TRANSACTION_LOG_SNAPSHOT_CREATION_RULE = _common.cdk(
    "sleeper.statestore.transactionlog.snapshots.creation.rule",
    "The schedule rule that starts transaction log snapshot creation.",
)
(
    TRANSACTION_LOG_SNAPSHOT_DELETION_QUEUE_URL,
    TRANSACTION_LOG_SNAPSHOT_DELETION_QUEUE_ARN,
    TRANSACTION_LOG_SNAPSHOT_DELETION_DLQ_URL,
    TRANSACTION_LOG_SNAPSHOT_DELETION_DLQ_ARN,
) = _common.queue("sleeper.statestore.transactionlog.snapshots.deletion", "requests to delete old snapshots")
TRANSACTION_LOG_SNAPSHOT_DELETION_RULE = _common.cdk(
    "sleeper.statestore.transactionlog.snapshots.deletion.rule",
    "The schedule rule that starts deletion of old transaction log snapshots.",
)
(
    TRANSACTION_LOG_TRANSACTION_DELETION_QUEUE_URL,
    TRANSACTION_LOG_TRANSACTION_DELETION_QUEUE_ARN,
    TRANSACTION_LOG_TRANSACTION_DELETION_DLQ_URL,
    TRANSACTION_LOG_TRANSACTION_DELETION_DLQ_ARN,
) = _common.queue("sleeper.statestore.transactionlog.transaction.deletion", "requests to delete old transactions")
TRANSACTION_LOG_TRANSACTION_DELETION_RULE = _common.cdk(
    "sleeper.statestore.transactionlog.transaction.deletion.rule",
    "The schedule rule that starts deletion of old transaction log entries.",
)
(
    ICEBERG_PUBLISH_QUEUE_URL,
    ICEBERG_PUBLISH_QUEUE_ARN,
    ICEBERG_PUBLISH_DLQ_URL,
    ICEBERG_PUBLISH_DLQ_ARN,
) = _common.queue("sleeper.iceberg.publish", "requests to publish tables as Iceberg views (beyond Sleeper)")
ICEBERG_PUBLISH_RULE = _common.cdk(
    "sleeper.iceberg.publish.rule", "The schedule rule that starts publishing tables as Iceberg views."
)
(
    STATESTORE_COMMITTER_QUEUE_URL,
    STATESTORE_COMMITTER_QUEUE_ARN,
    STATESTORE_COMMITTER_DLQ_URL,
    STATESTORE_COMMITTER_DLQ_ARN,
) = _common.queue("sleeper.statestore.committer", "asynchronous state store commit requests (FIFO, grouped by table)")
STATESTORE_COMMITTER_LOG_GROUP = _common.cdk(
    "sleeper.statestore.committer.log.group", "The log group of the state store committer."
)
STATESTORE_COMMITTER_EVENT_SOURCE_ID = _common.cdk(
    "sleeper.statestore.committer.event.source.id",
    "The id of the event source mapping that feeds the state store committer from its queue.",
    not_used=(
        "pause and resume act on the EventBridge rules only; the committer keeps applying the commits it is sent"
    ),
)
REST_API_URL = _common.cdk("sleeper.rest.api.url", "The URL of the Sleeper REST API.")

_metrics = PropertyList(InstancePropertyGroup.METRICS)

TABLE_METRICS_LAMBDA_FUNCTION = _metrics.cdk(
    "sleeper.lambda.table.metrics.function", "The Lambda function that starts calculating metrics for every table."
)
(
    TABLE_METRICS_QUEUE_URL,
    TABLE_METRICS_QUEUE_ARN,
    TABLE_METRICS_DLQ_URL,
    TABLE_METRICS_DLQ_ARN,
) = _metrics.queue("sleeper.sqs.table.metrics", "requests to calculate table metrics")
TABLE_METRICS_RULE = _metrics.cdk(
    "sleeper.schedule.table.metrics.rule", "The schedule rule that starts calculating table metrics."
)

_query = PropertyList(InstancePropertyGroup.QUERY)

QUERY_LAMBDA_ROLE = _query.cdk(
    "sleeper.query.role.arn",
    "The ARN of a role allowed to query the instance.",
    not_used=(
        "the deployment creates the managed policies sleeper-<id>-IngestPolicy, -QueryPolicy and -AdminPolicy "
        "for users to attach, not roles"
    ),
)
QUERY_WEBSOCKET_API_URL = _query.cdk(
    "sleeper.query.websocket.api.url", "The URL of the WebSocket API for queries (SigV4-signed)."
)
QUERY_QUEUE_URL, QUERY_QUEUE_ARN, QUERY_DLQ_URL, QUERY_DLQ_ARN = _query.queue("sleeper.query", "queries")
QUERY_RESULTS_QUEUE_URL = _query.cdk(
    "sleeper.query.results.queue.url", "The URL of the queue that query results are sent to, when asked for."
)
QUERY_RESULTS_QUEUE_ARN = _query.cdk(
    "sleeper.query.results.queue.arn", "The ARN of the queue that query results are sent to, when asked for."
)
QUERY_RESULTS_BUCKET = _query.cdk(
    "sleeper.query.results.bucket", "The S3 bucket that query results are written to by default."
)
QUERY_TRACKER_TABLE_NAME = _query.cdk(
    "sleeper.query.tracker.table.name", "The DynamoDB table tracking the progress of queries."
)
QUERY_WARM_LAMBDA_CLOUDWATCH_RULE = _query.cdk(
    "sleeper.query.warm.lambda.rule", "The schedule rule that invokes the query Lambda functions to keep them warm."
)
(
    LEAF_PARTITION_QUERY_QUEUE_URL,
    LEAF_PARTITION_QUERY_QUEUE_ARN,
    LEAF_PARTITION_QUERY_QUEUE_DLQ_URL,
    LEAF_PARTITION_QUERY_QUEUE_DLQ_ARN,
) = _query.queue("sleeper.query.leaf.partition", "sub-queries, one per leaf partition")

_export = PropertyList(InstancePropertyGroup.BULK_EXPORT)

(
    BULK_EXPORT_QUEUE_URL,
    BULK_EXPORT_QUEUE_ARN,
    BULK_EXPORT_QUEUE_DLQ_URL,
    BULK_EXPORT_QUEUE_DLQ_ARN,
) = _export.queue("sleeper.bulk.export", "bulk export jobs", dlq="queue.dlq")
BULK_EXPORT_LAMBDA_ROLE_ARN = _export.cdk(
    "sleeper.bulk.export.lambda.role.arn", "The ARN of the role of the bulk export Lambda function."
)
BULK_EXPORT_TASK_FARGATE_DEFINITION_FAMILY = _export.cdk(
    "sleeper.bulk.export.fargate.task.definition", "The family of the Fargate task definitions of bulk export tasks."
)
BULK_EXPORT_CLUSTER = _export.cdk("sleeper.bulk.export.cluster", "The ECS cluster that runs bulk export tasks.")
BULK_EXPORT_TASK_CREATION_LAMBDA_FUNCTION = _export.cdk(
    "sleeper.bulk.export.task.creation.lambda.function", "The Lambda function that starts bulk export tasks."
)
BULK_EXPORT_TASK_CREATION_CLOUDWATCH_RULE = _export.cdk(
    "sleeper.bulk.export.task.creation.rule", "The schedule rule that starts bulk export task creation."
)
(
    LEAF_PARTITION_BULK_EXPORT_QUEUE_URL,
    LEAF_PARTITION_BULK_EXPORT_QUEUE_ARN,
    LEAF_PARTITION_BULK_EXPORT_QUEUE_DLQ_URL,
    LEAF_PARTITION_BULK_EXPORT_QUEUE_DLQ_ARN,
) = _export.queue("sleeper.bulk.export.leaf.partition", "bulk exports of single leaf partitions", dlq="queue.dlq")
BULK_EXPORT_S3_BUCKET = _export.cdk("sleeper.bulk.export.s3.bucket", "The S3 bucket that bulk exports are written to.")

_compaction = PropertyList(InstancePropertyGroup.COMPACTION)

COMPACTION_CLUSTER = _compaction.cdk("sleeper.compaction.cluster", "The ECS cluster that runs compaction tasks.")
COMPACTION_TASK_EC2_DEFINITION_FAMILY = _compaction.cdk(
    "sleeper.compaction.ec2.task.definition", "The family of the EC2 task definitions of compaction tasks."
)
COMPACTION_TASK_FARGATE_DEFINITION_FAMILY = _compaction.cdk(
    "sleeper.compaction.fargate.task.definition", "The family of the Fargate task definitions of compaction tasks."
)
COMPACTION_JOB_CREATION_TRIGGER_LAMBDA_FUNCTION = _compaction.cdk(
    "sleeper.compaction.job.creation.trigger.lambda.function",
    "The Lambda function that starts compaction job creation for every online table.",
)
COMPACTION_JOB_CREATION_CLOUDWATCH_RULE = _compaction.cdk(
    "sleeper.compaction.job.creation.rule", "The schedule rule that starts compaction job creation."
)
(
    COMPACTION_JOB_CREATION_QUEUE_URL,
    COMPACTION_JOB_CREATION_QUEUE_ARN,
    COMPACTION_JOB_CREATION_DLQ_URL,
    COMPACTION_JOB_CREATION_DLQ_ARN,
) = _compaction.queue("sleeper.compaction.job.creation", "tables to create compaction jobs for")
(
    COMPACTION_JOB_QUEUE_URL,
    COMPACTION_JOB_QUEUE_ARN,
    COMPACTION_JOB_DLQ_URL,
    COMPACTION_JOB_DLQ_ARN,
) = _compaction.queue("sleeper.compaction.job", "compaction jobs")
(
    COMPACTION_PENDING_QUEUE_URL,
    COMPACTION_PENDING_QUEUE_ARN,
    COMPACTION_PENDING_DLQ_URL,
    COMPACTION_PENDING_DLQ_ARN,
) = _compaction.queue("sleeper.compaction.pending", "pending batches of compaction jobs")
(
    COMPACTION_COMMIT_QUEUE_URL,
    COMPACTION_COMMIT_QUEUE_ARN,
    COMPACTION_COMMIT_DLQ_URL,
    COMPACTION_COMMIT_DLQ_ARN,
) = _compaction.queue("sleeper.compaction.commit", "finished compactions waiting to be committed in batches")
COMPACTION_TASK_CREATION_LAMBDA_FUNCTION = _compaction.cdk(
    "sleeper.compaction.task.creation.lambda.function", "The Lambda function that starts compaction tasks."
)
COMPACTION_TASK_CREATION_CLOUDWATCH_RULE = _compaction.cdk(
    "sleeper.compaction.task.creation.rule", "The schedule rule that starts compaction task creation."
)
COMPACTION_AUTO_SCALING_GROUP = _compaction.cdk(
    "sleeper.compaction.scaling.group", "The EC2 auto scaling group of compaction tasks with the EC2 launch type."
)

_splitting = PropertyList(InstancePropertyGroup.PARTITION_SPLITTING)

(
    FIND_PARTITIONS_TO_SPLIT_QUEUE_URL,
    FIND_PARTITIONS_TO_SPLIT_QUEUE_ARN,
    FIND_PARTITIONS_TO_SPLIT_DLQ_URL,
    FIND_PARTITIONS_TO_SPLIT_DLQ_ARN,
) = _splitting.queue("sleeper.partition.splitting.finder", "tables to find partitions to split in")
(
    PARTITION_SPLITTING_JOB_QUEUE_URL,
    PARTITION_SPLITTING_JOB_QUEUE_ARN,
    PARTITION_SPLITTING_JOB_DLQ_URL,
    PARTITION_SPLITTING_JOB_DLQ_ARN,
) = _splitting.queue("sleeper.partition.splitting.job", "partition splitting jobs")
PARTITION_SPLITTING_TRIGGER_LAMBDA_FUNCTION = _splitting.cdk(
    "sleeper.partition.splitting.trigger.lambda.function",
    "The Lambda function that starts looking for partitions to split in every online table.",
)
PARTITION_SPLITTING_CLOUDWATCH_RULE = _splitting.cdk(
    "sleeper.partition.splitting.rule", "The schedule rule that starts partition splitting."
)

_gc = PropertyList(InstancePropertyGroup.GARBAGE_COLLECTOR)

GARBAGE_COLLECTOR_CLOUDWATCH_RULE = _gc.cdk("sleeper.gc.rule", "The schedule rule that starts garbage collection.")
GARBAGE_COLLECTOR_LAMBDA_FUNCTION = _gc.cdk("sleeper.gc.lambda.function", "The garbage collector Lambda function.")
(
    GARBAGE_COLLECTOR_QUEUE_URL,
    GARBAGE_COLLECTOR_QUEUE_ARN,
    GARBAGE_COLLECTOR_DLQ_URL,
    GARBAGE_COLLECTOR_DLQ_ARN,
) = _gc.queue("sleeper.gc", "tables to collect garbage in")

_ingest = PropertyList(InstancePropertyGroup.INGEST)

INGEST_LAMBDA_FUNCTION = _ingest.cdk("sleeper.ingest.lambda.function", "The Lambda function that starts ingest tasks.")
INGEST_CLOUDWATCH_RULE = _ingest.cdk("sleeper.ingest.rule", "The schedule rule that starts ingest task creation.")
INGEST_JOB_QUEUE_URL, INGEST_JOB_QUEUE_ARN, INGEST_JOB_DLQ_URL, INGEST_JOB_DLQ_ARN = _ingest.queue(
    "sleeper.ingest.job", "ingest jobs"
)
(
    INGEST_BATCHER_SUBMIT_QUEUE_URL,
    INGEST_BATCHER_SUBMIT_QUEUE_ARN,
    INGEST_BATCHER_SUBMIT_DLQ_URL,
    INGEST_BATCHER_SUBMIT_DLQ_ARN,
) = _ingest.queue("sleeper.ingest.batcher.submit", "files submitted to the ingest batcher")
INGEST_BATCHER_JOB_CREATION_CLOUDWATCH_RULE = _ingest.cdk(
    "sleeper.ingest.batcher.job.creation.rule", "The schedule rule that starts the batcher creating jobs."
)
INGEST_BATCHER_JOB_CREATION_FUNCTION = _ingest.cdk(
    "sleeper.ingest.batcher.job.creation.lambda", "The Lambda function that creates jobs from files in the batcher."
)
INGEST_BATCHER_SUBMIT_REQUEST_FUNCTION = _ingest.cdk(
    "sleeper.ingest.batcher.submit.lambda", "The Lambda function that receives files submitted to the batcher."
)
INGEST_TASK_DEFINITION_FAMILY = _ingest.cdk(
    "sleeper.ingest.task.definition.family", "The family of the task definitions of ingest tasks."
)
INGEST_CLUSTER = _ingest.cdk("sleeper.ingest.cluster", "The ECS cluster that runs ingest tasks.")
INGEST_BY_QUEUE_ROLE_ARN = _ingest.cdk(
    "sleeper.ingest.by.queue.role.arn",
    "The ARN of a role allowed to ingest by sending jobs to the queues.",
    not_used=(
        "the deployment creates the managed policies sleeper-<id>-IngestPolicy, -QueryPolicy and -AdminPolicy "
        "for users to attach, not roles"
    ),
)
INGEST_DIRECT_ROLE_ARN = _ingest.cdk(
    "sleeper.ingest.direct.role.arn",
    "The ARN of a role allowed to ingest directly into the instance.",
    not_used=(
        "the deployment creates the managed policies sleeper-<id>-IngestPolicy, -QueryPolicy and -AdminPolicy "
        "for users to attach, not roles"
    ),
)

_bulk = PropertyList(InstancePropertyGroup.BULK_IMPORT)

BULK_IMPORT_BUCKET = _bulk.cdk("sleeper.bulk.import.bucket", "The S3 bucket used by bulk import.")
BULK_IMPORT_EMR_EC2_ROLE_NAME = _bulk.cdk(
    "sleeper.bulk.import.emr.ec2.role.name", "The job flow role of bulk import EMR clusters."
)
BULK_IMPORT_EMR_CLUSTER_ROLE_NAME = _bulk.cdk(
    "sleeper.bulk.import.emr.role.name", "The service role of bulk import EMR clusters."
)
BULK_IMPORT_EMR_SECURITY_CONF_NAME = _bulk.cdk(
    "sleeper.bulk.import.emr.security.conf.name", "The security configuration of bulk import EMR clusters."
)
BULK_IMPORT_EMR_JOB_QUEUE_URL = _bulk.cdk(
    "sleeper.bulk.import.emr.job.queue.url", "The URL of the queue of bulk import jobs run on EMR clusters."
)
BULK_IMPORT_EMR_JOB_QUEUE_ARN = _bulk.cdk(
    "sleeper.bulk.import.emr.job.queue.arn", "The ARN of the queue of bulk import jobs run on EMR clusters."
)
BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.cluster.name", "The name of the EMR Serverless application for bulk import."
)
BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.application.id", "The id of the EMR Serverless application for bulk import."
)
BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.role.arn", "The ARN of the role bulk import jobs run as on EMR Serverless."
)
BULK_IMPORT_EMR_SERVERLESS_JOB_QUEUE_URL = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.job.queue.url",
    "The URL of the queue of bulk import jobs run on EMR Serverless.",
)
BULK_IMPORT_EMR_SERVERLESS_JOB_QUEUE_ARN = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.job.queue.arn",
    "The ARN of the queue of bulk import jobs run on EMR Serverless.",
)
BULK_IMPORT_EMR_SERVERLESS_STUDIO_URL = _bulk.cdk(
    "sleeper.bulk.import.emr.serverless.studio.url",
    "The URL of the EMR Studio giving access to EMR Serverless.",
    not_used="EmrStudioStack is not deployed by this port",
)
BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL = _bulk.cdk(
    "sleeper.bulk.import.persistent.emr.job.queue.url",
    "The URL of the queue of bulk import jobs run on the persistent EMR cluster.",
)
BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_ARN = _bulk.cdk(
    "sleeper.bulk.import.persistent.emr.job.queue.arn",
    "The ARN of the queue of bulk import jobs run on the persistent EMR cluster.",
)
BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME = _bulk.cdk(
    "sleeper.bulk.import.persistent.emr.cluster.name", "The name of the persistent EMR cluster for bulk import."
)
BULK_IMPORT_PERSISTENT_EMR_MASTER_DNS = _bulk.cdk(
    "sleeper.bulk.import.persistent.emr.master", "The public DNS name of the persistent EMR cluster's master node."
)
BULK_IMPORT_EKS_JOB_QUEUE_URL = _bulk.cdk(
    "sleeper.bulk.import.eks.job.queue.url", "The URL of the queue of bulk import jobs run on EKS (EksBulkImportStack)."
)
BULK_IMPORT_EKS_JOB_QUEUE_ARN = _bulk.cdk(
    "sleeper.bulk.import.eks.job.queue.arn", "The ARN of the queue of bulk import jobs run on EKS (EksBulkImportStack)."
)
BULK_IMPORT_EKS_STATE_MACHINE_ARN = _bulk.cdk(
    "sleeper.bulk.import.eks.statemachine.arn", "The ARN of the state machine running bulk import jobs on EKS."
)
BULK_IMPORT_EKS_NAMESPACE = _bulk.cdk(
    "sleeper.bulk.import.eks.k8s.namespace", "The Kubernetes namespace that bulk import Spark jobs run in on EKS."
)
BULK_IMPORT_EKS_CLUSTER_NAME = _bulk.cdk("sleeper.bulk.import.eks.k8s.cluster.name", "The EKS cluster for bulk import.")
BULK_IMPORT_EKS_CLUSTER_ENDPOINT = _bulk.cdk(
    "sleeper.bulk.import.eks.k8s.endpoint", "The endpoint of the EKS cluster for bulk import."
)
BULK_IMPORT_EKS_CLUSTER_CA_DATA = _bulk.cdk(
    "sleeper.bulk.import.eks.k8s.ca.data", "The certificate authority data of the EKS cluster for bulk import."
)

DEFINITIONS = (
    _common.all()
    + _metrics.all()
    + _query.all()
    + _export.all()
    + _compaction.all()
    + _splitting.all()
    + _gc.all()
    + _ingest.all()
    + _bulk.all()
)
"""The definitions in this module, in order."""
