"""A client written to the formats Sleeper's own Python client uses (gchq/sleeper python/src/sleeper).

It uses only boto3 and pyarrow, the way that client does: it derives the config bucket from the instance id and the
account (STS), reads ``instance.properties`` with ``configparser`` under a dummy section header (so a value this port
writes must survive configparser's parsing, interpolation included), sends ingest, batcher, bulk import and query
messages in its JSON shapes to the queues named by the queue URL properties (resolving some by the name after the last
``/``, as it does), uploads ingest files to ``<dataBucket>/for_ingest/<id>.parquet``, polls the query tracker's parent
row (``subQueryId = "-"``, attribute ``lastKnownState``) and reads every ``.parquet`` object under ``query-<id>`` in the
results bucket. Nothing here imports ``sleeper``: if this client works, Sleeper's does.
"""

from __future__ import annotations

import configparser
import io
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
from boto3.dynamodb.conditions import Key

QUERY_QUEUE_URL = "sleeper.query.queue.url"
INGEST_QUEUE_URL = "sleeper.ingest.job.queue.url"
BATCHER_QUEUE_URL = "sleeper.ingest.batcher.submit.queue.url"
EMR_SERVERLESS_QUEUE_URL = "sleeper.bulk.import.emr.serverless.job.queue.url"
DATA_BUCKET = "sleeper.data.bucket"
RESULTS_BUCKET = "sleeper.query.results.bucket"
TRACKER_TABLE = "sleeper.query.tracker.table.name"


class QueryFailed(RuntimeError):
    """The tracker says the query failed."""


def config_bucket_for(instance_id: str, account: str) -> str:
    """The config bucket name the client derives: lower case, dots as dashes."""
    return f"sleeper-{instance_id}-config-{account}".lower().replace(".", "-")


def queue_name_from_url(url: str) -> str:
    """The queue name after the last ``/`` of its URL."""
    return url.rsplit("/", 1)[-1]


class CompatClient:
    """The subset of Sleeper's Python client that talks to an instance: ingest, batcher, bulk import, query."""

    def __init__(self, instance_id: str, *, endpoint_url: str | None = None, region: str = "eu-west-2") -> None:
        kwargs: dict[str, Any] = {"region_name": region}
        if endpoint_url:
            kwargs["endpoint_url"] = endpoint_url
        self._s3 = boto3.resource("s3", **kwargs)
        self._s3_client = boto3.client("s3", **kwargs)
        self._sqs = boto3.resource("sqs", **kwargs)
        self._dynamo = boto3.resource("dynamodb", **kwargs)
        account = boto3.client("sts", **kwargs).get_caller_identity()["Account"]
        self.properties = self._load_properties(config_bucket_for(instance_id, account))

    def _load_properties(self, bucket: str) -> dict[str, str]:
        text = self._s3.Object(bucket, "instance.properties").get()["Body"].read().decode("utf-8")
        parser = configparser.ConfigParser(allow_no_value=True)
        parser.read_string("[asection]\n" + text)
        return {key: value or "" for key, value in parser["asection"].items()}

    # --- ingest -----------------------------------------------------------------------------------------------------
    def write_single_batch(self, table_name: str, rows: Sequence[Mapping[str, Any]], job_id: str | None = None) -> str:
        """Uploads the rows as ``for_ingest/<id>.parquet`` and sends an ingest job for it; returns the job id."""
        job_id = job_id or str(uuid.uuid4())
        bucket = self.properties[DATA_BUCKET]
        key = f"for_ingest/{job_id}.parquet"
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(list(rows)), sink)
        self._s3_client.put_object(Bucket=bucket, Key=key, Body=sink.getvalue())
        self.ingest_parquet_files_from_s3(table_name, [f"{bucket}/{key}"], job_id)
        return job_id

    def ingest_parquet_files_from_s3(self, table_name: str, files: list[str], job_id: str | None = None) -> str:
        job_id = job_id or str(uuid.uuid4())
        body = json.dumps({"id": job_id, "files": files, "tableName": table_name})
        self._sqs.Queue(self.properties[INGEST_QUEUE_URL]).send_message(MessageBody=body)
        return job_id

    def submit_to_ingest_batcher(self, table_name: str, files: list[str]) -> None:
        body = json.dumps({"tableName": table_name, "files": files})
        self._sqs.Queue(self.properties[BATCHER_QUEUE_URL]).send_message(MessageBody=body)

    def bulk_import_parquet_files_from_s3(self, table_name: str, files: list[str], job_id: str | None = None) -> str:
        job_id = job_id or str(uuid.uuid4())
        queue = self._sqs.get_queue_by_name(QueueName=queue_name_from_url(self.properties[EMR_SERVERLESS_QUEUE_URL]))
        queue.send_message(MessageBody=json.dumps({"id": job_id, "tableName": table_name, "files": files}))
        return job_id

    # --- queries ----------------------------------------------------------------------------------------------------
    def send_range_query(self, table_name: str, regions: list[dict[str, tuple[Any, ...]]], query_id: str) -> None:
        """Sends a query whose regions map a row key field to (min, max) or (min, minInclusive, max, maxInclusive)."""
        json_regions = []
        for region in regions:
            json_region: dict[str, Any] = {}
            for field, bounds in region.items():
                if len(bounds) == 2:
                    low, low_inclusive, high, high_inclusive = bounds[0], True, bounds[1], False
                else:
                    low, low_inclusive, high, high_inclusive = bounds
                json_region[field] = {
                    "min": low,
                    "minInclusive": low_inclusive,
                    "max": high,
                    "maxInclusive": high_inclusive,
                }
                json_region["stringsBase64Encoded"] = False
            json_regions.append(json_region)
        message = {"queryId": query_id, "tableName": table_name, "type": "Query", "regions": json_regions}
        queue = self._sqs.get_queue_by_name(QueueName=queue_name_from_url(self.properties[QUERY_QUEUE_URL]))
        queue.send_message(MessageBody=json.dumps(message))

    def exact_key_query_message(self, table_name: str, field: str, values: list[Any], query_id: str) -> None:
        """Sends an exact query the way the client does: one inclusive single-value range per key."""
        self.send_range_query(table_name, [{field: (value, True, value, True)} for value in values], query_id)

    def query_state(self, query_id: str) -> str | None:
        """The parent row's ``lastKnownState``, or None before the tracker has it."""
        table = self._dynamo.Table(self.properties[TRACKER_TABLE])
        items = table.query(KeyConditionExpression=Key("queryId").eq(query_id) & Key("subQueryId").eq("-"))["Items"]
        return str(items[0]["lastKnownState"]) if items else None

    def results(self, query_id: str) -> list[dict[str, Any]]:
        """Reads every ``.parquet`` object under ``query-<id>`` in the results bucket, as the client does on
        COMPLETED; raises :class:`QueryFailed` on FAILED and RuntimeError for any other state."""
        state = self.query_state(query_id)
        if state == "FAILED":
            raise QueryFailed(f"query {query_id} failed")
        if state != "COMPLETED":
            raise RuntimeError(f"query {query_id} is {state}, not COMPLETED")
        bucket = self._s3.Bucket(self.properties[RESULTS_BUCKET])
        rows: list[dict[str, Any]] = []
        for summary in bucket.objects.filter(Prefix=f"query-{query_id}"):
            if summary.key.endswith(".parquet"):
                body = summary.get()["Body"].read()
                rows.extend(pq.read_table(io.BytesIO(body)).to_pylist())
        return rows

    def wait_for_results(self, query_id: str, pump: Callable[[], object], *, rounds: int = 20) -> list[dict[str, Any]]:
        """Runs ``pump`` (one round of the emulated instance's deliveries) until the query leaves its running states."""
        for _ in range(rounds):
            if self.query_state(query_id) in ("COMPLETED", "FAILED"):
                break
            pump()
        return self.results(query_id)
