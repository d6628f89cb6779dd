"""Instance properties of bulk import on EKS (Sleeper's ``EKSProperty``): names, defaults and validation as Sleeper's.

``sleeper/cdk/eks_bulk_import.py`` (``EksBulkImportStack``) reads the cluster's settings when it is synthesized,
refusing what it does not deploy (Sleeper's native-libraries image); the EKS platform of the bulk import starter
(``sleeper.adapters.aws.launchers.eks``) reads the Spark settings for each job
(``sleeper.core.properties.spark.eks_spark_conf``).
"""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyDefinition, PropertyList
from sleeper.core.properties.validation import BOOLEAN, FRACTION, POSITIVE_INT, ChoiceValue

_eks = PropertyList(InstancePropertyGroup.BULK_IMPORT)

EKS_CLUSTER_TYPES = ("fargate", "automode")
"""Sleeper's ``EksClusterType`` values, in lower case as its docs describe them (any case is accepted)."""
SPARK_DOCS = "See https://spark.apache.org/docs/latest/configuration.html."


def _user(name: str, description: str, default: str | None = None, **options: object) -> PropertyDefinition:
    return _eks.user(name, description, default=default, **options)  # type: ignore[arg-type]


EKS_CLUSTER_ADMIN_ROLES = _user(
    "sleeper.bulk.import.eks.cluster.admin.roles",
    "(EKS mode only) Names of AWS IAM roles which should have access to administer the EKS cluster.",
    redeploy=True,
)
EKS_API_ALLOWED_SECURITY_GROUPS = _user(
    "sleeper.bulk.import.eks.api.allowed.security.groups",
    "(EKS mode only) IDs of security groups that should be permitted to reach the EKS Kubernetes API, each added as "
    "an ingress rule on TCP/443 to the cluster's security group.",
    redeploy=True,
)
EKS_IS_NATIVE_LIBS_IMAGE = _user(
    "sleeper.bulk.import.eks.is.native.libs.image",
    "(EKS mode only) Set to true if sleeper.bulk.import.eks.repo contains the image built with native Hadoop "
    "libraries. This port builds one image (containers/bulk-import-eks) without them: true is refused when the "
    "stack is synthesized.",
    "false",
    redeploy=True,
    validation=BOOLEAN,
)
BULK_IMPORT_EKS_AWSCLI_LAYER_ARN = _user(
    "sleeper.bulk.import.eks.awscli.layer.arn",
    "(EKS mode only) The ARN of a Lambda Layer providing the AWS CLI to use with the EKS kubectl provider. If not "
    "set, the default AWS CLI layer included with the CDK will be used.",
    redeploy=True,
)
BULK_IMPORT_EKS_CLUSTER_TYPE = _user(
    "sleeper.bulk.import.eks.cluster.type",
    "(EKS mode only) The type of EKS cluster to deploy for bulk import: fargate (pods run on AWS Fargate, their "
    "output sent to CloudWatch Logs) or automode (EKS Auto Mode launches EC2 nodes from its general-purpose node "
    "pool, whose default node class gives each node 80Gi of ephemeral storage: set "
    "sleeper.bulk.import.eks.spark.executor.ephemeral.storage well below that, as its default of 175Gi cannot be "
    "scheduled there).",
    "FARGATE",
    validation=ChoiceValue(EKS_CLUSTER_TYPES),
    redeploy=True,
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_INSTANCES = _user(
    "sleeper.bulk.import.eks.spark.executor.instances",
    "(EKS mode only) The number of Spark executors (spark.executor.instances). " + SPARK_DOCS,
    "29",
    validation=POSITIVE_INT,
)
BULK_IMPORT_EKS_SPARK_DRIVER_MEMORY = _user(
    "sleeper.bulk.import.eks.spark.driver.memory",
    "(EKS mode only) The memory of the Spark driver (spark.driver.memory). " + SPARK_DOCS,
    "16g",
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_MEMORY = _user(
    "sleeper.bulk.import.eks.spark.executor.memory",
    "(EKS mode only) The memory of a Spark executor (spark.executor.memory). " + SPARK_DOCS,
    "16g",
)
BULK_IMPORT_EKS_SPARK_DRIVER_MEMORY_OVERHEAD = _user(
    "sleeper.bulk.import.eks.spark.driver.memory.overhead",
    "(EKS mode only) The memory overhead of the Spark driver (spark.driver.memoryOverhead). " + SPARK_DOCS,
    "1706m",
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_MEMORY_OVERHEAD = _user(
    "sleeper.bulk.import.eks.spark.executor.memory.overhead",
    "(EKS mode only) The memory overhead of a Spark executor (spark.executor.memoryOverhead). " + SPARK_DOCS,
    "1706m",
)
BULK_IMPORT_EKS_SPARK_HADOOP_S3A_INPUT_FADVISE = _user(
    "sleeper.bulk.import.eks.spark.hadoop.fs.s3a.experimental.input.fadvise",
    "(EKS mode only) The S3A input read policy (spark.hadoop.fs.s3a.experimental.input.fadvise).",
    "sequential",
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_CORES = _user(
    "sleeper.bulk.import.eks.spark.executor.cores",
    "(EKS mode only) The cores of a Spark executor (spark.executor.cores). " + SPARK_DOCS,
    "5",
    validation=POSITIVE_INT,
)
BULK_IMPORT_EKS_SPARK_DRIVER_CORES = _user(
    "sleeper.bulk.import.eks.spark.driver.cores",
    "(EKS mode only) The cores of the Spark driver (spark.driver.cores). " + SPARK_DOCS,
    "5",
    validation=POSITIVE_INT,
)
BULK_IMPORT_EKS_SPARK_DEFAULT_PARALLELISM = _user(
    "sleeper.bulk.import.eks.spark.default.parallelism",
    "(EKS mode only) The default parallelism of the Spark job (spark.default.parallelism). " + SPARK_DOCS,
    "290",
    validation=POSITIVE_INT,
)
BULK_IMPORT_EKS_SPARK_SQL_SHUFFLE_PARTITIONS = _user(
    "sleeper.bulk.import.eks.spark.sql.shuffle.partitions",
    "(EKS mode only) The partitions of a Spark SQL shuffle (spark.sql.shuffle.partitions). " + SPARK_DOCS,
    "290",
    validation=POSITIVE_INT,
)
BULK_IMPORT_EKS_SPARK_DYNAMIC_ALLOCATION_ENABLED = _user(
    "sleeper.bulk.import.eks.spark.dynamic.allocation.enabled",
    "(EKS mode only) Whether Spark scales executors up and down (spark.dynamicAllocation.enabled). " + SPARK_DOCS,
    "false",
    validation=BOOLEAN,
)
_JAVA_OPTIONS = (
    "-XX:+UseG1GC -XX:+UnlockDiagnosticVMOptions -XX:+G1SummarizeConcMark -XX:InitiatingHeapOccupancyPercent=35 "
    "-verbose:gc -XX:+PrintGCDetails -XX:+PrintGCDateStamps -XX:OnOutOfMemoryError='kill -9 %p'"
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_EXTRA_JAVA_OPTIONS = _user(
    "sleeper.bulk.import.eks.spark.executor.extra.java.options",
    "JVM options passed to the executors (spark.executor.extraJavaOptions). " + SPARK_DOCS,
    _JAVA_OPTIONS,
)
BULK_IMPORT_EKS_SPARK_DRIVER_EXTRA_JAVA_OPTIONS = _user(
    "sleeper.bulk.import.eks.spark.driver.extra.java.options",
    "JVM options passed to the driver (spark.driver.extraJavaOptions). " + SPARK_DOCS,
    _JAVA_OPTIONS,
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_HEARTBEAT_INTERVAL = _user(
    "sleeper.bulk.import.eks.spark.executor.heartbeat.interval",
    "The interval between heartbeats from executors to the driver (spark.executor.heartbeatInterval). " + SPARK_DOCS,
    "60s",
)
BULK_IMPORT_EKS_SPARK_NETWORK_TIMEOUT = _user(
    "sleeper.bulk.import.eks.spark.network.timeout",
    "The default timeout for network interactions in Spark (spark.network.timeout). " + SPARK_DOCS,
    "800s",
)
BULK_IMPORT_EKS_SPARK_MEMORY_FRACTION = _user(
    "sleeper.bulk.import.eks.spark.memory.fraction",
    "The fraction of heap space used for execution and storage (spark.memory.fraction). " + SPARK_DOCS,
    "0.80",
    validation=FRACTION,
)
BULK_IMPORT_EKS_SPARK_MEMORY_STORAGE_FRACTION = _user(
    "sleeper.bulk.import.eks.spark.memory.storage.fraction",
    "The storage memory immune to eviction, as a fraction of the heap space used for execution and storage "
    "(spark.memory.storageFraction). " + SPARK_DOCS,
    "0.30",
    validation=FRACTION,
)
BULK_IMPORT_EKS_SPARK_STORAGE_LEVEL = _user(
    "sleeper.bulk.import.eks.spark.storage.level",
    "The storage to use for temporary caching (spark.storage.level).",
    "MEMORY_AND_DISK_SER",
)
BULK_IMPORT_EKS_SPARK_RDD_COMPRESS = _user(
    "sleeper.bulk.import.eks.spark.rdd.compress",
    "Whether to compress serialized RDD partitions (spark.rdd.compress). " + SPARK_DOCS,
    "true",
    validation=BOOLEAN,
)
BULK_IMPORT_EKS_SPARK_SHUFFLE_COMPRESS = _user(
    "sleeper.bulk.import.eks.spark.shuffle.compress",
    "Whether to compress map output files (spark.shuffle.compress). " + SPARK_DOCS,
    "true",
    validation=BOOLEAN,
)
BULK_IMPORT_EKS_SPARK_SHUFFLE_SPILL_COMPRESS = _user(
    "sleeper.bulk.import.eks.spark.shuffle.spill.compress",
    "Whether to compress data spilled during shuffles (spark.shuffle.spill.compress). " + SPARK_DOCS,
    "true",
    validation=BOOLEAN,
)
BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE = _user(
    "sleeper.bulk.import.eks.spark.executor.ephemeral.storage",
    "(EKS mode only) The ephemeral storage of each Spark executor pod on Fargate, set as the ephemeral-storage request "
    "and limit of the executor container through a Spark pod template (Fargate accepts 20Gi to 175Gi).",
    "175Gi",
)

DEFINITIONS = _eks.all()
"""The definitions in this module, in order."""
