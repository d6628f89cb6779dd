"""Instance properties set by users for queries and the Athena integration."""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.instance_common import DEFAULT_TABLE_STATE_LAMBDA_MEMORY
from sleeper.core.properties.validation import LAMBDA_TIMEOUT, POSITIVE_INT, ListValue

_query = PropertyList(InstancePropertyGroup.QUERY)

MAXIMUM_CONNECTIONS_TO_S3_FOR_QUERIES = _query.user(
    "sleeper.query.s3.max-connections",
    "The maximum number of simultaneous connections to S3 from one query processor. Separate from "
    "`sleeper.fs.s3a.max-connections` because a query often opens many files at once.",
    default="1024",
    validation=POSITIVE_INT,
    not_used=(
        "S3 is reached through pyarrow's S3 filesystem; there is no Hadoop S3A client to configure, and "
        "pyarrow's has no connection limit"
    ),
)
QUERY_PROCESSOR_LAMBDA_MEMORY_IN_MB = _query.user(
    "sleeper.query.processor.memory.mb",
    "The memory in MB of the Lambda function that runs queries.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS = _query.user(
    "sleeper.query.processor.timeout.seconds",
    "The timeout in seconds (1 to 900) of the Lambda function that runs queries: the longest a query may read files. "
    "The garbage collection delay must exceed this plus the query state cache timeout.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
QUERY_PROCESSING_LAMBDA_STATE_REFRESHING_PERIOD_IN_SECONDS = _query.user(
    "sleeper.query.processor.state.refresh.period.seconds",
    "How often, in seconds, the query processor reads the partitions and file references again.",
    default="60",
    validation=POSITIVE_INT,
    not_used=(
        "a query reads its table's transaction log up to the head before it is planned, so the state it uses "
        "is never older than the query"
    ),
)
QUERY_PROCESSING_LAMBDA_RESULTS_BATCH_SIZE = _query.user(
    "sleeper.query.processor.results.batch.size",
    "The most rows in one batch of results sent to the results queue by the query processor.",
    default="2000",
    validation=POSITIVE_INT,
)
QUERY_PROCESSOR_LAMBDA_ROW_RETRIEVAL_THREADS = _query.user(
    "sleeper.query.processor.row.retrieval.threads",
    "How many threads the query processor uses to read rows.",
    default="10",
    validation=POSITIVE_INT,
    not_used="a sub-query reads its files one after another; pyarrow decodes their pages on its own thread pool",
)
DEFAULT_QUERY_PROCESSOR_CACHE_TIMEOUT = _query.user(
    "sleeper.default.table.query.processor.cache.timeout.seconds",
    "The default for `sleeper.table.query.processor.cache.timeout.seconds`: how long, in seconds, the query "
    "processor's cached partitions and file references stay valid before they are read again.",
    default="60",
    validation=POSITIVE_INT,
)
QUERY_TRACKER_ITEM_TTL_IN_DAYS = _query.user(
    "sleeper.query.tracker.ttl.days",
    "How many days the query tracker keeps the status of a query after its last update (on AWS the DynamoDB time "
    "to live of its rows).",
    default="1",
    validation=POSITIVE_INT,
)
QUERY_RESULTS_BUCKET_EXPIRY_IN_DAYS = _query.user(
    "sleeper.query.results.bucket.expiry.days",
    "How many days query results stay in the query results bucket before they are deleted.",
    default="7",
    validation=POSITIVE_INT,
    redeploy=True,
)
QUERY_RESULTS_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS = _query.user(
    "sleeper.query.results.queue.visibility.timeout.seconds",
    "The visibility timeout in seconds of the query results queue.",
    default="900",
    validation=POSITIVE_INT,
    redeploy=True,
)
DEFAULT_RESULTS_ROW_GROUP_SIZE = _query.user(
    "sleeper.default.query.results.rowgroup.size",
    "The default row group size in bytes of the Parquet files that query results are written to (8 MiB). A query "
    "can set its own.",
    default="8388608",
    validation=POSITIVE_INT,
)
DEFAULT_RESULTS_PAGE_SIZE = _query.user(
    "sleeper.default.query.results.page.size",
    "The default page size in bytes of the Parquet files that query results are written to (128 KiB). A query can "
    "set its own.",
    default="131072",
    validation=POSITIVE_INT,
)
QUERY_WARM_LAMBDA_EXECUTION_PERIOD_IN_MINUTES = _query.user(
    "sleeper.query.warm.lambda.period.minutes",
    "How often, in minutes, the query Lambda functions are invoked to keep them warm, when the KeepLambdaWarmStack "
    "is deployed.",
    default="5",
    validation=POSITIVE_INT,
    redeploy=True,
)

_athena = PropertyList(InstancePropertyGroup.ATHENA)

SPILL_BUCKET_AGE_OFF_IN_DAYS = _athena.user(
    "sleeper.athena.spill.bucket.ageoff.days",
    "How many days objects stay in the Athena spill bucket before they are deleted.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)
ATHENA_COMPOSITE_HANDLER_CLASSES = _athena.user(
    "sleeper.athena.handler.classes",
    "The Athena connectors to deploy, as a comma-separated list of Sleeper's handler class names. Both are deployed "
    "by default; remove one if it is not needed.",
    default="sleeper.athena.composite.SimpleCompositeHandler,sleeper.athena.composite.IteratorApplyingCompositeHandler",
    validation=ListValue(),
    redeploy=True,
)
ATHENA_COMPOSITE_HANDLER_MEMORY = _athena.user(
    "sleeper.athena.handler.memory.mb",
    "The memory in MB of the Athena connector Lambda functions.",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
ATHENA_COMPOSITE_HANDLER_TIMEOUT_IN_SECONDS = _athena.user(
    "sleeper.athena.handler.timeout.seconds",
    "The timeout in seconds of the Athena connector Lambda functions.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
ATHENA_SPILL_MASTER_KEY_ARN = _athena.user(
    "sleeper.athena.spill.master.key.arn",
    "The ARN of the KMS key that encrypts data in the Athena spill bucket: the bucket's default encryption "
    "(SSE-KMS) and the connectors may use it. Unset, S3's own keys. Spilled blocks are also encrypted by the "
    "connectors with a key of their own per split.",
    redeploy=True,
)

DEFINITIONS = _query.all() + _athena.all()
"""The definitions in this module, in order."""
