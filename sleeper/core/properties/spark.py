"""The Spark settings of bulk import jobs, from instance properties: what EMR Serverless job runs are given, and the
``spark-defaults`` of EMR cluster hosts (per-job clusters, set by the launcher, and the persistent cluster, set by its
stack). One table each, shared by the AWS launchers and the CDK stacks."""

from __future__ import annotations

from collections.abc import Sequence

from sleeper.core.properties import instance_bulk as bulk
from sleeper.core.properties import instance_eks as eks
from sleeper.core.properties.definitions import PropertyDefinition
from sleeper.core.properties.instance_common import MAXIMUM_CONNECTIONS_TO_S3
from sleeper.core.properties.properties import InstanceProperties

__all__ = ["EMR_JAVA_HOME", "eks_spark_conf", "emr_spark_conf", "serverless_spark_conf"]

EMR_JAVA_HOME = {
    "x86_64": "/usr/lib/jvm/java-17-amazon-corretto.x86_64",
    "arm64": "/usr/lib/jvm/java-17-amazon-corretto.aarch64",
}
"""The Java of the EMR release on each architecture."""

_SERVERLESS_SPARK: tuple[tuple[str, PropertyDefinition], ...] = (
    ("spark.driver.cores", bulk.BULK_IMPORT_EMR_SERVERLESS_DRIVER_CORES),
    ("spark.driver.memory", bulk.BULK_IMPORT_EMR_SERVERLESS_DRIVER_MEMORY),
    ("spark.executor.cores", bulk.BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_CORES),
    ("spark.emr-serverless.executor.disk", bulk.BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_DISK),
    ("spark.executor.heartbeatInterval", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_EXECUTOR_HEARTBEAT_INTERVAL),
    ("spark.executor.instances", bulk.BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_INSTANCES),
    ("spark.executor.memory", bulk.BULK_IMPORT_EMR_SERVERLESS_EXECUTOR_MEMORY),
    ("spark.default.parallelism", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_DEFAULT_PARALLELISM),
    ("spark.network.timeout", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_NETWORK_TIMEOUT),
    ("spark.dynamicAllocation.enabled", bulk.BULK_IMPORT_EMR_SERVERLESS_DYNAMIC_ALLOCATION),
    ("spark.memory.fraction", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_MEMORY_FRACTION),
    ("spark.memory.storageFraction", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_MEMORY_STORAGE_FRACTION),
    ("spark.rdd.compress", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_RDD_COMPRESS),
    ("spark.shuffle.compress", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_COMPRESS),
    ("spark.shuffle.spill.compress", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_SPILL_COMPRESS),
    (
        "spark.shuffle.mapStatus.compression.codec",
        bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SHUFFLE_MAPSTATUS_COMPRESSION_CODEC,
    ),
    ("spark.speculation", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SPECULATION),
    ("spark.speculation.quantile", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SPECULATION_QUANTILE),
    ("spark.sql.shuffle.partitions", bulk.BULK_IMPORT_EMR_SERVERLESS_SPARK_SQL_SHUFFLE_PARTITIONS),
    ("spark.executorEnv.JAVA_HOME", bulk.BULK_IMPORT_EMR_SERVERLESS_JAVA_HOME),
    ("spark.emr-serverless.driverEnv.JAVA_HOME", bulk.BULK_IMPORT_EMR_SERVERLESS_JAVA_HOME),
)

_EMR_SPARK: tuple[tuple[str, PropertyDefinition], ...] = (
    ("spark.shuffle.mapStatus.compression.codec", bulk.BULK_IMPORT_SPARK_SHUFFLE_MAPSTATUS_COMPRESSION_CODEC),
    ("spark.speculation", bulk.BULK_IMPORT_SPARK_SPECULATION),
    ("spark.speculation.quantile", bulk.BULK_IMPORT_SPARK_SPECULATION_QUANTILE),
    ("spark.hadoop.fs.s3a.connection.maximum", MAXIMUM_CONNECTIONS_TO_S3),
    ("spark.driver.cores", bulk.BULK_IMPORT_EMR_SPARK_DRIVER_CORES),
    ("spark.driver.extraJavaOptions", bulk.BULK_IMPORT_EMR_SPARK_DRIVER_EXTRA_JAVA_OPTIONS),
    ("spark.driver.memory", bulk.BULK_IMPORT_EMR_SPARK_DRIVER_MEMORY),
    ("spark.executor.cores", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_CORES),
    ("spark.executor.extraJavaOptions", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_EXTRA_JAVA_OPTIONS),
    ("spark.executor.heartbeatInterval", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_HEARTBEAT_INTERVAL),
    ("spark.executor.instances", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_INSTANCES),
    ("spark.executor.memory", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_MEMORY),
    ("spark.driver.memoryOverhead", bulk.BULK_IMPORT_EMR_SPARK_DRIVER_MEMORY_OVERHEAD),
    ("spark.executor.memoryOverhead", bulk.BULK_IMPORT_EMR_SPARK_EXECUTOR_MEMORY_OVERHEAD),
    (
        "spark.yarn.scheduler.reporterThread.maxFailures",
        bulk.BULK_IMPORT_EMR_SPARK_YARN_SCHEDULER_REPORTER_THREAD_MAX_FAILURES,
    ),
    ("spark.default.parallelism", bulk.BULK_IMPORT_EMR_SPARK_DEFAULT_PARALLELISM),
    ("spark.network.timeout", bulk.BULK_IMPORT_EMR_SPARK_NETWORK_TIMEOUT),
    ("spark.dynamicAllocation.enabled", bulk.BULK_IMPORT_EMR_SPARK_DYNAMIC_ALLOCATION_ENABLED),
    ("spark.memory.fraction", bulk.BULK_IMPORT_EMR_SPARK_MEMORY_FRACTION),
    ("spark.memory.storageFraction", bulk.BULK_IMPORT_EMR_SPARK_MEMORY_STORAGE_FRACTION),
    ("spark.storage.level", bulk.BULK_IMPORT_EMR_SPARK_STORAGE_LEVEL),
    ("spark.rdd.compress", bulk.BULK_IMPORT_EMR_SPARK_RDD_COMPRESS),
    ("spark.shuffle.compress", bulk.BULK_IMPORT_EMR_SPARK_SHUFFLE_COMPRESS),
    ("spark.shuffle.spill.compress", bulk.BULK_IMPORT_EMR_SPARK_SHUFFLE_SPILL_COMPRESS),
    ("spark.sql.shuffle.partitions", bulk.BULK_IMPORT_EMR_SPARK_SQL_SHUFFLE_PARTITIONS),
)


_EKS_SPARK: tuple[tuple[str, PropertyDefinition], ...] = (
    ("spark.shuffle.mapStatus.compression.codec", bulk.BULK_IMPORT_SPARK_SHUFFLE_MAPSTATUS_COMPRESSION_CODEC),
    ("spark.speculation", bulk.BULK_IMPORT_SPARK_SPECULATION),
    ("spark.speculation.quantile", bulk.BULK_IMPORT_SPARK_SPECULATION_QUANTILE),
    ("spark.hadoop.fs.s3a.connection.maximum", MAXIMUM_CONNECTIONS_TO_S3),
    ("spark.driver.cores", eks.BULK_IMPORT_EKS_SPARK_DRIVER_CORES),
    ("spark.driver.extraJavaOptions", eks.BULK_IMPORT_EKS_SPARK_DRIVER_EXTRA_JAVA_OPTIONS),
    ("spark.driver.memory", eks.BULK_IMPORT_EKS_SPARK_DRIVER_MEMORY),
    ("spark.executor.cores", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_CORES),
    ("spark.executor.extraJavaOptions", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_EXTRA_JAVA_OPTIONS),
    ("spark.executor.heartbeatInterval", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_HEARTBEAT_INTERVAL),
    ("spark.executor.instances", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_INSTANCES),
    ("spark.executor.memory", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_MEMORY),
    ("spark.driver.memoryOverhead", eks.BULK_IMPORT_EKS_SPARK_DRIVER_MEMORY_OVERHEAD),
    ("spark.executor.memoryOverhead", eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_MEMORY_OVERHEAD),
    ("spark.default.parallelism", eks.BULK_IMPORT_EKS_SPARK_DEFAULT_PARALLELISM),
    ("spark.network.timeout", eks.BULK_IMPORT_EKS_SPARK_NETWORK_TIMEOUT),
    ("spark.dynamicAllocation.enabled", eks.BULK_IMPORT_EKS_SPARK_DYNAMIC_ALLOCATION_ENABLED),
    ("spark.memory.fraction", eks.BULK_IMPORT_EKS_SPARK_MEMORY_FRACTION),
    ("spark.memory.storageFraction", eks.BULK_IMPORT_EKS_SPARK_MEMORY_STORAGE_FRACTION),
    ("spark.storage.level", eks.BULK_IMPORT_EKS_SPARK_STORAGE_LEVEL),
    ("spark.rdd.compress", eks.BULK_IMPORT_EKS_SPARK_RDD_COMPRESS),
    ("spark.shuffle.compress", eks.BULK_IMPORT_EKS_SPARK_SHUFFLE_COMPRESS),
    ("spark.shuffle.spill.compress", eks.BULK_IMPORT_EKS_SPARK_SHUFFLE_SPILL_COMPRESS),
    ("spark.hadoop.fs.s3a.experimental.input.fadvise", eks.BULK_IMPORT_EKS_SPARK_HADOOP_S3A_INPUT_FADVISE),
    ("spark.sql.shuffle.partitions", eks.BULK_IMPORT_EKS_SPARK_SQL_SHUFFLE_PARTITIONS),
)


def _conf_from(properties: InstanceProperties, table: Sequence[tuple[str, PropertyDefinition]]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for key, prop in table:
        value = properties.get(prop)
        if value is not None:
            conf[key] = value
    return conf


def serverless_spark_conf(properties: InstanceProperties) -> dict[str, str]:
    """The Spark settings of a job on EMR Serverless, from the ``sleeper.bulk.import.emr.serverless.*`` properties."""
    return _conf_from(properties, _SERVERLESS_SPARK)


def emr_spark_conf(properties: InstanceProperties, architecture: str) -> dict[str, str]:
    """The ``spark-defaults`` of an EMR cluster's instances, from the ``sleeper.bulk.import.emr.*`` properties."""
    conf = _conf_from(properties, _EMR_SPARK)
    conf["spark.hadoop.fs.s3a.create.performance"] = "true"
    conf["spark.executorEnv.JAVA_HOME"] = EMR_JAVA_HOME[architecture]
    return conf


def eks_spark_conf(properties: InstanceProperties) -> dict[str, str]:
    """The Spark settings of a job on EKS, from the ``sleeper.bulk.import.eks.spark.*`` properties (and the settings
    every Spark bulk import shares), as Sleeper's ``getSparkConfigurationForEKSFromInstanceProperties``; S3 is reached
    with the pod's web identity (the ``spark`` service account's role), through the credentials provider of the AWS
    SDK that the EKS image's hadoop-aws uses (SDK v1 for Hadoop 3.3, the Hadoop of the image's Spark 3.5; see
    containers/bulk-import-eks/Dockerfile)."""
    conf = _conf_from(properties, _EKS_SPARK)
    conf["spark.hadoop.fs.s3a.create.performance"] = "true"
    conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = "com.amazonaws.auth.WebIdentityTokenCredentialsProvider"
    return conf
