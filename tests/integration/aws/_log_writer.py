"""A writer process of the concurrency test: appends transactions to one table's log, racing other writers.

Kept out of the test module so ``multiprocessing`` can import it by name in a spawned process.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client
from sleeper.adapters.aws.dynamodb_transaction_log import DynamoDBTransactionLogStore
from sleeper.core.statestore.transactions.log import TransactionType
from sleeper.statestore.ports import DuplicateTransactionNumberError, TransactionLogEntry

REGION = "eu-west-2"
BACKOFF_CEILING_SECONDS = 0.02
BACKOFF_LIMIT_SECONDS = 0.5

_start: Barrier | None = None


@dataclass(frozen=True, slots=True)
class WriterResult:
    """What one writer did.

    Attributes:
        writer: The writer's number.
        numbers: The transaction number each of its transactions got, in the order it wrote them.
        collisions: How many times another writer had taken the number it tried.
    """

    writer: int
    numbers: list[int]
    collisions: int


def wait_together(barrier: Barrier) -> None:
    """Pool initializer: every writer waits at this barrier before its first write, so they all race."""
    global _start
    _start = barrier


def append_transactions(endpoint: str, table_name: str, table_id: str, writer: int, count: int) -> WriterResult:
    """Appends ``count`` transactions, each numbered one past the last this writer has seen.

    As the log head does, a writer first tries the number after the last it knows; on a collision it backs
    off with full jitter, catches up with the log, and tries the next number.
    """
    settings = AwsSettings(REGION, endpoint, access_key_id="testing", secret_access_key="testing")
    log = DynamoDBTransactionLogStore(dynamodb_client(settings), table_name, table_id)
    jitter = random.Random(writer)
    last_seen = 0
    numbers: list[int] = []
    collisions = 0
    if _start is not None:
        _start.wait()
    for sequence in range(count):
        body = json.dumps({"writer": writer, "sequence": sequence})
        attempt = 0
        while True:
            entry = TransactionLogEntry(
                transaction_number=last_seen + 1,
                update_time=datetime.now(UTC),
                transaction_type=TransactionType.CLEAR_FILES,
                body=body,
            )
            try:
                log.add_transaction(entry)
            except DuplicateTransactionNumberError:
                collisions += 1
                attempt += 1
                time.sleep(jitter.uniform(0, min(BACKOFF_CEILING_SECONDS * 2**attempt, BACKOFF_LIMIT_SECONDS)))
                for seen in log.read_transactions_after(last_seen):
                    last_seen = seen.transaction_number
                continue
            last_seen = entry.transaction_number
            numbers.append(last_seen)
            break
    return WriterResult(writer, numbers, collisions)
