"""The query tracker in DynamoDB, in the table Sleeper's query tracker uses.

Table ``sleeper-<cid>-query-tracking-table`` (``sleeper.query.tracker.table.name``): hash ``queryId``, range
``subQueryId`` (``"-"`` for the query itself). Each row holds ``lastKnownState`` (``QUEUED``, ``IN_PROGRESS``,
``COMPLETED``, ``FAILED``, ``PARTIALLY_FAILED``), ``lastUpdateTime`` and ``firstUpdateTime`` (epoch seconds),
``expiryDate`` (epoch seconds, the DynamoDB time to live), ``rowCount`` and, when it failed, ``errors``: the
attributes Sleeper's own Python client polls. ``lastUpdateTimeIso`` and ``expiryDateIso`` keep the exact times.

A sub-query update is written only while the sub-query is unfinished (a condition on ``lastKnownState``), so a
duplicate message cannot revert a finished sub-query or count it twice. After a sub-query finishes, the parent row
is recomputed from a strongly consistent query of all the sub-queries (``sleeper.core.trackers.query.roll_up_parent``):
whichever sub-query finishes last sees every other one finished, so the parent is always completed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Self

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_key, scan_items
from sleeper.adapters.aws.exceptions import error_code, translate, translated
from sleeper.adapters.aws.resources import LAST_KNOWN_STATE, QUERY_EXPIRY_DATE, QUERY_ID, SUB_QUERY_ID
from sleeper.core import query_tracker_table_name
from sleeper.core.trackers import (
    PARENT_SUB_QUERY_ID,
    QUERY_TTL,
    QueryState,
    QueryUpdate,
    TrackedQuery,
    apply_query_update,
    roll_up_parent,
    run_of,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, ScanInputPaginateTypeDef

LAST_UPDATE_TIME = "lastUpdateTime"
FIRST_UPDATE_TIME = "firstUpdateTime"
ROW_COUNT = "rowCount"
ERRORS = "errors"
LAST_UPDATE_TIME_ISO = "lastUpdateTimeIso"
EXPIRY_DATE_ISO = "expiryDateIso"

_Item = dict[str, "AttributeValueTypeDef"]
_FINISHED = [state for state in QueryState if state.is_finished]


def _key(query_id: str, sub_query_id: str) -> _Item:
    return {QUERY_ID: {"S": query_id}, SUB_QUERY_ID: {"S": sub_query_id}}


def _time(item: _Item, iso: str, epoch_seconds: str) -> datetime:
    text = item.get(iso, {}).get("S")
    if text is not None:
        return datetime.fromisoformat(text)
    return datetime.fromtimestamp(int(item[epoch_seconds]["N"]), tz=UTC)


def _tracked_query(item: _Item) -> TrackedQuery:
    return TrackedQuery(
        query_id=item[QUERY_ID]["S"],
        sub_query_id=item[SUB_QUERY_ID]["S"],
        last_known_state=QueryState(item[LAST_KNOWN_STATE]["S"]),
        last_update_time=_time(item, LAST_UPDATE_TIME_ISO, LAST_UPDATE_TIME),
        expiry_date=_time(item, EXPIRY_DATE_ISO, QUERY_EXPIRY_DATE),
        row_count=int(item.get(ROW_COUNT, {"N": "0"})["N"]),
        error_message=item.get(ERRORS, {}).get("S"),
    )


def _order(row: TrackedQuery) -> tuple[str, bool, str]:
    return row.query_id, not row.is_parent, row.sub_query_id


class DynamoDBQueryTracker:
    """Implements ``sleeper.core.trackers.query.QueryTracker`` in Sleeper's query tracker table.

    Args:
        client: The DynamoDB client.
        table_name: The query tracker table (``sleeper.query.tracker.table.name``).
        ttl: How long a row lives after its last update (``expiryDate``).
    """

    def __init__(self, client: DynamoDBClient, table_name: str, *, ttl: timedelta = QUERY_TTL) -> None:
        self._client = client
        self._table_name = table_name
        self._ttl = ttl

    @classmethod
    def for_instance(cls, client: DynamoDBClient, instance_id: str, *, ttl: timedelta = QUERY_TTL) -> Self:
        """The query tracker of an instance, in the table its deployment names."""
        return cls(client, query_tracker_table_name(instance_id), ttl=ttl)

    def record(self, update: QueryUpdate) -> None:
        """Applies an update; when a sub-query finishes, recomputes its query from all sub-queries.

        An update of a sub-query that already finished is ignored.

        Raises:
            AwsError: If DynamoDB fails.
        """
        if update.sub_query_id == PARENT_SUB_QUERY_ID:
            for row in apply_query_update({}, update, ttl=self._ttl):
                self._write(row, only_if_unfinished=False)
            return
        existing = self.status(update.query_id, update.sub_query_id)
        current = {update.sub_query_id: existing} if existing is not None else {}
        # Only this sub-query's row is read here, so a parent row apply_query_update returns is not used: the parent
        # is recomputed below from every sub-query, read after this one is written.
        rows = [row for row in apply_query_update(current, update, ttl=self._ttl) if not row.is_parent]
        if not rows or not self._write(rows[0], only_if_unfinished=True):
            return
        if update.state.is_finished:
            run = run_of(update.sub_query_id)
            children = [c for c in self.sub_queries(update.query_id) if run_of(c.sub_query_id) == run]
            parent = roll_up_parent(update.query_id, children, update.update_time, ttl=self._ttl)
            if parent is not None:
                self._write(parent, only_if_unfinished=False)

    def record_all(self, updates: Sequence[QueryUpdate]) -> None:
        """Applies several updates in order.

        DynamoDB writes them one at a time: a reader may see some before the call returns. A caller that needs them
        all recorded first (every sub-query QUEUED before any is sent) acts after this returns.

        Raises:
            AwsError: If DynamoDB fails.
        """
        for update in updates:
            self.record(update)

    def status(self, query_id: str, sub_query_id: str = PARENT_SUB_QUERY_ID) -> TrackedQuery | None:
        """The row of a query or sub-query, or None.

        Raises:
            AwsError: If DynamoDB fails.
        """
        with translated(f"GetItem {self._table_name}"):
            item = self._client.get_item(
                TableName=self._table_name, Key=_key(query_id, sub_query_id), ConsistentRead=True
            ).get("Item")
        return _tracked_query(item) if item is not None else None

    def sub_queries(self, query_id: str) -> list[TrackedQuery]:
        """The sub-query rows of a query, ordered by sub-query id (a strongly consistent read).

        Raises:
            AwsError: If DynamoDB fails.
        """
        rows = map(_tracked_query, query_key(self._client, self._table_name, QUERY_ID, query_id))
        return sorted((row for row in rows if not row.is_parent), key=_order)

    def all_queries(self) -> list[TrackedQuery]:
        """Every row, ordered by query id then sub-query id (parent first).

        Raises:
            AwsError: If DynamoDB fails.
        """
        return self._scan(None)

    def queries_with_state(self, state: QueryState) -> list[TrackedQuery]:
        """Rows in a state, in the order of ``all_queries``.

        Raises:
            AwsError: If DynamoDB fails.
        """
        return self._scan([state])

    def failed_queries(self) -> list[TrackedQuery]:
        """Rows that FAILED or PARTIALLY_FAILED, in the order of ``all_queries``.

        Raises:
            AwsError: If DynamoDB fails.
        """
        return self._scan([QueryState.FAILED, QueryState.PARTIALLY_FAILED])

    def _scan(self, states: list[QueryState] | None) -> list[TrackedQuery]:
        request: ScanInputPaginateTypeDef = {"TableName": self._table_name, "ConsistentRead": True}
        if states is not None:
            placeholders = {f":s{index}": state for index, state in enumerate(states)}
            request["FilterExpression"] = f"#state IN ({', '.join(placeholders)})"
            request["ExpressionAttributeNames"] = {"#state": LAST_KNOWN_STATE}
            request["ExpressionAttributeValues"] = {name: {"S": state.value} for name, state in placeholders.items()}
        return sorted(map(_tracked_query, scan_items(self._client, request)), key=_order)

    def _write(self, row: TrackedQuery, *, only_if_unfinished: bool) -> bool:
        """Writes a row's attributes (keeping others, such as ``firstUpdateTime``); False if the condition failed."""
        last_update = int(row.last_update_time.timestamp())
        names = {
            "#state": LAST_KNOWN_STATE,
            "#last": LAST_UPDATE_TIME,
            "#first": FIRST_UPDATE_TIME,
            "#expiry": QUERY_EXPIRY_DATE,
            "#rows": ROW_COUNT,
            "#lastIso": LAST_UPDATE_TIME_ISO,
            "#expiryIso": EXPIRY_DATE_ISO,
            "#errors": ERRORS,
        }
        values: _Item = {
            ":state": {"S": row.last_known_state.value},
            ":last": {"N": str(last_update)},
            ":expiry": {"N": str(math.ceil(row.expiry_date.timestamp()))},
            ":rows": {"N": str(row.row_count)},
            ":lastIso": {"S": row.last_update_time.isoformat()},
            ":expiryIso": {"S": row.expiry_date.isoformat()},
        }
        expression = (
            "SET #state = :state, #last = :last, #first = if_not_exists(#first, :last), #expiry = :expiry,"
            " #rows = :rows, #lastIso = :lastIso, #expiryIso = :expiryIso"
        )
        if row.error_message is not None:
            expression += ", #errors = :errors"
            values[":errors"] = {"S": row.error_message}
        else:
            expression += " REMOVE #errors"
        try:
            if only_if_unfinished:
                finished = {f":finished{index}": state for index, state in enumerate(_FINISHED)}
                values.update({name: {"S": state.value} for name, state in finished.items()})
                self._client.update_item(
                    TableName=self._table_name,
                    Key=_key(row.query_id, row.sub_query_id),
                    UpdateExpression=expression,
                    ConditionExpression=f"attribute_not_exists(#state) OR NOT (#state IN ({', '.join(finished)}))",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
            else:
                self._client.update_item(
                    TableName=self._table_name,
                    Key=_key(row.query_id, row.sub_query_id),
                    UpdateExpression=expression,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
        except ClientError as e:
            if only_if_unfinished and error_code(e) == "ConditionalCheckFailedException":
                return False
            raise translate(e, f"UpdateItem {self._table_name}") from e
        except BotoCoreError as e:
            raise translate(e, f"UpdateItem {self._table_name}") from e
        return True
