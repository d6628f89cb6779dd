"""Sleeper's Python client on this package: :class:`SleeperClient`, with the constructor and methods of
``sleeper.client.SleeperClient`` in gchq/sleeper (``python/src/sleeper/client.py``), the same arguments and the same
return shapes, over the AWS runtime (:class:`~sleeper.runtime.aws.instance.AwsInstance`).

What it sends is what Sleeper's client sends: rows written as Parquet to ``<data bucket>/for_ingest/<job id>.parquet``
and an ingest job naming them on the ingest job queue; ingest and bulk import jobs and batcher requests in Sleeper's
JSON on their queues, as are bulk exports; queries on the query queue, with the results read from the query results
bucket once the query tracker says the query completed. So it works on a deployed instance or on the emulated one
(``AWS_ENDPOINT_URL``), wherever the instance's queues are served. The WebSocket query methods connect to the
instance's WebSocket API (deployed by ``WebSocketQueryStack``, served by the emulated instance), signed with SigV4.

Where it is stricter than Sleeper's client, it refuses before sending anything: the table must exist; rows are
converted to the table's own column types (so ``IntType`` fields can be written) and a field the table lacks is
refused; job ids, files and queries are checked with the same readers the instance's handlers use.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import pyarrow as pa

from sleeper.adapters.aws import put_bytes, upload_file
from sleeper.api import STAGING_PREFIX, Table
from sleeper.bulk_export import BulkExportQuery as ExportModel
from sleeper.bulk_export import read_bulk_export_query
from sleeper.client.connect import dynamodb_client_like, low_level_client, open_instance
from sleeper.client.errors import ClientArgumentError
from sleeper.client.query import BulkExportQuery, Query, Region
from sleeper.client.results import DEFAULT_MAX_WAIT_TIME, read_results, sorted_rows, wait_for_query
from sleeper.client.rows import ParquetSpool, parquet_bytes, rows_to_batch
from sleeper.client.websocket import query_over_websocket
from sleeper.core import QuerySerDe, check_safe_id, operations
from sleeper.core.jobs import BulkImportJob, IngestJob
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.ingest.batcher import SubmitRequest, parse_submit_request
from sleeper.io import arrow_schema
from sleeper.runtime.aws import AwsInstance

__all__ = ["BULK_IMPORT_PLATFORMS", "DEFAULT_MAX_WAIT_TIME", "BatchWriter", "SleeperClient"]

_LOG = logging.getLogger(__name__)

BULK_IMPORT_PLATFORMS: dict[str, str] = {
    "EMRServerless": operations.BULK_IMPORT_EMR_SERVERLESS_Q,
    "EMR": operations.BULK_IMPORT_EMR_Q,
    "PersistentEMR": operations.BULK_IMPORT_PERSISTENT_EMR_Q,
    "EKS": operations.BULK_IMPORT_EKS_Q,
}
"""The bulk import platforms Sleeper's client names, and the queue of each."""

FOR_INGEST_PREFIX = f"{STAGING_PREFIX}/"
"""Where in the data bucket the client writes the rows it ingests, as Sleeper's client and ``Table.ingest`` on AWS do.
The client uploads through the S3 client it was given (Sleeper's ``s3_client``) and names the file ``bucket/key`` as
Sleeper's client does, where ``Table.ingest`` (``sleeper.api.ingest_job.send_ingest_job``) writes with pyarrow."""


def _new_id(given: str | None, what: str) -> str:
    if given is None:
        return str(uuid.uuid4())
    if not isinstance(given, str):
        raise ClientArgumentError(f"{what} must be a string, got {given!r}")
    check_safe_id(given, where=what, what=what)
    return given


def _files(files: object) -> list[str]:
    if isinstance(files, str | bytes) or not isinstance(files, Sequence):
        raise ClientArgumentError(f"files must be a list of 'bucket/key' paths, got {files!r}")
    if not files or not all(isinstance(f, str) for f in files):
        raise ClientArgumentError(f"files must be a non-empty list of 'bucket/key' paths, got {files!r}")
    return list(files)


class SleeperClient:
    """A client of a Sleeper instance on AWS (deployed or emulated), found by its id.

    Args:
        instance_id: The instance id.
        use_threads: Whether pyarrow decodes query results with threads.
        account_name: The AWS account of the instance (default: the caller's, from STS).
        s3_client: A boto3 S3 client to upload rows with (and read S3 with when ``s3_resource`` is not given).
        s3_resource: A boto3 S3 resource to read the instance's properties and query results with.
        s3_fs: A filesystem (such as ``s3fs.S3FileSystem``) to open query result files with.
        sqs_resource: A boto3 SQS resource to send messages with.
        dynamo_resource: A boto3 DynamoDB resource: the table index and the query tracker are read on its region and
            endpoint (through a client of its own, with boto3's usual credentials).
        max_wait_seconds: How long a query is waited for (keyword only; Sleeper's client always waits 120 s).

    Raises:
        InstanceNotFoundError: If the instance's config bucket or ``instance.properties`` does not exist.
        AwsRuntimeConfigError: If no AWS region is set.
        AwsError: If AWS refuses or cannot be reached.
    """

    def __init__(
        self,
        instance_id: str,
        use_threads: bool = False,
        account_name: str | None = None,
        s3_client: Any = None,
        s3_resource: Any = None,
        s3_fs: Any = None,
        sqs_resource: Any = None,
        dynamo_resource: Any = None,
        *,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_TIME,
    ) -> None:
        if not isinstance(use_threads, bool):
            raise ClientArgumentError(f"use_threads must be a bool, got {use_threads!r}")
        if isinstance(max_wait_seconds, bool) or not isinstance(max_wait_seconds, int | float) or max_wait_seconds < 0:
            raise ClientArgumentError(f"max_wait_seconds must be a number of seconds >= 0, got {max_wait_seconds!r}")
        if s3_fs is not None and not callable(getattr(s3_fs, "open", None)):
            raise ClientArgumentError("s3_fs must be a filesystem with an open(path, mode) method, such as s3fs's")
        reader = low_level_client(s3_resource) if s3_resource is not None else s3_client
        self.instance: AwsInstance = open_instance(
            instance_id,
            account_name=account_name,
            s3=reader,
            sqs=None if sqs_resource is None else low_level_client(sqs_resource),
            dynamodb=None if dynamo_resource is None else dynamodb_client_like(dynamo_resource),
        )
        """The instance, in this package's AWS runtime."""
        self._uploader = s3_client if s3_client is not None else self.instance.clients.s3
        self._s3_fs = s3_fs
        self._use_threads = use_threads
        self._max_wait_seconds = float(max_wait_seconds)

    @property
    def instance_id(self) -> str:
        """The instance id."""
        return self.instance.instance_id

    def _table(self, table_name: object) -> Table[AwsInstance]:
        if not isinstance(table_name, str) or not table_name:
            raise ClientArgumentError(f"table_name must be a non-empty string, got {table_name!r}")
        return self.instance.table(table_name)

    # --- ingest -------------------------------------------------------------------------------------------------
    def _send_ingest_job(self, job: IngestJob) -> None:
        IngestJob.from_dict(job.to_dict())  # the ingest queue's own checks of its files, before sending
        self.instance.queue(operations.INGEST_JOB_Q).send(job.to_json())
        _LOG.debug("sent ingest job %s for table %s", job.id, job.table_name)

    def write_single_batch(
        self, table_name: str, rows_to_write: list[dict[str, Any]], job_id: str | None = None
    ) -> None:
        """Ingests rows: writes them as one Parquet file to ``<data bucket>/for_ingest/<job id>.parquet`` and sends an
        ingest job for it. The rows are ingested when the instance runs the job.

        Args:
            table_name: The table.
            rows_to_write: The rows, one dict per row keyed by field name.
            job_id: The ingest job id (default: a new UUID).

        Raises:
            ClientArgumentError: If the rows do not suit the table or the job id is invalid; nothing is written.
            TableNotFoundError: If there is no such table.
        """
        job_id = _new_id(job_id, "job_id")
        table = self._table(table_name)
        batch = rows_to_batch(rows_to_write, table.schema, table_name=table.name)
        key = f"{FOR_INGEST_PREFIX}{job_id}.parquet"
        bucket = self.instance.data_bucket
        put_bytes(self._uploader, bucket, key, parquet_bytes(batch))
        _LOG.debug("wrote %d rows to s3://%s/%s", batch.num_rows, bucket, key)
        self._send_ingest_job(IngestJob(id=job_id, table_name=table.name, files=(f"{bucket}/{key}",)))

    def create_batch_writer(self, table_name: str, job_id: str | None = None) -> BatchWriter:
        """A writer for rows given in batches, for use in a ``with`` statement: the rows are spooled to a local
        Parquet file and, when the block ends, uploaded to ``<data bucket>/for_ingest/<job id>.parquet`` and sent as
        one ingest job. If the block raises, nothing is uploaded or sent (Sleeper's client would ingest the rows
        written so far).

        Args:
            table_name: The table.
            job_id: The ingest job id (default: a new UUID).

        Raises:
            ClientArgumentError: If the job id is invalid.
            TableNotFoundError: If there is no such table.
        """
        job_id = _new_id(job_id, "job_id")
        return BatchWriter(self, self._table(table_name), job_id)

    def ingest_parquet_files_from_s3(self, table_name: str, files: list[str], job_id: str | None = None) -> None:
        """Sends an ingest job for Parquet files in S3 (``bucket/key``; a directory stands for the Parquet files
        under it).

        Raises:
            ClientArgumentError: If the files or the job id are invalid.
            MessageError: If a file path is refused by the ingest queue's checks.
            TableNotFoundError: If there is no such table.
        """
        job_id = _new_id(job_id, "job_id")
        table = self._table(table_name)
        self._send_ingest_job(IngestJob(id=job_id, table_name=table.name, files=tuple(_files(files))))

    def bulk_import_parquet_files_from_s3(
        self,
        table_name: str,
        files: list[str],
        id: str | None = None,
        platform: str = "EMRServerless",
        platform_spec: dict[str, str] | None = None,
        class_name: str | None = None,
    ) -> None:
        """Sends a bulk import job for Parquet files in S3 to the queue of a platform.

        Args:
            table_name: The table.
            files: The files or directories (``bucket/key``).
            id: The job id (default: a new UUID); lowercase letters, digits and dashes, at most 63 characters.
            platform: ``"EMRServerless"``, ``"EMR"``, ``"PersistentEMR"`` or ``"EKS"``.
            platform_spec: Platform properties overriding the table's (the job's ``platformSpec``).
            class_name: The Spark driver class to run (the job's ``className``).

        Raises:
            ClientArgumentError: If the platform is unknown or the files are invalid.
            MessageError: If the job is refused by the bulk import queue's checks (such as its id).
            QueueNotFoundError: If the instance has no queue for the platform (its stack is not deployed).
            TableNotFoundError: If there is no such table.
        """
        if platform not in BULK_IMPORT_PLATFORMS:
            raise ClientArgumentError(
                f"Platform must be one of {', '.join(repr(p) for p in BULK_IMPORT_PLATFORMS)}, got {platform!r}"
            )
        if platform_spec is not None and not isinstance(platform_spec, Mapping):
            raise ClientArgumentError(f"platform_spec must be a dict, got {platform_spec!r}")
        job_id = str(uuid.uuid4()) if id is None else id
        table = self._table(table_name)
        job = BulkImportJob(
            id=job_id,
            files=tuple(_files(files)),
            table_name=table.name,
            class_name=class_name,
            platform_spec=platform_spec,
        )
        BulkImportJob.from_dict(job.to_dict())  # the starter's own checks, before sending
        queue = self.instance.queue(BULK_IMPORT_PLATFORMS[platform])
        queue.send(job.to_json())
        _LOG.debug("sent bulk import job %s to %s", job.id, queue.name)

    def submit_to_ingest_batcher(self, table_name: str, files: list[str]) -> None:
        """Submits files to the ingest batcher, which tracks them and ingests them later in batches.

        Raises:
            ClientArgumentError: If the files are invalid.
            InvalidSubmitRequestError: If the request is refused by the batcher's checks.
            TableNotFoundError: If there is no such table.
        """
        table = self._table(table_name)
        body = SubmitRequest(table_name=table.name, files=tuple(_files(files))).to_json()
        parse_submit_request(body)  # the submitter's own checks, before sending
        self.instance.queue(operations.INGEST_BATCHER_SUBMIT_Q).send(body)

    def bulk_export(self, query: BulkExportQuery | ExportModel) -> None:
        """Sends a bulk export of a whole table to the bulk export queue: each leaf partition is written to the bulk
        export bucket as one sorted Parquet file, ``<tableId>/<exportId>/<subExportId>.parquet``.

        Args:
            query: The export (:class:`sleeper.client.query.BulkExportQuery`, Sleeper's shape, or this package's
                :class:`sleeper.bulk_export.BulkExportQuery`).

        Raises:
            BulkExportQueryError: If the export is refused by the bulk export planner's reader (such as its id).
            TableNotFoundError: If there is no such table.
            QueueNotFoundError: If the instance has no bulk export queue (its stack is not deployed).
        """
        if not isinstance(query, BulkExportQuery | ExportModel):
            raise ClientArgumentError(f"query must be a BulkExportQuery, got {type(query).__name__}")
        if query.table_id is not None:
            self.instance.table_by_id(query.table_id)
        else:
            self._table(query.table_name)
        body = query.to_json()
        read_bulk_export_query(body)  # the planner's own reader, before sending
        self.instance.queue(operations.BULK_EXPORT_Q).send(body)
        _LOG.debug("sent bulk export %s", query.export_id)

    # --- queries ------------------------------------------------------------------------------------------------
    def exact_key_query(
        self,
        table_name: str,
        keys: dict[str, list[Any]] | list[dict[str, Any]],
        query_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The rows whose row key equals one of the keys given, through the query queue.

        Args:
            table_name: The table.
            keys: ``{"key": ["a", "b"]}`` (a field and its values) or ``[{"key1": "a", "key2": 1}, ...]`` (whole
                row keys).
            query_id: The query id (default: a new UUID).

        Returns:
            The rows, one dict each, in row key order.

        Raises:
            ClientArgumentError: If the keys have another form.
            QueryValidationError: If the query does not suit the table (unknown field, wrong value type).
            QueryFailedError: If the query failed.
            QueryTimeoutError: If it did not finish in time.
        """
        if isinstance(keys, Mapping):
            regions = Region.list_from_field_to_exact_values(keys)
        elif isinstance(keys, list):
            regions = [Region.from_field_to_exact_value(key) for key in keys]
        else:
            raise ClientArgumentError(
                "keys must be either (a) a single dict where the key is the row-key field name and the value is a "
                "list of values to query for or (b) a list of dicts where the key is a row-key field name and the "
                "value is the value to query for"
            )
        return self.query_by_sqs(Query(query_id, table_name, regions))

    def range_key_query(
        self, table_name: str, regions: list[dict[str, Sequence[Any]]], query_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The rows whose row key lies in one of the regions, through the query queue.

        Args:
            table_name: The table.
            regions: Regions, each ``{field: (min, max)}`` (min inclusive, max exclusive, None for no maximum) or
                ``{field: (min, min_inclusive, max, max_inclusive)}``.
            query_id: The query id (default: a new UUID).

        Returns:
            The rows, one dict each, in row key order.

        Raises:
            ClientArgumentError: If a region has another form.
            QueryValidationError: If the query does not suit the table.
            QueryFailedError: If the query failed.
            QueryTimeoutError: If it did not finish in time.
        """
        if not isinstance(regions, list):
            raise ClientArgumentError(f"regions must be a list of dicts, got {regions!r}")
        return self.query_by_sqs(Query(query_id, table_name, [Region.from_field_to_tuple(r) for r in regions]))

    def query_by_sqs(self, query: Query) -> list[dict[str, Any]]:
        """Sends a query to the query queue, waits for the query tracker to say it completed, and reads its results
        from the query results bucket.

        Args:
            query: The query (:class:`sleeper.client.query.Query`).

        Returns:
            The rows, one dict each, in row key order.

        Raises:
            QueryValidationError: If the query does not suit the table; nothing is sent.
            QueryFailedError: If the query failed.
            QueryTimeoutError: If it did not finish in time.
        """
        if not isinstance(query, Query):
            raise ClientArgumentError(f"query must be a sleeper.client.query.Query, got {type(query).__name__}")
        table = self._table(query.table_name)
        body = query.to_json()
        QuerySerDe.for_schema(table.schema).query_from_json(body)  # the query handler's own reader
        self.instance.queue(operations.QUERY_Q).send(body)
        _LOG.debug("sent query %s", query.query_id)
        wait_for_query(self.instance.query_tracker, query.query_id, max_wait_seconds=self._max_wait_seconds)
        results = read_results(
            self.instance.clients.s3,
            self.instance.query_results_uri,
            query.query_id,
            s3_fs=self._s3_fs,
            use_threads=self._use_threads,
        )
        return sorted_rows(results, table.schema)

    async def web_socket_exact_key_query(
        self,
        table_name: str,
        keys: dict[str, list[Any]],
        query_id: str | None = None,
        strings_base64_encoded: bool = False,
    ) -> list[dict[str, Any]]:
        """Sleeper's exact key query over its WebSocket API (see :meth:`query_by_web_socket`)."""
        query = Query(query_id, table_name, Region.list_from_field_to_exact_values(keys, strings_base64_encoded))
        return await self.query_by_web_socket(query)

    async def web_socket_range_key_query(
        self,
        table_name: str,
        keys: list[dict[str, dict[str, Any]]],
        query_id: str | None = None,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        strings_base64_encoded: bool = False,
    ) -> list[dict[str, Any]]:
        """Sleeper's range query over its WebSocket API (see :meth:`query_by_web_socket`)."""
        if not isinstance(keys, list):
            raise ClientArgumentError(f"keys must be a list of dicts, got {keys!r}")
        regions = [Region.from_field_to_dict(k, min_inclusive, max_inclusive, strings_base64_encoded) for k in keys]
        return await self.query_by_web_socket(Query(query_id, table_name, regions))

    async def query_by_web_socket(self, query: Query) -> list[dict[str, Any]]:
        """Sleeper's query over its WebSocket API (``sleeper.query.websocket.api.url``): the connection signed with
        the client's credentials, the query sent, its rows gathered until every sub-query is completed
        (:mod:`sleeper.client.websocket`).

        Returns:
            The rows, one dict each, in row key order (as :meth:`exact_key_query` returns them).

        Raises:
            QueryValidationError: If the query does not suit the table; nothing is sent.
            WebSocketNotDeployedError: If the instance has no WebSocket API.
            QueryFailedError: If the connection is refused or lost, or the query fails.
            QueryTimeoutError: If no message arrives for ``max_wait_seconds``.
        """
        if not isinstance(query, Query):
            raise ClientArgumentError(f"query must be a sleeper.client.query.Query, got {type(query).__name__}")
        table = self._table(query.table_name)
        body = query.to_json()
        QuerySerDe.for_schema(table.schema).query_from_json(body)  # the query handler's own reader
        rows = await query_over_websocket(
            self.instance.properties.get(cdkp.QUERY_WEBSOCKET_API_URL.name) or None,
            self.instance.config.settings,
            body,
            query.query_id,
            timeout_seconds=self._max_wait_seconds,
        )
        return sorted_rows(pa.Table.from_pylist(rows), table.schema) if rows else []


class BatchWriter:
    """Rows written in batches to one ingest job (:meth:`SleeperClient.create_batch_writer`); use it in a ``with``
    statement.

    Attributes:
        num_rows: The rows written so far.
    """

    def __init__(self, client: SleeperClient, table: Table[AwsInstance], job_id: str) -> None:
        self._client = client
        self._table = table
        self.job_id = job_id
        self._spool: ParquetSpool | None = None
        self._used = False
        self.num_rows = 0

    def __enter__(self) -> BatchWriter:
        if self._used:
            raise ClientArgumentError("a batch writer can be used in one with statement only")
        self._used = True
        self._spool = ParquetSpool(arrow_schema(self._table.schema))
        return self

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Adds rows, one dict per row.

        Raises:
            ClientArgumentError: If the rows do not suit the table (none of them is added), or the writer is not open.
        """
        if self._spool is None:
            raise ClientArgumentError("use the batch writer in a with statement: with client.create_batch_writer(...)")
        self._spool.append(rows_to_batch(rows, self._table.schema, table_name=self._table.name))
        self.num_rows = self._spool.num_rows

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        spool, self._spool = self._spool, None
        if spool is None:
            return
        if exc_type is not None:
            spool.discard()
            return
        try:
            path = spool.close()
            bucket = self._client.instance.data_bucket
            key = f"{FOR_INGEST_PREFIX}{self.job_id}.parquet"
            upload_file(self._client._uploader, path, bucket, key)
            _LOG.debug("uploaded %d rows to s3://%s/%s", spool.num_rows, bucket, key)
            job = IngestJob(id=self.job_id, table_name=self._table.name, files=(f"{bucket}/{key}",))
            self._client._send_ingest_job(job)
        finally:
            spool.discard()
