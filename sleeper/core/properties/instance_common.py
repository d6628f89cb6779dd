"""Instance properties set by users: common settings, table state, metrics and logging."""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.validation import (
    BOOLEAN,
    BYTE_SIZE,
    LAMBDA_TIMEOUT,
    NON_EMPTY,
    POSITIVE_INT,
    POSITIVE_INT_MAX_10,
    SQS_LAMBDA_CONCURRENCY,
    ChoiceValue,
    IntegerValue,
    ListValue,
    NonEmptyText,
)

_common = PropertyList(InstancePropertyGroup.COMMON)

ID_MAX_LENGTH = 20
"""The longest instance id Sleeper allows: it is part of many AWS resource names."""

OPTIONAL_STACKS_ALL = (
    "IngestStack",
    "IngestBatcherStack",
    "EmrServerlessBulkImportStack",
    "EmrBulkImportStack",
    "PersistentEmrBulkImportStack",
    "EksBulkImportStack",
    "EmrStudioStack",
    "BulkExportStack",
    "QueryStack",
    "WebSocketQueryStack",
    "AthenaStack",
    "KeepLambdaWarmStack",
    "CompactionStack",
    "GarbageCollectorStack",
    "PartitionSplittingStack",
    "RestApiStack",
    "DashboardStack",
    "TableMetricsStack",
)
"""Every optional stack Sleeper knows, in Sleeper's order."""

OPTIONAL_STACKS_DEFAULT = (
    "IngestStack",
    "IngestBatcherStack",
    "EmrServerlessBulkImportStack",
    "EmrStudioStack",
    "QueryStack",
    "CompactionStack",
    "GarbageCollectorStack",
    "PartitionSplittingStack",
    "DashboardStack",
    "TableMetricsStack",
)
"""The optional stacks deployed unless ``sleeper.optional.stacks`` says otherwise."""

LOG_RETENTION_DAYS_VALUES = (
    "-1", "1", "3", "5", "7", "14", "30", "60", "90", "120", "150", "180", "365", "400", "545", "731", "1827", "3653",
)  # fmt: skip

ID = _common.user(
    "sleeper.id",
    "A string that uniquely identifies this instance, of at most 20 characters. It is part of the names of the "
    "instance's AWS resources (such as S3 buckets), so it should be globally unique.",
    validation=NonEmptyText(max_length=ID_MAX_LENGTH),
    editable=False,
    required=True,
)
ARTEFACTS_DEPLOYMENT_ID = _common.user(
    "sleeper.artefacts.deployment",
    "The id of the deployment holding the artefacts (code bundles and container images) used to deploy the "
    "instance. Defaults to the instance id. Used to work out `sleeper.jars.bucket` and "
    "`sleeper.ecr.repository.prefix`.",
    falls_back_to=ID,
    validation=NON_EMPTY,
    redeploy=True,
)
JARS_BUCKET = _common.user(
    "sleeper.jars.bucket",
    "The S3 bucket holding the deployment artefacts of the Sleeper components. If unset, the deployment sets it from "
    "`sleeper.artefacts.deployment`.",
    redeploy=True,
)
ECR_REPOSITORY_PREFIX = _common.user(
    "sleeper.ecr.repository.prefix",
    "The prefix of the names of the ECR repositories holding the instance's container images, which are named "
    "`<prefix>/<image name>`. Defaults to `sleeper.artefacts.deployment`.",
    falls_back_to=ARTEFACTS_DEPLOYMENT_ID,
    validation=NON_EMPTY,
    redeploy=True,
)
USER_JARS = _common.user(
    "sleeper.userjars",
    "A comma-separated list of keys in `sleeper.jars.bucket` of custom iterator code. Python wheels (`.whl`, pure "
    "Python) are installed by every process that runs iterators when it starts (Lambda functions, ECS tasks, the bulk "
    "import Spark driver and executors); jars are Java Sleeper's and cannot run here (they are reported in the log). "
    "See docs/usage/iterators.md.",
    validation=ListValue(),
)
TAGS = _common.user(
    "sleeper.tags",
    "Tags applied to every AWS resource of the instance, as a comma-separated list of keys and values: "
    "`key1,value1,key2,value2`.",
    validation=ListValue(key_value_pairs=True),
    redeploy=True,
)
TAGS_EXCLUDED_RESOURCES = _common.user(
    "sleeper.tags.excluded.resources",
    "A comma-separated list of CloudFormation resource types not to tag, e.g. `AWS::EC2::Subnet`.",
    validation=ListValue(),
    redeploy=True,
)
STACK_TAG_NAME = _common.user(
    "sleeper.stack.tag.name",
    "The name of a tag set on every AWS resource to the id of the CDK stack that deployed it, e.g. to organise "
    "costs by stack.",
    default="DeploymentStack",
    redeploy=True,
)
RETAIN_INFRA_AFTER_DESTROY = _common.user(
    "sleeper.retain.infra.after.destroy",
    "Whether to keep the data bucket, DynamoDB tables, query results bucket and so on when the instance is destroyed.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
RETAIN_LOGS_AFTER_DESTROY = _common.user(
    "sleeper.retain.logs.after.destroy",
    "Whether to keep the instance's log groups when the instance is destroyed.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
DEFAULT_RETAIN_TABLE_AFTER_REMOVAL = _common.user(
    "sleeper.default.table.retain.after.removal",
    "The default for `sleeper.table.retain.after.removal`: whether a table removed from a declared instance "
    "configuration is only taken offline (true) or has all its data deleted (false).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_TABLE_REUSE_EXISTING = _common.user(
    "sleeper.default.table.reuse.existing",
    "The default for `sleeper.table.reuse.existing`: whether a table added to a declared instance configuration "
    "takes over an existing table of that name (true) or must be new (false).",
    default="false",
    validation=BOOLEAN,
)
OPTIONAL_STACKS = _common.user(
    "sleeper.optional.stacks",
    "The optional stacks to deploy, as a comma-separated list, in any case. An empty value deploys none. Valid "
    "values: " + ", ".join(OPTIONAL_STACKS_ALL) + ".",
    default=",".join(OPTIONAL_STACKS_DEFAULT),
    validation=ListValue(ChoiceValue(OPTIONAL_STACKS_ALL)),
    redeploy=True,
    ignore_empty=False,
)
LAMBDA_DEPLOY_TYPE = _common.user(
    "sleeper.lambda.deploy.type",
    "How Lambda functions are deployed: `jar` (a code bundle) or `container` (an image). Any case.",
    default="JAR",
    validation=ChoiceValue(("JAR", "CONTAINER")),
    redeploy=True,
    not_used="every Lambda function is deployed from the one Lambda container image",
)
ENDPOINT_URL = _common.user(
    "sleeper.endpoint.url",
    "The AWS endpoint URL, for a non-standard service endpoint such as an emulator. Leave unset for AWS.",
    editable=False,
    not_used=(
        "the AWS runtime takes the endpoint from AWS_ENDPOINT_URL, which it needs before it can read the "
        "config bucket holding this property"
    ),
)
VPC_ID = _common.user(
    "sleeper.vpc",
    "The id of the VPC to deploy to. Needed to deploy to AWS.",
    editable=False,
)
VPC_ENDPOINT_CHECK = _common.user(
    "sleeper.vpc.endpoint.check",
    "Whether to check that the VPC has an S3 endpoint; without one, NAT costs can be very large.",
    default="true",
    validation=BOOLEAN,
    not_used="the deployment does not look for an S3 endpoint in the VPC",
)
SUBNETS = _common.user(
    "sleeper.subnets",
    "A comma-separated list of the subnets to deploy to. ECS tasks run across all of them; an EMR cluster runs in "
    "one chosen when it is created. Needed to deploy to AWS.",
    validation=ListValue(),
    editable=False,
)
FILE_SYSTEM = _common.user(
    "sleeper.filesystem",
    "The URI scheme used to reach S3 (Hadoop's `s3a://` in Java Sleeper). This port reads and writes S3 through "
    "pyarrow, which takes `s3://` and `s3a://` alike.",
    default="s3a://",
)
EMAIL_ADDRESS_FOR_ERROR_NOTIFICATION = _common.user(
    "sleeper.errors.email",
    "An email address to which SNS sends notifications of errors, such as messages arriving on a dead letter queue.",
    redeploy=True,
)
LOG_RETENTION_IN_DAYS = _common.user(
    "sleeper.log.retention.days",
    "How many days CloudWatch keeps the logs of the instance's Lambda functions and containers; -1 keeps them "
    "forever. Valid values: " + ", ".join(LOG_RETENTION_DAYS_VALUES) + ".",
    default="30",
    validation=ChoiceValue(LOG_RETENTION_DAYS_VALUES, case_sensitive=True),
    redeploy=True,
)
TRACING_ENABLED = _common.user(
    "sleeper.tracing.enabled",
    "Whether the instance's Lambda functions are traced with AWS X-Ray (beyond Sleeper): true deploys every "
    "function with active tracing and POWERTOOLS_TRACE_DISABLED=false, and gives each function's role the X-Ray "
    "calls it needs (PutTraceSegments and PutTelemetryRecords, which take no resource); false deploys them untraced "
    "(Lambda passes through a trace header it receives) with POWERTOOLS_TRACE_DISABLED=true. The EKS bulk import "
    "state machine is always traced.",
    default="false",
    validation=BOOLEAN,
    redeploy=True,
)
LAMBDA_CPU_ARCHITECTURE = _common.user(
    "sleeper.lambda.cpu.architecture",
    "The CPU architecture of the instance's Lambda functions (beyond Sleeper): `ARM64` or `X86_64`. The Lambda image "
    "is built for it (asset mode); in ECR mode the image pushed to the `lambda` repository must be built for it.",
    default="ARM64",
    validation=ChoiceValue(("ARM64", "X86_64")),
    redeploy=True,
)
MAXIMUM_CONNECTIONS_TO_S3 = _common.user(
    "sleeper.fs.s3a.max-connections",
    "The maximum number of simultaneous HTTP connections to S3 from one process. Must be more than the number of "
    "files a compaction reads (`sleeper.table.compaction.files.batch.size`) plus one for its output.",
    default="100",
    validation=POSITIVE_INT,
)
S3_UPLOAD_BLOCK_SIZE = _common.user(
    "sleeper.fs.s3a.upload.block.size",
    "The size of the parts in which files are uploaded to S3. A larger value buffers more data before an upload "
    "starts.",
    default="32M",
    validation=BYTE_SIZE,
    not_used=(
        "S3 is reached through pyarrow's S3 filesystem; there is no Hadoop S3A client to configure, and "
        "pyarrow chooses its own multipart upload part sizes"
    ),
)
FARGATE_VERSION = _common.user(
    "sleeper.fargate.version",
    "The version of the Fargate platform that ECS tasks run on.",
    default="1.4.0",
)
TASK_RUNNER_LAMBDA_MEMORY_IN_MB = _common.user(
    "sleeper.task.runner.memory.mb",
    "The memory in MB of the Lambda function that starts ECS tasks for compaction and ingest jobs.",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
TASK_RUNNER_LAMBDA_TIMEOUT_IN_SECONDS = _common.user(
    "sleeper.task.runner.timeout.seconds",
    "The timeout in seconds (1 to 900) of the Lambda function that starts ECS tasks for compaction and ingest jobs.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
FORCE_RELOAD_PROPERTIES = _common.user(
    "sleeper.properties.force.reload",
    "If true, a Lambda function reads the properties (and tables) again every time it is invoked, applying their "
    "logging levels again. ECS tasks read them when they start. Mainly for tests, to make sure properties are up to "
    "date.",
    default="false",
    validation=BOOLEAN,
)
DEFAULT_LAMBDA_CONCURRENCY_RESERVED = _common.user(
    "sleeper.default.lambda.concurrency.reserved",
    "The default reserved concurrency of each Lambda function whose work scales with the number of tables. Unset "
    "reserves none. The state store committer has its own setting, "
    "`sleeper.statestore.committer.concurrency.reserved`.",
    validation=SQS_LAMBDA_CONCURRENCY,
    redeploy=True,
)
DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM = _common.user(
    "sleeper.default.lambda.concurrency.max",
    "The default maximum concurrency of each Lambda function whose work scales with the number of tables, as set "
    "on its SQS event source (at least 2). 10 is enough for 10 online tables; raise it for more.",
    default="10",
    validation=SQS_LAMBDA_CONCURRENCY,
    redeploy=True,
)

_state = PropertyList(InstancePropertyGroup.TABLE_STATE)

DEFAULT_TABLE_STATE_LAMBDA_MEMORY = _state.user(
    "sleeper.default.lambda.table.state.memory.mb",
    "The default memory in MB of each Lambda function that holds the state of Sleeper tables in memory (it caches "
    "up to `sleeper.statestore.provider.cache.size` tables at once).",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
TABLE_BATCHING_LAMBDAS_MEMORY_IN_MB = _state.user(
    "sleeper.batch.table.lambdas.memory.mb",
    "The memory in MB of the Lambda functions that send one message per online table to start scheduled work "
    "(compaction job creation, garbage collection, partition splitting and so on).",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
TABLE_BATCHING_LAMBDAS_TIMEOUT_IN_SECONDS = _state.user(
    "sleeper.batch.table.lambdas.timeout.seconds",
    "The timeout in seconds of the Lambda functions that send one message per online table to start scheduled work.",
    default="60",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
TABLE_PROPERTIES_PROVIDER_TIMEOUT_IN_MINS = _state.user(
    "sleeper.cache.table.properties.provider.timeout.minutes",
    "How long in minutes a process keeps table properties in its cache before reading them again.",
    default="60",
    validation=POSITIVE_INT,
    not_used="a process reads a table's properties again once they are 60 seconds old, sooner than this cache's "
    "default of 60 minutes",
)
STATESTORE_PROVIDER_CACHE_SIZE = _state.user(
    "sleeper.statestore.provider.cache.size",
    "How many tables' state stores a process keeps in memory. When the cache is full the one used longest ago is "
    "dropped. 0 keeps none (every use reads the table again); a negative value disables the limit. Sleeper accepts "
    "only positive values.",
    default="10",
    validation=IntegerValue(),
)
STATESTORE_PROVIDER_MIN_FREE_HEAP_TARGET_AMOUNT = _state.user(
    "sleeper.statestore.provider.min.heap.target.amount",
    "The memory the state store cache tries to leave free when it sizes itself to the memory available, in a state "
    "store committer that runs on EC2.",
    default="100M",
    validation=BYTE_SIZE,
    not_used="only for a state store committer on EC2, which this port does not have",
)
DYNAMO_STATE_STORE_POINT_IN_TIME_RECOVERY = _state.user(
    "sleeper.statestore.dynamo.pointintimerecovery",
    "Whether point in time recovery is enabled on the DynamoDB tables of the state store: the transaction logs "
    "and the snapshot tables. On by default in this port (Sleeper's default is false): the transaction log is the "
    "only copy of a table's state. Set false to save its cost.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
S3_STATE_STORE_DYNAMO_POINT_IN_TIME_RECOVERY = _state.user(
    "sleeper.statestore.s3.dynamo.pointintimerecovery",
    "Whether point in time recovery is enabled on the revision table of Sleeper's older S3 state store. Not used "
    "by the transaction log state store; kept for compatibility.",
    default="false",
    validation=BOOLEAN,
    redeploy=True,
    not_used="this port has only the transaction log state store",
)
SNAPSHOT_CREATION_BATCH_SIZE = _state.user(
    "sleeper.statestore.snapshot.creation.batch.size",
    "How many tables one invocation creates transaction log snapshots for (the batch size of its SQS FIFO event "
    "source, at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
SNAPSHOT_CREATION_LAMBDA_PERIOD_IN_SECONDS = _state.user(
    "sleeper.statestore.snapshot.creation.lambda.period.seconds",
    "How often, in seconds, transaction log snapshots are created for every online table.",
    default="60",
    validation=POSITIVE_INT,
    redeploy=True,
)
SNAPSHOT_CREATION_LAMBDA_TIMEOUT_IN_SECONDS = _state.user(
    "sleeper.statestore.snapshot.creation.lambda.timeout.seconds",
    "The timeout in seconds of the Lambda function that creates transaction log snapshots.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
SNAPSHOT_CREATION_LAMBDA_MEMORY = _state.user(
    "sleeper.statestore.snapshot.creation.memory.mb",
    "The memory in MB of the Lambda function that creates transaction log snapshots. Defaults to "
    "`sleeper.default.lambda.table.state.memory.mb`.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
SNAPSHOT_CREATION_LAMBDA_CONCURRENCY_RESERVED = _state.user(
    "sleeper.statestore.snapshot.creation.concurrency.reserved",
    "The reserved concurrency of the Lambda function that creates transaction log snapshots.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
SNAPSHOT_CREATION_LAMBDA_CONCURRENCY_MAXIMUM = _state.user(
    "sleeper.statestore.snapshot.creation.concurrency.max",
    "The maximum concurrency of the Lambda function that creates transaction log snapshots.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
SNAPSHOT_DELETION_BATCH_SIZE = _state.user(
    "sleeper.statestore.snapshot.deletion.batch.size",
    "How many tables one invocation deletes old transaction log snapshots for (at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
SNAPSHOT_DELETION_LAMBDA_PERIOD_IN_MINUTES = _state.user(
    "sleeper.statestore.snapshot.deletion.lambda.period.minutes",
    "How often, in minutes, old transaction log snapshots are deleted for every online table.",
    default="60",
    validation=POSITIVE_INT,
    redeploy=True,
)
SNAPSHOT_DELETION_LAMBDA_CONCURRENCY_RESERVED = _state.user(
    "sleeper.statestore.snapshot.deletion.concurrency.reserved",
    "The reserved concurrency of the Lambda function that deletes old transaction log snapshots.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
SNAPSHOT_DELETION_LAMBDA_CONCURRENCY_MAXIMUM = _state.user(
    "sleeper.statestore.snapshot.deletion.concurrency.max",
    "The maximum concurrency of the Lambda function that deletes old transaction log snapshots.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
TRANSACTION_DELETION_BATCH_SIZE = _state.user(
    "sleeper.statestore.transaction.deletion.batch.size",
    "How many tables one invocation deletes old transaction log entries for (at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
TRANSACTION_DELETION_LAMBDA_PERIOD_IN_MINUTES = _state.user(
    "sleeper.statestore.transaction.deletion.lambda.period.minutes",
    "How often, in minutes, old transaction log entries are deleted for every online table.",
    default="60",
    validation=POSITIVE_INT,
    redeploy=True,
)
TRANSACTION_DELETION_LAMBDA_CONCURRENCY_RESERVED = _state.user(
    "sleeper.statestore.transaction.deletion.concurrency.reserved",
    "The reserved concurrency of the Lambda function that deletes old transaction log entries.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
TRANSACTION_DELETION_LAMBDA_CONCURRENCY_MAXIMUM = _state.user(
    "sleeper.statestore.transaction.deletion.concurrency.max",
    "The maximum concurrency of the Lambda function that deletes old transaction log entries.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
TRANSACTION_DELETION_LAMBDA_TIMEOUT_SECS = _state.user(
    "sleeper.statestore.transaction.deletion.lambda.timeout.seconds",
    "The timeout in seconds of the Lambda function that deletes old transaction log entries.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
TRANSACTION_FOLLOWER_LAMBDA_CONCURRENCY_RESERVED = _state.user(
    "sleeper.statestore.transaction.follower.concurrency.reserved",
    "The reserved concurrency of the Lambda function that follows the transaction log to trigger updates (such as "
    "job tracker updates).",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
TRANSACTION_FOLLOWER_LAMBDA_CONCURRENCY_MAXIMUM = _state.user(
    "sleeper.statestore.transaction.follower.concurrency.max",
    "The maximum concurrency of the Lambda function that follows the transaction log.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    not_used=(
        "the follower is fed by a DynamoDB stream, whose event source has no maximum concurrency (Sleeper "
        "does not use it either)"
    ),
)
TRANSACTION_FOLLOWER_LAMBDA_TIMEOUT_SECS = _state.user(
    "sleeper.statestore.transaction.follower.lambda.timeout.seconds",
    "The timeout in seconds of the Lambda function that follows the transaction log.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
TRANSACTION_FOLLOWER_LAMBDA_MEMORY = _state.user(
    "sleeper.statestore.transaction.follower.memory.mb",
    "The memory in MB of the Lambda function that follows the transaction log.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
TABLE_INDEX_DYNAMO_POINT_IN_TIME_RECOVERY = _state.user(
    "sleeper.tables.index.dynamo.pointintimerecovery",
    "Whether point in time recovery is enabled on the DynamoDB tables of the table index. On by default in this port "
    "(Sleeper's default is false): the index is the only record of which tables exist. Set false to save its cost.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
TABLE_INDEX_DYNAMO_STRONGLY_CONSISTENT_READS = _state.user(
    "sleeper.tables.index.dynamo.consistent.reads",
    "Whether reads of the table index DynamoDB tables are strongly consistent. Eventually consistent reads cost "
    "half as much and may miss a table created, renamed or deleted in the last second.",
    default="true",
    validation=BOOLEAN,
)
STATESTORE_COMMITTER_PLATFORM = _state.user(
    "sleeper.statestore.committer.platform",
    "Where the state store committer runs: `LAMBDA` or `EC2` (experimental). Any case.",
    default="LAMBDA",
    validation=ChoiceValue(("LAMBDA", "EC2")),
    redeploy=True,
    not_used="the state store committer always runs on Lambda here",
)
STATESTORE_COMMITTER_LAMBDA_MEMORY_IN_MB = _state.user(
    "sleeper.statestore.committer.lambda.memory.mb",
    "The memory in MB of the Lambda function that applies asynchronous state store commits.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
STATESTORE_COMMITTER_LAMBDA_TIMEOUT_IN_SECONDS = _state.user(
    "sleeper.statestore.committer.lambda.timeout.seconds",
    "The timeout in seconds of the Lambda function that applies asynchronous state store commits.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
STATESTORE_COMMITTER_BATCH_SIZE = _state.user(
    "sleeper.statestore.committer.batch.size",
    "How many commit requests the state store committer takes in one invocation (the batch size of its SQS FIFO "
    "event source, at most 10).",
    default="10",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
STATESTORE_COMMITTER_LAMBDA_CONCURRENCY_RESERVED = _state.user(
    "sleeper.statestore.committer.concurrency.reserved",
    "The reserved concurrency of the state store committer, so that commits can still be applied for at least this "
    "many tables when the account's concurrency is used up.",
    default="10",
    validation=SQS_LAMBDA_CONCURRENCY,
    redeploy=True,
)
STATESTORE_COMMITTER_LAMBDA_CONCURRENCY_MAXIMUM = _state.user(
    "sleeper.statestore.committer.concurrency.max",
    "The maximum concurrency of the state store committer.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
STATESTORE_COMMITTER_EC2_INSTANCE_TYPE = _state.user(
    "sleeper.statestore.committer.ec2.type",
    "The EC2 instance type of the state store committer when `sleeper.statestore.committer.platform` is EC2.",
    default="m8g.xlarge",
    validation=NON_EMPTY,
    redeploy=True,
    not_used="the state store committer always runs on Lambda here",
)

ICEBERG_PUBLISH_PERIOD_IN_MINUTES = _state.user(
    "sleeper.iceberg.publish.period.minutes",
    "Beyond Sleeper: how often, in minutes, every online table that names an Iceberg view "
    "(`sleeper.table.iceberg.name`) is published as a new snapshot of it. See docs/usage/iceberg.md.",
    default="10",
    validation=POSITIVE_INT,
    redeploy=True,
)

_metrics = PropertyList(InstancePropertyGroup.METRICS)

METRICS_NAMESPACE = _metrics.user(
    "sleeper.cloudwatch.table.metrics.namespace",
    "The CloudWatch namespace that table metrics are published to.",
    default="Sleeper",
    validation=NON_EMPTY,
    redeploy=True,
)
METRICS_LAMBDA_CONCURRENCY_RESERVED = _metrics.user(
    "sleeper.lambda.table.metrics.concurrency.reserved",
    "The reserved concurrency of the Lambda function that calculates table metrics.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
METRICS_LAMBDA_CONCURRENCY_MAXIMUM = _metrics.user(
    "sleeper.lambda.table.metrics.concurrency.max",
    "The maximum concurrency of the Lambda function that calculates table metrics.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
METRICS_TABLE_BATCH_SIZE = _metrics.user(
    "sleeper.run.table.metrics.batch.size",
    "How many tables one invocation calculates metrics for (at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
METRICS_FOR_OFFLINE_TABLES = _metrics.user(
    "sleeper.run.table.metrics.offline",
    "Whether to calculate metrics for offline tables as well as online ones.",
    default="false",
    validation=BOOLEAN,
)
DASHBOARD_TIME_WINDOW_MINUTES = _metrics.user(
    "sleeper.dashboard.time.window.minutes",
    "The period in minutes of the graphs on the CloudWatch dashboard.",
    default="5",
    validation=POSITIVE_INT,
    redeploy=True,
)
TRANSACTION_LOG_EVENT_COUNT_METRICS_ENABLE = _metrics.user(
    "sleeper.statestore.transactionlog.eventcount.metrics.enabled",
    "Whether the transaction log follower publishes counts of the events it handles.",
    default="false",
    validation=BOOLEAN,
    not_used="the transaction log follower publishes no metrics",
)

_logging = PropertyList(InstancePropertyGroup.LOGGING)

LOG_LEVELS = ("OFF", "FATAL", "CRITICAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "TRACE", "ALL")
"""The logging levels the ``sleeper.logging.*`` properties take: Log4j's names (as Java Sleeper's) and Python's."""
_LOG_LEVEL = ChoiceValue(LOG_LEVELS)
_LOGGING_APPLIES = (
    " Every Lambda function applies it when it starts (and when it reads the properties again), as do the ECS tasks, "
    "the bulk import Spark driver and `sleeper run` on a local instance: no deployment is needed."
)

LOGGING_LEVEL = _logging.user(
    "sleeper.logging.level",
    "The logging level of Sleeper's own code: the Python logger `sleeper` (the Lambda handlers' included), e.g. DEBUG "
    "or INFO (INFO when unset). Log4j's TRACE and ALL mean DEBUG here, FATAL is CRITICAL and OFF silences the loggers."
    + _LOGGING_APPLIES,
    validation=_LOG_LEVEL,
)
APACHE_LOGGING_LEVEL = _logging.user(
    "sleeper.logging.apache.level",
    "The logging level of the Apache libraries other than Parquet that log through Python: Spark's Python side "
    "(the loggers `pyspark` and `py4j`)." + _LOGGING_APPLIES,
    validation=_LOG_LEVEL,
)
PARQUET_LOGGING_LEVEL = _logging.user(
    "sleeper.logging.parquet.level",
    "The logging level of the Parquet library, pyarrow: its Python loggers (`pyarrow`). Arrow's C++ core logs "
    "through its own logging, which this does not reach." + _LOGGING_APPLIES,
    validation=_LOG_LEVEL,
)
AWS_LOGGING_LEVEL = _logging.user(
    "sleeper.logging.aws.level",
    "The logging level of the AWS SDK: the loggers `boto3`, `botocore`, `s3transfer` and `urllib3`." + _LOGGING_APPLIES,
    validation=_LOG_LEVEL,
)
ROOT_LOGGING_LEVEL = _logging.user(
    "sleeper.logging.root.level",
    "The logging level of everything else (the root logger; INFO when unset)." + _LOGGING_APPLIES,
    validation=_LOG_LEVEL,
)
RUST_BACKTRACE = _logging.user(
    "sleeper.logging.backtrace",
    "The value of the RUST_BACKTRACE environment variable, which Rust code (the DataFusion compaction engine) reads "
    "when it panics, e.g. `1` or `full`. Set in the processes that apply the logging levels.",
)
RUST_LOG = _logging.user(
    "sleeper.logging.rust",
    "The value of the RUST_LOG environment variable for Java Sleeper's native code.",
    redeploy=True,
    not_used="no Rust library this port loads initialises Rust's env_logger, so RUST_LOG has no reader",
)

DEFINITIONS = _common.all() + _state.all() + _metrics.all() + _logging.all()
"""The definitions in this module, in order."""
