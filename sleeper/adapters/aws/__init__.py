"""AWS adapters: the only place boto3 is imported."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.adapters.aws.batcher_store import DynamoDBIngestBatcherStore as DynamoDBIngestBatcherStore
    from sleeper.adapters.aws.batcher_store import create_batcher_store_table as create_batcher_store_table
    from sleeper.adapters.aws.clients import ENDPOINT_ENV as ENDPOINT_ENV
    from sleeper.adapters.aws.clients import AwsConfigurationError as AwsConfigurationError
    from sleeper.adapters.aws.clients import AwsSettings as AwsSettings
    from sleeper.adapters.aws.clients import _untyped_client as _untyped_client
    from sleeper.adapters.aws.clients import dynamodb_client as dynamodb_client
    from sleeper.adapters.aws.clients import sts_client as sts_client
    from sleeper.adapters.aws.dynamodb_query_tracker import DynamoDBQueryTracker as DynamoDBQueryTracker
    from sleeper.adapters.aws.dynamodb_state_store import DynamoDBStateStoreBackend as DynamoDBStateStoreBackend
    from sleeper.adapters.aws.dynamodb_stream import StreamRecordError as StreamRecordError
    from sleeper.adapters.aws.dynamodb_stream import TransactionStreamRecord as TransactionStreamRecord
    from sleeper.adapters.aws.dynamodb_stream import transaction_stream_records as transaction_stream_records
    from sleeper.adapters.aws.dynamodb_table_index import DynamoDBTableIndex as DynamoDBTableIndex
    from sleeper.adapters.aws.dynamodb_trackers import DynamoDBCompactionJobTracker as DynamoDBCompactionJobTracker
    from sleeper.adapters.aws.dynamodb_trackers import DynamoDBIngestJobTracker as DynamoDBIngestJobTracker
    from sleeper.adapters.aws.dynamodb_trackers import DynamoDBTaskTracker as DynamoDBTaskTracker
    from sleeper.adapters.aws.emf import emf_line as emf_line
    from sleeper.adapters.aws.emf import emf_metrics_sink as emf_metrics_sink
    from sleeper.adapters.aws.emf import emf_record as emf_record
    from sleeper.adapters.aws.event_rules import EventBridgeRules as EventBridgeRules
    from sleeper.adapters.aws.event_rules import caller_account as caller_account
    from sleeper.adapters.aws.exceptions import AwsError as AwsError
    from sleeper.adapters.aws.exceptions import AwsResourceNotFoundError as AwsResourceNotFoundError
    from sleeper.adapters.aws.exceptions import AwsThrottledError as AwsThrottledError
    from sleeper.adapters.aws.exceptions import translate as translate
    from sleeper.adapters.aws.exceptions import translated as translated
    from sleeper.adapters.aws.instance_clients import AwsClients as AwsClients
    from sleeper.adapters.aws.properties import S3PropertiesStore as S3PropertiesStore
    from sleeper.adapters.aws.resources import create_bucket as create_bucket
    from sleeper.adapters.aws.resources import create_job_tracker_tables as create_job_tracker_tables
    from sleeper.adapters.aws.resources import create_query_tracker_table as create_query_tracker_table
    from sleeper.adapters.aws.resources import create_queue as create_queue
    from sleeper.adapters.aws.resources import create_state_store_tables as create_state_store_tables
    from sleeper.adapters.aws.resources import create_table_index_tables as create_table_index_tables
    from sleeper.adapters.aws.resources import create_task_tracker_table as create_task_tracker_table
    from sleeper.adapters.aws.resources import queue_arn as queue_arn
    from sleeper.adapters.aws.s3_log import S3StateStoreBackend as S3StateStoreBackend
    from sleeper.adapters.aws.s3_objects import get_bytes as get_bytes
    from sleeper.adapters.aws.s3_objects import list_keys as list_keys
    from sleeper.adapters.aws.s3_objects import put_bytes as put_bytes
    from sleeper.adapters.aws.s3_objects import upload_file as upload_file
    from sleeper.adapters.aws.s3_publish import copy_if_absent as copy_if_absent
    from sleeper.adapters.aws.sigv4 import SigningKey as SigningKey
    from sleeper.adapters.aws.sigv4 import SigV4Error as SigV4Error
    from sleeper.adapters.aws.sigv4 import check_signature as check_signature
    from sleeper.adapters.aws.sigv4 import sign_connect as sign_connect
    from sleeper.adapters.aws.sqs_queue import SqsQueue as SqsQueue
    from sleeper.adapters.aws.websocket_api import ApiGatewayWebSocketPoster as ApiGatewayWebSocketPoster


__getattr__, __dir__ = lazy_face(__name__, __file__)
