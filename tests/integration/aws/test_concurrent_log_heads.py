"""Many processes adding files to one table through their own log heads, on DynamoDB (a moto server)."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter

import pytest

from sleeper.core.statestore.transactions.log import LogType
from tests.contract.aws_backends import AwsStateStore, moto_endpoint
from tests.integration.aws._log_head_writer import add_files, filename, files_head, files_of, wait_together
from tests.integration.aws.moto_atomic import atomic_moto_transactions  # noqa: F401 - a fixture
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws, pytest.mark.slow]

WRITERS = 8
TRANSACTIONS_PER_WRITER = 200


@pytest.mark.usefixtures("atomic_moto_transactions")  # moto alone is not atomic: see moto_guards
def should_add_every_file_of_concurrent_log_heads_exactly_once(
    aws_state_store: AwsStateStore, reliability: Reliability
) -> None:
    # Given one table's files log, shared by writer processes with a log head each, that start writing together
    table_name = aws_state_store.table_names.files_log
    bucket = aws_state_store.data_bucket
    arguments = [
        (moto_endpoint(), table_name, bucket, "table-a", writer, TRANSACTIONS_PER_WRITER) for writer in range(WRITERS)
    ]
    context = multiprocessing.get_context("spawn")
    # When every writer adds its files at the same time
    with context.Pool(WRITERS, initializer=wait_together, initargs=(context.Barrier(WRITERS),)) as pool:
        results = pool.starmap(add_files, arguments, chunksize=1)
    # Then the writers did collide
    assert sum(result.collisions for result in results) >= WRITERS - 1
    # And the log holds one transaction per file, numbered from 1 with no gaps
    total = WRITERS * TRANSACTIONS_PER_WRITER
    entries = list(aws_state_store.backend.transaction_log("table-a", LogType.FILES).read_transactions_after(0))
    assert [entry.transaction_number for entry in entries] == list(range(1, total + 1))
    logged = Counter(file["filename"] for entry in entries for file in json.loads(entry.body or "")["files"])
    expected = {filename(w, s): s + 1 for w in range(WRITERS) for s in range(TRANSACTIONS_PER_WRITER)}
    assert logged == Counter(dict.fromkeys(expected, 1))
    # And every head, and a new head reading the whole log, reach the same state with every file once
    reader = files_head(moto_endpoint(), table_name, bucket, "table-a", jitter_seed=0)
    reader.force_update()
    assert files_of(reader) == expected
    for result in results:
        assert result.final_files == expected
        assert result.final_number == total
        # And each writer's files are at the numbers its head reported
        assert [json.loads(entries[n - 1].body or "")["files"][0]["filename"] for n in result.numbers] == [
            filename(result.writer, s) for s in range(TRANSACTIONS_PER_WRITER)
        ]
    reliability.record(
        "A1",
        backend="dynamodb-moto",
        kind="processes, log heads",
        writers=WRITERS,
        commits=total,
        collisions=sum(r.collisions for r in results),
        exhausted_retries=sum(r.exhausted for r in results),
        rows_lost=0,
        rows_duplicated=0,
        unhandled_exceptions=0,
    )
