"""A writer process of the log head concurrency test: adds files to one table through its own log head.

Kept out of the test module so ``multiprocessing`` can import it by name in a spawned process.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client, s3_client
from sleeper.adapters.aws.dynamodb_transaction_log import DynamoDBTransactionLogStore
from sleeper.adapters.aws.s3_transaction_bodies import S3TransactionBodyStore
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.serde import TransactionSerDe
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.log_head import FilesLogHead, StateStoreSettings

REGION = "eu-west-2"
SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)])

_start: Barrier | None = None


@dataclass(frozen=True, slots=True)
class HeadWriterResult:
    """What one writer did, and what its head saw at the end.

    Attributes:
        writer: The writer's number.
        numbers: The transaction number each of its transactions got, in the order it wrote them.
        collisions: How many attempts found the number taken by another writer.
        exhausted: How many times the head gave up after its attempts and the writer tried again.
        final_files: Every file in the head's state after a last update once every writer finished, with its row
            count.
        final_number: The head's last transaction number after that update.
    """

    writer: int
    numbers: list[int]
    collisions: int
    exhausted: int
    final_files: dict[str, int]
    final_number: int


def wait_together(barrier: Barrier) -> None:
    """Pool initializer: every writer waits at this barrier before its first write, so they all race, and again
    after its last, so its final update sees everyone's writes."""
    global _start
    _start = barrier


def filename(writer: int, sequence: int) -> str:
    """The data file a writer adds as its transaction number ``sequence``."""
    return f"s3a://sleeper-data/table-a/data/partition_root/{writer}-{sequence}.parquet"


def files_head(endpoint: str, table_name: str, bucket: str, table_id: str, jitter_seed: int) -> FilesLogHead:
    """A files log head on the moto server, validating against its local state before reading the log (as the
    committer does), with short retry waits so the test runs quickly."""
    settings = AwsSettings(REGION, endpoint, access_key_id="testing", secret_access_key="testing")
    return FilesLogHead(
        table_id=table_id,
        log_store=DynamoDBTransactionLogStore(dynamodb_client(settings), table_name, table_id),
        body_store=S3TransactionBodyStore(s3_client(settings), bucket),
        serde=TransactionSerDe(SCHEMA),
        settings=StateStoreSettings(
            update_log_before_add=False, first_retry_wait_ceiling_seconds=0.02, max_retry_wait_ceiling_seconds=0.5
        ),
        jitter=random.Random(jitter_seed).random,
    )


def files_of(head: FilesLogHead) -> dict[str, int]:
    """Every file in a head's state with its total row count."""
    return {file.filename: file.total_rows for file in head.state.files()}


def add_files(endpoint: str, table_name: str, bucket: str, table_id: str, writer: int, count: int) -> HeadWriterResult:
    """Adds ``count`` files, one ADD_FILES transaction each, retrying when the head gives up."""
    head = files_head(endpoint, table_name, bucket, table_id, writer)
    numbers: list[int] = []
    collisions = 0
    exhausted = 0
    if _start is not None:
        _start.wait()
    for sequence in range(count):
        reference = FileReference(filename=filename(writer, sequence), partition_id="root", number_of_rows=sequence + 1)
        transaction = AddFilesTransaction.of_references([reference])
        while True:
            try:
                result = head.add_transaction(transaction)
            except AddTransactionRetriesExhaustedError:
                exhausted += 1
                continue
            break
        numbers.append(result.transaction_number)
        collisions += result.collisions
    if _start is not None:
        # Once every writer has finished, the head must catch up with all of them.
        _start.wait()
    head.force_update()
    return HeadWriterResult(writer, numbers, collisions, exhausted, files_of(head), head.last_transaction_number)
