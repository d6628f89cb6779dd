"""8 writers racing their commits on one table's object log (S3TransactionLogStateStore), every commit numbered once,
contiguously, with nothing lost or doubled: on the local filesystem 8 writer processes x 200 commits; on S3 (writer
threads on the moto server) 8 x 50 in CI and 8 x 200 in the nightly profile (moto's S3 makes each commit cost about
a tenth of a second there, so the full size alone took over two minutes)."""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.ports import StateStoreBackend
from sleeper.statestore.store import StateStore
from tests.integration.statestore._object_log_writer import add_files_to_file_log, wait_together
from tests.integration.statestore._sqlite_log_writer import SCHEMA, WriterResult, add_files_to, filename
from tests.reliability_report import NIGHTLY

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WRITERS = 8
TRANSACTIONS_PER_WRITER = 200
S3_TRANSACTIONS_PER_WRITER = 200 if NIGHTLY else 50
TABLE = "0a1b2c3d"
SETTINGS = StateStoreSettings(
    max_add_attempts=50, first_retry_wait_ceiling_seconds=0.002, max_retry_wait_ceiling_seconds=0.05
)


def _check(backend: StateStoreBackend, results: list[WriterResult], per_writer: int = TRANSACTIONS_PER_WRITER) -> None:
    # The writers did collide
    assert max(a for r in results for a in r.attempts) > 1
    # The log numbers the commits 1..n with no gap
    total = WRITERS * per_writer
    entries = list(backend.transaction_log(TABLE, LogType.FILES).read_transactions_after(0))
    assert [e.transaction_number for e in entries] == list(range(1, total + 1))
    # Every file is in exactly one entry, at the number its writer was told
    in_log = Counter(f["filename"] for e in entries for f in json.loads(e.body or "{}")["files"])
    expected = {filename(w, s) for w in range(WRITERS) for s in range(per_writer)}
    assert set(in_log) == expected and set(in_log.values()) == {1}
    for r in results:
        told = [json.loads(entries[n - 1].body or "{}")["files"][0]["filename"] for n in r.numbers]
        assert told == [filename(r.writer, s) for s in range(per_writer)]
    # A new reader's state holds every file once
    state = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend).files_state()
    assert {f.filename for f in state.files()} == expected


def should_number_every_commit_of_writer_processes_on_the_file_log_once(tmp_path: Path) -> None:
    # Given one table's file log shared by 8 writer processes that start together
    from sleeper.adapters.local.file_log import FileStateStoreBackend

    root = tmp_path / "data"
    StateStore(schema=SCHEMA, table_id=TABLE, backend=FileStateStoreBackend(root)).initialise()
    context = multiprocessing.get_context("spawn")
    arguments = [(str(root), TABLE, w, TRANSACTIONS_PER_WRITER, SETTINGS) for w in range(WRITERS)]
    # When every writer adds its files at the same time
    with context.Pool(WRITERS, initializer=wait_together, initargs=(context.Barrier(WRITERS),)) as pool:
        results = pool.starmap(add_files_to_file_log, arguments, chunksize=1)
    # Then every commit is numbered once, contiguously, where its writer was told
    _check(FileStateStoreBackend(root), results)


@pytest.mark.aws
def should_number_every_commit_of_writers_on_the_s3_log_once() -> None:
    # Given one table's S3 log (on the moto server) shared by 8 writer threads that start together
    aws_backends = pytest.importorskip("tests.contract.aws_backends")
    backend = aws_backends.make_s3_state_store_backend(Path("."))
    StateStore(schema=SCHEMA, table_id=TABLE, backend=backend).initialise()
    start = threading.Barrier(WRITERS)
    # When every writer adds its files at the same time
    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [
            pool.submit(add_files_to, backend, TABLE, w, S3_TRANSACTIONS_PER_WRITER, SETTINGS, start)
            for w in range(WRITERS)
        ]
        results = [f.result() for f in futures]
    # Then every commit is numbered once, contiguously, where its writer was told
    _check(backend, results, S3_TRANSACTIONS_PER_WRITER)
