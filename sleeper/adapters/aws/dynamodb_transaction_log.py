"""The transaction log of one Sleeper table in DynamoDB.

One DynamoDB table per log type holds the logs of every Sleeper table: hash key ``TABLE_ID``, range key
``TRANSACTION_NUMBER``. Appends are conditional puts, so two writers can never both take the same number.

Beyond Sleeper, an item also holds its writer's transaction id (``TRANSACTION_ID``, which Sleeper's readers ignore):
when botocore retries an append whose first response was lost, the retry fails its condition on the append's own
item, and the log head tells that from another writer's item by the id.

Beyond Sleeper, a deleted table's logs refuse appends: deleting a table first writes a tombstone, an item at
transaction number 0 (no log entry has that number, and reads start after it) in the partitions log table, and each
append is one ``TransactWriteItems`` of the conditional put and a ``ConditionCheck`` that no tombstone exists. A writer
racing the deletion therefore either appends before the tombstone (and its entry is deleted with the rest) or is
refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_items
from sleeper.adapters.aws.exceptions import AwsError, error_code, translate, translated
from sleeper.adapters.aws.resources import BODY, BODY_S3_KEY, TABLE_ID, TRANSACTION_NUMBER, TYPE, UPDATE_TIME
from sleeper.core.statestore import TableDeletedError
from sleeper.core.statestore.transactions import TransactionType
from sleeper.statestore import DuplicateTransactionNumberError, TransactionLogEntry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputPaginateTypeDef, WriteRequestTypeDef

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TOMBSTONE_NUMBER = 0
"""The transaction number of a deleted table's tombstone item (log entries are numbered from 1)."""
TRANSACTION_ID = "TRANSACTION_ID"
"""Beyond Sleeper: the attribute of a log item holding its writer's transaction id (Sleeper's readers ignore it),
by which a writer whose append's response was lost recognises its own entry."""
DELETED_TIME = "DELETED_TIME"
"""The attribute of a tombstone holding when the table was deleted (epoch milliseconds)."""
_BATCH_WRITE_LIMIT = 25
_UNPROCESSED_ATTEMPTS = 8


def to_epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, exactly (no float rounding); a naive time is taken as local time."""
    aware = moment if moment.tzinfo is not None else moment.astimezone(UTC)
    return (aware - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(ms: int) -> datetime:
    """The UTC time of a number of milliseconds since the epoch, exactly."""
    return _EPOCH + timedelta(milliseconds=ms)


class DynamoDBTransactionLogStore:
    """The log of one Sleeper table for one log type, stored in the DynamoDB table of that log type.

    Implements ``sleeper.statestore.ports.TransactionLogStore``. Reads are strongly consistent.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        table_id: str,
        *,
        page_size: int | None = None,
        tombstone_table: str | None = None,
    ) -> None:
        """Creates the store.

        Args:
            client: The DynamoDB client.
            table_name: The DynamoDB table of the log type, e.g. ``sleeper-<id>-file-transaction-log``.
            table_id: The Sleeper table whose log this is.
            page_size: At most this many entries per Query page; None lets DynamoDB fill pages up to 1 MB.
            tombstone_table: The DynamoDB table where the Sleeper table's tombstone is written when it is deleted;
                each append checks, in the same transaction, that there is none. None appends with a plain
                conditional put (a log used alone).
        """
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._client = client
        self._table_name = table_name
        self._table_id = table_id
        self._page_size = page_size
        self._tombstone_table = tombstone_table

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Appends an entry if no entry has its number yet and the table has no tombstone.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists.
            TableDeletedError: If the table was deleted (it has a tombstone).
            AwsError: If DynamoDB fails otherwise.
        """
        item: dict[str, AttributeValueTypeDef] = {
            TABLE_ID: {"S": self._table_id},
            TRANSACTION_NUMBER: {"N": str(entry.transaction_number)},
            UPDATE_TIME: {"N": str(to_epoch_ms(entry.update_time))},
            TYPE: {"S": entry.transaction_type.value},
        }
        if entry.body is not None:
            item[BODY] = {"S": entry.body}
        else:
            assert entry.body_key is not None
            item[BODY_S3_KEY] = {"S": entry.body_key}
        if entry.transaction_id is not None:
            item[TRANSACTION_ID] = {"S": entry.transaction_id}
        if self._tombstone_table is not None:
            self._append_unless_deleted(entry, item, self._tombstone_table)
            return
        try:
            self._client.put_item(
                TableName=self._table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#number)",
                ExpressionAttributeNames={"#number": TRANSACTION_NUMBER},
            )
        except ClientError as e:
            if error_code(e) == "ConditionalCheckFailedException":
                raise DuplicateTransactionNumberError(
                    f"table {self._table_id} already has transaction {entry.transaction_number} in {self._table_name}"
                ) from e
            raise translate(e, self._operation("PutItem")) from e
        except BotoCoreError as e:
            raise translate(e, self._operation("PutItem")) from e

    def _append_unless_deleted(
        self, entry: TransactionLogEntry, item: dict[str, AttributeValueTypeDef], tombstone_table: str
    ) -> None:
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._table_name,
                            "Item": item,
                            "ConditionExpression": "attribute_not_exists(#number)",
                            "ExpressionAttributeNames": {"#number": TRANSACTION_NUMBER},
                        }
                    },
                    {
                        "ConditionCheck": {
                            "TableName": tombstone_table,
                            "Key": tombstone_key(self._table_id),
                            "ConditionExpression": "attribute_not_exists(#number)",
                            "ExpressionAttributeNames": {"#number": TRANSACTION_NUMBER},
                        }
                    },
                ]
            )
        except ClientError as e:
            if error_code(e) == "TransactionCanceledException":
                reasons = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
                if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                    raise TableDeletedError(
                        f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
                    ) from e
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    raise DuplicateTransactionNumberError(
                        f"table {self._table_id} already has transaction {entry.transaction_number} in "
                        f"{self._table_name}"
                    ) from e
                if "TransactionConflict" in reasons:
                    # Another transaction held the entry or the tombstone: nothing was written, as after a clash
                    # on the number, so the writer catches up and tries again.
                    raise DuplicateTransactionNumberError(
                        f"adding transaction {entry.transaction_number} to {self._table_name} (table "
                        f"{self._table_id}) conflicted with another transaction; nothing was written"
                    ) from e
            raise translate(e, self._operation("TransactWriteItems")) from e
        except BotoCoreError as e:
            raise translate(e, self._operation("TransactWriteItems")) from e

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order, read page by page as they are consumed.

        Raises:
            AwsError: If DynamoDB fails (raised while iterating).
        """
        return self._query("#number > :number", transaction_number)

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed.

        Large bodies in S3 are left for the caller to delete.

        Raises:
            AwsError: If DynamoDB fails; some entries may have been deleted by then.
        """
        entries = list(self._query("#number BETWEEN :first AND :number", transaction_number))
        for start in range(0, len(entries), _BATCH_WRITE_LIMIT):
            self._batch_delete(entries[start : start + _BATCH_WRITE_LIMIT])
        return entries

    def _query(self, condition: str, transaction_number: int) -> Iterator[TransactionLogEntry]:
        values: dict[str, AttributeValueTypeDef] = {
            ":table": {"S": self._table_id},
            ":number": {"N": str(transaction_number)},
        }
        if ":first" in condition:
            values[":first"] = {"N": str(TOMBSTONE_NUMBER + 1)}  # never the tombstone
        request: QueryInputPaginateTypeDef = {
            "TableName": self._table_name,
            "KeyConditionExpression": f"#table = :table AND {condition}",
            "ExpressionAttributeNames": {"#table": TABLE_ID, "#number": TRANSACTION_NUMBER},
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
            "ScanIndexForward": True,
        }
        items = query_items(self._client, request, page_size=self._page_size, operation=self._operation("Query"))
        yield from map(_entry, items)

    def _batch_delete(self, entries: Sequence[TransactionLogEntry]) -> None:
        requests: list[WriteRequestTypeDef] = [
            {
                "DeleteRequest": {
                    "Key": {
                        TABLE_ID: {"S": self._table_id},
                        TRANSACTION_NUMBER: {"N": str(entry.transaction_number)},
                    }
                }
            }
            for entry in entries
        ]
        delay = 0.05
        for _ in range(_UNPROCESSED_ATTEMPTS):
            with translated(self._operation("BatchWriteItem")):
                response = self._client.batch_write_item(RequestItems={self._table_name: requests})
            # The unprocessed requests come back in the shape they were sent in.
            requests = cast("list[WriteRequestTypeDef]", response.get("UnprocessedItems", {}).get(self._table_name, []))
            if not requests:
                return
            # DynamoDB left some deletes unprocessed under load: back off before sending them again.
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        raise AwsError(
            self._operation("BatchWriteItem"), "UnprocessedItems", f"{len(requests)} deletes left unprocessed"
        )

    def _operation(self, action: str) -> str:
        return f"{action} {self._table_name} (table {self._table_id})"


def tombstone_key(table_id: str) -> dict[str, AttributeValueTypeDef]:
    """The key of a deleted table's tombstone item."""
    return {TABLE_ID: {"S": table_id}, TRANSACTION_NUMBER: {"N": str(TOMBSTONE_NUMBER)}}


def write_tombstone(client: DynamoDBClient, table_name: str, table_id: str, deleted_time: datetime) -> None:
    """Writes a deleted table's tombstone (again, if it exists): from then on its logs refuse appends.

    Raises:
        AwsError: If DynamoDB fails.
    """
    item = {**tombstone_key(table_id), DELETED_TIME: {"N": str(to_epoch_ms(deleted_time))}}
    with translated(f"PutItem {table_name} (tombstone of table {table_id})"):
        client.put_item(TableName=table_name, Item=item)


def has_tombstone(client: DynamoDBClient, table_name: str, table_id: str) -> bool:
    """Whether a table has a tombstone (was deleted), read consistently.

    Raises:
        AwsError: If DynamoDB fails.
    """
    with translated(f"GetItem {table_name} (tombstone of table {table_id})"):
        found = client.get_item(TableName=table_name, Key=tombstone_key(table_id), ConsistentRead=True)
    return "Item" in found


def _entry(item: dict[str, AttributeValueTypeDef]) -> TransactionLogEntry:
    body = item.get(BODY)
    body_key = item.get(BODY_S3_KEY)
    transaction_id = item.get(TRANSACTION_ID)
    return TransactionLogEntry(
        transaction_number=int(item[TRANSACTION_NUMBER]["N"]),
        update_time=from_epoch_ms(int(item[UPDATE_TIME]["N"])),
        transaction_type=TransactionType(item[TYPE]["S"]),
        body=body["S"] if body is not None else None,
        body_key=body_key["S"] if body_key is not None else None,
        transaction_id=transaction_id["S"] if transaction_id is not None else None,
    )
