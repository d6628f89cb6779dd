"""The ingest batcher store in DynamoDB, in the table Sleeper's batcher uses.

Table ``sleeper-<id>-ingest-batcher-store``: hash ``JobId`` (``not_assigned_to_job`` until the file is batched),
range ``FilePath`` = ``<table id>/<file>``; items also hold ``FileSize``, ``ReceivedTime`` (epoch milliseconds) and
``ExpiryTime`` (epoch seconds, the table's time to live), exactly as Sleeper's ``DynamoDBIngestBatcherStore`` writes
them, so either implementation reads the other's records. This store adds ``FileModificationTime`` (epoch
milliseconds) when the file's modification time is known; Sleeper ignores it, and an item without it (written by
Sleeper, or before it was kept) reads as a file whose modification time is unknown.

Pending files are one strongly consistent query of the ``not_assigned_to_job`` partition. Assigning files to a job
writes up to 50 files per transaction, each as a delete of the pending item (condition: it exists) and a put of the
assigned one (condition: it does not exist yet); a transaction cancelled by a failed condition or by contention leaves
its files pending for the next run, so a file is never put in two jobs.

Tracking submitted files unless already batched (``add_files_unless_batched``) reads the pending items of the files
(a strongly consistent batch get), then finds their assigned items with one strongly consistent scan (the table's key
has no index by path, so the scan reads the whole table: its cost grows with the records kept), then puts each file
not skipped on condition that its pending item is still as read. A job creator that assigned the file in between
fails that condition, and the file is checked again, so it is skipped rather than tracked a second time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_key, scan_items
from sleeper.adapters.aws.exceptions import AwsThrottledError, cancellation_codes, translate, translated
from sleeper.adapters.batcher_store import GroupAssigningStore
from sleeper.core import batcher_store_table_name
from sleeper.ingest.batcher import (
    ASSIGN_JOB_BATCH_SIZE,
    NOT_ASSIGNED_TO_JOB,
    SkippedFile,
    TrackedFile,
    from_epoch_millis,
    newest_first,
    oldest_first,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        KeysAndAttributesTypeDef,
        PutItemInputTypeDef,
        ScanInputPaginateTypeDef,
        TransactWriteItemTypeDef,
        WriteRequestTypeDef,
    )

__all__ = [
    "EXPIRY_TIME",
    "FILE_MODIFICATION_TIME",
    "FILE_PATH",
    "FILE_SIZE",
    "JOB_ID",
    "RECEIVED_TIME",
    "DynamoDBIngestBatcherStore",
    "create_batcher_store_table",
]

JOB_ID = "JobId"
FILE_PATH = "FilePath"
FILE_SIZE = "FileSize"
RECEIVED_TIME = "ReceivedTime"
EXPIRY_TIME = "ExpiryTime"
FILE_MODIFICATION_TIME = "FileModificationTime"
"""This store's own attribute (not in Sleeper's items): the file's modification time, epoch milliseconds."""

_BATCH_GET_LIMIT = 100
_FILTER_IN_LIMIT = 100
_TRACK_ATTEMPTS = 10

_BATCH_WRITE_LIMIT = 25
_CONDITION_FAILED = "ConditionalCheckFailed"
_LOG = logging.getLogger(__name__)

_Item = dict[str, "AttributeValueTypeDef"]


def create_batcher_store_table(client: DynamoDBClient, table_name: str, *, wait: bool = True) -> None:
    """Creates the batcher store table (hash ``JobId``, range ``FilePath``, on-demand, time to live on
    ``ExpiryTime``), as Sleeper's deployment does; for emulators and tests.

    Raises:
        AwsError: If the table cannot be created (including if it exists).
    """
    with translated(f"CreateTable {table_name}"):
        client.create_table(
            TableName=table_name,
            AttributeDefinitions=[
                {"AttributeName": JOB_ID, "AttributeType": "S"},
                {"AttributeName": FILE_PATH, "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": JOB_ID, "KeyType": "HASH"}, {"AttributeName": FILE_PATH, "KeyType": "RANGE"}],
            BillingMode="PAY_PER_REQUEST",
        )
        if wait:
            client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
        client.update_time_to_live(
            TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": EXPIRY_TIME}
        )


def _key(job_id: str, file: TrackedFile) -> _Item:
    return {JOB_ID: {"S": job_id}, FILE_PATH: {"S": file.key}}


def _item(file: TrackedFile) -> _Item:
    item: _Item = {
        FILE_PATH: {"S": file.key},
        FILE_SIZE: {"N": str(file.file_size_bytes)},
        JOB_ID: {"S": file.job_id_or_unassigned},
        RECEIVED_TIME: {"N": str(file.received_millis)},
        EXPIRY_TIME: {"N": str(file.expiry_seconds)},
    }
    if file.modified_millis is not None:
        item[FILE_MODIFICATION_TIME] = {"N": str(file.modified_millis)}
    return item


def _file(item: _Item) -> TrackedFile:
    table_id, path = TrackedFile.split_key(item[FILE_PATH]["S"])
    job_id = item[JOB_ID]["S"]
    expiry = item.get(EXPIRY_TIME, {}).get("N")
    modified = item.get(FILE_MODIFICATION_TIME, {}).get("N")
    return TrackedFile(
        file=path,
        file_size_bytes=int(item.get(FILE_SIZE, {"N": "0"})["N"]),
        table_id=table_id,
        received_time=from_epoch_millis(int(item[RECEIVED_TIME]["N"])),
        expiry_time=from_epoch_millis(int(expiry) * 1000) if expiry is not None else None,
        job_id=None if job_id == NOT_ASSIGNED_TO_JOB else job_id,
        file_modified_time=from_epoch_millis(int(modified)) if modified is not None else None,
    )


class DynamoDBIngestBatcherStore(GroupAssigningStore):
    """Implements ``sleeper.ingest.batcher.ports.IngestBatcherStore`` in Sleeper's DynamoDB table.

    Args:
        client: The DynamoDB client.
        table_name: The batcher store table (see ``batcher_store_table_name``).
        assign_batch_size: Files per assignment transaction (at most 50: two write items each, 100 per transaction).
    """

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, assign_batch_size: int = ASSIGN_JOB_BATCH_SIZE
    ) -> None:
        if not 1 <= assign_batch_size <= ASSIGN_JOB_BATCH_SIZE:
            raise ValueError(f"assign_batch_size must be between 1 and {ASSIGN_JOB_BATCH_SIZE}")
        super().__init__(assign_batch_size=assign_batch_size)
        self._client = client
        self._table_name = table_name

    @classmethod
    def for_instance(cls, client: DynamoDBClient, instance_id: str) -> DynamoDBIngestBatcherStore:
        """The store of an instance, in the table Sleeper names for it."""
        return cls(client, batcher_store_table_name(instance_id))

    @property
    def table_name(self) -> str:
        """The DynamoDB table."""
        return self._table_name

    def add_file(self, file: TrackedFile) -> None:
        """Stores a file, replacing any record with the same key.

        Raises:
            AwsError: If DynamoDB fails.
        """
        with translated(f"PutItem {self._table_name}"):
            self._client.put_item(TableName=self._table_name, Item=_item(file))

    def add_files_unless_batched(self, files: Sequence[TrackedFile]) -> list[SkippedFile]:
        """Stores files as pending, except those batched into a job and unchanged since; returns those skipped.

        Each file is put on condition that its pending item is as it was read before its assigned items were
        looked for; a file whose condition fails (a job creator assigned it, or another submission replaced it) is
        checked again.

        Raises:
            AwsThrottledError: If some files' conditions kept failing (the request may be retried).
            AwsError: If DynamoDB fails.
        """
        order = {id(f): i for i, f in enumerate(files)}
        skipped: list[SkippedFile] = []
        remaining = list(files)
        for _ in range(_TRACK_ATTEMPTS):
            if not remaining:
                break
            pending = self._pending_received_millis({f.key for f in remaining})
            batched = self._assigned_by_key({f.key for f in remaining})
            retry: list[TrackedFile] = []
            for file in remaining:
                match = next((b for b in batched.get(file.key, []) if file.is_unchanged_since(b)), None)
                if match is not None:
                    skipped.append(SkippedFile(file=file, batched=match))
                elif not self._put_if_pending_is(file, pending.get(file.key)):
                    retry.append(file)
            remaining = retry
        if remaining:
            raise AwsThrottledError(
                f"PutItem {self._table_name}",
                _CONDITION_FAILED,
                f"{len(remaining)} files kept changing while being tracked, e.g. {remaining[0].key}",
            )
        return sorted(skipped, key=lambda s: order[id(s.file)])

    def _pending_received_millis(self, keys: set[str]) -> dict[str, str]:
        """The ``ReceivedTime`` of each key's pending item, for the keys that have one (strongly consistent)."""
        found: dict[str, str] = {}
        ordered = sorted(keys)
        for start in range(0, len(ordered), _BATCH_GET_LIMIT):
            request: dict[str, KeysAndAttributesTypeDef] = {
                self._table_name: {
                    "Keys": [
                        {JOB_ID: {"S": NOT_ASSIGNED_TO_JOB}, FILE_PATH: {"S": k}}
                        for k in ordered[start : start + _BATCH_GET_LIMIT]
                    ],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#path, #received",
                    "ExpressionAttributeNames": {"#path": FILE_PATH, "#received": RECEIVED_TIME},
                }
            }
            for attempt in range(10):
                if attempt:
                    time.sleep(min(0.05 * 2**attempt, 2.0))
                with translated(f"BatchGetItem {self._table_name}"):
                    response = self._client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self._table_name, []):
                    found[item[FILE_PATH]["S"]] = item[RECEIVED_TIME]["N"]
                unprocessed = response.get("UnprocessedKeys", {})
                if not unprocessed:
                    break
                request = cast("dict[str, KeysAndAttributesTypeDef]", unprocessed)
            else:
                raise AwsThrottledError(f"BatchGetItem {self._table_name}", "UnprocessedKeys", "keys left unprocessed")
        return found

    def _assigned_by_key(self, keys: set[str]) -> dict[str, list[TrackedFile]]:
        """The assigned records of the given keys (one strongly consistent scan of the table)."""
        request: ScanInputPaginateTypeDef = {
            "TableName": self._table_name,
            "ConsistentRead": True,
            "FilterExpression": "#job <> :pending",
            "ExpressionAttributeNames": {"#job": JOB_ID},
            "ExpressionAttributeValues": {":pending": {"S": NOT_ASSIGNED_TO_JOB}},
        }
        if len(keys) <= _FILTER_IN_LIMIT:  # otherwise the keys are picked out here
            names = {f":k{i}": k for i, k in enumerate(sorted(keys))}
            request["FilterExpression"] = f"#job <> :pending AND #path IN ({', '.join(names)})"
            request["ExpressionAttributeNames"] = {"#job": JOB_ID, "#path": FILE_PATH}
            request["ExpressionAttributeValues"] = {
                ":pending": {"S": NOT_ASSIGNED_TO_JOB},
                **{name: {"S": k} for name, k in names.items()},
            }
        found: dict[str, list[TrackedFile]] = {}
        for item in scan_items(self._client, request):
            if item[FILE_PATH]["S"] in keys:
                file = _file(item)
                found.setdefault(file.key, []).append(file)
        return found

    def _put_if_pending_is(self, file: TrackedFile, received_millis: str | None) -> bool:
        """Puts a pending file if its pending item is still as read (absent, or with this received time)."""
        request: PutItemInputTypeDef = {"TableName": self._table_name, "Item": _item(file)}
        if received_millis is None:
            request["ConditionExpression"] = "attribute_not_exists(#path)"
            request["ExpressionAttributeNames"] = {"#path": FILE_PATH}
        else:
            request["ConditionExpression"] = "#received = :received"
            request["ExpressionAttributeNames"] = {"#received": RECEIVED_TIME}
            request["ExpressionAttributeValues"] = {":received": {"N": received_millis}}
        try:
            with translated(f"PutItem {self._table_name}", unless={f"{_CONDITION_FAILED}Exception"}):
                self._client.put_item(**request)
        except ClientError:
            return False
        return True

    def _assign_group(self, job_id: str, group: Sequence[TrackedFile]) -> bool:
        """One transaction; cancelled (False) if a file is no longer pending, or by contention."""
        items: list[TransactWriteItemTypeDef] = []
        for file in group:
            items.append(
                {
                    "Delete": {
                        "TableName": self._table_name,
                        "Key": _key(NOT_ASSIGNED_TO_JOB, file),
                        "ConditionExpression": "attribute_exists(#path)",
                        "ExpressionAttributeNames": {"#path": FILE_PATH},
                    }
                }
            )
            items.append(
                {
                    "Put": {
                        "TableName": self._table_name,
                        "Item": _item(file.assigned_to(job_id)),
                        "ConditionExpression": "attribute_not_exists(#path)",
                        "ExpressionAttributeNames": {"#path": FILE_PATH},
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as e:
            codes = cancellation_codes(e)
            error = translate(e, f"TransactWriteItems {self._table_name}")
            if _CONDITION_FAILED in codes or isinstance(error, AwsThrottledError):
                _LOG.warning(
                    "%d files could not be assigned to job %s; leaving them pending: %s", len(group), job_id, e
                )
                return False
            raise error from e
        except BotoCoreError as e:
            raise translate(e, f"TransactWriteItems {self._table_name}") from e
        return True

    def all_files_newest_first(self) -> list[TrackedFile]:
        """Every tracked file, newest first (a strongly consistent scan).

        Raises:
            AwsError: If DynamoDB fails.
        """
        request: ScanInputPaginateTypeDef = {"TableName": self._table_name, "ConsistentRead": True}
        return newest_first([_file(item) for item in scan_items(self._client, request)])

    def pending_files_oldest_first(self) -> list[TrackedFile]:
        """The pending files, oldest first (a strongly consistent query).

        Raises:
            AwsError: If DynamoDB fails.
        """
        items = query_key(self._client, self._table_name, JOB_ID, NOT_ASSIGNED_TO_JOB)
        return oldest_first([_file(item) for item in items])

    def delete_all_pending(self) -> None:
        """Forgets every pending file.

        Raises:
            AwsError: If DynamoDB fails.
        """
        self.delete_files(self.pending_files_oldest_first())

    def delete_files(self, files: Sequence[TrackedFile]) -> None:
        """Forgets the given records, 25 per batch write (unprocessed deletes are retried).

        Raises:
            AwsError: If DynamoDB fails, or keeps leaving deletes unprocessed.
        """
        requests: list[WriteRequestTypeDef] = [
            {"DeleteRequest": {"Key": _key(f.job_id_or_unassigned, f)}} for f in files
        ]
        for start in range(0, len(requests), _BATCH_WRITE_LIMIT):
            self._batch_write(requests[start : start + _BATCH_WRITE_LIMIT])

    def _batch_write(self, requests: list[WriteRequestTypeDef]) -> None:
        remaining = requests
        for attempt in range(10):
            if attempt:
                time.sleep(min(0.05 * 2**attempt, 2.0))
            with translated(f"BatchWriteItem {self._table_name}"):
                response = self._client.batch_write_item(RequestItems={self._table_name: remaining})
            unprocessed = response.get("UnprocessedItems", {}).get(self._table_name, [])
            remaining = cast("list[WriteRequestTypeDef]", list(unprocessed))
            if not remaining:
                return
        raise AwsThrottledError(
            f"BatchWriteItem {self._table_name}", "UnprocessedItems", f"{len(remaining)} deletes left unprocessed"
        )
