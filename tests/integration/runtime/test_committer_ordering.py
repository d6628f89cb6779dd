"""A7 committer ordering and throughput (docs/reliability.md), on the local runtime.

ADD_FILES commit requests go through the state store committer's FIFO queue (grouped by table, as Sleeper's), one table
and spread over 10 tables, every 25th with a body over 200 KiB (1,200 references), which the sender stores in the
table's transaction body store and the message names by key. Two committer workers drain the queue at once. Each
table's files log must hold its requests in the order they were sent, each once, the large ones pointing at their
stored body; the figures are commits/s and files/s (Sleeper's floors, >50 commits/s on one table and >20/s per table
across tables, are for AWS: N tier). CI sends 200 requests; the nightly profile (``SLEEPER_NIGHTLY=1``) 1,000.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sleeper.core.operations import STATE_STORE_COMMITTER_Q
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import LocalRunner
from sleeper.statestore.committer import send_transaction
from tests.integration.runtime.crash_harness import SCHEMA
from tests.reliability_report import NIGHTLY, Reliability

pytestmark = pytest.mark.integration

REQUESTS = 1000 if NIGHTLY else 200
LARGE_EVERY = 25
LARGE_REFERENCES = 1200


@pytest.mark.parametrize("tables", [1, 10])
def should_apply_each_tables_commit_requests_once_in_the_order_sent(
    tmp_path: Path, tables: int, reliability: Reliability
) -> None:
    # Given tables of a local instance, and commit requests sent to the committer's queue, some with large bodies
    instance = LocalInstance.create(tmp_path / "instance")
    names = [f"t{n}" for n in range(tables)]
    for name in names:
        instance.create_table(name, SCHEMA)
    stores = {name: instance.table(name).state_store for name in names}
    prefixes = {name: instance.table(name).data_prefix.rstrip("/") for name in names}
    queue = instance.queue(STATE_STORE_COMMITTER_Q)
    sent: dict[str, list[str]] = {name: [] for name in names}
    large = 0
    files = 0
    for n in range(REQUESTS):
        name = names[n % tables]
        count = LARGE_REFERENCES if n % LARGE_EVERY == LARGE_EVERY - 1 else 1
        references = [
            FileReference(
                filename=f"{prefixes[name]}/data/partition_root/request-{n:05d}-file-{k:04d}.parquet",
                partition_id="root",
                number_of_rows=k + 1,
            )
            for k in range(count)
        ]
        request = send_transaction(queue, stores[name], AddFilesTransaction.of_references(references))
        large += request.body_key is not None
        files += count
        sent[name].append(references[0].filename)
    assert large == REQUESTS // LARGE_EVERY
    # When two committer workers drain the queue at once
    handlers = default_handlers()
    start = threading.Barrier(2)

    def worker() -> None:
        runner = LocalRunner(LocalInstance(instance.directory), handlers)
        start.wait()
        runner.drain(STATE_STORE_COMMITTER_Q)

    began = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    # Then each table's log holds its requests once, in the order sent, the large ones pointing at their stored body
    out_of_order, lost, duplicated, from_body_store = log_order(instance, names, stores, sent)
    assert instance.queue(STATE_STORE_COMMITTER_Q).approximate_counts().visible == 0
    reliability.record(
        "A7",
        tables=tables,
        requests=REQUESTS,
        large_bodies=large,
        large_bodies_from_store=from_body_store,
        files=files,
        workers=2,
        seconds=round(seconds, 2),
        commits_per_s=round(REQUESTS / seconds, 1),
        files_per_s=round(files / seconds, 1),
        tables_out_of_order=out_of_order,
        rows_lost=lost,
        rows_duplicated=duplicated,
        unhandled_exceptions=0,
    )
    assert (lost, duplicated, out_of_order) == (0, 0, 0)
    assert from_body_store == large


def log_order(
    instance: Any, names: Sequence[str], stores: Mapping[str, Any], sent: Mapping[str, list[str]]
) -> tuple[int, int, int, int]:
    """Reads each table's files log and compares it with the first file of each request sent, in order: returns the
    tables out of order, the requests lost and applied twice, and the entries whose body came from the body store."""
    out_of_order = lost = duplicated = from_body_store = 0
    for name in names:
        table_id = instance.table(name).table_id
        entries = list(instance.state_store_backend.transaction_log(table_id, LogType.FILES).read_transactions_after(0))
        firsts: list[str] = []
        for entry in entries:
            body = entry.body
            if body is None:
                from_body_store += 1
                body = stores[name].body_store.load(entry.body_key or "")
            firsts.append(json.loads(body)["files"][0]["filename"])
        lost += len(set(sent[name]) - set(firsts))
        duplicated += len(firsts) - len(set(firsts))
        out_of_order += int([f for f in firsts if f in set(sent[name])] != sent[name])
    return out_of_order, lost, duplicated, from_body_store
