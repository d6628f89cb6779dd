"""Snapshot records of the transaction-log state store in DynamoDB.

Two DynamoDB tables shared by every Sleeper table of an instance:

- latest snapshots: one item per Sleeper table (hash ``TABLE_ID``) holding, per log type, the path and transaction
  number of its latest snapshot;
- all snapshots: one item per snapshot (hash ``<table id>|FILES`` or ``<table id>|PARTITIONS``, range
  ``TRANSACTION_NUMBER``).

A snapshot is saved in one DynamoDB transaction that records it and makes it the latest, only if the latest is
behind it. Sleeper's condition is that the number differs, which would let a slow writer move the latest backwards;
here the latest only ever moves forwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_key
from sleeper.adapters.aws.dynamodb_transaction_log import from_epoch_ms, to_epoch_ms
from sleeper.adapters.aws.exceptions import cancellation_codes, translate, translated
from sleeper.adapters.aws.resources import (
    FILES_SNAPSHOT_PATH,
    FILES_TRANSACTION_NUMBER,
    PARTITIONS_SNAPSHOT_PATH,
    PARTITIONS_TRANSACTION_NUMBER,
    PATH,
    SNAPSHOT_TYPE,
    TABLE_ID,
    TABLE_ID_AND_SNAPSHOT_TYPE,
    TRANSACTION_NUMBER,
    UPDATE_TIME,
)
from sleeper.core.statestore.transactions import LogType
from sleeper.statestore import SnapshotConflictError, SnapshotMetadata

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Beyond Sleeper's attributes, the latest item keeps each log's own update time: UPDATE_TIME is shared by both logs.
FILES_UPDATE_TIME = "FILES_UPDATE_TIME"
PARTITIONS_UPDATE_TIME = "PARTITIONS_UPDATE_TIME"

_LATEST_ATTRIBUTES = {
    LogType.FILES: (FILES_SNAPSHOT_PATH, FILES_TRANSACTION_NUMBER, FILES_UPDATE_TIME),
    LogType.PARTITIONS: (PARTITIONS_SNAPSHOT_PATH, PARTITIONS_TRANSACTION_NUMBER, PARTITIONS_UPDATE_TIME),
}


def snapshot_type(log_type: LogType) -> str:
    """Sleeper's name of the snapshot type of a log: ``FILES`` or ``PARTITIONS``."""
    return log_type.name


class DynamoDBSnapshotMetadataStore:
    """The snapshot records of one Sleeper table.

    Implements ``sleeper.statestore.ports.SnapshotMetadataStore``. Reads are strongly consistent.
    """

    def __init__(self, client: DynamoDBClient, *, latest_table: str, all_table: str, table_id: str) -> None:
        """Creates the store.

        Args:
            client: The DynamoDB client.
            latest_table: The latest-snapshots table, ``sleeper-<id>-transaction-log-latest-snapshots``.
            all_table: The all-snapshots table, ``sleeper-<id>-transaction-log-all-snapshots``.
            table_id: The Sleeper table.
        """
        self._client = client
        self._latest_table = latest_table
        self._all_table = all_table
        self._table_id = table_id

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None if there is none.

        Raises:
            AwsError: If DynamoDB fails.
        """
        with translated(self._operation("GetItem", self._latest_table)):
            response = self._client.get_item(
                TableName=self._latest_table, Key={TABLE_ID: {"S": self._table_id}}, ConsistentRead=True
            )
        item = response.get("Item")
        path_name, number_name, time_name = _LATEST_ATTRIBUTES[log_type]
        if item is None or number_name not in item:
            return None
        time_value = item.get(time_name, item.get(UPDATE_TIME))
        return SnapshotMetadata(
            log_type=log_type,
            path=item[path_name]["S"],
            transaction_number=int(item[number_name]["N"]),
            update_time=from_epoch_ms(int(time_value["N"]) if time_value is not None else 0),
        )

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot and makes it the latest, only if it is ahead of the current latest.

        Raises:
            SnapshotConflictError: If the latest snapshot is already at or beyond this transaction number, or
                this snapshot is already recorded.
            AwsError: If DynamoDB fails otherwise.
        """
        path_name, number_name, time_name = _LATEST_ATTRIBUTES[snapshot.log_type]
        number = {"N": str(snapshot.transaction_number)}
        update_time = {"N": str(to_epoch_ms(snapshot.update_time))}
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._all_table,
                            "Item": {
                                TABLE_ID_AND_SNAPSHOT_TYPE: {"S": self._snapshot_key(snapshot.log_type)},
                                TRANSACTION_NUMBER: number,
                                TABLE_ID: {"S": self._table_id},
                                PATH: {"S": snapshot.path},
                                UPDATE_TIME: update_time,
                                SNAPSHOT_TYPE: {"S": snapshot_type(snapshot.log_type)},
                            },
                            "ConditionExpression": "attribute_not_exists(#number)",
                            "ExpressionAttributeNames": {"#number": TRANSACTION_NUMBER},
                        }
                    },
                    {
                        "Update": {
                            "TableName": self._latest_table,
                            "Key": {TABLE_ID: {"S": self._table_id}},
                            "UpdateExpression": "SET #path = :path, #number = :number, #time = :time, #logtime = :time",
                            "ConditionExpression": "attribute_not_exists(#number) OR #number < :number",
                            "ExpressionAttributeNames": {
                                "#path": path_name,
                                "#number": number_name,
                                "#time": UPDATE_TIME,
                                "#logtime": time_name,
                            },
                            "ExpressionAttributeValues": {
                                ":path": {"S": snapshot.path},
                                ":number": number,
                                ":time": update_time,
                            },
                        }
                    },
                ]
            )
        except ClientError as e:
            if "ConditionalCheckFailed" in cancellation_codes(e):
                raise SnapshotConflictError(
                    f"table {self._table_id} already has a {snapshot_type(snapshot.log_type)} snapshot at or "
                    f"beyond transaction {snapshot.transaction_number}"
                ) from e
            raise translate(e, self._operation("TransactWriteItems", self._all_table)) from e
        except BotoCoreError as e:
            raise translate(e, self._operation("TransactWriteItems", self._all_table)) from e

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first.

        Raises:
            AwsError: If DynamoDB fails.
        """
        return list(self._query(log_type))

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot, unless it is the latest one. A snapshot that is not recorded is not an error.

        The latest only moves forwards, so a snapshot that is not the latest now never becomes the latest again.

        Raises:
            SnapshotConflictError: If the snapshot is the latest of its log.
            AwsError: If DynamoDB fails.
        """
        latest = self.latest_snapshot(snapshot.log_type)
        if latest is not None and latest.transaction_number == snapshot.transaction_number:
            raise SnapshotConflictError(
                f"snapshot {snapshot.transaction_number} is the latest {snapshot_type(snapshot.log_type)} "
                f"snapshot of table {self._table_id}; it cannot be deleted"
            )
        with translated(self._operation("DeleteItem", self._all_table)):
            self._client.delete_item(
                TableName=self._all_table,
                Key={
                    TABLE_ID_AND_SNAPSHOT_TYPE: {"S": self._snapshot_key(snapshot.log_type)},
                    TRANSACTION_NUMBER: {"N": str(snapshot.transaction_number)},
                },
            )

    def delete_all(self) -> None:
        """Forgets every snapshot of the table, the latest ones included.

        Raises:
            AwsError: If DynamoDB fails.
        """
        for log_type in LogType:
            for snapshot in list(self._query(log_type)):
                with translated(self._operation("DeleteItem", self._all_table)):
                    self._client.delete_item(
                        TableName=self._all_table,
                        Key={
                            TABLE_ID_AND_SNAPSHOT_TYPE: {"S": self._snapshot_key(log_type)},
                            TRANSACTION_NUMBER: {"N": str(snapshot.transaction_number)},
                        },
                    )
        with translated(self._operation("DeleteItem", self._latest_table)):
            self._client.delete_item(TableName=self._latest_table, Key={TABLE_ID: {"S": self._table_id}})

    def _query(self, log_type: LogType) -> Iterator[SnapshotMetadata]:
        key = self._snapshot_key(log_type)
        operation = self._operation("Query", self._all_table)
        for item in query_key(self._client, self._all_table, TABLE_ID_AND_SNAPSHOT_TYPE, key, operation=operation):
            yield SnapshotMetadata(
                log_type=log_type,
                path=item[PATH]["S"],
                transaction_number=int(item[TRANSACTION_NUMBER]["N"]),
                update_time=from_epoch_ms(int(item[UPDATE_TIME]["N"])),
            )

    def _snapshot_key(self, log_type: LogType) -> str:
        return f"{self._table_id}|{snapshot_type(log_type)}"

    def _operation(self, action: str, table_name: str) -> str:
        return f"{action} {table_name} (table {self._table_id})"
