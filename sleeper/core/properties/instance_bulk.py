"""Instance properties set by users for bulk import (Spark on EMR Serverless or EMR) and bulk export."""

from __future__ import annotations

from sleeper.core.jobs.bulk_import_algorithms import ALGORITHM_NAMES, DEFAULT_CLASS_NAME
from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyDefinition, PropertyList
from sleeper.core.properties.instance_common import DEFAULT_TABLE_STATE_LAMBDA_MEMORY
from sleeper.core.properties.instance_compaction import CPU_ARCHITECTURES
from sleeper.core.properties.validation import (
    ANY_TEXT,
    BOOLEAN,
    FRACTION,
    INSTANCE_TYPES,
    LAMBDA_TIMEOUT,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    QUEUE_WAIT_SECONDS,
    ChoiceValue,
    IntegerValue,
    ListValue,
    Validator,
)

_bulk = PropertyList(InstancePropertyGroup.BULK_IMPORT)

EMR_ARCHITECTURES = ListValue(ChoiceValue(("x86_64", "arm64")))
SPARK_DOCS = "See https://spark.apache.org/docs/latest/configuration.html."

BULK_IMPORT_CLASS_NAME = _bulk.user(
    "sleeper.bulk.import.class.name",
    "The bulk import algorithm a job runs unless it names its own (its `className`). This port's `local-sort` "
    "(one Spark partition per leaf, sorted in the Python worker) also runs for Sleeper's "
    "`sleeper.bulkimport.runner.dataframelocalsort.BulkImportDataframeLocalSortDriver` and "
    "`sleeper.bulkimport.runner.rdd.BulkImportJobRDDDriver`; its `dataframe-sort` (Spark's DataFrame sort by leaf "
    "then keys, in the JVM) also runs for `sleeper.bulkimport.runner.dataframe.BulkImportJobDataframeDriver`. Both "
    "write the same rows for each leaf. Any other name is refused.",
    default=DEFAULT_CLASS_NAME,
    validation=ChoiceValue(ALGORITHM_NAMES, case_sensitive=True),
)
BULK_IMPORT_SPARK_SHUFFLE_MAPSTATUS_COMPRESSION_CODEC = _bulk.user(
    "sleeper.bulk.import.emr.spark.shuffle.mapStatus.compression.codec",
    'Sets spark.shuffle.mapStatus.compression.codec on EMR. Only `lz4` has been tested; it avoids "Decompression '
    'error: Version not supported" errors.',
    default="lz4",
    redeploy=True,
)
BULK_IMPORT_SPARK_SPECULATION = _bulk.user(
    "sleeper.bulk.import.emr.spark.speculation",
    "Sets spark.speculation on EMR: whether slow tasks are run again speculatively. " + SPARK_DOCS,
    default="false",
    validation=BOOLEAN,
    redeploy=True,
)
BULK_IMPORT_SPARK_SPECULATION_QUANTILE = _bulk.user(
    "sleeper.bulk.import.spark.speculation.quantile",
    "Sets spark.speculation.quantile on EMR: the fraction of a stage's tasks that must finish before speculation "
    "starts. " + SPARK_DOCS,
    default="0.75",
    validation=FRACTION,
    redeploy=True,
)
BULK_IMPORT_STARTER_LAMBDA_MEMORY = _bulk.user(
    "sleeper.bulk.import.starter.memory.mb",
    "The memory in MB of the Lambda functions that start bulk import jobs.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)


def _spark(
    name: str, spark_key: str, default: str, what: str, *, validation: Validator, redeploy: bool
) -> PropertyDefinition:
    return _bulk.user(
        name, f"Sets {spark_key}: {what} {SPARK_DOCS}", default=default, validation=validation, redeploy=redeploy
    )


_EMR = "(EMR and persistent EMR.) "

BULK_IMPORT_EMR_SPARK_EXECUTOR_MEMORY = _spark(
    "sleeper.bulk.import.emr.spark.executor.memory", "spark.executor.memory", "16g",
    _EMR + "the memory of each executor.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DRIVER_MEMORY = _spark(
    "sleeper.bulk.import.emr.spark.driver.memory", "spark.driver.memory", "16g",
    _EMR + "the memory of the driver.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_EXECUTOR_INSTANCES = _spark(
    "sleeper.bulk.import.emr.spark.executor.instances", "spark.executor.instances", "29",
    _EMR + "the number of executors.", validation=POSITIVE_INT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_EXECUTOR_MEMORY_OVERHEAD = _spark(
    "sleeper.bulk.import.emr.spark.executor.memory.overhead", "spark.executor.memoryOverhead", "1706m",
    _EMR + "the extra memory of each executor beyond its heap.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DRIVER_MEMORY_OVERHEAD = _spark(
    "sleeper.bulk.import.emr.spark.driver.memory.overhead", "spark.driver.memoryOverhead", "1706m",
    _EMR + "the extra memory of the driver beyond its heap.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DEFAULT_PARALLELISM = _spark(
    "sleeper.bulk.import.emr.spark.default.parallelism", "spark.default.parallelism", "290",
    _EMR + "the default number of partitions of a Spark job.", validation=POSITIVE_INT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_SQL_SHUFFLE_PARTITIONS = _spark(
    "sleeper.bulk.import.emr.spark.sql.shuffle.partitions", "spark.sql.shuffle.partitions", "290",
    _EMR + "the number of partitions of a DataFrame shuffle.", validation=POSITIVE_INT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_EC2_KEYPAIR_NAME = _bulk.user(
    "sleeper.bulk.import.emr.keypair.name",
    _EMR + "An EC2 key pair for the cluster's instances, to allow SSH to them. Changing it replaces any running "
    "cluster.",
    redeploy=True,
)
BULK_IMPORT_EMR_MASTER_ADDITIONAL_SECURITY_GROUP = _bulk.user(
    "sleeper.bulk.import.emr.master.additional.security.group",
    _EMR + "A security group added to the EMR master node's security groups.",
    redeploy=True,
)
BULK_IMPORT_EMR_SPARK_EXECUTOR_CORES = _spark(
    "sleeper.bulk.import.emr.spark.executor.cores", "spark.executor.cores", "5",
    _EMR + "the cores of each executor.", validation=POSITIVE_INT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DRIVER_CORES = _spark(
    "sleeper.bulk.import.emr.spark.driver.cores", "spark.driver.cores", "5",
    _EMR + "the cores of the driver.", validation=POSITIVE_INT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_NETWORK_TIMEOUT = _spark(
    "sleeper.bulk.import.emr.spark.network.timeout", "spark.network.timeout", "800s",
    _EMR + "the default timeout of network interactions.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_EXECUTOR_HEARTBEAT_INTERVAL = _spark(
    "sleeper.bulk.import.emr.spark.executor.heartbeat.interval", "spark.executor.heartbeatInterval", "60s",
    _EMR + "the interval between executors' heartbeats to the driver.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DYNAMIC_ALLOCATION_ENABLED = _spark(
    "sleeper.bulk.import.emr.spark.dynamic.allocation.enabled", "spark.dynamicAllocation.enabled", "false",
    _EMR + "whether Spark scales its executors up and down.", validation=BOOLEAN, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_MEMORY_FRACTION = _spark(
    "sleeper.bulk.import.emr.spark.memory.fraction", "spark.memory.fraction", "0.80",
    _EMR + "the fraction of heap used for execution and storage.", validation=FRACTION, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_MEMORY_STORAGE_FRACTION = _spark(
    "sleeper.bulk.import.emr.spark.memory.storage.fraction", "spark.memory.storageFraction", "0.30",
    _EMR + "the fraction of that memory kept for storage, immune to eviction.", validation=FRACTION, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_EXECUTOR_EXTRA_JAVA_OPTIONS = _spark(
    "sleeper.bulk.import.emr.spark.executor.extra.java.options", "spark.executor.extraJavaOptions",
    "-XX:+UseG1GC -XX:+UnlockDiagnosticVMOptions -XX:+G1SummarizeConcMark -XX:InitiatingHeapOccupancyPercent=35 "
    "-verbose:gc -XX:+PrintGCDetails -XX:+PrintGCDateStamps -XX:OnOutOfMemoryError='kill -9 %p'",
    _EMR + "the JVM options of the executors.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_DRIVER_EXTRA_JAVA_OPTIONS = _spark(
    "sleeper.bulk.import.emr.spark.driver.extra.java.options", "spark.driver.extraJavaOptions",
    BULK_IMPORT_EMR_SPARK_EXECUTOR_EXTRA_JAVA_OPTIONS.default or "",
    _EMR + "the JVM options of the driver.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_YARN_SCHEDULER_REPORTER_THREAD_MAX_FAILURES = _spark(
    "sleeper.bulk.import.emr.spark.yarn.scheduler.reporter.thread.max.failures",
    "spark.yarn.scheduler.reporterThread.maxFailures", "5",
    _EMR + "how many executor failures YARN allows before it fails the application.", validation=POSITIVE_INT,
    redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_STORAGE_LEVEL = _spark(
    "sleeper.bulk.import.emr.spark.storage.level", "spark.storage.level", "MEMORY_AND_DISK_SER",
    _EMR + "where Spark caches data.", validation=ANY_TEXT, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_RDD_COMPRESS = _spark(
    "sleeper.bulk.import.emr.spark.rdd.compress", "spark.rdd.compress", "true",
    _EMR + "whether serialised RDD partitions are compressed.", validation=BOOLEAN, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_SHUFFLE_COMPRESS = _spark(
    "sleeper.bulk.import.emr.spark.shuffle.compress", "spark.shuffle.compress", "true",
    _EMR + "whether map outputs are compressed.", validation=BOOLEAN, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_SPARK_SHUFFLE_SPILL_COMPRESS = _spark(
    "sleeper.bulk.import.emr.spark.shuffle.spill.compress", "spark.shuffle.spill.compress", "true",
    _EMR + "whether data spilled during shuffles is compressed.", validation=BOOLEAN, redeploy=True,
)  # fmt: skip
BULK_IMPORT_EMR_EBS_VOLUME_SIZE_IN_GB = _bulk.user(
    "sleeper.bulk.import.emr.ebs.volume.size.gb",
    _EMR + "The size in GiB (10 to 1024) of each EBS volume of the cluster's instances.",
    default="256",
    validation=IntegerValue(minimum=10, maximum=1024),
    redeploy=True,
)
BULK_IMPORT_EMR_EBS_VOLUME_TYPE = _bulk.user(
    "sleeper.bulk.import.emr.ebs.volume.type",
    _EMR + "The type of the EBS volumes: `gp2`, `gp3`, `io1` or `io2`.",
    default="gp2",
    validation=ChoiceValue(("gp2", "gp3", "io1", "io2"), case_sensitive=True),
    redeploy=True,
)
BULK_IMPORT_EMR_EBS_VOLUMES_PER_INSTANCE = _bulk.user(
    "sleeper.bulk.import.emr.ebs.volumes.per.instance",
    _EMR + "How many EBS volumes (1 to 25) each instance has.",
    default="4",
    validation=IntegerValue(minimum=1, maximum=25),
    redeploy=True,
)
BULK_IMPORT_EMR_EBS_ENCRYPTION_KEY_ARN = _bulk.user(
    "sleeper.bulk.import.emr.ebs.encryption.key.arn",
    "The ARN of the KMS key that encrypts data at rest on the local disks (EBS volumes) of EMR instances, in the "
    "security configuration of bulk import's EMR clusters; their hosts' role may use it. Unset, the account's AWS "
    "managed key for EBS.",
    redeploy=True,
)

_SERVERLESS = "(EMR Serverless.) "

BULK_IMPORT_EMR_SERVERLESS_ARCHITECTURE = _bulk.user(
    "sleeper.bulk.import.emr.serverless.architecture",
    _SERVERLESS + "The architecture of the EMR Serverless application. Only `X86_64` is supported for now.",
    default="X86_64",
    validation=ChoiceValue(("X86_64",), case_sensitive=True),
    redeploy=True,
)
DEFAULT_BULK_IMPORT_EMR_RELEASE_LABEL = _bulk.user(
    "sleeper.default.table.bulk.import.emr.release.label",
    "(EMR.) The default EMR release of clusters created for bulk import jobs. A table property or the job can "
    "override it.",
    default="emr-7.12.0",
)
BULK_IMPORT_EMR_SERVERLESS_RELEASE = _bulk.user(
    "sleeper.bulk.import.emr.serverless.release",
    _SERVERLESS + "The EMR release of the EMR Serverless application.",
    default=DEFAULT_BULK_IMPORT_EMR_RELEASE_LABEL.default,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_AUTOSTART = _bulk.user(
    "sleeper.bulk.import.emr.serverless.autostart.enabled",
    _SERVERLESS + "Whether the application starts by itself when a job is submitted.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_AUTOSTOP = _bulk.user(
    "sleeper.bulk.import.emr.serverless.autostop.enabled",
    _SERVERLESS + "Whether the application stops by itself when it has no jobs. Turning this off without "
    "pre-initialised capacity is not recommended.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_AUTOSTOP_TIMEOUT_MINUTES = _bulk.user(
    "sleeper.bulk.import.emr.serverless.autostop.timeout",
    _SERVERLESS + "How many idle minutes before the application stops (EMR Serverless accepts 1 to 10080).",
    default="15",
    validation=IntegerValue(minimum=1, maximum=10080),
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_CORES = _spark(
    "sleeper.bulk.import.emr.serverless.spark.executor.cores", "spark.executor.cores", "4",
    _SERVERLESS + "the cores of each executor.", validation=POSITIVE_INT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_MEMORY = _spark(
    "sleeper.bulk.import.emr.serverless.spark.executor.memory", "spark.executor.memory", "16G",
    _SERVERLESS + "the memory of each executor.", validation=ANY_TEXT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_DISK = _spark(
    "sleeper.bulk.import.emr.serverless.spark.emr-serverless.executor.disk", "spark.emr-serverless.executor.disk",
    "200G", _SERVERLESS + "the disk of each executor.", validation=ANY_TEXT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_INSTANCES = _spark(
    "sleeper.bulk.import.emr.serverless.spark.executor.instances", "spark.executor.instances", "36",
    _SERVERLESS + "the number of executors.", validation=POSITIVE_INT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_DRIVER_CORES = _spark(
    "sleeper.bulk.import.emr.serverless.spark.driver.cores", "spark.driver.cores", "4",
    _SERVERLESS + "the cores of the driver.", validation=POSITIVE_INT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_DRIVER_MEMORY = _spark(
    "sleeper.bulk.import.emr.serverless.spark.driver.memory", "spark.driver.memory", "16G",
    _SERVERLESS + "the memory of the driver.", validation=ANY_TEXT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_JAVA_HOME = _bulk.user(
    "sleeper.bulk.import.emr.serverless.spark.executorEnv.JAVA_HOME",
    _SERVERLESS + "The JAVA_HOME of the bulk import container image, for Spark.",
    default="/usr/lib/jvm/jre-11",
)
BULK_IMPORT_EMR_SERVERLESS_DYNAMIC_ALLOCATION = _spark(
    "sleeper.bulk.import.emr.serverless.spark.dynamic.allocation.enabled", "spark.dynamicAllocation.enabled",
    "false", _SERVERLESS + "whether Spark scales its executors up and down.", validation=BOOLEAN, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_RDD_COMPRESS = _spark(
    "sleeper.bulk.import.emr.serverless.spark.rdd.compress", "spark.rdd.compress", "true",
    _SERVERLESS + "whether serialised RDD partitions are compressed.", validation=BOOLEAN, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_COMPRESS = _spark(
    "sleeper.bulk.import.emr.serverless.spark.shuffle.compress", "spark.shuffle.compress", "true",
    _SERVERLESS + "whether map outputs are compressed.", validation=BOOLEAN, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_SPILL_COMPRESS = _spark(
    "sleeper.bulk.import.emr.serverless.spark.shuffle.spill.compress", "spark.shuffle.spill.compress", "true",
    _SERVERLESS + "whether data spilled during shuffles is compressed.", validation=BOOLEAN, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_DEFAULT_PARALLELISM = _spark(
    "sleeper.bulk.import.emr.serverless.spark.default.parallelism", "spark.default.parallelism", "288",
    _SERVERLESS + "the default number of partitions of a Spark job.", validation=POSITIVE_INT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SQL_SHUFFLE_PARTITIONS = _spark(
    "sleeper.bulk.import.emr.serverless.spark.sql.shuffle.partitions", "spark.sql.shuffle.partitions", "288",
    _SERVERLESS + "the number of partitions of a DataFrame shuffle.", validation=POSITIVE_INT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_NETWORK_TIMEOUT = _spark(
    "sleeper.bulk.import.emr.serverless.spark.network.timeout", "spark.network.timeout", "800s",
    _SERVERLESS + "the default timeout of network interactions.", validation=ANY_TEXT, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_EXECUTOR_HEARTBEAT_INTERVAL = _spark(
    "sleeper.bulk.import.emr.serverless.spark.executor.heartbeat.interval", "spark.executor.heartbeatInterval",
    "60s", _SERVERLESS + "the interval between executors' heartbeats to the driver.", validation=ANY_TEXT,
    redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_MEMORY_FRACTION = _spark(
    "sleeper.bulk.import.emr.serverless.spark.memory.fraction", "spark.memory.fraction", "0.80",
    _SERVERLESS + "the fraction of heap used for execution and storage.", validation=FRACTION, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_MEMORY_STORAGE_FRACTION = _spark(
    "sleeper.bulk.import.emr.serverless.spark.memory.storage.fraction", "spark.memory.storageFraction", "0.30",
    _SERVERLESS + "the fraction of that memory kept for storage, immune to eviction.", validation=FRACTION,
    redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SPECULATION = _spark(
    "sleeper.bulk.import.emr.serverless.spark.speculation", "spark.speculation", "false",
    _SERVERLESS + "whether slow tasks are run again speculatively.", validation=BOOLEAN, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SPECULATION_QUANTILE = _spark(
    "sleeper.bulk.import.emr.serverless.spark.speculation.quantile", "spark.speculation.quantile", "0.75",
    _SERVERLESS + "the fraction of a stage's tasks that must finish before speculation starts.",
    validation=FRACTION, redeploy=False,
)  # fmt: skip
BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_MAPSTATUS_COMPRESSION_CODEC = _spark(
    "sleeper.bulk.import.emr.serverless.spark.shuffle.mapStatus.compression.codec",
    "spark.shuffle.mapStatus.compression.codec", "lz4",
    _SERVERLESS + "the codec of map status results; only `lz4` has been tested.", validation=ANY_TEXT,
    redeploy=False,
)  # fmt: skip
_PREINIT = _SERVERLESS + "Pre-initialised capacity: "
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_ENABLED = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.enabled",
    _PREINIT + "whether the application keeps workers initialised and ready for jobs. See the EMR Serverless "
    "documentation on pre-initialized capacity.",
    default="false",
    validation=BOOLEAN,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_COUNT = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.executor.count",
    _PREINIT + "the number of executors.",
    default="72",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_CORES = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.executor.cores",
    _PREINIT + "the CPUs of each executor.",
    default="4vCPU",
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_MEMORY = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.executor.memory",
    _PREINIT + "the memory of each executor.",
    default="18GB",
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_EXECUTOR_DISK = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.executor.disk",
    _PREINIT + "the disk of each executor.",
    default="200GB",
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_COUNT = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.driver.count",
    _PREINIT + "the number of drivers.",
    default="5",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_CORES = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.driver.cores",
    _PREINIT + "the CPUs of each driver.",
    default="4vCPU",
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_MEMORY = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.driver.memory",
    _PREINIT + "the memory of each driver.",
    default="18GB",
    redeploy=True,
)
BULK_IMPORT_EMR_SERVERLESS_INITIAL_CAPACITY_DRIVER_DISK = _bulk.user(
    "sleeper.bulk.import.emr.serverless.initial.capacity.driver.disk",
    _PREINIT + "the disk of each driver.",
    default="20GB",
    redeploy=True,
)

_EMR_DEFAULT = "(EMR clusters created per job.) "
_OVERRIDE = " A table property or the bulk import job can override it."

DEFAULT_BULK_IMPORT_EMR_INSTANCE_ARCHITECTURE = _bulk.user(
    "sleeper.default.table.bulk.import.emr.instance.architecture",
    _EMR_DEFAULT + "The default architectures of the cluster's EC2 instances: `x86_64`, `arm64` or "
    "`x86_64,arm64`." + _OVERRIDE,
    default="arm64",
    validation=EMR_ARCHITECTURES,
)
_DEFAULT_INSTANCE_TYPES = _bulk.instance_types(
    "sleeper.default.table.bulk.import.emr",
    lambda what: _EMR_DEFAULT + "The default " + what + _OVERRIDE,
    defaults=("m7i.xlarge", "m7i.4xlarge", "m7g.xlarge", "m7g.4xlarge"),
    validation=INSTANCE_TYPES,
)
(
    DEFAULT_BULK_IMPORT_EMR_MASTER_X86_INSTANCE_TYPES,
    DEFAULT_BULK_IMPORT_EMR_EXECUTOR_X86_INSTANCE_TYPES,
    DEFAULT_BULK_IMPORT_EMR_MASTER_ARM_INSTANCE_TYPES,
    DEFAULT_BULK_IMPORT_EMR_EXECUTOR_ARM_INSTANCE_TYPES,
) = _DEFAULT_INSTANCE_TYPES
DEFAULT_BULK_IMPORT_EMR_EXECUTOR_MARKET_TYPE = _bulk.user(
    "sleeper.default.table.bulk.import.emr.executor.market.type",
    _EMR_DEFAULT + "The default purchasing option of the executor nodes: `SPOT` or `ON_DEMAND`." + _OVERRIDE,
    default="SPOT",
    validation=ChoiceValue(("SPOT", "ON_DEMAND"), case_sensitive=True),
)
DEFAULT_BULK_IMPORT_EMR_INITIAL_EXECUTOR_CAPACITY = _bulk.user(
    "sleeper.default.table.bulk.import.emr.executor.initial.capacity",
    _EMR_DEFAULT + "The default initial capacity of the executor instance fleet, in capacity units (the weights of "
    "the instance types; by default one unit per instance)." + _OVERRIDE,
    default="2",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_BULK_IMPORT_EMR_MAX_EXECUTOR_CAPACITY = _bulk.user(
    "sleeper.default.table.bulk.import.emr.executor.max.capacity",
    _EMR_DEFAULT + "The default maximum capacity of the executor instance fleet, in capacity units." + _OVERRIDE,
    default="10",
    validation=POSITIVE_INT,
)

_PERSISTENT = "(Persistent EMR.) "

BULK_IMPORT_PERSISTENT_EMR_RELEASE_LABEL = _bulk.user(
    "sleeper.bulk.import.persistent.emr.release.label",
    _PERSISTENT + "The EMR release of the persistent cluster.",
    default=DEFAULT_BULK_IMPORT_EMR_RELEASE_LABEL.default,
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_INSTANCE_ARCHITECTURE = _bulk.user(
    "sleeper.bulk.import.persistent.emr.instance.architecture",
    _PERSISTENT + "The architectures of the cluster's EC2 instances: `x86_64`, `arm64` or `x86_64,arm64`.",
    default="arm64",
    validation=EMR_ARCHITECTURES,
)
(
    BULK_IMPORT_PERSISTENT_EMR_MASTER_X86_INSTANCE_TYPES,
    BULK_IMPORT_PERSISTENT_EMR_EXECUTOR_X86_INSTANCE_TYPES,
    BULK_IMPORT_PERSISTENT_EMR_MASTER_ARM_INSTANCE_TYPES,
    BULK_IMPORT_PERSISTENT_EMR_EXECUTOR_ARM_INSTANCE_TYPES,
) = _bulk.instance_types(
    "sleeper.bulk.import.persistent.emr",
    lambda what: _PERSISTENT + "The " + what,
    defaults=[d.default for d in _DEFAULT_INSTANCE_TYPES],
    validation=INSTANCE_TYPES,
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_USE_MANAGED_SCALING = _bulk.user(
    "sleeper.bulk.import.persistent.emr.use.managed.scaling",
    _PERSISTENT + "Whether the cluster uses EMR managed scaling. If it does, the maximum capacity must be more than "
    "the minimum.",
    default="true",
    validation=BOOLEAN,
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_MIN_CAPACITY = _bulk.user(
    "sleeper.bulk.import.persistent.emr.min.capacity",
    _PERSISTENT + "The minimum capacity (0 to 2000) of the executor instance fleet, in capacity units. Without "
    "managed scaling this is the fixed size of the cluster.",
    default="1",
    validation=IntegerValue(minimum=0, maximum=2000),
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_MAX_CAPACITY = _bulk.user(
    "sleeper.bulk.import.persistent.emr.max.capacity",
    _PERSISTENT + "The maximum capacity (0 to 2000) of the executor instance fleet, in capacity units, with managed "
    "scaling.",
    default="10",
    validation=IntegerValue(minimum=0, maximum=2000),
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_STEP_CONCURRENCY_LEVEL = _bulk.user(
    "sleeper.bulk.import.persistent.emr.step.concurrency.level",
    _PERSISTENT + "How many EMR steps (bulk import jobs) may run at once on the cluster.",
    default="2",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_IMPORT_PERSISTENT_EMR_REQUEUE_DELAY_SECONDS = _bulk.user(
    "sleeper.bulk.import.persistent.emr.cluster.full.requeue.delay",
    _PERSISTENT + "How long, in seconds, a bulk import job waits before it is put back on the queue because the "
    "cluster is full.",
    default="60",
    validation=POSITIVE_INT,
)

_export = PropertyList(InstancePropertyGroup.BULK_EXPORT)

BULK_EXPORT_LAMBDA_MEMORY_IN_MB = _export.user(
    "sleeper.bulk.export.memory.mb",
    "The memory in MB of the Lambda function that starts bulk export jobs.",
    falls_back_to=DEFAULT_TABLE_STATE_LAMBDA_MEMORY,
    redeploy=True,
)
BULK_EXPORT_LAMBDA_TIMEOUT_IN_SECONDS = _export.user(
    "sleeper.bulk.export.timeout.seconds",
    "The timeout in seconds of the Lambda function that starts bulk export jobs.",
    default="900",
    validation=LAMBDA_TIMEOUT,
    redeploy=True,
)
BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS = _export.user(
    "sleeper.bulk.export.queue.visibility.timeout.seconds",
    "The visibility timeout in seconds of the bulk export queue.",
    default="900",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_TASK_CPU_ARCHITECTURE = _export.user(
    "sleeper.bulk.export.task.cpu.architecture",
    "The CPU architecture of bulk export tasks: `X86_64` or `ARM64`.",
    default="X86_64",
    validation=ChoiceValue(CPU_ARCHITECTURES),
    redeploy=True,
)
BULK_EXPORT_TASK_ARM_CPU = _export.user(
    "sleeper.bulk.export.task.arm.cpu",
    "The CPU units of an ARM64 bulk export task (1024 = 1 vCPU).",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_TASK_ARM_MEMORY = _export.user(
    "sleeper.bulk.export.task.arm.memory.mb",
    "The memory in MB of an ARM64 bulk export task.",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_TASK_X86_CPU = _export.user(
    "sleeper.bulk.export.task.x86.cpu",
    "The CPU units of an x86_64 bulk export task (1024 = 1 vCPU).",
    default="1024",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_TASK_X86_MEMORY = _export.user(
    "sleeper.bulk.export.task.x86.memory.mb",
    "The memory in MB of an x86_64 bulk export task.",
    default="4096",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_TASK_CREATION_PERIOD_IN_MINUTES = _export.user(
    "sleeper.bulk.export.task.creation.period.minutes",
    "How often, in minutes, a check is made whether more bulk export tasks are needed.",
    default="1",
    validation=POSITIVE_INT,
    redeploy=True,
)
MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS = _export.user(
    "sleeper.bulk.export.max.concurrent.tasks",
    "The maximum number of bulk export tasks running at once.",
    default="300",
    validation=NON_NEGATIVE_INT,
)
BULK_EXPORT_RESULTS_BUCKET_EXPIRY_IN_DAYS = _export.user(
    "sleeper.bulk.export.results.bucket.expiry.days",
    "How many days bulk export results stay in their bucket before they are deleted.",
    default="7",
    validation=POSITIVE_INT,
    redeploy=True,
)
BULK_EXPORT_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS = _export.user(
    "sleeper.bulk.export.job.failed.visibility.timeout.seconds",
    "How long, in seconds, a failed bulk export job stays invisible on the queue before it can be tried again.",
    default="60",
    validation=NON_NEGATIVE_INT,
)
BULK_EXPORT_TASK_WAIT_TIME_IN_SECONDS = _export.user(
    "sleeper.bulk.export.task.wait.time.seconds",
    "How long, in seconds (0 to 20), a bulk export task waits for a job to arrive on the queue in one receive call.",
    default="20",
    validation=QUEUE_WAIT_SECONDS,
)
BULK_EXPORT_KEEP_ALIVE_PERIOD_IN_SECONDS = _export.user(
    "sleeper.bulk.export.keepalive.period.seconds",
    "How often, in seconds, a bulk export task extends the visibility of the job message it is working on. Must be "
    "less than `sleeper.bulk.export.queue.visibility.timeout.seconds`.",
    default="300",
    validation=POSITIVE_INT,
)

DEFINITIONS = _bulk.all() + _export.all()
"""The definitions in this module, in order."""
