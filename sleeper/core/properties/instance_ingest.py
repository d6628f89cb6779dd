"""Instance properties set by users for standard ingest and the ingest batcher."""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.validation import (
    BOOLEAN,
    LAMBDA_TIMEOUT,
    NON_NEGATIVE_INT,
    POSITIVE_DECIMAL,
    POSITIVE_INT,
    POSITIVE_LONG,
    QUEUE_WAIT_SECONDS,
    ChoiceValue,
    ListValue,
)

_ingest = PropertyList(InstancePropertyGroup.INGEST)

MAXIMUM_CONCURRENT_INGEST_TASKS = _ingest.user(
    "sleeper.ingest.max.concurrent.tasks",
    "The maximum number of ingest tasks (ECS tasks, or worker processes on a local instance) running at once.",
    default="200",
    validation=NON_NEGATIVE_INT,
)
INGEST_TASK_CREATION_PERIOD_IN_MINUTES = _ingest.user(
    "sleeper.ingest.task.creation.period.minutes",
    "How often, in minutes, a check is made whether more ingest tasks are needed for the jobs waiting on the "
    "ingest job queue.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)
INGEST_KEEP_ALIVE_PERIOD_IN_SECONDS = _ingest.user(
    "sleeper.ingest.keepalive.period.seconds",
    "How often, in seconds, an ingest task extends the visibility of the job message it is working on, so no other "
    "task takes it. Must be less than `sleeper.ingest.queue.visibility.timeout.seconds`.",
    default="300",
    validation=POSITIVE_INT,
)
INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS = _ingest.user(
    "sleeper.ingest.queue.visibility.timeout.seconds",
    "The visibility timeout in seconds of the ingest job queue. Must be more than "
    "`sleeper.ingest.keepalive.period.seconds`.",
    default="900",
    validation=POSITIVE_INT,
    redeploy=True,
)
S3A_INPUT_FADVISE = _ingest.user(
    "sleeper.ingest.fs.s3a.experimental.input.fadvise",
    "The read policy when ingest reads input files from S3: `normal`, `sequential` or `random`.",
    default="sequential",
    validation=ChoiceValue(("normal", "sequential", "random"), case_sensitive=True),
    not_used="S3 is reached through pyarrow's S3 filesystem; there is no Hadoop S3A client to configure",
)
INGEST_TASK_CPU = _ingest.user(
    "sleeper.ingest.task.cpu",
    "The CPU units of a Fargate ingest task (1024 = 1 vCPU). Only some combinations of CPU and memory are valid; "
    "see the ECS documentation on task CPU and memory.",
    default="2048",
    validation=POSITIVE_INT,
    redeploy=True,
)
INGEST_TASK_MEMORY = _ingest.user(
    "sleeper.ingest.task.memory.mb",
    "The memory in MB of a Fargate ingest task. Only some combinations of CPU and memory are valid.",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
INGEST_PARTITION_REFRESH_PERIOD_IN_SECONDS = _ingest.user(
    "sleeper.ingest.partition.refresh.period",
    "How often, in seconds, an ingest task reads the partition tree again. It only does so after writing a batch, so "
    "this is a lower bound.",
    default="120",
    validation=POSITIVE_INT,
)
INGEST_SOURCE_BUCKET = _ingest.user(
    "sleeper.ingest.source.bucket",
    "A comma-separated list of existing buckets in the same account holding files to ingest or bulk import. "
    "Sleeper does not create them; the deployment grants ingest and bulk import permission to read them. Beyond "
    "Sleeper, an ingest job naming a file anywhere else than these buckets and the data bucket (outside the tables' "
    "own prefixes) is rejected before anything is read, whatever IAM allows.",
    validation=ListValue(),
    redeploy=True,
)
INGEST_JOB_WAIT_TIME_IN_SECONDS = _ingest.user(
    "sleeper.ingest.job.queue.wait.time",
    "How long, in seconds (0 to 20), an ingest task waits for a job to arrive on the queue before it finishes.",
    default="20",
    validation=QUEUE_WAIT_SECONDS,
)
MAX_ROWS_TO_WRITE_LOCALLY = _ingest.user(
    "sleeper.ingest.max.local.rows",
    "With the `arraylist` row batch type (`sleeper.table.ingest.row.batch.type`): the most rows an ingest job holds "
    "on local disk and in memory before merging them and writing them to the table as sorted files. More rows means "
    "fewer, larger files but data takes longer to become visible.",
    default="100000000",
    validation=POSITIVE_LONG,
)
MAX_IN_MEMORY_BATCH_SIZE = _ingest.user(
    "sleeper.ingest.memory.max.batch.size",
    "With the `arraylist` row batch type (`sleeper.table.ingest.row.batch.type`): the most rows an ingest job holds "
    "in memory before sorting them and writing them to a local file.",
    default="1000000",
    validation=POSITIVE_LONG,
)
ARROW_INGEST_WORKING_BUFFER_BYTES = _ingest.user(
    "sleeper.ingest.arrow.working.buffer.bytes",
    "The memory in bytes set aside for sorting a batch of rows during ingest (256 MiB by default).",
    default="268435456",
    validation=POSITIVE_LONG,
)
ARROW_INGEST_BATCH_BUFFER_BYTES = _ingest.user(
    "sleeper.ingest.arrow.batch.buffer.bytes",
    "The memory in bytes that ingest fills with rows before sorting them and writing them to local disk (1 GiB by "
    "default). Larger batches make fewer, larger local files that merge faster, and may need a larger working "
    "buffer.",
    default="1073741824",
    validation=POSITIVE_LONG,
)
ARROW_INGEST_MAX_LOCAL_STORE_BYTES = _ingest.user(
    "sleeper.ingest.arrow.max.local.store.bytes",
    "The bytes of sorted local files ingest may hold before merging them and writing them to the table (2 GiB by "
    "default). Larger values mean fewer S3 writes and fewer files per partition.",
    default="2147483648",
    validation=POSITIVE_LONG,
)
ARROW_INGEST_MAX_SINGLE_WRITE_TO_FILE_ROWS = _ingest.user(
    "sleeper.ingest.arrow.max.single.write.to.file.rows",
    "How many rows ingest writes to a local file at once. This hardly changes the size of the files; larger values "
    "may need a larger working buffer.",
    default="1024",
    validation=POSITIVE_INT,
)
ASYNC_INGEST_CLIENT_TYPE = _ingest.user(
    "sleeper.ingest.async.client.type",
    "The S3 client Java Sleeper uses to upload files written by ingest: `java` (one PutObject per file) or `crt` "
    "(multipart uploads). Not used by this port.",
    default="crt",
    validation=ChoiceValue(("java", "crt")),
    not_used="files are uploaded by pyarrow's S3 filesystem, not by the Java SDK's clients",
)
ASYNC_INGEST_CRT_PART_SIZE_BYTES = _ingest.user(
    "sleeper.ingest.async.crt.part.size.bytes",
    "The part size in bytes of multipart uploads of files written by ingest (128 MiB by default).",
    default="134217728",
    validation=POSITIVE_LONG,
    not_used="files are uploaded by pyarrow's S3 filesystem, not by the Java SDK's CRT client",
)
ASYNC_INGEST_CRT_TARGET_THROUGHPUT_GBPS = _ingest.user(
    "sleeper.ingest.async.crt.target.throughput.gbps",
    "The target throughput of multipart uploads in Gb/s, which decides how many parts are uploaded at once.",
    default="10",
    validation=POSITIVE_DECIMAL,
    not_used="files are uploaded by pyarrow's S3 filesystem, not by the Java SDK's CRT client",
)
INGEST_JOB_STATUS_TTL_IN_SECONDS = _ingest.user(
    "sleeper.ingest.job.status.ttl",
    "How long, in seconds, updates on ingest jobs are kept in the job tracker (a week by default). Changing it only "
    "affects updates saved afterwards."
    " On AWS it is the DynamoDB time to live of each update; a local instance keeps them.",
    default="604800",
    validation=POSITIVE_INT,
)
INGEST_TASK_STATUS_TTL_IN_SECONDS = _ingest.user(
    "sleeper.ingest.task.status.ttl",
    "How long, in seconds, updates on ingest tasks are kept in the task tracker (a week by default)."
    " On AWS it is the DynamoDB time to live of each update; a local instance keeps them.",
    default="604800",
    validation=POSITIVE_INT,
)
INGEST_TRACKER_ENABLED = _ingest.user(
    "sleeper.ingest.tracker.enabled",
    "Whether ingest jobs and tasks are recorded in the job tracker.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
    not_used=(
        "ingest and bulk import jobs and tasks are always tracked: the reports, `ingest --wait` and the "
        "transaction log follower read the tracker"
    ),
)
INGEST_BATCHER_SUBMITTER_MEMORY_IN_MB = _ingest.user(
    "sleeper.ingest.batcher.submitter.memory.mb",
    "The memory in MB of the Lambda function that receives requests to ingest files through the batcher.",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
INGEST_BATCHER_SUBMITTER_TIMEOUT_IN_SECONDS = _ingest.user(
    "sleeper.ingest.batcher.submitter.timeout.seconds",
    "The timeout in seconds of the Lambda function that receives requests to ingest files through the batcher. Also "
    "the visibility timeout of the batcher's submit queue.",
    default="20",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
INGEST_BATCHER_JOB_CREATION_MEMORY_IN_MB = _ingest.user(
    "sleeper.ingest.batcher.job.creation.memory.mb",
    "The memory in MB of the Lambda function that turns files waiting in the batcher into jobs.",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
INGEST_BATCHER_JOB_CREATION_TIMEOUT_IN_SECONDS = _ingest.user(
    "sleeper.ingest.batcher.job.creation.timeout.seconds",
    "The timeout in seconds of the Lambda function that turns files waiting in the batcher into jobs.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
INGEST_BATCHER_JOB_CREATION_LAMBDA_PERIOD_IN_MINUTES = _ingest.user(
    "sleeper.ingest.batcher.job.creation.period.minutes",
    "How often, in minutes, the batcher turns waiting files into jobs.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)

DEFINITIONS = _ingest.all()
"""The definitions in this module, in order."""
