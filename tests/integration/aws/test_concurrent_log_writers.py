"""Processes appending straight to one table's transaction log in DynamoDB (a moto server) lose and repeat nothing.

This checks the store's conditional append on its own; test_concurrent_log_heads.py runs the full-size race through
the log head.
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter

import pytest

from sleeper.core.statestore.transactions.log import LogType
from tests.contract.aws_backends import AwsStateStore, moto_endpoint
from tests.integration.aws._log_writer import append_transactions, wait_together
from tests.integration.aws.moto_atomic import atomic_moto_transactions  # noqa: F401 - a fixture
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws]

WRITERS = 4
TRANSACTIONS_PER_WRITER = 50


@pytest.mark.usefixtures("atomic_moto_transactions")  # moto alone is not atomic: see moto_guards
def should_number_every_transaction_of_concurrent_writers_once_and_contiguously(
    aws_state_store: AwsStateStore, reliability: Reliability
) -> None:
    # Given one table's files log, shared by writer processes that start writing together
    table_name = aws_state_store.table_names.files_log
    arguments = [(moto_endpoint(), table_name, "table-a", writer, TRANSACTIONS_PER_WRITER) for writer in range(WRITERS)]
    context = multiprocessing.get_context("spawn")
    # When every writer appends its transactions at the same time
    with context.Pool(WRITERS, initializer=wait_together, initargs=(context.Barrier(WRITERS),)) as pool:
        results = pool.starmap(append_transactions, arguments, chunksize=1)
    # Then the writers did collide: all of them first tried number 1
    assert sum(result.collisions for result in results) >= WRITERS - 1
    # And the log numbers every transaction exactly once, from 1 with no gaps
    total = WRITERS * TRANSACTIONS_PER_WRITER
    entries = list(aws_state_store.backend.transaction_log("table-a", LogType.FILES).read_transactions_after(0))
    assert [entry.transaction_number for entry in entries] == list(range(1, total + 1))
    written = Counter((body["writer"], body["sequence"]) for body in (json.loads(e.body or "") for e in entries))
    assert written == Counter({(w, s): 1 for w in range(WRITERS) for s in range(TRANSACTIONS_PER_WRITER)})
    # And each writer's transactions are at the numbers it was told it got, in its own order
    for result in results:
        bodies = [json.loads(entries[number - 1].body or "") for number in result.numbers]
        assert bodies == [{"writer": result.writer, "sequence": s} for s in range(TRANSACTIONS_PER_WRITER)]
    reliability.record(
        "A1",
        backend="dynamodb-moto",
        kind="processes, direct conditional appends",
        writers=WRITERS,
        commits=total,
        collisions=sum(r.collisions for r in results),
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
