"""A table's transaction logs and snapshot records as S3 objects, with no DynamoDB (beyond Sleeper).

The layout is :mod:`sleeper.statestore.object_log`'s, in the data bucket. An append is a ``PutObject`` with
``If-None-Match: *`` on the next number's key: S3 writes it only if no object has that key, so two writers can never
both take a number (S3 answers 412 Precondition Failed to the loser, or 409 ConditionalRequestConflict while another
conditional write of the key is in flight; both are a collision here, as nothing was written). Reads list the keys
after a number (S3 lists are strongly consistent, in key order) and get each object.

A deleted table has a tombstone object outside its prefix. S3 has no transaction over two objects, so an append is
checked after it lands: if the table has a tombstone then, the appended entry is deleted again and the append is
refused (``TableDeletedError``). An append that lands after the tombstone is therefore always refused; one that
landed before it is deleted with the rest of the table, as on DynamoDB.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import AwsError, error_code, translate
from sleeper.adapters.aws.s3_transaction_bodies import S3TransactionBodyStore
from sleeper.core.jobs.commit import transaction_body_prefix
from sleeper.core.statestore.exceptions import TableDeletedError
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.object_log import (
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
    log_prefix,
    number_of,
    numbered_name,
    snapshot_records_prefix,
    tombstone_key,
)
from sleeper.statestore.ports import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    TransactionLogEntry,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["S3SnapshotMetadataStore", "S3StateStoreBackend", "S3TransactionLogStore"]

_COLLISION_CODES = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_DELETE_BATCH = 1000
_EVERY_TRANSACTION = 2**63 - 1


class _Bucket:
    """The few S3 calls the log makes, each translating botocore errors."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Writes an object only if none has its key; False if one has (or another conditional write is in flight)."""
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*", ContentType="application/json"
            )
        except ClientError as e:
            if error_code(e) in _COLLISION_CODES:
                return False
            raise translate(e, self._op("PutObject", key)) from e
        except BotoCoreError as e:
            raise translate(e, self._op("PutObject", key)) from e
        return True

    def put(self, key: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except (ClientError, BotoCoreError) as e:
            raise translate(e, self._op("PutObject", key)) from e

    def get(self, key: str) -> bytes | None:
        """An object's bytes, or None if there is none."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as e:
            if error_code(e) in _MISSING_CODES:
                return None
            raise translate(e, self._op("GetObject", key)) from e
        except BotoCoreError as e:
            raise translate(e, self._op("GetObject", key)) from e

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if error_code(e) in _MISSING_CODES:
                return False
            raise translate(e, self._op("HeadObject", key)) from e
        except BotoCoreError as e:
            raise translate(e, self._op("HeadObject", key)) from e
        return True

    def keys(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        """Keys under a prefix in key order, after a key if given, page by page as they are consumed."""
        request: dict[str, object] = {"Bucket": self.bucket, "Prefix": prefix}
        if start_after is not None:
            request["StartAfter"] = start_after
        while True:
            try:
                page = self.client.list_objects_v2(**request)  # type: ignore[arg-type]
            except (ClientError, BotoCoreError) as e:
                raise translate(e, self._op("ListObjectsV2", prefix)) from e
            for obj in page.get("Contents", []):
                yield obj["Key"]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            request["ContinuationToken"] = token

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            try:
                response = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
                )
            except (ClientError, BotoCoreError) as e:
                raise translate(e, self._op("DeleteObjects", batch[0])) from e
            errors = response.get("Errors", [])
            if errors:
                first = errors[0]
                raise AwsError(
                    self._op("DeleteObjects", first.get("Key", batch[0])),
                    first.get("Code", ""),
                    f"{first.get('Message', '')} ({len(errors)} objects not deleted)",
                )

    def _op(self, action: str, key: str) -> str:
        return f"{action} s3://{self.bucket}/{key}"


class S3TransactionLogStore:
    """One log of one table as objects in the data bucket. Implements ``sleeper.statestore.ports.TransactionLogStore``.

    Args:
        client: The S3 client.
        bucket: The data bucket.
        table_id: The table.
        log_type: Which of its logs.
    """

    def __init__(self, client: S3Client, bucket: str, table_id: str, log_type: LogType) -> None:
        self._s3 = _Bucket(client, bucket)
        self._table_id = table_id
        self._prefix = log_prefix(table_id, log_type)
        self._log_type = log_type

    def _key(self, number: int) -> str:
        return self._prefix + numbered_name(number)

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Writes the entry's object if no entry has its number, then refuses it if the table was deleted.

        The object holds the entry's transaction id: when botocore retries a put whose response was lost, the retry
        gets 412 on the put's own object, and the log head tells it from another writer's by the id.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists (nothing was written by this
                request; an earlier request of the same call, retried by botocore, may have written it).
            TableDeletedError: If the table has a tombstone; an entry written is deleted again.
            AwsError: If S3 fails otherwise (the entry may or may not have been written).
        """
        key = self._key(entry.transaction_number)
        if not self._s3.put_if_absent(key, encode_entry(entry)):
            if self._s3.exists(tombstone_key(self._table_id)):
                # The key may hold this very entry (botocore retried a put whose response was lost): refuse it as
                # any append to a deleted table is; deleting the table again removes what is left.
                raise TableDeletedError(
                    f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
                )
            raise DuplicateTransactionNumberError(
                f"table {self._table_id} already has transaction {entry.transaction_number} in its "
                f"{self._log_type.value} log (s3://{self._s3.bucket}/{key})"
            )
        if self._s3.exists(tombstone_key(self._table_id)):
            self._s3.delete([key])
            raise TableDeletedError(
                f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
            )

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order, listed and read as they are consumed.

        An entry deleted between the listing and its read (by transaction deletion) is skipped.

        Raises:
            AwsError: If S3 fails (raised while iterating).
        """
        start = self._key(transaction_number) if transaction_number >= 0 else None
        for key in self._s3.keys(self._prefix, start_after=start):
            data = self._s3.get(key)
            if data is None:
                continue
            yield decode_entry(data, where=f"s3://{self._s3.bucket}/{key}")

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed.

        Large bodies are left for the caller to delete.
        """
        removed: list[TransactionLogEntry] = []
        keys: list[str] = []
        for key in self._s3.keys(self._prefix):
            if number_of(key) > transaction_number:
                break
            data = self._s3.get(key)
            if data is None:
                continue
            removed.append(decode_entry(data, where=f"s3://{self._s3.bucket}/{key}"))
            keys.append(key)
        self._s3.delete(keys)
        return removed


class S3SnapshotMetadataStore:
    """Snapshot records of one table as objects, one per snapshot: the latest is the highest number.

    Implements ``sleeper.statestore.ports.SnapshotMetadataStore``. A record is written only if none has its number
    and none is at or beyond it when listed first, so the latest only moves forwards. Two creators racing with
    different numbers may both record theirs (each is a valid snapshot of its number); the higher is the latest.
    """

    def __init__(self, client: S3Client, bucket: str, table_id: str) -> None:
        self._s3 = _Bucket(client, bucket)
        self._table_id = table_id

    def _keys(self, log_type: LogType) -> list[str]:
        return list(self._s3.keys(snapshot_records_prefix(self._table_id, log_type)))

    def _read(self, key: str) -> SnapshotMetadata | None:
        data = self._s3.get(key)
        return None if data is None else decode_snapshot(data, where=f"s3://{self._s3.bucket}/{key}")

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        for key in reversed(self._keys(log_type)):
            found = self._read(key)
            if found is not None:
                return found
        return None

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot if the latest is behind it.

        Raises:
            SnapshotConflictError: If the latest is at or beyond its number.
        """
        keys = self._keys(snapshot.log_type)
        number = snapshot.transaction_number
        if keys and number_of(keys[-1]) >= number:
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction "
                f"{number_of(keys[-1])}, at or beyond {number}"
            )
        key = snapshot_records_prefix(self._table_id, snapshot.log_type) + numbered_name(number)
        if not self._s3.put_if_absent(key, encode_snapshot(snapshot)):
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction {number}"
            )

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        return [s for key in self._keys(log_type) if (s := self._read(key)) is not None]

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot; one not recorded is not an error.

        Raises:
            SnapshotConflictError: If it is the latest of its log.
        """
        keys = self._keys(snapshot.log_type)
        if keys and number_of(keys[-1]) == snapshot.transaction_number:
            raise SnapshotConflictError(
                f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot of table "
                f"{self._table_id}; it cannot be deleted"
            )
        self._s3.delete(
            [snapshot_records_prefix(self._table_id, snapshot.log_type) + numbered_name(snapshot.transaction_number)]
        )

    def delete_all(self) -> None:
        """Forgets every snapshot of the table, the latest ones included."""
        for log_type in LogType:
            self._s3.delete(self._keys(log_type))


class S3StateStoreBackend:
    """The state store of tables whose logs are S3 objects: logs, snapshot records and large bodies all in the data
    bucket. Implements ``sleeper.statestore.ports.StateStoreBackend``.

    Args:
        client: The S3 client.
        data_bucket: The instance's data bucket.
    """

    def __init__(self, client: S3Client, data_bucket: str) -> None:
        self._client = client
        self._bucket = data_bucket

    def transaction_log(self, table_id: str, log_type: LogType) -> S3TransactionLogStore:
        """The log of a table."""
        return S3TransactionLogStore(self._client, self._bucket, table_id, log_type)

    def body_store(self, table_id: str) -> S3TransactionBodyStore:
        """The large-body store: the data bucket (keys start with the table id)."""
        return S3TransactionBodyStore(self._client, self._bucket)

    def snapshot_metadata(self, table_id: str) -> S3SnapshotMetadataStore:
        """The snapshot records of a table."""
        return S3SnapshotMetadataStore(self._client, self._bucket, table_id)

    def delete_table(self, table_id: str) -> None:
        """Writes the table's tombstone (from then on its appends are refused), then deletes its log entries with
        their large bodies, every body under its ``statestore/transactions/``, and its snapshot records.

        Raises:
            AwsError: If S3 fails; calling again finishes.
        """
        bucket = _Bucket(self._client, self._bucket)
        bucket.put(tombstone_key(table_id), datetime.now(tz=UTC).isoformat().encode())
        bodies = self.body_store(table_id)
        for log_type in LogType:
            for entry in self.transaction_log(table_id, log_type).delete_transactions_at_or_before(_EVERY_TRANSACTION):
                if entry.body_key is not None:
                    bodies.delete(entry.body_key)
        bodies.delete_under(transaction_body_prefix(table_id))
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether the table has a tombstone."""
        return _Bucket(self._client, self._bucket).exists(tombstone_key(table_id))
