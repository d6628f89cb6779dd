"""The AWS state store backend: transaction logs and snapshot records in DynamoDB, large bodies in S3."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sleeper.adapters.aws.dynamodb_snapshots import DynamoDBSnapshotMetadataStore
from sleeper.adapters.aws.dynamodb_transaction_log import DynamoDBTransactionLogStore, has_tombstone, write_tombstone
from sleeper.adapters.aws.s3_transaction_bodies import S3TransactionBodyStore
from sleeper.core import StateStoreTableNames
from sleeper.core.jobs import transaction_body_prefix
from sleeper.core.statestore.transactions import LogType

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_EVERY_TRANSACTION = 2**63 - 1


class DynamoDBStateStoreBackend:
    """Builds the DynamoDB and S3 ports of the state store of any table in an instance.

    Implements ``sleeper.statestore.ports.StateStoreBackend``.
    """

    def __init__(
        self, dynamodb: DynamoDBClient, s3: S3Client, *, table_names: StateStoreTableNames, data_bucket: str
    ) -> None:
        """Creates the backend.

        Args:
            dynamodb: The DynamoDB client.
            s3: The S3 client.
            table_names: The DynamoDB tables of the instance's state store.
            data_bucket: The instance's data bucket, where large transaction bodies are kept.
        """
        self._dynamodb = dynamodb
        self._s3 = s3
        self._table_names = table_names
        self._data_bucket = data_bucket

    @classmethod
    def for_instance(
        cls, dynamodb: DynamoDBClient, s3: S3Client, *, instance_id: str, data_bucket: str
    ) -> DynamoDBStateStoreBackend:
        """The backend of an instance, with the DynamoDB table names Sleeper gives it."""
        return cls(dynamodb, s3, table_names=StateStoreTableNames.for_instance(instance_id), data_bucket=data_bucket)

    @property
    def table_names(self) -> StateStoreTableNames:
        """The DynamoDB tables this backend uses."""
        return self._table_names

    def transaction_log(self, table_id: str, log_type: LogType) -> DynamoDBTransactionLogStore:
        """The log of a table (its appends are refused once the table is deleted)."""
        name = self._table_names.files_log if log_type is LogType.FILES else self._table_names.partitions_log
        return DynamoDBTransactionLogStore(
            self._dynamodb, name, table_id, tombstone_table=self._table_names.partitions_log
        )

    def body_store(self, table_id: str) -> S3TransactionBodyStore:
        """The large-body store of a table: the data bucket (keys start with the table id)."""
        return S3TransactionBodyStore(self._s3, self._data_bucket)

    def snapshot_metadata(self, table_id: str) -> DynamoDBSnapshotMetadataStore:
        """The snapshot records of a table."""
        return DynamoDBSnapshotMetadataStore(
            self._dynamodb,
            latest_table=self._table_names.latest_snapshots,
            all_table=self._table_names.all_snapshots,
            table_id=table_id,
        )

    def delete_table(self, table_id: str) -> None:
        """Marks a table deleted with a tombstone (its logs refuse every later append), then removes every log entry
        and snapshot record of it, and its large bodies.

        The bodies removed are those the entries point at, and every object under
        ``<table id>/statestore/transactions/`` (bodies uploaded for transactions that never reached the log).
        Snapshot files and data files are left to the table deletion that owns the rest of the table's prefix.

        Raises:
            AwsError: If DynamoDB or S3 fails; what was deleted by then stays deleted, and calling again finishes.
        """
        write_tombstone(self._dynamodb, self._table_names.partitions_log, table_id, datetime.now(tz=UTC))
        bodies = self.body_store(table_id)
        for log_type in LogType:
            log = self.transaction_log(table_id, log_type)
            # Bodies go before the entries pointing at them, so a failed deletion can be finished by calling again.
            for entry in log.read_transactions_after(0):
                if entry.body_key is not None:
                    bodies.delete(entry.body_key)
            log.delete_transactions_at_or_before(_EVERY_TRANSACTION)
        bodies.delete_under(transaction_body_prefix(table_id))
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether a table was deleted (it has a tombstone; read consistently).

        Raises:
            AwsError: If DynamoDB fails.
        """
        return has_tombstone(self._dynamodb, self._table_names.partitions_log, table_id)
