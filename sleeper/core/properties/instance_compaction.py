"""Instance properties set by users for compaction, partition splitting and garbage collection."""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.instance_common import (
    DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
)
from sleeper.core.properties.validation import (
    BOOLEAN,
    LAMBDA_TIMEOUT,
    NON_EMPTY,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_INT_MAX_10,
    POSITIVE_LONG,
    QUEUE_WAIT_SECONDS,
    SQS_LAMBDA_CONCURRENCY,
    ChoiceValue,
    ClassNameValue,
    IntegerValue,
)

_compaction = PropertyList(InstancePropertyGroup.COMPACTION)

CPU_ARCHITECTURES = ("X86_64", "ARM64")

COMPACTION_JOB_CREATION_BATCH_SIZE = _compaction.user(
    "sleeper.compaction.job.creation.batch.size",
    "How many tables one invocation creates compaction jobs for (the batch size of its SQS FIFO event source, at "
    "most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
COMPACTION_COMMIT_BATCH_SIZE = _compaction.user(
    "sleeper.compaction.job.commit.batch.size",
    "How many finished compactions the commit batcher gathers before sending them to the state store committer "
    "together (at most 10,000; in practice limited by the size of one Lambda invocation's payload).",
    default="1000",
    validation=IntegerValue(minimum=1, maximum=10_000),
    redeploy=True,
)
COMPACTION_COMMIT_BATCHING_WINDOW_IN_SECONDS = _compaction.user(
    "sleeper.compaction.job.commit.batching.window.seconds",
    "How long, in seconds (at most 300), the commit batcher waits for more finished compactions when its batch is "
    "not full.",
    default="30",
    validation=IntegerValue(minimum=1, maximum=300),
    redeploy=True,
)
COMPACTION_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.queue.visibility.timeout.seconds",
    "The visibility timeout in seconds of the compaction job queue. Must be more than "
    "`sleeper.compaction.keepalive.period.seconds`.",
    default="900",
    validation=POSITIVE_INT,
    redeploy=True,
)
PENDING_COMPACTION_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.pending.queue.visibility.timeout.seconds",
    "The visibility timeout in seconds of the queue of pending batches of compaction jobs.",
    default="900",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_KEEP_ALIVE_PERIOD_IN_SECONDS = _compaction.user(
    "sleeper.compaction.keepalive.period.seconds",
    "How often, in seconds, a compaction task extends the visibility of the job message it is working on, so no "
    "other task takes it. Must be less than `sleeper.compaction.queue.visibility.timeout.seconds`.",
    default="300",
    validation=POSITIVE_INT,
)
COMPACTION_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.job.failed.visibility.timeout.seconds",
    "How long, in seconds, a failed compaction job stays invisible on the queue before it can be tried again.",
    default="60",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_WAIT_TIME_IN_SECONDS = _compaction.user(
    "sleeper.compaction.task.wait.time.seconds",
    "How long, in seconds (0 to 20), a compaction task waits for a job to arrive on the queue in one receive call.",
    default="20",
    validation=QUEUE_WAIT_SECONDS,
)
COMPACTION_TASK_WAIT_FOR_INPUT_FILE_ASSIGNMENT = _compaction.user(
    "sleeper.compaction.task.wait.for.input.file.assignment",
    "If true, a compaction task checks that a job's input files are assigned to the job in the state store before "
    "running it. This stops a job being run when it was created again before its first creation was committed.",
    default="false",
    validation=BOOLEAN,
    not_used=(
        "compaction job creation commits the assignment of a job's input files before it sends the job, so a "
        "task never receives a job whose files are unassigned"
    ),
)
COMPACTION_TASK_DELAY_BEFORE_RETRY_IN_SECONDS = _compaction.user(
    "sleeper.compaction.task.delay.before.retry.seconds",
    "How long, in seconds, a compaction task pauses after a receive call returned no jobs, before trying again.",
    default="10",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_MAX_IDLE_TIME_IN_SECONDS = _compaction.user(
    "sleeper.compaction.task.max.idle.time.seconds",
    "How long, in seconds, a compaction task may go without a job before it finishes.",
    default="60",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_MAX_ALIVE_TIME_IN_MINUTES = _compaction.user(
    "sleeper.compaction.task.max.alive.time.minutes",
    "How long, in minutes, a compaction task may run. After finishing a job, a task that has run longer than this "
    "stops, and a new one takes over, which lets tasks move to a new version gracefully.",
    default="1440",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_MAX_ALIVE_JITTER_IN_MINUTES = _compaction.user(
    "sleeper.compaction.task.max.alive.jitter.minutes",
    "The most, in minutes, that is randomly taken off each new compaction task's maximum alive time, so that tasks "
    "do not all stop at once.",
    default="120",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_MAX_CONSECUTIVE_FAILURES = _compaction.user(
    "sleeper.compaction.task.max.consecutive.failures",
    "How many jobs in a row a compaction task may fail before it stops. A successful job resets the count.",
    default="3",
    validation=POSITIVE_INT,
)
COMPACTION_JOB_CREATION_LAMBDA_PERIOD_IN_MINUTES = _compaction.user(
    "sleeper.compaction.job.creation.period.minutes",
    "How often, in minutes, compaction jobs are created for every online table.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_JOB_CREATION_LAMBDA_MEMORY_IN_MB = _compaction.user(
    "sleeper.compaction.job.creation.memory.mb",
    "The memory in MB of the Lambda function that creates compaction jobs.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
COMPACTION_JOB_CREATION_LAMBDA_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.job.creation.timeout.seconds",
    "The timeout in seconds of the Lambda function that creates compaction jobs.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
COMPACTION_JOB_CREATION_LAMBDA_CONCURRENCY_RESERVED = _compaction.user(
    "sleeper.compaction.job.creation.concurrency.reserved",
    "The reserved concurrency of the Lambda function that creates compaction jobs.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
COMPACTION_JOB_CREATION_LAMBDA_CONCURRENCY_MAXIMUM = _compaction.user(
    "sleeper.compaction.job.creation.concurrency.max",
    "The maximum concurrency of the Lambda function that creates compaction jobs.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
COMPACTION_JOB_DISPATCH_LAMBDA_MEMORY_IN_MB = _compaction.user(
    "sleeper.compaction.job.dispatch.memory.mb",
    "The memory in MB of the Lambda function that sends pending batches of compaction jobs.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
COMPACTION_JOB_DISPATCH_LAMBDA_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.job.dispatch.timeout.seconds",
    "The timeout in seconds of the Lambda function that sends pending batches of compaction jobs.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
COMPACTION_JOB_DISPATCH_LAMBDA_CONCURRENCY_RESERVED = _compaction.user(
    "sleeper.compaction.job.dispatch.concurrency.reserved",
    "The reserved concurrency of the Lambda function that sends pending batches of compaction jobs.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
COMPACTION_JOB_DISPATCH_LAMBDA_CONCURRENCY_MAXIMUM = _compaction.user(
    "sleeper.compaction.job.dispatch.concurrency.max",
    "The maximum concurrency of the Lambda function that sends pending batches of compaction jobs.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
COMPACTION_COMMIT_BATCHER_LAMBDA_MEMORY_IN_MB = _compaction.user(
    "sleeper.compaction.commit.batcher.memory.mb",
    "The memory in MB of the Lambda function that batches up compaction commits.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
COMPACTION_COMMIT_BATCHER_LAMBDA_TIMEOUT_IN_SECONDS = _compaction.user(
    "sleeper.compaction.commit.batcher.timeout.seconds",
    "The timeout in seconds of the Lambda function that batches up compaction commits.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
COMPACTION_COMMIT_BATCHER_LAMBDA_CONCURRENCY_RESERVED = _compaction.user(
    "sleeper.compaction.commit.batcher.concurrency.reserved",
    "The reserved concurrency of the Lambda function that batches up compaction commits.",
    default="2",
    validation=SQS_LAMBDA_CONCURRENCY,
    redeploy=True,
)
COMPACTION_COMMIT_BATCHER_LAMBDA_CONCURRENCY_MAXIMUM = _compaction.user(
    "sleeper.compaction.commit.batcher.concurrency.max",
    "The maximum concurrency of the Lambda function that batches up compaction commits.",
    default="2",
    validation=SQS_LAMBDA_CONCURRENCY,
    redeploy=True,
)
MAXIMUM_CONCURRENT_COMPACTION_TASKS = _compaction.user(
    "sleeper.compaction.max.concurrent.tasks",
    "The maximum number of compaction tasks (ECS tasks, or worker processes on a local instance) running at once.",
    default="300",
    validation=NON_NEGATIVE_INT,
)
COMPACTION_TASK_CREATION_PERIOD_IN_MINUTES = _compaction.user(
    "sleeper.compaction.task.creation.period.minutes",
    "How often, in minutes, a check is made whether more compaction tasks are needed for the jobs waiting on the "
    "queue.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_JOB_MAX_RETRIES = _compaction.user(
    "sleeper.compaction.job.max.retries",
    "How many times a compaction job may be received from the job queue before it moves to the dead letter queue "
    "(the queue's maxReceiveCount).",
    default="3",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_DISPATCH_MAX_RETRIES = _compaction.user(
    "sleeper.compaction.job.dispatch.max.retries",
    "How many times a pending batch of compaction jobs may be received before it moves to the dead letter queue.",
    default="3",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_COMMIT_MAX_RETRIES = _compaction.user(
    "sleeper.compaction.job.commit.max.retries",
    "How many times a finished compaction may be received from the commit queue before it moves to the dead letter "
    "queue.",
    default="3",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_CPU_ARCHITECTURE = _compaction.user(
    "sleeper.compaction.task.cpu.architecture",
    "The CPU architecture of compaction tasks: `X86_64` or `ARM64`. With the EC2 launch type it must match "
    "`sleeper.compaction.ec2.type`.",
    default="ARM64",
    validation=ChoiceValue(CPU_ARCHITECTURES),
    redeploy=True,
)
COMPACTION_TASK_ARM_CPU = _compaction.user(
    "sleeper.compaction.task.arm.cpu",
    "The CPU units of an ARM64 compaction task (1024 = 1 vCPU).",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_ARM_MEMORY = _compaction.user(
    "sleeper.compaction.task.arm.memory.mb",
    "The memory in MB of an ARM64 compaction task.",
    default="8192",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_X86_CPU = _compaction.user(
    "sleeper.compaction.task.x86.cpu",
    "The CPU units of an x86_64 compaction task (1024 = 1 vCPU).",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_X86_MEMORY = _compaction.user(
    "sleeper.compaction.task.x86.memory.mb",
    "The memory in MB of an x86_64 compaction task.",
    default="8192",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_FIXED_OVERHEAD = _compaction.user(
    "sleeper.compaction.task.scaling.overhead.fixed",
    "When sizing the EC2 pool for compaction tasks, the memory in MB that ECS is expected to keep for itself on each "
    "instance. If unset, `sleeper.compaction.task.scaling.overhead.percentage` is used instead.",
    validation=NON_NEGATIVE_INT,
    redeploy=True,
)
COMPACTION_TASK_PERCENTAGE_OVERHEAD = _compaction.user(
    "sleeper.compaction.task.scaling.overhead.percentage",
    "When sizing the EC2 pool for compaction tasks, the percentage (0 to 99) of each instance's memory that ECS is "
    "expected to keep for itself.",
    default="10",
    validation=IntegerValue(minimum=0, maximum=99),
    redeploy=True,
)
COMPACTION_ECS_LAUNCHTYPE = _compaction.user(
    "sleeper.compaction.ecs.launch.type",
    "How compaction containers are launched: `FARGATE` or `EC2`.",
    default="FARGATE",
    validation=ChoiceValue(("FARGATE", "EC2")),
    redeploy=True,
)
COMPACTION_EC2_TYPE = _compaction.user(
    "sleeper.compaction.ec2.type",
    "The EC2 instance type for compaction tasks with the EC2 launch type. Its architecture must match "
    "`sleeper.compaction.task.cpu.architecture`.",
    default="t4g.xlarge",
    validation=NON_EMPTY,
    redeploy=True,
)
COMPACTION_EC2_POOL_MINIMUM = _compaction.user(
    "sleeper.compaction.ec2.pool.minimum",
    "The minimum number of EC2 instances for compaction tasks with the EC2 launch type.",
    default="0",
    validation=NON_NEGATIVE_INT,
    redeploy=True,
)
COMPACTION_EC2_POOL_MAXIMUM = _compaction.user(
    "sleeper.compaction.ec2.pool.maximum",
    "The maximum number of EC2 instances for compaction tasks with the EC2 launch type.",
    default="75",
    validation=NON_NEGATIVE_INT,
    redeploy=True,
)
COMPACTION_EC2_ROOT_SIZE = _compaction.user(
    "sleeper.compaction.ec2.root.size",
    "The size in GiB of the root volume of each EC2 instance for compaction tasks.",
    default="50",
    validation=POSITIVE_INT,
    redeploy=True,
)
COMPACTION_TRACKER_ENABLED = _compaction.user(
    "sleeper.compaction.tracker.enabled",
    "Whether compaction jobs and tasks are recorded in the job tracker.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
    not_used=(
        "compaction jobs and tasks are always tracked: the reports and the transaction log follower read the tracker"
    ),
)
COMPACTION_TRACKER_ASYNC_COMMIT_UPDATES_ENABLED = _compaction.user(
    "sleeper.compaction.tracker.async.commit.updates.enabled",
    "Whether the job tracker records when an asynchronous commit of a compaction is applied. Without it, reports may "
    "show committed compactions as unfinished.",
    default="true",
    validation=BOOLEAN,
)
COMPACTION_JOB_STATUS_TTL_IN_SECONDS = _compaction.user(
    "sleeper.compaction.job.status.ttl",
    "How long, in seconds, updates on compaction jobs are kept in the job tracker (a week by default). Changing it "
    "only affects updates saved afterwards. On AWS it is the DynamoDB time to live of each update; a local instance "
    "keeps them.",
    default="604800",
    validation=POSITIVE_INT,
)
COMPACTION_TASK_STATUS_TTL_IN_SECONDS = _compaction.user(
    "sleeper.compaction.task.status.ttl",
    "How long, in seconds, updates on compaction tasks are kept in the task tracker (a week by default)."
    " On AWS it is the DynamoDB time to live of each update; a local instance keeps them.",
    default="604800",
    validation=POSITIVE_INT,
)
COMPACTION_STRATEGIES = ClassNameValue(
    simple_names=("SizeRatioCompactionStrategy", "BasicCompactionStrategy"),
    packages=(
        "sleeper.compaction.core.job.creation.strategy.impl.",
        "sleeper.compaction.strategy.impl.",  # releases before Sleeper's compaction modules were reorganised
    ),
)
"""The compaction strategies this port runs (:mod:`sleeper.compaction.strategies`), as Sleeper's Java classes name
them; the values ``sleeper.table.compaction.strategy.class`` and its default accept."""

DEFAULT_COMPACTION_STRATEGY_CLASS = _compaction.user(
    "sleeper.default.table.compaction.strategy.class",
    "The default for `sleeper.table.compaction.strategy.class`: the strategy that decides which files to compact "
    "together. Named by Sleeper's Java class name; `SizeRatioCompactionStrategy` and `BasicCompactionStrategy` are "
    "the strategies Sleeper provides.",
    default="sleeper.compaction.core.job.creation.strategy.impl.SizeRatioCompactionStrategy",
    validation=COMPACTION_STRATEGIES,
)
DEFAULT_COMPACTION_FILES_BATCH_SIZE = _compaction.user(
    "sleeper.default.table.compaction.files.batch.size",
    "The default for `sleeper.table.compaction.files.batch.size`: the most files one compaction job reads.",
    default="12",
    validation=POSITIVE_INT,
)
DEFAULT_COMPACTION_JOB_SEND_BATCH_SIZE = _compaction.user(
    "sleeper.default.table.compaction.job.send.batch.size",
    "The default for `sleeper.table.compaction.job.send.batch.size`: how many new compaction jobs are sent and "
    "assigned to their input files together.",
    default="1000",
    validation=POSITIVE_INT,
)
DEFAULT_COMPACTION_JOB_SEND_TIMEOUT_SECS = _compaction.user(
    "sleeper.default.table.compaction.job.send.timeout.seconds",
    "The default for `sleeper.table.compaction.job.send.timeout.seconds`: how long a pending batch of compaction "
    "jobs may wait for its input files to be assigned before it is given up.",
    default="90",
    validation=POSITIVE_INT,
)
DEFAULT_COMPACTION_JOB_SEND_RETRY_DELAY_SECS = _compaction.user(
    "sleeper.default.table.compaction.job.send.retry.delay.seconds",
    "The default for `sleeper.table.compaction.job.send.retry.delay.seconds`: the wait between checks that a pending "
    "batch's input files are assigned.",
    default="30",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_COMPACTION_JOB_CREATION_LIMIT = _compaction.user(
    "sleeper.default.table.compaction.job.creation.limit",
    "The default for `sleeper.table.compaction.job.creation.limit`: the most compaction jobs created for a table in "
    "one run. Beyond it, the jobs created are chosen at random.",
    default="100000",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_SIZERATIO_COMPACTION_STRATEGY_RATIO = _compaction.user(
    "sleeper.default.table.compaction.strategy.sizeratio.ratio",
    "The default for `sleeper.table.compaction.strategy.sizeratio.ratio`. With file sizes s_1 <= ... <= s_n, the "
    "size ratio strategy compacts the files if s_1 + ... + s_(n-1) >= ratio * s_n.",
    default="3",
    validation=POSITIVE_INT,
)
DEFAULT_SIZERATIO_COMPACTION_STRATEGY_MAX_CONCURRENT_JOBS_PER_PARTITION = _compaction.user(
    "sleeper.default.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition",
    "The default for `sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition`: the most "
    "compaction jobs the size ratio strategy lets run at once on one partition.",
    default="2147483647",
    validation=POSITIVE_INT,
)

_splitting = PropertyList(InstancePropertyGroup.PARTITION_SPLITTING)

PARTITION_SPLITTING_TRIGGER_PERIOD_IN_MINUTES = _splitting.user(
    "sleeper.partition.splitting.period.minutes",
    "How often, in minutes, every online table is checked for partitions that need splitting.",
    default="30",
    validation=POSITIVE_INT,
    redeploy=True,
)
MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB = _splitting.user(
    "sleeper.partition.splitting.files.maximum",
    "The most files whose sketches are read to find the split point (the median) of a partition.",
    default="50",
    validation=POSITIVE_INT,
)
FIND_PARTITIONS_TO_SPLIT_BATCH_SIZE = _splitting.user(
    "sleeper.partition.splitting.finder.batch.size",
    "How many tables one invocation looks for partitions to split in (the batch size of its SQS FIFO event source, "
    "at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
FIND_PARTITIONS_TO_SPLIT_LAMBDA_MEMORY_IN_MB = _splitting.user(
    "sleeper.partition.splitting.finder.memory.mb",
    "The memory in MB of the Lambda function that finds partitions to split.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
FIND_PARTITIONS_TO_SPLIT_TIMEOUT_IN_SECONDS = _splitting.user(
    "sleeper.partition.splitting.finder.timeout.seconds",
    "The timeout in seconds of the Lambda function that finds partitions to split.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
FIND_PARTITIONS_TO_SPLIT_LAMBDA_CONCURRENCY_RESERVED = _splitting.user(
    "sleeper.partition.splitting.finder.concurrency.reserved",
    "The reserved concurrency of the Lambda function that finds partitions to split.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
FIND_PARTITIONS_TO_SPLIT_LAMBDA_CONCURRENCY_MAXIMUM = _splitting.user(
    "sleeper.partition.splitting.finder.concurrency.max",
    "The maximum concurrency of the Lambda function that finds partitions to split.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
SPLIT_PARTITIONS_LAMBDA_MEMORY_IN_MB = _splitting.user(
    "sleeper.partition.splitting.memory.mb",
    "The memory in MB of the Lambda function that splits partitions.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
SPLIT_PARTITIONS_TIMEOUT_IN_SECONDS = _splitting.user(
    "sleeper.partition.splitting.timeout.seconds",
    "The timeout in seconds of the Lambda function that splits partitions.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
SPLIT_PARTITIONS_RESERVED_CONCURRENCY = _splitting.user(
    "sleeper.partition.splitting.reserved.concurrency",
    "The concurrency reserved for splitting partitions: one invocation splits one partition, so with fewer than "
    "the partitions waiting, some wait for the next run.",
    default="10",
    validation=POSITIVE_INT,
    redeploy=True,
)
DEFAULT_PARTITION_SPLIT_THRESHOLD = _splitting.user(
    "sleeper.default.table.partition.splitting.threshold",
    "The default for `sleeper.table.partition.splitting.threshold`: partitions holding more rows than this are split.",
    default="1000000000",
    validation=POSITIVE_LONG,
)
DEFAULT_PARTITION_SPLIT_MIN_ROWS = _splitting.user(
    "sleeper.default.table.partition.splitting.min.rows",
    "The default for `sleeper.table.partition.splitting.min.rows`: when the partition tree is extended explicitly "
    "(e.g. by bulk import), how many rows of input are needed per new split point.",
    default="1000",
    validation=POSITIVE_INT,
)
DEFAULT_PARTITION_SPLIT_MIN_DISTRIBUTION_PERCENT = _splitting.user(
    "sleeper.default.table.partition.splitting.min.distribution.percent",
    "The default for `sleeper.table.partition.splitting.min.distribution.percent`: when the partition tree is "
    "extended explicitly, partitions holding less than this percentage of the rows an even spread would give them "
    "are not split.",
    default="10",
    validation=IntegerValue(minimum=0, maximum=100),
)

_gc = PropertyList(InstancePropertyGroup.GARBAGE_COLLECTOR)

GARBAGE_COLLECTOR_PERIOD_IN_MINUTES = _gc.user(
    "sleeper.gc.period.minutes",
    "How often, in minutes, the garbage collector runs for every online table.",
    default="15",
    validation=POSITIVE_INT,
    redeploy=True,
)
GARBAGE_COLLECTOR_LAMBDA_TIMEOUT_IN_SECONDS = _gc.user(
    "sleeper.gc.lambda.timeout.seconds",
    "The timeout in seconds of the garbage collector Lambda function.",
    default="840",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
GARBAGE_COLLECTOR_LAMBDA_MEMORY_IN_MB = _gc.user(
    "sleeper.gc.memory.mb",
    "The memory in MB of the garbage collector Lambda function.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
GARBAGE_COLLECTOR_LAMBDA_CONCURRENCY_RESERVED = _gc.user(
    "sleeper.gc.concurrency.reserved",
    "The reserved concurrency of the garbage collector Lambda function.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_RESERVED,
    redeploy=True,
)
GARBAGE_COLLECTOR_LAMBDA_CONCURRENCY_MAXIMUM = _gc.user(
    "sleeper.gc.concurrency.max",
    "The maximum concurrency of the garbage collector Lambda function.",
    falls_back_to=DEFAULT_LAMBDA_CONCURRENCY_MAXIMUM,
    redeploy=True,
)
GARBAGE_COLLECTOR_TABLE_BATCH_SIZE = _gc.user(
    "sleeper.gc.table.batch.size",
    "How many tables one invocation of the garbage collector handles (the batch size of its SQS FIFO event source, "
    "at most 10).",
    default="1",
    validation=POSITIVE_INT_MAX_10,
    redeploy=True,
)
GARBAGE_COLLECT_OFFLINE_TABLES = _gc.user(
    "sleeper.run.gc.offline",
    "Whether the garbage collector also runs for offline tables.",
    default="false",
    validation=BOOLEAN,
)
GARBAGE_COLLECTOR_BATCH_SIZE = _gc.user(
    "sleeper.gc.batch.size",
    "How many deleted files the garbage collector records in the state store in one commit. It keeps deleting "
    "while there are files to delete, committing after each batch.",
    default="10000",
    validation=POSITIVE_INT,
)
GARBAGE_COLLECTOR_MAXIMUM_FILE_DELETION_PER_INVOCATION = _gc.user(
    "sleeper.gc.files.maximum",
    "The most files the garbage collector deletes for one table in one run, so a run ends before its timeout. A batch "
    "that crosses the limit is still finished.",
    default="750000",
    validation=POSITIVE_INT,
)
DEFAULT_GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION = _gc.user(
    "sleeper.default.table.gc.delay.minutes",
    "The default for `sleeper.table.gc.delay.minutes`: how many minutes a file must have had no references before "
    "it is deleted, because queries that started earlier may still read it. To be safe it must be longer than the "
    "query state cache timeout (`sleeper.default.table.query.processor.cache.timeout.seconds`) plus the query "
    "processor timeout (`sleeper.query.processor.timeout.seconds`): 60 s + 900 s by default. Sleeper's default of 15 "
    "minutes is not, so this port's default is 20 minutes. A shorter delay is accepted with a warning naming the "
    "least safe one: a query planned before a garbage collection may find a file it reads already deleted.",
    default="20",
    validation=POSITIVE_INT,
)

DEFINITIONS = _compaction.all() + _splitting.all() + _gc.all()
"""The definitions in this module, in order."""
