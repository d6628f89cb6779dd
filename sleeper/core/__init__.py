"""The pure domain of Sleeper: standard library only, no I/O."""

from typing import TYPE_CHECKING

from sleeper.core.faces import lazy_face

if TYPE_CHECKING:
    from sleeper.core.exceptions import InstanceAlreadyExistsError as InstanceAlreadyExistsError
    from sleeper.core.exceptions import InstanceNotFoundError as InstanceNotFoundError
    from sleeper.core.exceptions import KeyTypeError as KeyTypeError
    from sleeper.core.exceptions import PartitionTreeError as PartitionTreeError
    from sleeper.core.exceptions import PropertyError as PropertyError
    from sleeper.core.exceptions import RangeError as RangeError
    from sleeper.core.exceptions import SchemaError as SchemaError
    from sleeper.core.exceptions import SerDeError as SerDeError
    from sleeper.core.exceptions import SleeperError as SleeperError
    from sleeper.core.exceptions import TableAlreadyExistsError as TableAlreadyExistsError
    from sleeper.core.exceptions import TableNotFoundError as TableNotFoundError
    from sleeper.core.extras import DISTRIBUTION as DISTRIBUTION
    from sleeper.core.extras import MissingExtraError as MissingExtraError
    from sleeper.core.extras import install_command as install_command
    from sleeper.core.extras import missing_extra as missing_extra
    from sleeper.core.faults import CRASH_POINTS as CRASH_POINTS
    from sleeper.core.faults import CrashAction as CrashAction
    from sleeper.core.faults import arm as arm
    from sleeper.core.faults import crash_point as crash_point
    from sleeper.core.faults import exit_process as exit_process
    from sleeper.core.filter import MAX_KEY_REGIONS as MAX_KEY_REGIONS
    from sleeper.core.filter import And as And
    from sleeper.core.filter import Between as Between
    from sleeper.core.filter import ColumnStats as ColumnStats
    from sleeper.core.filter import Compare as Compare
    from sleeper.core.filter import Filter as Filter
    from sleeper.core.filter import FilterError as FilterError
    from sleeper.core.filter import InList as InList
    from sleeper.core.filter import IsNull as IsNull
    from sleeper.core.filter import Like as Like
    from sleeper.core.filter import Literal as Literal
    from sleeper.core.filter import Not as Not
    from sleeper.core.filter import Or as Or
    from sleeper.core.filter import StartsWith as StartsWith
    from sleeper.core.filter import columns_of as columns_of
    from sleeper.core.filter import conjoin as conjoin
    from sleeper.core.filter import filter_of as filter_of
    from sleeper.core.filter import key_regions as key_regions
    from sleeper.core.filter import like as like
    from sleeper.core.filter import may_match as may_match
    from sleeper.core.filter import parse_filter as parse_filter
    from sleeper.core.held_files import HOLDS_DIRECTORY as HOLDS_DIRECTORY
    from sleeper.core.held_files import Hold as Hold
    from sleeper.core.held_files import HoldFormatError as HoldFormatError
    from sleeper.core.held_files import hold_id_of as hold_id_of
    from sleeper.core.held_files import hold_location as hold_location
    from sleeper.core.held_files import holds_location as holds_location
    from sleeper.core.held_files import iceberg_location as iceberg_location
    from sleeper.core.iceberg import SLEEPER_TABLE_ID_KEY as SLEEPER_TABLE_ID_KEY
    from sleeper.core.iceberg import SNAPSHOT_HOLD_KEY as SNAPSHOT_HOLD_KEY
    from sleeper.core.iceberg import IcebergIdentifier as IcebergIdentifier
    from sleeper.core.iceberg import parse_iceberg_name as parse_iceberg_name
    from sleeper.core.logcontext import FIELDS as FIELDS
    from sleeper.core.logcontext import LogContextFilter as LogContextFilter
    from sleeper.core.logcontext import current_log_context as current_log_context
    from sleeper.core.logcontext import fields_of_message as fields_of_message
    from sleeper.core.logcontext import log_context as log_context
    from sleeper.core.metrics import Metric as Metric
    from sleeper.core.metrics import MetricsSink as MetricsSink
    from sleeper.core.metrics import metrics_published_to as metrics_published_to
    from sleeper.core.metrics import publish_metrics as publish_metrics
    from sleeper.core.metrics import use_metrics_sink as use_metrics_sink
    from sleeper.core.naming import BULK_EXPORT_CONTAINER_NAME as BULK_EXPORT_CONTAINER_NAME
    from sleeper.core.naming import BULK_IMPORT_EKS as BULK_IMPORT_EKS
    from sleeper.core.naming import COMPACTION_CONTAINER_NAME as COMPACTION_CONTAINER_NAME
    from sleeper.core.naming import INGEST_CONTAINER_NAME as INGEST_CONTAINER_NAME
    from sleeper.core.naming import INGEST_STAGING_PREFIX as INGEST_STAGING_PREFIX
    from sleeper.core.naming import InstanceNames as InstanceNames
    from sleeper.core.naming import JobTrackerTableNames as JobTrackerTableNames
    from sleeper.core.naming import StateStoreTableNames as StateStoreTableNames
    from sleeper.core.naming import TableIndexTableNames as TableIndexTableNames
    from sleeper.core.naming import batcher_store_table_name as batcher_store_table_name
    from sleeper.core.naming import config_bucket_name as config_bucket_name
    from sleeper.core.naming import dead_letter_queue_name as dead_letter_queue_name
    from sleeper.core.naming import function_name as function_name
    from sleeper.core.naming import local_dead_letter_queue_name as local_dead_letter_queue_name
    from sleeper.core.naming import query_tracker_table_name as query_tracker_table_name
    from sleeper.core.naming import queue_name as queue_name
    from sleeper.core.naming import task_tracker_table_name as task_tracker_table_name
    from sleeper.core.operation_specs import ContainerSpec as ContainerSpec
    from sleeper.core.operation_specs import HandlerSpec as HandlerSpec
    from sleeper.core.operation_specs import Schedule as Schedule
    from sleeper.core.operation_specs import TriggerKind as TriggerKind
    from sleeper.core.operation_wiring import local_schedules as local_schedules
    from sleeper.core.operations import BULK_EXPORT_IMAGE as BULK_EXPORT_IMAGE
    from sleeper.core.operations import BULK_EXPORT_Q as BULK_EXPORT_Q
    from sleeper.core.operations import BULK_IMPORT_IMAGE as BULK_IMPORT_IMAGE
    from sleeper.core.operations import BULK_IMPORT_JOB_Q as BULK_IMPORT_JOB_Q
    from sleeper.core.operations import BULK_IMPORT_PERSISTENT_EMR_Q as BULK_IMPORT_PERSISTENT_EMR_Q
    from sleeper.core.operations import COMPACTION_COMMIT_Q as COMPACTION_COMMIT_Q
    from sleeper.core.operations import COMPACTION_IMAGE as COMPACTION_IMAGE
    from sleeper.core.operations import COMPACTION_JOB_CREATION_Q as COMPACTION_JOB_CREATION_Q
    from sleeper.core.operations import COMPACTION_JOB_Q as COMPACTION_JOB_Q
    from sleeper.core.operations import FIND_PARTITIONS_TO_SPLIT_Q as FIND_PARTITIONS_TO_SPLIT_Q
    from sleeper.core.operations import GC_JOB_Q as GC_JOB_Q
    from sleeper.core.operations import INGEST_BATCHER_SUBMIT_Q as INGEST_BATCHER_SUBMIT_Q
    from sleeper.core.operations import INGEST_IMAGE as INGEST_IMAGE
    from sleeper.core.operations import INGEST_JOB_Q as INGEST_JOB_Q
    from sleeper.core.operations import LAMBDA_IMAGE as LAMBDA_IMAGE
    from sleeper.core.operations import LEAF_PARTITION_BULK_EXPORT_Q as LEAF_PARTITION_BULK_EXPORT_Q
    from sleeper.core.operations import LEAF_PARTITION_QUERY_Q as LEAF_PARTITION_QUERY_Q
    from sleeper.core.operations import PARTITION_SPLITTING_JOB_Q as PARTITION_SPLITTING_JOB_Q
    from sleeper.core.operations import PENDING_COMPACTION_JOB_BATCH_Q as PENDING_COMPACTION_JOB_BATCH_Q
    from sleeper.core.operations import QUERY_Q as QUERY_Q
    from sleeper.core.operations import QUERY_RESULTS_Q as QUERY_RESULTS_Q
    from sleeper.core.operations import STATE_STORE_COMMITTER_Q as STATE_STORE_COMMITTER_Q
    from sleeper.core.operations import local_queues as local_queues
    from sleeper.core.partition import IdSupplier as IdSupplier
    from sleeper.core.partition import Partition as Partition
    from sleeper.core.partition import PartitionTree as PartitionTree
    from sleeper.core.partition import partitions_from_split_points as partitions_from_split_points
    from sleeper.core.partition import random_id as random_id
    from sleeper.core.partition import read_split_points as read_split_points
    from sleeper.core.partition import references_outside_tree_message as references_outside_tree_message
    from sleeper.core.partition import split_partition as split_partition
    from sleeper.core.partition import write_split_points as write_split_points
    from sleeper.core.paths import S3_SCHEMES as S3_SCHEMES
    from sleeper.core.paths import check_safe_id as check_safe_id
    from sleeper.core.paths import check_safe_path as check_safe_path
    from sleeper.core.paths import is_s3_path as is_s3_path
    from sleeper.core.paths import join_under as join_under
    from sleeper.core.paths import normalise_s3_path as normalise_s3_path
    from sleeper.core.paths import split_s3_path as split_s3_path
    from sleeper.core.query import LeafPartitionQuery as LeafPartitionQuery
    from sleeper.core.query import Query as Query
    from sleeper.core.query import QueryProcessingConfig as QueryProcessingConfig
    from sleeper.core.query import QuerySerDe as QuerySerDe
    from sleeper.core.query import pending_deletes_from as pending_deletes_from
    from sleeper.core.queue import DEDUPLICATION_WINDOW_SECONDS as DEDUPLICATION_WINDOW_SECONDS
    from sleeper.core.queue import DEFAULT_MAX_MESSAGE_BYTES as DEFAULT_MAX_MESSAGE_BYTES
    from sleeper.core.queue import MAX_RECEIVE_BATCH as MAX_RECEIVE_BATCH
    from sleeper.core.queue import Clock as Clock
    from sleeper.core.queue import InvalidQueueRequestError as InvalidQueueRequestError
    from sleeper.core.queue import Message as Message
    from sleeper.core.queue import MessageTooLargeError as MessageTooLargeError
    from sleeper.core.queue import OutgoingMessage as OutgoingMessage
    from sleeper.core.queue import PreparedSend as PreparedSend
    from sleeper.core.queue import Queue as Queue
    from sleeper.core.queue import QueueConfig as QueueConfig
    from sleeper.core.queue import QueueCounts as QueueCounts
    from sleeper.core.queue import QueueError as QueueError
    from sleeper.core.queue import QueueNotFoundError as QueueNotFoundError
    from sleeper.core.queue import Queues as Queues
    from sleeper.core.queue import ReceiptHandleError as ReceiptHandleError
    from sleeper.core.queue import VisibilityLimitError as VisibilityLimitError
    from sleeper.core.queue import check_receive as check_receive
    from sleeper.core.queue import check_visibility_change as check_visibility_change
    from sleeper.core.queue import check_visibility_timeout as check_visibility_timeout
    from sleeper.core.queue import prepare_send as prepare_send
    from sleeper.core.range import Range as Range
    from sleeper.core.range import Region as Region
    from sleeper.core.range import next_value as next_value
    from sleeper.core.schema import INT_MAX as INT_MAX
    from sleeper.core.schema import INT_MIN as INT_MIN
    from sleeper.core.schema import LONG_MAX as LONG_MAX
    from sleeper.core.schema import LONG_MIN as LONG_MIN
    from sleeper.core.schema import Field as Field
    from sleeper.core.schema import FieldType as FieldType
    from sleeper.core.schema import KeyValue as KeyValue
    from sleeper.core.schema import ListType as ListType
    from sleeper.core.schema import MapType as MapType
    from sleeper.core.schema import PrimitiveType as PrimitiveType
    from sleeper.core.schema import Schema as Schema
    from sleeper.core.schema import TimestampType as TimestampType
    from sleeper.core.schema import ValueType as ValueType
    from sleeper.core.schema import describe_type as describe_type
    from sleeper.core.table import PropertiesStore as PropertiesStore
    from sleeper.core.table import TableIndex as TableIndex
    from sleeper.core.table import TableStatus as TableStatus
    from sleeper.core.table import new_table_id as new_table_id
    from sleeper.core.user_code import user_wheel_keys as user_wheel_keys
    from sleeper.core.websocket import FRAME_MAX_BYTES as FRAME_MAX_BYTES
    from sleeper.core.websocket import IDLE_TIMEOUT_SECONDS as IDLE_TIMEOUT_SECONDS
    from sleeper.core.websocket import MESSAGE_MAX_BYTES as MESSAGE_MAX_BYTES
    from sleeper.core.websocket import STAGE as STAGE
    from sleeper.core.websocket import ConnectionGoneError as ConnectionGoneError
    from sleeper.core.websocket import WebSocketPostError as WebSocketPostError
    from sleeper.core.websocket import WebSocketTarget as WebSocketTarget
    from sleeper.core.websocket import management_endpoint as management_endpoint
    from sleeper.core.words import counted as counted

__all__ = [
    "lazy_face",
    "And",
    "BULK_EXPORT_CONTAINER_NAME",
    "BULK_EXPORT_IMAGE",
    "BULK_EXPORT_Q",
    "BULK_IMPORT_EKS",
    "BULK_IMPORT_IMAGE",
    "BULK_IMPORT_JOB_Q",
    "BULK_IMPORT_PERSISTENT_EMR_Q",
    "Between",
    "COMPACTION_COMMIT_Q",
    "COMPACTION_CONTAINER_NAME",
    "COMPACTION_IMAGE",
    "COMPACTION_JOB_CREATION_Q",
    "COMPACTION_JOB_Q",
    "CRASH_POINTS",
    "Clock",
    "ColumnStats",
    "Compare",
    "ConnectionGoneError",
    "ContainerSpec",
    "CrashAction",
    "DEDUPLICATION_WINDOW_SECONDS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DISTRIBUTION",
    "FIELDS",
    "FIND_PARTITIONS_TO_SPLIT_Q",
    "FRAME_MAX_BYTES",
    "Field",
    "FieldType",
    "Filter",
    "FilterError",
    "GC_JOB_Q",
    "HOLDS_DIRECTORY",
    "HandlerSpec",
    "Hold",
    "HoldFormatError",
    "IDLE_TIMEOUT_SECONDS",
    "INGEST_BATCHER_SUBMIT_Q",
    "INGEST_CONTAINER_NAME",
    "INGEST_IMAGE",
    "INGEST_JOB_Q",
    "INGEST_STAGING_PREFIX",
    "INT_MAX",
    "INT_MIN",
    "IcebergIdentifier",
    "IdSupplier",
    "InList",
    "InstanceAlreadyExistsError",
    "InstanceNames",
    "InstanceNotFoundError",
    "InvalidQueueRequestError",
    "IsNull",
    "JobTrackerTableNames",
    "KeyTypeError",
    "KeyValue",
    "LAMBDA_IMAGE",
    "LEAF_PARTITION_BULK_EXPORT_Q",
    "LEAF_PARTITION_QUERY_Q",
    "LONG_MAX",
    "LONG_MIN",
    "LeafPartitionQuery",
    "Like",
    "ListType",
    "Literal",
    "LogContextFilter",
    "MAX_KEY_REGIONS",
    "MAX_RECEIVE_BATCH",
    "MESSAGE_MAX_BYTES",
    "MapType",
    "Message",
    "MessageTooLargeError",
    "Metric",
    "MetricsSink",
    "MissingExtraError",
    "Not",
    "Or",
    "OutgoingMessage",
    "PARTITION_SPLITTING_JOB_Q",
    "PENDING_COMPACTION_JOB_BATCH_Q",
    "Partition",
    "PartitionTree",
    "PartitionTreeError",
    "PreparedSend",
    "PrimitiveType",
    "PropertiesStore",
    "PropertyError",
    "QUERY_Q",
    "QUERY_RESULTS_Q",
    "Query",
    "QueryProcessingConfig",
    "QuerySerDe",
    "Queue",
    "QueueConfig",
    "QueueCounts",
    "QueueError",
    "QueueNotFoundError",
    "Queues",
    "Range",
    "RangeError",
    "ReceiptHandleError",
    "Region",
    "S3_SCHEMES",
    "SLEEPER_TABLE_ID_KEY",
    "SNAPSHOT_HOLD_KEY",
    "STAGE",
    "STATE_STORE_COMMITTER_Q",
    "Schedule",
    "Schema",
    "SchemaError",
    "SerDeError",
    "SleeperError",
    "StartsWith",
    "StateStoreTableNames",
    "TableAlreadyExistsError",
    "TableIndex",
    "TableIndexTableNames",
    "TableNotFoundError",
    "TableStatus",
    "TimestampType",
    "TriggerKind",
    "ValueType",
    "VisibilityLimitError",
    "WebSocketPostError",
    "WebSocketTarget",
    "arm",
    "batcher_store_table_name",
    "check_receive",
    "check_safe_id",
    "check_safe_path",
    "check_visibility_change",
    "check_visibility_timeout",
    "columns_of",
    "config_bucket_name",
    "conjoin",
    "counted",
    "crash_point",
    "current_log_context",
    "dead_letter_queue_name",
    "describe_type",
    "exit_process",
    "fields_of_message",
    "filter_of",
    "function_name",
    "hold_id_of",
    "hold_location",
    "holds_location",
    "iceberg_location",
    "install_command",
    "is_s3_path",
    "join_under",
    "key_regions",
    "like",
    "local_dead_letter_queue_name",
    "local_queues",
    "local_schedules",
    "log_context",
    "management_endpoint",
    "may_match",
    "metrics_published_to",
    "missing_extra",
    "new_table_id",
    "next_value",
    "normalise_s3_path",
    "parse_filter",
    "parse_iceberg_name",
    "partitions_from_split_points",
    "pending_deletes_from",
    "prepare_send",
    "publish_metrics",
    "query_tracker_table_name",
    "queue_name",
    "random_id",
    "read_split_points",
    "references_outside_tree_message",
    "split_partition",
    "split_s3_path",
    "task_tracker_table_name",
    "use_metrics_sink",
    "user_wheel_keys",
    "write_split_points",
]

__getattr__, __dir__ = lazy_face(__name__, __file__)
