"""Transaction bodies of any type as Sleeper's JSON, for one table schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sleeper.core.exceptions import SerDeError
from sleeper.core.schema import Schema
from sleeper.core.statestore.transactions.files import FILE_TRANSACTIONS, FileTransaction
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.statestore.transactions.partitions import PARTITION_TRANSACTIONS, PartitionTransaction

Transaction = FileTransaction | PartitionTransaction


def log_type_of(transaction_type: TransactionType) -> LogType:
    """Which log a transaction type belongs to."""
    return LogType.FILES if transaction_type in FILE_TRANSACTIONS else LogType.PARTITIONS


@dataclass(frozen=True, slots=True)
class TransactionSerDe:
    """Reads and writes transaction bodies as Sleeper's JSON, for one table schema."""

    schema: Schema
    _indent: int | None = field(default=None)

    def to_dict(self, transaction: Transaction) -> dict[str, Any]:
        """The transaction's JSON body as a dictionary."""
        if isinstance(transaction, FileTransaction):
            return transaction.to_dict()
        return transaction.to_dict(self.schema)

    def to_json(self, transaction: Transaction) -> str:
        """The transaction's JSON body."""
        return json.dumps(self.to_dict(transaction), indent=self._indent, separators=(",", ":"))

    def from_json(self, transaction_type: TransactionType | str, body: str) -> Transaction:
        """Reads a transaction body of a given type.

        Raises:
            SerDeError: If the type is unknown or the body is not valid; the message names the bad path.
        """
        try:
            data = json.loads(body)
        except json.JSONDecodeError as e:
            raise SerDeError(f"transaction body is not valid JSON: {e}") from None
        return self.from_dict(transaction_type, data)

    def from_dict(self, transaction_type: TransactionType | str, data: object) -> Transaction:
        """Reads a parsed transaction body of a given type."""
        try:
            ttype = TransactionType(transaction_type)
        except ValueError:
            raise SerDeError(f"unknown transaction type {transaction_type!r}") from None
        if not isinstance(data, Mapping):
            raise SerDeError(f"{ttype.value} body must be an object")
        if ttype in FILE_TRANSACTIONS:
            return FILE_TRANSACTIONS[ttype].from_dict(data)
        return PARTITION_TRANSACTIONS[ttype].from_dict(self.schema, data)
