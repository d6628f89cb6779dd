"""The table index in DynamoDB.

Three DynamoDB tables, each item holding ``TableId``, ``TableName`` and ``Online`` (``"true"``/``"false"``):
by name (hash ``TableName``), by id (hash ``TableId``) and by online status (hash ``Online``, range ``TableName``).
Every change writes all three in one DynamoDB transaction whose conditions check that the rows are still as they
were read, so concurrent changes cannot leave the three disagreeing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_key, scan_items
from sleeper.adapters.aws.exceptions import AwsError, cancellation_codes, translate, translated
from sleeper.adapters.aws.resources import ONLINE, TABLE_ID_FIELD, TABLE_NAME
from sleeper.core import TableAlreadyExistsError, TableIndexTableNames, TableNotFoundError, TableStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        PutTypeDef,
        ScanInputPaginateTypeDef,
        TransactWriteItemTypeDef,
    )

_ATTEMPTS = 5
_CONDITION_FAILED = "ConditionalCheckFailed"
_CONFLICT = "TransactionConflict"
_NAMES = {"#id": TABLE_ID_FIELD, "#name": TABLE_NAME, "#online": ONLINE}


def _online_value(online: bool) -> str:
    return "true" if online else "false"


def _item(table: TableStatus) -> dict[str, AttributeValueTypeDef]:
    return {
        TABLE_ID_FIELD: {"S": table.table_id},
        TABLE_NAME: {"S": table.table_name},
        ONLINE: {"S": _online_value(table.online)},
    }


def _status(item: dict[str, AttributeValueTypeDef]) -> TableStatus:
    return TableStatus(
        table_id=item[TABLE_ID_FIELD]["S"],
        table_name=item[TABLE_NAME]["S"],
        online=item[ONLINE]["S"] == "true",
    )


class DynamoDBTableIndex:
    """The table index of an instance in its three DynamoDB tables.

    Implements ``sleeper.core.table.TableIndex``. Reads are strongly consistent unless told otherwise
    (``sleeper.tables.index.dynamo.consistent.reads``); writes are conditional transactions either way.
    """

    def __init__(
        self, client: DynamoDBClient, table_names: TableIndexTableNames, *, consistent_reads: bool = True
    ) -> None:
        """Creates the index.

        Args:
            client: The DynamoDB client.
            table_names: The by-name, by-id and by-online tables.
            consistent_reads: Whether reads are strongly consistent (eventually consistent reads cost half as much
                and may miss a change made in the last second).
        """
        self._client = client
        self._names = table_names
        self._consistent = consistent_reads

    @classmethod
    def for_instance(cls, client: DynamoDBClient, instance_id: str) -> DynamoDBTableIndex:
        """The index of an instance, in the DynamoDB tables Sleeper names for it."""
        return cls(client, TableIndexTableNames.for_instance(instance_id))

    def create(self, table: TableStatus) -> None:
        """Adds a table.

        Raises:
            TableAlreadyExistsError: If the name or id is taken.
            AwsError: If DynamoDB fails otherwise.
        """
        item = _item(table)
        codes = self._transact(
            [
                self._put(self._names.by_name, item, "attribute_not_exists(#name)"),
                self._put(self._names.by_id, item, "attribute_not_exists(#id)"),
                self._put(self._names.by_online, item, "attribute_not_exists(#name)"),
            ],
            "create table",
        )
        if codes is None:
            return
        if codes[1] == _CONDITION_FAILED and codes[0] != _CONDITION_FAILED:
            raise TableAlreadyExistsError(f"a table with id {table.table_id} already exists")
        if _CONDITION_FAILED in codes:
            raise TableAlreadyExistsError(f"table {table.table_name} already exists")
        raise self._conflict("create table", table.table_name)

    def get_by_name(self, name: str) -> TableStatus:
        """Finds a table by name.

        Raises:
            TableNotFoundError: If there is no such table.
            AwsError: If DynamoDB fails.
        """
        return self._get(self._names.by_name, TABLE_NAME, name, TableNotFoundError.of(table_name=name))

    def get_by_id(self, table_id: str) -> TableStatus:
        """Finds a table by id.

        Raises:
            TableNotFoundError: If there is no such table.
            AwsError: If DynamoDB fails.
        """
        return self._get(self._names.by_id, TABLE_ID_FIELD, table_id, TableNotFoundError.of(table_id=table_id))

    def list_tables(self) -> list[TableStatus]:
        """All tables, ordered by name.

        Raises:
            AwsError: If DynamoDB fails.
        """
        request: ScanInputPaginateTypeDef = {"TableName": self._names.by_name, "ConsistentRead": self._consistent}
        tables = [_status(item) for item in scan_items(self._client, request)]
        return sorted(tables, key=lambda table: table.table_name)

    def list_online_tables(self) -> list[TableStatus]:
        """The online tables, ordered by name.

        Raises:
            AwsError: If DynamoDB fails.
        """
        items = query_key(self._client, self._names.by_online, ONLINE, "true", consistent=self._consistent)
        tables = [_status(item) for item in items]
        # DynamoDB orders the range key by UTF-8 bytes, which is code point order: already sorted, kept explicit.
        return sorted(tables, key=lambda table: table.table_name)

    def rename(self, table_id: str, new_name: str) -> TableStatus:
        """Renames a table.

        Raises:
            TableNotFoundError: If there is no such table.
            TableAlreadyExistsError: If the new name is taken.
            AwsError: If DynamoDB fails, or the table kept changing under us.
        """
        for _ in range(_ATTEMPTS):
            current = self.get_by_id(table_id)
            if current.table_name == new_name:
                return current
            renamed = current.renamed(new_name)
            item = _item(renamed)
            codes = self._transact(
                [
                    self._delete_by_name(current),
                    self._put(self._names.by_name, item, "attribute_not_exists(#name)"),
                    self._put(self._names.by_id, item, *self._unchanged(current)),
                    self._delete_by_online(current),
                    self._put(self._names.by_online, item, "attribute_not_exists(#name)"),
                ],
                "rename table",
            )
            if codes is None:
                return renamed
            if codes[1] == _CONDITION_FAILED:
                raise TableAlreadyExistsError(f"cannot rename table {current.table_name}: {new_name} exists")
        raise self._conflict("rename table", table_id)

    def set_online(self, table_id: str, online: bool) -> TableStatus:
        """Puts a table online or takes it offline.

        Raises:
            TableNotFoundError: If there is no such table.
            AwsError: If DynamoDB fails, or the table kept changing under us.
        """
        for _ in range(_ATTEMPTS):
            current = self.get_by_id(table_id)
            if current.online == online:
                return current
            updated = current.taken_online(online)
            item = _item(updated)
            codes = self._transact(
                [
                    self._put(self._names.by_id, item, *self._unchanged(current)),
                    self._put(self._names.by_name, item, *self._same_id(current)),
                    self._delete_by_online(current),
                    self._put(self._names.by_online, item, "attribute_not_exists(#name)"),
                ],
                "set table online",
            )
            if codes is None:
                return updated
        raise self._conflict("set table online", table_id)

    def delete(self, table_id: str) -> None:
        """Removes a table from the index.

        Raises:
            TableNotFoundError: If there is no such table.
            AwsError: If DynamoDB fails, or the table kept changing under us.
        """
        for _ in range(_ATTEMPTS):
            current = self.get_by_id(table_id)
            codes = self._transact(
                [
                    self._delete(self._names.by_id, {TABLE_ID_FIELD: {"S": table_id}}, *self._unchanged(current)),
                    self._delete_by_name(current),
                    self._delete_by_online(current),
                ],
                "delete table",
            )
            if codes is None:
                return
        raise self._conflict("delete table", table_id)

    def _get(self, table_name: str, key: str, value: str, missing: TableNotFoundError) -> TableStatus:
        """The item of a key, or raises ``missing`` if there is none."""
        with translated(f"GetItem {table_name}"):
            response = self._client.get_item(
                TableName=table_name, Key={key: {"S": value}}, ConsistentRead=self._consistent
            )
        item = response.get("Item")
        if item is None:
            raise missing
        return _status(item)

    def _transact(self, items: list[TransactWriteItemTypeDef], operation: str) -> Sequence[str] | None:
        """Runs a transaction: None if it succeeded, the cancellation codes if a condition or a conflict stopped it."""
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as e:
            codes = cancellation_codes(e)
            if _CONDITION_FAILED in codes or _CONFLICT in codes:
                return codes
            raise translate(e, f"TransactWriteItems ({operation})") from e
        except BotoCoreError as e:
            raise translate(e, f"TransactWriteItems ({operation})") from e
        return None

    def _conflict(self, operation: str, table: str) -> AwsError:
        return AwsError(
            f"TransactWriteItems ({operation} {table})",
            "ConcurrentModification",
            f"the index entries of the table changed on each of {_ATTEMPTS} attempts",
        )

    @staticmethod
    def _unchanged(table: TableStatus) -> tuple[str, dict[str, AttributeValueTypeDef]]:
        return (
            "#id = :id AND #name = :name AND #online = :online",
            {
                ":id": {"S": table.table_id},
                ":name": {"S": table.table_name},
                ":online": {"S": _online_value(table.online)},
            },
        )

    @staticmethod
    def _same_id(table: TableStatus) -> tuple[str, dict[str, AttributeValueTypeDef]]:
        return ("#id = :id", {":id": {"S": table.table_id}})

    def _delete_by_name(self, table: TableStatus) -> TransactWriteItemTypeDef:
        return self._delete(self._names.by_name, {TABLE_NAME: {"S": table.table_name}}, *self._same_id(table))

    def _delete_by_online(self, table: TableStatus) -> TransactWriteItemTypeDef:
        key: dict[str, AttributeValueTypeDef] = {
            ONLINE: {"S": _online_value(table.online)},
            TABLE_NAME: {"S": table.table_name},
        }
        return self._delete(self._names.by_online, key, *self._same_id(table))

    @staticmethod
    def _put(
        table_name: str,
        item: dict[str, AttributeValueTypeDef],
        condition: str,
        values: dict[str, AttributeValueTypeDef] | None = None,
    ) -> TransactWriteItemTypeDef:
        put: PutTypeDef = {
            "TableName": table_name,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": _names_in(condition),
        }
        if values:
            put["ExpressionAttributeValues"] = values
        return {"Put": put}

    @staticmethod
    def _delete(
        table_name: str,
        key: dict[str, AttributeValueTypeDef],
        condition: str,
        values: dict[str, AttributeValueTypeDef],
    ) -> TransactWriteItemTypeDef:
        return {
            "Delete": {
                "TableName": table_name,
                "Key": key,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": _names_in(condition),
                "ExpressionAttributeValues": values,
            }
        }


def _names_in(condition: str) -> dict[str, str]:
    return {placeholder: name for placeholder, name in _NAMES.items() if placeholder in condition}
