"""State store commit requests: the messages on the asynchronous committer's FIFO queue.

Wire JSON: ``{"tableId", "transactionType": "<TYPE>", "transaction": {…}}`` with the transaction body inline, or
``{"tableId", "transactionType", "bodyKey"}`` when the body was uploaded to the data bucket first (large
transactions). Reading a message keeps the body as parsed JSON, since partition transactions need the table's schema
to be read; ``StateStoreCommitRequest.transaction`` converts it once the schema is known. A body key must lie under
the table's own ``<tableId>/statestore/transactions/`` prefix, so a message cannot point the committer at another
table's objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sleeper.core.exceptions import SleeperError
from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import InvalidFieldError, MessageError, MissingFieldError
from sleeper.core.paths import check_key_under
from sleeper.core.schema import Schema
from sleeper.core.statestore.transactions.files import FILE_TRANSACTIONS, FileTransaction
from sleeper.core.statestore.transactions.log import TransactionType
from sleeper.core.statestore.transactions.serde import Transaction, TransactionSerDe

STATE_STORE_COMMIT_FIELDS = frozenset({"tableId", "transactionType", "transaction", "bodyKey"})
"""The fields of a state store commit request."""

BodyLoader = Callable[[str], str]
"""Reads a transaction body from the data bucket, given its key."""


def transaction_body_prefix(table_id: str) -> str:
    """The prefix of a table's uploaded transaction bodies in the data bucket."""
    return f"{table_id}/statestore/transactions/"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateStoreCommitRequest(wire.JsonMessage):
    """A transaction to add to a table's log, sent to the committer.

    Exactly one of ``body`` and ``body_key`` is set.

    Attributes:
        table_id: The table.
        transaction_type: The transaction's type.
        body: The transaction's JSON body, when held in the message.
        body_key: The key of the uploaded body in the data bucket, when too large for the message.

    Raises:
        InvalidFieldError: If both or neither of ``body`` and ``body_key`` are set.
        UnsafePathError: If the body key is not a safe key under the table's transactions prefix.
    """

    table_id: str
    transaction_type: TransactionType
    body: Mapping[str, Any] | None = None
    body_key: str | None = None

    def __post_init__(self) -> None:
        if (self.body is None) == (self.body_key is None):
            raise InvalidFieldError("exactly one of transaction and bodyKey must be given", path="$")
        if self.body_key is not None:
            check_key_under(self.body_key, transaction_body_prefix(self.table_id), where="$.bodyKey")

    @classmethod
    def of_transaction(
        cls, table_id: str, transaction: Transaction, *, schema: Schema | None = None
    ) -> StateStoreCommitRequest:
        """A request holding a transaction inline.

        Args:
            table_id: The table.
            transaction: The transaction.
            schema: The table schema, needed for partition transactions.

        Raises:
            MessageError: If a partition transaction is given without a schema.
        """
        if isinstance(transaction, FileTransaction):
            body = transaction.to_dict()
        elif schema is None:
            raise MessageError(f"writing a {transaction.TYPE.value} transaction needs the table schema", path="$")
        else:
            body = transaction.to_dict(schema)
        return cls(table_id=table_id, transaction_type=transaction.TYPE, body=body)

    @classmethod
    def in_body_store(cls, table_id: str, transaction_type: TransactionType, body_key: str) -> StateStoreCommitRequest:
        """A request pointing at a body uploaded to the data bucket."""
        return cls(table_id=table_id, transaction_type=transaction_type, body_key=body_key)

    @property
    def held_in_body_store(self) -> bool:
        """Whether the body was uploaded rather than held in the message."""
        return self.body_key is not None

    def transaction(self, schema: Schema | None = None, *, load_body: BodyLoader | None = None) -> Transaction:
        """Reads the transaction.

        Args:
            schema: The table schema; needed for partition transactions only.
            load_body: Reads an uploaded body by key; needed when the body is in the body store.

        Raises:
            MessageError: If the body is not a valid transaction of the type, or the schema or loader is missing.
        """
        where = "$.transaction"
        if self.body is not None:
            body: object = self.body
        else:
            where = "$.bodyKey"
            assert self.body_key is not None
            if load_body is None:
                raise MessageError(f"the body is held at {self.body_key!r}; a body loader is needed", path=where)
            body = wire.parse_json(load_body(self.body_key))
        ttype = self.transaction_type
        try:
            data = wire.expect_object(body, where)
            if ttype in FILE_TRANSACTIONS:
                return FILE_TRANSACTIONS[ttype].from_dict(data)
            if schema is None:
                raise MessageError(f"reading a {ttype.value} transaction needs the table schema", path=where)
            return TransactionSerDe(schema).from_dict(ttype, data)
        except MessageError:
            raise
        except SleeperError as e:
            raise wire.from_serde_error(e, where) from None
        except (ValueError, OverflowError, OSError) as e:
            # Out-of-range values (e.g. an epoch time beyond year 9999) surface as these from the standard library.
            raise InvalidFieldError(f"invalid value: {e}", path=where) from None

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's commit request JSON as a dictionary."""
        out: dict[str, Any] = {"tableId": self.table_id, "transactionType": self.transaction_type.value}
        if self.body is not None:
            out["transaction"] = dict(self.body)
        else:
            out["bodyKey"] = self.body_key
        return out

    @classmethod
    def from_dict(cls, data: object) -> StateStoreCommitRequest:
        """Reads a parsed commit request message.

        Raises:
            MessageError: If it is not a valid commit request.
        """
        obj = wire.expect_object(data)
        wire.check_fields(obj, STATE_STORE_COMMIT_FIELDS)
        table_id = wire.required_str(obj, "tableId")
        type_name = wire.required_str(obj, "transactionType")
        try:
            ttype = TransactionType(type_name)
        except ValueError:
            known = ", ".join(t.value for t in TransactionType)
            raise InvalidFieldError(
                f"unknown transaction type {type_name!r}; expected one of {known}", path="$.transactionType"
            ) from None
        body = obj.get("transaction")
        body_key = obj.get("bodyKey")
        if body is not None and body_key is not None:
            raise InvalidFieldError("exactly one of transaction and bodyKey must be given", path="$")
        if body is None and body_key is None:
            raise MissingFieldError("one of transaction and bodyKey must be given", path="$.transaction")
        if body is not None:
            return cls(table_id=table_id, transaction_type=ttype, body=wire.expect_object(body, "$.transaction"))
        key = wire.string_value(body_key, "$.bodyKey")
        return cls(table_id=table_id, transaction_type=ttype, body_key=key)
