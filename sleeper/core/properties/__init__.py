"""Sleeper's instance and table properties: definitions, defaults, validation, ``.properties`` files and docs.

Property constants live in the module of their area, named as in Sleeper's Java code:

- ``instance_common``: common settings, table state, metrics, logging (e.g. ``ID``, ``TAGS``)
- ``instance_ingest``: standard ingest and the ingest batcher
- ``instance_bulk``: bulk import (EMR Serverless, EMR) and bulk export
- ``instance_compaction``: compaction, partition splitting, garbage collection
- ``instance_query``: queries and Athena (e.g. ``QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS``)
- ``instance_defaults``: ``sleeper.default.table.…`` defaults of table properties
- ``instance_cdk``: properties only a deployment sets: buckets, queues, DynamoDB tables (e.g. ``DATA_BUCKET``)
- ``table``: table properties (e.g. ``SCHEMA``, ``GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION``)

Generate the docs with ``python -m sleeper.core.properties.docs docs/usage/properties``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
from sleeper.core.naming import config_bucket_name as config_bucket_name
from sleeper.core.properties import javaprops as javaprops
from sleeper.core.properties.definitions import DefaultRule as DefaultRule
from sleeper.core.properties.definitions import InstancePropertyGroup as InstancePropertyGroup
from sleeper.core.properties.definitions import PropertyDefinition as PropertyDefinition
from sleeper.core.properties.definitions import PropertyGroup as PropertyGroup
from sleeper.core.properties.definitions import PropertyIndex as PropertyIndex
from sleeper.core.properties.definitions import TablePropertyGroup as TablePropertyGroup
from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX as INSTANCE_PROPERTY_INDEX
from sleeper.core.properties.index import TABLE_PROPERTY_INDEX as TABLE_PROPERTY_INDEX
from sleeper.core.properties.properties import INSTANCE_PROPERTIES_KEY as INSTANCE_PROPERTIES_KEY
from sleeper.core.properties.properties import InstanceProperties as InstanceProperties
from sleeper.core.properties.properties import PropertyChange as PropertyChange
from sleeper.core.properties.properties import PropertyRef as PropertyRef
from sleeper.core.properties.properties import PropertyValue as PropertyValue
from sleeper.core.properties.properties import TableProperties as TableProperties
from sleeper.core.properties.properties import edited_table_properties as edited_table_properties
from sleeper.core.properties.properties import format_value as format_value
from sleeper.core.properties.properties import gc_delay_problem as gc_delay_problem
from sleeper.core.properties.properties import new_table_properties as new_table_properties
from sleeper.core.properties.properties import property_changes as property_changes
from sleeper.core.properties.properties import table_properties_key as table_properties_key
from sleeper.core.properties.properties import validate_instance_update as validate_instance_update
from sleeper.core.properties.properties import validate_table_update as validate_table_update
from sleeper.core.properties.validation import Validator as Validator

__all__ = [
    "INSTANCE_PROPERTIES_KEY",
    "INSTANCE_PROPERTY_INDEX",
    "TABLE_PROPERTY_INDEX",
    "DefaultRule",
    "InstanceProperties",
    "InstancePropertyGroup",
    "PropertyChange",
    "PropertyDefinition",
    "PropertyGroup",
    "PropertyIndex",
    "PropertyRef",
    "PropertyValue",
    "TableProperties",
    "TablePropertyGroup",
    "Validator",
    "config_bucket_name",
    "edited_table_properties",
    "format_value",
    "gc_delay_problem",
    "javaprops",
    "new_table_properties",
    "property_changes",
    "table_properties_key",
    "validate_instance_update",
    "validate_table_update",
]

if TYPE_CHECKING:
    from sleeper.core.properties.instance_bulk import (
        BULK_EXPORT_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS as BULK_EXPORT_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS,
    )
    from sleeper.core.properties.instance_bulk import (
        BULK_EXPORT_KEEP_ALIVE_PERIOD_IN_SECONDS as BULK_EXPORT_KEEP_ALIVE_PERIOD_IN_SECONDS,
    )
    from sleeper.core.properties.instance_bulk import (
        BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS as BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS,
    )
    from sleeper.core.properties.instance_bulk import (
        BULK_EXPORT_TASK_WAIT_TIME_IN_SECONDS as BULK_EXPORT_TASK_WAIT_TIME_IN_SECONDS,
    )
    from sleeper.core.properties.instance_bulk import BULK_IMPORT_CLASS_NAME as BULK_IMPORT_CLASS_NAME
    from sleeper.core.properties.instance_bulk import (
        MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS as MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS,
    )
    from sleeper.core.properties.instance_cdk import TRANSACTION_LOG_FILES_TABLENAME as TRANSACTION_LOG_FILES_TABLENAME
    from sleeper.core.properties.instance_common import APACHE_LOGGING_LEVEL as APACHE_LOGGING_LEVEL
    from sleeper.core.properties.instance_common import AWS_LOGGING_LEVEL as AWS_LOGGING_LEVEL
    from sleeper.core.properties.instance_common import FARGATE_VERSION as FARGATE_VERSION
    from sleeper.core.properties.instance_common import FORCE_RELOAD_PROPERTIES as FORCE_RELOAD_PROPERTIES
    from sleeper.core.properties.instance_common import ID as ID
    from sleeper.core.properties.instance_common import JARS_BUCKET as JARS_BUCKET
    from sleeper.core.properties.instance_common import LOGGING_LEVEL as LOGGING_LEVEL
    from sleeper.core.properties.instance_common import METRICS_NAMESPACE as METRICS_NAMESPACE
    from sleeper.core.properties.instance_common import PARQUET_LOGGING_LEVEL as PARQUET_LOGGING_LEVEL
    from sleeper.core.properties.instance_common import ROOT_LOGGING_LEVEL as ROOT_LOGGING_LEVEL
    from sleeper.core.properties.instance_common import RUST_BACKTRACE as RUST_BACKTRACE
    from sleeper.core.properties.instance_common import STATESTORE_PROVIDER_CACHE_SIZE as STATESTORE_PROVIDER_CACHE_SIZE
    from sleeper.core.properties.instance_common import SUBNETS as SUBNETS
    from sleeper.core.properties.instance_common import (
        TABLE_INDEX_DYNAMO_STRONGLY_CONSISTENT_READS as TABLE_INDEX_DYNAMO_STRONGLY_CONSISTENT_READS,
    )
    from sleeper.core.properties.instance_common import USER_JARS as USER_JARS
    from sleeper.core.properties.instance_common import VPC_ID as VPC_ID
    from sleeper.core.properties.instance_compaction import COMPACTION_ECS_LAUNCHTYPE as COMPACTION_ECS_LAUNCHTYPE
    from sleeper.core.properties.instance_compaction import (
        COMPACTION_JOB_STATUS_TTL_IN_SECONDS as COMPACTION_JOB_STATUS_TTL_IN_SECONDS,
    )
    from sleeper.core.properties.instance_compaction import COMPACTION_STRATEGIES as COMPACTION_STRATEGIES
    from sleeper.core.properties.instance_compaction import (
        COMPACTION_TASK_STATUS_TTL_IN_SECONDS as COMPACTION_TASK_STATUS_TTL_IN_SECONDS,
    )
    from sleeper.core.properties.instance_compaction import (
        COMPACTION_TRACKER_ASYNC_COMMIT_UPDATES_ENABLED as COMPACTION_TRACKER_ASYNC_COMMIT_UPDATES_ENABLED,
    )
    from sleeper.core.properties.instance_compaction import GARBAGE_COLLECTOR_BATCH_SIZE as GARBAGE_COLLECTOR_BATCH_SIZE
    from sleeper.core.properties.instance_compaction import (
        GARBAGE_COLLECTOR_MAXIMUM_FILE_DELETION_PER_INVOCATION as GARBAGE_COLLECTOR_MAXIMUM_FILE_DELETION_PER_INVOCATION,  # noqa: E501
    )
    from sleeper.core.properties.instance_compaction import (
        MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB as MAX_NUMBER_FILES_IN_PARTITION_SPLITTING_JOB,
    )
    from sleeper.core.properties.instance_compaction import (
        MAXIMUM_CONCURRENT_COMPACTION_TASKS as MAXIMUM_CONCURRENT_COMPACTION_TASKS,
    )
    from sleeper.core.properties.instance_defaults import DEFAULT_STATESTORE_CLASSNAME as DEFAULT_STATESTORE_CLASSNAME
    from sleeper.core.properties.instance_eks import (
        BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE as BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE,
    )
    from sleeper.core.properties.instance_ingest import (
        INGEST_JOB_STATUS_TTL_IN_SECONDS as INGEST_JOB_STATUS_TTL_IN_SECONDS,
    )
    from sleeper.core.properties.instance_ingest import (
        INGEST_JOB_WAIT_TIME_IN_SECONDS as INGEST_JOB_WAIT_TIME_IN_SECONDS,
    )
    from sleeper.core.properties.instance_ingest import (
        INGEST_KEEP_ALIVE_PERIOD_IN_SECONDS as INGEST_KEEP_ALIVE_PERIOD_IN_SECONDS,
    )
    from sleeper.core.properties.instance_ingest import (
        INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS as INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS,
    )
    from sleeper.core.properties.instance_ingest import INGEST_SOURCE_BUCKET as INGEST_SOURCE_BUCKET
    from sleeper.core.properties.instance_ingest import (
        INGEST_TASK_STATUS_TTL_IN_SECONDS as INGEST_TASK_STATUS_TTL_IN_SECONDS,
    )
    from sleeper.core.properties.instance_ingest import (
        MAXIMUM_CONCURRENT_INGEST_TASKS as MAXIMUM_CONCURRENT_INGEST_TASKS,
    )
    from sleeper.core.properties.instance_query import (
        QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS as QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS,
    )
    from sleeper.core.properties.instance_query import QUERY_TRACKER_ITEM_TTL_IN_DAYS as QUERY_TRACKER_ITEM_TTL_IN_DAYS
    from sleeper.core.properties.javaprops import load as load
    from sleeper.core.properties.notices import change_notice as change_notice
    from sleeper.core.properties.notices import property_notices as property_notices
    from sleeper.core.properties.spark import EMR_JAVA_HOME as EMR_JAVA_HOME
    from sleeper.core.properties.spark import eks_spark_conf as eks_spark_conf
    from sleeper.core.properties.spark import emr_spark_conf as emr_spark_conf
    from sleeper.core.properties.spark import serverless_spark_conf as serverless_spark_conf
    from sleeper.core.properties.table import AGGREGATION_CONFIG as AGGREGATION_CONFIG
    from sleeper.core.properties.table import BULK_IMPORT_FILES_COMMIT_ASYNC as BULK_IMPORT_FILES_COMMIT_ASYNC
    from sleeper.core.properties.table import COMPACTION_FILES_BATCH_SIZE as COMPACTION_FILES_BATCH_SIZE
    from sleeper.core.properties.table import COMPACTION_JOB_CREATION_LIMIT as COMPACTION_JOB_CREATION_LIMIT
    from sleeper.core.properties.table import (
        COMPACTION_JOB_ID_ASSIGNMENT_COMMIT_ASYNC as COMPACTION_JOB_ID_ASSIGNMENT_COMMIT_ASYNC,
    )
    from sleeper.core.properties.table import COMPACTION_JOB_SEND_BATCH_SIZE as COMPACTION_JOB_SEND_BATCH_SIZE
    from sleeper.core.properties.table import (
        COMPACTION_JOB_SEND_RETRY_DELAY_SECS as COMPACTION_JOB_SEND_RETRY_DELAY_SECS,
    )
    from sleeper.core.properties.table import COMPACTION_JOB_SEND_TIMEOUT_SECS as COMPACTION_JOB_SEND_TIMEOUT_SECS
    from sleeper.core.properties.table import COMPACTION_STRATEGY_CLASS as COMPACTION_STRATEGY_CLASS
    from sleeper.core.properties.table import FILTERING_CONFIG as FILTERING_CONFIG
    from sleeper.core.properties.table import GARBAGE_COLLECTOR_ASYNC_COMMIT as GARBAGE_COLLECTOR_ASYNC_COMMIT
    from sleeper.core.properties.table import (
        GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION as GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION,
    )
    from sleeper.core.properties.table import ICEBERG_NAME as ICEBERG_NAME
    from sleeper.core.properties.table import INGEST_BATCHER_INGEST_QUEUE as INGEST_BATCHER_INGEST_QUEUE
    from sleeper.core.properties.table import INGEST_BATCHER_MAX_FILE_AGE_SECONDS as INGEST_BATCHER_MAX_FILE_AGE_SECONDS
    from sleeper.core.properties.table import INGEST_BATCHER_MAX_JOB_FILES as INGEST_BATCHER_MAX_JOB_FILES
    from sleeper.core.properties.table import INGEST_BATCHER_MAX_JOB_SIZE as INGEST_BATCHER_MAX_JOB_SIZE
    from sleeper.core.properties.table import INGEST_BATCHER_MIN_JOB_FILES as INGEST_BATCHER_MIN_JOB_FILES
    from sleeper.core.properties.table import INGEST_BATCHER_MIN_JOB_SIZE as INGEST_BATCHER_MIN_JOB_SIZE
    from sleeper.core.properties.table import INGEST_BATCHER_TRACKING_TTL_MINUTES as INGEST_BATCHER_TRACKING_TTL_MINUTES
    from sleeper.core.properties.table import INGEST_FILES_COMMIT_ASYNC as INGEST_FILES_COMMIT_ASYNC
    from sleeper.core.properties.table import ITERATOR_CLASS_NAME as ITERATOR_CLASS_NAME
    from sleeper.core.properties.table import ITERATOR_CONFIG as ITERATOR_CONFIG
    from sleeper.core.properties.table import PARTITION_SPLIT_ASYNC_COMMIT as PARTITION_SPLIT_ASYNC_COMMIT
    from sleeper.core.properties.table import PARTITION_SPLIT_THRESHOLD as PARTITION_SPLIT_THRESHOLD
    from sleeper.core.properties.table import QUERY_PROCESSOR_CACHE_TIMEOUT as QUERY_PROCESSOR_CACHE_TIMEOUT
    from sleeper.core.properties.table import S3_TRANSACTION_LOG_STATE_STORE as S3_TRANSACTION_LOG_STATE_STORE
    from sleeper.core.properties.table import (
        SIZE_RATIO_COMPACTION_STRATEGY_MAX_CONCURRENT_JOBS_PER_PARTITION as SIZE_RATIO_COMPACTION_STRATEGY_MAX_CONCURRENT_JOBS_PER_PARTITION,  # noqa: E501
    )
    from sleeper.core.properties.table import (
        SIZE_RATIO_COMPACTION_STRATEGY_RATIO as SIZE_RATIO_COMPACTION_STRATEGY_RATIO,
    )
    from sleeper.core.properties.table import SPLIT_POINTS_BASE64_ENCODED as SPLIT_POINTS_BASE64_ENCODED
    from sleeper.core.properties.table import SPLIT_POINTS_FILE as SPLIT_POINTS_FILE
    from sleeper.core.properties.table import STATESTORE_CLASSNAME as STATESTORE_CLASSNAME
    from sleeper.core.properties.table import TIME_TRAVEL_RETENTION_MINUTES as TIME_TRAVEL_RETENTION_MINUTES
    from sleeper.core.properties.table import UPSERT as UPSERT
    from sleeper.core.properties.table import state_store_class as state_store_class

__getattr__, __dir__ = lazy_face(__name__, __file__)
