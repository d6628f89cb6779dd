"""The AWS instance: the composition root of the Lambdas and containers.

Everything starts from the config bucket, as in Sleeper. A Lambda or container gets ``CONFIG_BUCKET`` (or the
instance id in ``SLEEPER_INSTANCE_ID`` with the account in ``SLEEPER_ACCOUNT``, from which the bucket name is derived
as Sleeper's client derives it), the region in ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``) and, for an emulator,
``AWS_ENDPOINT_URL``. Elsewhere (the CLI, a notebook) the region and endpoint may instead come from the profile
(``AWS_PROFILE``, else ``default``) in the shared config file, and the credentials from boto3's chain, as the AWS CLI
finds them (:meth:`AwsSettings.from_environment <sleeper.adapters.aws.clients.AwsSettings.from_environment>`).
:class:`AwsInstance` loads ``instance.properties`` from the bucket on first use and finds
everything else through it: the DynamoDB tables of the table index, state store and trackers, the queue URLs, the
data and query results buckets. Tables come from the table index with their properties from
``tables/table-<id>.properties``; each has a transaction-log state store over DynamoDB and S3.

pyarrow's S3 client ignores ``AWS_ENDPOINT_URL``, so :attr:`AwsInstance.filesystem_options` carries the endpoint
explicitly to every reader and writer of data files.

:func:`sleeper.emulator.provision.provision_instance` creates an instance's buckets, tables and queues on an
emulator (a moto server) with the names the CDK stacks give them, and writes its instance properties, so the same
handlers run against it.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING

from pyarrow import fs as pafs

from sleeper.adapters.aws import (
    ENDPOINT_ENV,
    ApiGatewayWebSocketPoster,
    AwsClients,
    AwsConfigurationError,
    AwsSettings,
    DynamoDBCompactionJobTracker,
    DynamoDBIngestBatcherStore,
    DynamoDBIngestJobTracker,
    DynamoDBQueryTracker,
    DynamoDBStateStoreBackend,
    DynamoDBTableIndex,
    DynamoDBTaskTracker,
    S3PropertiesStore,
    S3StateStoreBackend,
    SqsQueue,
    copy_if_absent,
    emf_line,
    emf_record,
    sts_client,
)
from sleeper.adapters.aws.launchers import (
    EksPlatform,
    EmrPlatform,
    EmrServerlessPlatform,
    PersistentEmrPlatform,
    bulk_import_job_store,
    persistent_emr_requeue,
)
from sleeper.api import Table, has_dynamodb_transaction_log
from sleeper.bulk_import import BulkImportLaunch, BulkImportPlatform, BulkImportRequeue
from sleeper.core import (
    OutgoingMessage,
    Query,
    QuerySerDe,
    QueueConfig,
    QueueNotFoundError,
    Schema,
    SleeperError,
    StateStoreTableNames,
    TableIndexTableNames,
    TableStatus,
    config_bucket_name,
    dead_letter_queue_name,
    operations,
    query_tracker_table_name,
    queue_name,
)
from sleeper.core.jobs import JobWorkspace
from sleeper.core.properties import (
    COMPACTION_JOB_STATUS_TTL_IN_SECONDS,
    COMPACTION_TASK_STATUS_TTL_IN_SECONDS,
    INGEST_JOB_STATUS_TTL_IN_SECONDS,
    INGEST_SOURCE_BUCKET,
    INGEST_TASK_STATUS_TTL_IN_SECONDS,
    METRICS_NAMESPACE,
    QUERY_TRACKER_ITEM_TTL_IN_DAYS,
    S3_TRANSACTION_LOG_STATE_STORE,
    STATESTORE_CLASSNAME,
    STATESTORE_PROVIDER_CACHE_SIZE,
    TABLE_INDEX_DYNAMO_STRONGLY_CONSISTENT_READS,
    InstanceProperties,
    PropertyDefinition,
    TableProperties,
    state_store_class,
)
from sleeper.core.properties import instance_cdk as cdk
from sleeper.ingest import IngestSources
from sleeper.ingest.batcher import INGEST_QUEUE_NAMES
from sleeper.io import FileSystemOptions, S3Options, s3_filesystem
from sleeper.runtime.tables import InstanceTables
from sleeper.statestore import StateStore, StateStoreSettings, TableMetrics

__all__ = [
    "ACCOUNT_ENV",
    "CONFIG_BUCKET_ENV",
    "ENDPOINT_ENV",
    "HANDLER_ENV",
    "INSTANCE_ID_ENV",
    "AwsInstance",
    "AwsRuntimeConfig",
    "AwsRuntimeConfigError",
    "print_line",
    "queue_url_properties",
]

CONFIG_BUCKET_ENV = "CONFIG_BUCKET"
"""The config bucket, as every Sleeper Lambda and container gets it."""
INSTANCE_ID_ENV = "SLEEPER_INSTANCE_ID"
"""The instance id (used with ``SLEEPER_ACCOUNT`` when ``CONFIG_BUCKET`` is not set)."""
ACCOUNT_ENV = "SLEEPER_ACCOUNT"
"""The AWS account of the instance (only to derive the config bucket name)."""
HANDLER_ENV = "SLEEPER_HANDLER"
"""The handler (``module:function``) the Lambda image runs."""


def queue_url_properties() -> dict[str, str]:
    """The instance property holding the URL of each queue, by Sleeper's logical queue name, as the registry of
    operations says now."""
    return {spec.name: spec.url_property for spec in operations.aws_queues() if spec.url_property is not None}


class AwsRuntimeConfigError(SleeperError):
    """The environment does not say where the instance is, or the AWS configuration names no region."""


def _settings(env: Mapping[str, str]) -> AwsSettings:
    try:
        return AwsSettings.from_environment(env, process_environ=os.environ)
    except AwsConfigurationError as e:
        raise AwsRuntimeConfigError(str(e)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsRuntimeConfig:
    """Where an AWS instance is.

    Attributes:
        config_bucket: The config bucket holding ``instance.properties``.
        settings: How to reach AWS (region, emulator endpoint, explicit credentials).
    """

    config_bucket: str
    settings: AwsSettings

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> AwsRuntimeConfig:
        """Reads the configuration from environment variables, and the region from the shared AWS configuration
        when no variable names it (see the module docs).

        Raises:
            AwsRuntimeConfigError: If the config bucket or the region cannot be worked out.
        """
        env = os.environ if environ is None else environ
        settings = _settings(env)
        bucket = env.get(CONFIG_BUCKET_ENV)
        if not bucket:
            instance_id, account = env.get(INSTANCE_ID_ENV), env.get(ACCOUNT_ENV)
            if not instance_id or not account:
                raise AwsRuntimeConfigError(
                    f"set {CONFIG_BUCKET_ENV}, or {INSTANCE_ID_ENV} and {ACCOUNT_ENV}, to find the instance"
                )
            bucket = config_bucket_name(instance_id, account)
        return cls(config_bucket=bucket, settings=settings)

    @classmethod
    def for_instance_id(cls, instance_id: str, environ: Mapping[str, str] | None = None) -> AwsRuntimeConfig:
        """Where the instance with an id is: its config bucket ``sleeper-<id>-config-<account>``, with the account
        from ``SLEEPER_ACCOUNT`` or else from the credentials (STS), and the region and endpoint as boto3 finds them
        (the environment, else the profile in the shared config file: :meth:`AwsSettings.from_environment
        <sleeper.adapters.aws.clients.AwsSettings.from_environment>`).

        Raises:
            AwsRuntimeConfigError: If no region is configured, or the profile named does not exist.
            AwsError: If the account has to be, and cannot be, read from STS.
        """
        from sleeper.adapters.aws import caller_account

        env = os.environ if environ is None else environ
        settings = _settings(env)
        account = env.get(ACCOUNT_ENV) or caller_account(sts_client(settings))
        return cls(config_bucket=config_bucket_name(instance_id, account), settings=settings)

    @property
    def filesystem_options(self) -> FileSystemOptions:
        """How pyarrow reaches S3: the same region, endpoint and credentials as the boto3 clients; compaction outputs
        are published with S3's conditional copy (``If-None-Match: *``, :mod:`sleeper.adapters.aws.s3_publish`)."""
        return FileSystemOptions(
            s3=S3Options(
                region=self.settings.region,
                endpoint_override=self.settings.endpoint_url,
                access_key=self.settings.access_key_id,
                secret_key=self.settings.secret_access_key,
            ),
            s3_copy_if_absent=copy_if_absent,
        )


@dataclass(slots=True)
class _Cached:
    table: Table[AwsInstance]
    loaded_at: float


class AwsInstance(InstanceTables):
    """A Sleeper instance deployed on AWS (or an emulator), found through its config bucket.

    Nothing is read until first used, so a Lambda can build one at import time. It owns the one
    :class:`~sleeper.adapters.aws.instance_clients.AwsClients` every AWS path of the instance takes its clients from
    (:attr:`clients`).

    Args:
        config: Where the instance is.
        table_cache_seconds: How long a table (its properties and loaded state store) is reused before its
            properties are read again; Sleeper's own cache lasts 60 s.
    """

    def __init__(self, config: AwsRuntimeConfig, *, table_cache_seconds: float = 60.0) -> None:
        self.config = config
        self.clients = AwsClients(config.settings)
        """The instance's boto3 clients, each built on first use and shared by everything that reaches AWS for it."""
        self._table_cache_seconds = table_cache_seconds
        self._tables: dict[str, _Cached] = {}

    def __repr__(self) -> str:
        return f"AwsInstance(config_bucket={self.config.config_bucket!r})"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> AwsInstance:
        """The instance the environment names (see the module docs).

        Raises:
            AwsRuntimeConfigError: If the environment does not say where the instance is.
        """
        return cls(AwsRuntimeConfig.from_environment(environ))

    # --- clients and properties ----------------------------------------------------------------------------------
    @cached_property
    def properties_store(self) -> S3PropertiesStore:
        """The config bucket's properties objects."""
        return S3PropertiesStore(self.clients.s3, self.config.config_bucket)

    @cached_property
    def properties(self) -> InstanceProperties:
        """The instance properties, loaded from the config bucket on first use."""
        return InstanceProperties(self.properties_store.load_instance())

    def reload(self) -> None:
        """Forgets the loaded properties and tables, so the next use reads them again."""
        self.__dict__.pop("properties", None)
        self._tables.clear()

    def _required(self, name: str) -> str:
        value = self.properties.get(name)
        if not value:
            raise AwsRuntimeConfigError(f"instance property {name} is not set in s3://{self.config.config_bucket}")
        return value

    @property
    def instance_id(self) -> str:
        """The instance id (``sleeper.id``)."""
        return self._required("sleeper.id")

    @property
    def data_bucket(self) -> str:
        """The data bucket (``sleeper.data.bucket``)."""
        return self._required(cdk.DATA_BUCKET.name)

    @property
    def filesystem_options(self) -> FileSystemOptions:
        """How pyarrow reaches S3 (pass these to every reader and writer of data files)."""
        return self.config.filesystem_options

    @cached_property
    def ingest_sources(self) -> IngestSources:
        """Where ingest jobs may read: the data bucket outside the tables' prefixes, and the buckets of
        ``sleeper.ingest.source.bucket`` (:mod:`sleeper.ingest.sources`)."""
        return IngestSources.for_aws_instance(self.data_bucket, self.properties.get_list(INGEST_SOURCE_BUCKET))

    @property
    def ingests_in_process(self) -> bool:
        """Always False: ``Table.ingest`` sends the rows as an ingest job for the instance's ingest tasks, as Sleeper's
        client does."""
        return False

    def job_workspace(self) -> AbstractContextManager[JobWorkspace]:
        """Where a job runs outside a task (a Lambda): no task, the system's temporary directory. A container task
        gives its jobs its own workspace."""
        return nullcontext(JobWorkspace())

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow S3 filesystem (paths are ``bucket/key``)."""
        return s3_filesystem(self.filesystem_options.s3)

    def data_uri(self, table_id: str) -> str:
        """The URI of a table's data prefix: ``s3a://<data bucket>/<table id>``."""
        return f"s3a://{self.data_bucket}/{table_id}"

    @property
    def data_root(self) -> str:
        """The URI every table's data prefix is under: ``s3a://<data bucket>``."""
        return f"s3a://{self.data_bucket}"

    @property
    def query_results_uri(self) -> str:
        """Where queries write their results by default: ``s3a://<query results bucket>``."""
        return f"s3a://{self._required(cdk.QUERY_RESULTS_BUCKET.name)}"

    @property
    def bulk_export_uri(self) -> str:
        """Where bulk exports are written: ``s3a://<bulk export bucket>``.

        Raises:
            PropertyError: If no bulk export bucket is recorded (no bulk export stack deployed).
        """
        return f"s3a://{self._required(cdk.BULK_EXPORT_S3_BUCKET.name)}"

    @property
    def query_results_queue(self) -> SqsQueue | None:
        """The queue queries asking for results on SQS get them on: the one a deployment records the URL of, else
        None."""
        has_queue = bool(self.properties.get(queue_url_properties()[operations.QUERY_RESULTS_Q]))
        return self.queue(operations.QUERY_RESULTS_Q) if has_queue else None

    @cached_property
    def websocket_poster(self) -> ApiGatewayWebSocketPoster:
        """Posts query results and status to WebSocket connections through API Gateway's management API."""
        return ApiGatewayWebSocketPoster(self.config.settings)

    # --- tables --------------------------------------------------------------------------------------------------
    @cached_property
    def table_index(self) -> DynamoDBTableIndex:
        """The table index, in the DynamoDB tables the instance properties name."""
        default = TableIndexTableNames.for_instance(self.instance_id)
        names = TableIndexTableNames(
            by_name=self.properties.get(cdk.TABLE_NAME_INDEX_DYNAMO_TABLENAME.name) or default.by_name,
            by_id=self.properties.get(cdk.TABLE_ID_INDEX_DYNAMO_TABLENAME.name) or default.by_id,
            by_online=self.properties.get(cdk.TABLE_ONLINE_INDEX_DYNAMO_TABLENAME.name) or default.by_online,
        )
        consistent = self.properties.get_bool(TABLE_INDEX_DYNAMO_STRONGLY_CONSISTENT_READS)
        return DynamoDBTableIndex(self.clients.dynamodb, names, consistent_reads=consistent)

    @cached_property
    def state_store_backend(self) -> DynamoDBStateStoreBackend:
        """The transaction-log state store of every table: DynamoDB logs and snapshot records, S3 bodies."""
        default = StateStoreTableNames.for_instance(self.instance_id)
        props = self.properties
        names = StateStoreTableNames(
            files_log=props.get(cdk.TRANSACTION_LOG_FILES_TABLENAME.name) or default.files_log,
            partitions_log=props.get(cdk.TRANSACTION_LOG_PARTITIONS_TABLENAME.name) or default.partitions_log,
            latest_snapshots=props.get(cdk.TRANSACTION_LOG_LATEST_SNAPSHOTS_TABLENAME.name) or default.latest_snapshots,
            all_snapshots=props.get(cdk.TRANSACTION_LOG_ALL_SNAPSHOTS_TABLENAME.name) or default.all_snapshots,
        )
        return DynamoDBStateStoreBackend(
            self.clients.dynamodb, self.clients.s3, table_names=names, data_bucket=self.data_bucket
        )

    @cached_property
    def object_log_backend(self) -> S3StateStoreBackend:
        """The state store of tables whose ``sleeper.table.statestore.classname`` is ``S3TransactionLogStateStore``:
        logs and snapshot records as objects in the data bucket, appended with conditional writes (no DynamoDB)."""
        return S3StateStoreBackend(self.clients.s3, self.data_bucket)

    def is_table_deleted(self, table_id: str) -> bool:
        """Whether a state store of the instance marks this table id deleted (for the sweep of deleted tables): the
        S3 object logs, and the DynamoDB logs when the instance has them (:func:`has_dynamodb_transaction_log`)."""
        if self.object_log_backend.is_deleted(table_id):
            return True
        return has_dynamodb_transaction_log(self.properties) and self.state_store_backend.is_deleted(table_id)

    def table_by_id(self, table_id: str) -> Table[AwsInstance]:
        """A table by id.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        cached = self._tables.get(table_id)
        if cached is not None and time.monotonic() - cached.loaded_at < self._table_cache_seconds:
            return cached.table
        return self._table(self.table_index.get_by_id(table_id))

    def _table(self, status: TableStatus) -> Table[AwsInstance]:
        properties = TableProperties(self.properties, self.properties_store.load_table(status.table_id))
        cached = self._tables.get(status.table_id)
        settings = StateStoreSettings.from_properties(properties)
        if (
            cached is not None
            and cached.table.schema == properties.schema
            and cached.table.state_store.settings == settings
        ):
            store = cached.table.state_store  # keep the loaded state: the next read only fetches new transactions
        else:
            store = StateStore(
                schema=properties.schema,
                table_id=status.table_id,
                backend=self.object_log_backend
                if state_store_class(properties.get(STATESTORE_CLASSNAME)) == S3_TRANSACTION_LOG_STATE_STORE
                else self.state_store_backend,
                filesystem=self.filesystem,
                snapshot_base_path=f"{self.data_bucket}/{status.table_id}",
                snapshot_uri_scheme="s3a://",
                settings=settings,
                clock=lambda: datetime.now(tz=UTC),
                data_prefix=self.data_uri(status.table_id),
            )
        table = Table(instance=self, status=status, properties=properties, state_store=store)
        self._tables.pop(status.table_id, None)  # re-inserted last: the cache drops the tables used longest ago
        self._tables[status.table_id] = _Cached(table=table, loaded_at=time.monotonic())
        limit = self.properties.get_int(STATESTORE_PROVIDER_CACHE_SIZE)
        while 0 <= limit < len(self._tables):
            del self._tables[next(iter(self._tables))]
        return table

    # --- queues --------------------------------------------------------------------------------------------------
    def queue(self, logical_name: str) -> SqsQueue:
        """A queue by Sleeper's logical name (e.g. ``IngestJobQ``): its URL from the instance properties, or found
        by its SQS name ``sleeper-<id>-<logical name>``. Nothing is created.

        Raises:
            QueueNotFoundError: If the queue has no URL property and no queue has its name.
        """
        prop = queue_url_properties().get(logical_name)
        url = self.properties.get(prop) if prop is not None else None
        name = queue_name(self.instance_id, logical_name)
        if not url:
            url = self._queue_url(name)
        return SqsQueue(self.clients.sqs, url, QueueConfig(name=name, fifo=logical_name.endswith(".fifo")))

    def dead_letter_queue(self, logical_name: str) -> SqsQueue:
        """The dead-letter queue of a queue named by its logical name.

        Raises:
            QueueNotFoundError: If there is no such queue.
        """
        name = dead_letter_queue_name(self.instance_id, logical_name)
        return SqsQueue(self.clients.sqs, self._queue_url(name), QueueConfig(name=name, fifo=name.endswith(".fifo")))

    def _queue_url(self, name: str) -> str:
        url = self.clients.queue_url(name)
        if url is None:
            raise QueueNotFoundError(f"no queue {name} (and no URL in the instance properties)")
        return url

    def send_per_table(self, logical_name: str, *, include_offline: bool = False) -> int:
        """Sends one message per online table to a FIFO queue, as Sleeper's scheduled triggers do: body and
        message group = the table id, a random deduplication id, in batches of 10.

        Args:
            logical_name: The queue's logical name.
            include_offline: Send for offline tables too.

        Returns:
            How many messages were sent.
        """
        statuses = self.tables() if include_offline else self.online_tables()
        messages = [OutgoingMessage(body=t.table_id, group_id=t.table_id, dedup_id=str(uuid.uuid4())) for t in statuses]
        if messages:
            self.queue(logical_name).send_batch(messages)
        return len(messages)

    # --- trackers ------------------------------------------------------------------------------------------------
    def _seconds(self, prop: PropertyDefinition) -> timedelta:
        return timedelta(seconds=self.properties.get_int(prop))

    @cached_property
    def ingest_job_tracker(self) -> DynamoDBIngestJobTracker:
        """The ingest job tracker, keeping updates for ``sleeper.ingest.job.status.ttl``."""
        ttl = self._seconds(INGEST_JOB_STATUS_TTL_IN_SECONDS)
        return DynamoDBIngestJobTracker.for_instance(self.clients.dynamodb, self.instance_id, ttl=ttl)

    @cached_property
    def compaction_job_tracker(self) -> DynamoDBCompactionJobTracker:
        """The compaction job tracker, keeping updates for ``sleeper.compaction.job.status.ttl``."""
        ttl = self._seconds(COMPACTION_JOB_STATUS_TTL_IN_SECONDS)
        return DynamoDBCompactionJobTracker.for_instance(self.clients.dynamodb, self.instance_id, ttl=ttl)

    @cached_property
    def ingest_task_tracker(self) -> DynamoDBTaskTracker:
        """The ingest task tracker, keeping updates for ``sleeper.ingest.task.status.ttl``."""
        ttl = self._seconds(INGEST_TASK_STATUS_TTL_IN_SECONDS)
        return DynamoDBTaskTracker.for_instance(self.clients.dynamodb, self.instance_id, "ingest", ttl=ttl)

    @cached_property
    def compaction_task_tracker(self) -> DynamoDBTaskTracker:
        """The compaction task tracker, keeping updates for ``sleeper.compaction.task.status.ttl``."""
        ttl = self._seconds(COMPACTION_TASK_STATUS_TTL_IN_SECONDS)
        return DynamoDBTaskTracker.for_instance(self.clients.dynamodb, self.instance_id, "compaction", ttl=ttl)

    def run_queued_query(self, query: Query, schema: Schema) -> None:
        """Sends a query to the query queue; the deployed functions run it (follow it in the query tracker)."""
        self.queue(operations.QUERY_Q).send(QuerySerDe.for_schema(schema).to_json(query))

    @cached_property
    def query_tracker(self) -> DynamoDBQueryTracker:
        """The query tracker, in the table ``sleeper.query.tracker.table.name`` names, keeping a query's status for
        ``sleeper.query.tracker.ttl.days`` after its last update."""
        name = self.properties.get(cdk.QUERY_TRACKER_TABLE_NAME.name) or query_tracker_table_name(self.instance_id)
        ttl = timedelta(days=self.properties.get_int(QUERY_TRACKER_ITEM_TTL_IN_DAYS))
        return DynamoDBQueryTracker(self.clients.dynamodb, name, ttl=ttl)

    # --- what the feature entries need of an AWS instance (the ingest batcher, bulk import, table metrics) ---

    @cached_property
    def batcher_store(self) -> DynamoDBIngestBatcherStore:
        """The ingest batcher's DynamoDB store (``sleeper-<id>-ingest-batcher-store``)."""
        return DynamoDBIngestBatcherStore.for_instance(self.clients.dynamodb, self.instance_id)

    @property
    def accepts_local_files(self) -> bool:
        """Always False: requests and jobs must name files on S3, which the instance's tasks can reach."""
        return False

    @property
    def batcher_queue_names(self) -> Mapping[str, str]:
        """The queue each ``sleeper.table.ingest.batcher.ingest.queue`` value sends jobs to, as Sleeper names them."""
        return INGEST_QUEUE_NAMES

    def delete_expired_batcher_records(self, now: datetime) -> None:
        """Nothing: the batcher store table's time to live removes expired records."""

    def publish_table_metrics(self, metrics: TableMetrics, *, now: datetime | None = None) -> None:
        """Writes a table's metrics as one CloudWatch embedded metric format line to standard output (the function's
        log stream, where CloudWatch publishes them), with dimensions ``instanceId`` and ``tableName`` in the
        namespace ``sleeper.cloudwatch.table.metrics.namespace``."""
        record = emf_record(
            namespace=self.properties.get(METRICS_NAMESPACE) or "Sleeper",
            dimensions={"instanceId": metrics.instance_id, "tableName": metrics.table_name},
            metrics=metrics.values(),
            timestamp=now or datetime.now(tz=UTC),
        )
        print_line(emf_line(record))

    def bulk_import_platform(self, queue_name: str) -> tuple[BulkImportPlatform, BulkImportRequeue | None]:
        """The platform that starts the jobs of a bulk import queue (EMR Serverless, an EMR cluster per job, the
        persistent EMR cluster, or the EKS cluster's state machine), and where its jobs go back when it is full (the
        persistent cluster's queue).

        Raises:
            ValueError: If the queue is not a bulk import queue.
            PropertyError: If the platform's resources are not set (its stack is not deployed).
        """
        clients, props = self.clients, self.properties
        if queue_name == operations.BULK_IMPORT_EMR_SERVERLESS_Q:
            return EmrServerlessPlatform(clients.emr_serverless, props), None
        if queue_name == operations.BULK_IMPORT_EMR_Q:
            return EmrPlatform(clients.emr, props), None
        if queue_name == operations.BULK_IMPORT_PERSISTENT_EMR_Q:
            return PersistentEmrPlatform(clients.emr, props), persistent_emr_requeue(clients.sqs, props)
        if queue_name == operations.BULK_IMPORT_EKS_Q:
            return EksPlatform(clients.stepfunctions, props), None
        raise ValueError(f"{queue_name} is not a bulk import queue")

    def bulk_import_launch(self, queue_name: str) -> BulkImportLaunch:
        """Where the jobs of a bulk import queue start (:meth:`bulk_import_platform`), each job file written to the
        bulk import bucket for the Spark driver.

        Raises:
            ValueError: If the queue is not a bulk import queue.
            PropertyError: If the platform's resources or the bulk import bucket are not set.
        """
        platform, requeue = self.bulk_import_platform(queue_name)
        return BulkImportLaunch(
            platform=platform, job_store=bulk_import_job_store(self.clients.s3, self.properties), requeue=requeue
        )


def print_line(line: str) -> None:
    """Writes a line to standard output as it is: in a Lambda it becomes one log event of its own, so CloudWatch
    finds an EMF record in it (a line through the logging module gets the runtime's prefix, which EMF does not
    parse)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if TYPE_CHECKING:
    from sleeper.api import TableInstance
    from sleeper.bulk_import import BulkImportStartRuntime
    from sleeper.ingest import IngestRuntime
    from sleeper.query import QueryableTable, WebSocketRuntime
    from sleeper.statestore import MetricsRuntime, SleeperRuntime, SleeperTable

    def _conforms_to_the_feature_ports(instance: AwsInstance, table: Table[AwsInstance]) -> None:
        """Checked by mypy: the AWS instance and its tables fit the shared ports and the features' own."""
        runtime: SleeperRuntime = instance
        ingest: IngestRuntime = instance
        table_instance: TableInstance = instance
        bulk_import_start: BulkImportStartRuntime = instance
        websocket: WebSocketRuntime = instance
        metrics: MetricsRuntime = instance
        sleeper_table: SleeperTable = table
        queryable: QueryableTable = table
        del runtime, ingest, table_instance, bulk_import_start, websocket, metrics, sleeper_table, queryable
