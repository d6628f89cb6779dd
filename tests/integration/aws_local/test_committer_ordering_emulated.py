"""A7 committer ordering (docs/reliability.md) on the emulated AWS instance: the local runtime's test
(``tests/integration/runtime/test_committer_ordering.py``) with the queue, the logs and the body store on moto.

ADD_FILES commit requests go to the state store committer's FIFO queue (SQS on moto, grouped by table) for one table
and spread over 3 tables, every 25th with a body over 200 KiB (1,200 references), which the sender stores in the
table's transaction body store (S3) and the message names by key. Two pumps of the committer's handler deliver the
queue at once, as two concurrent invocations of the committer Lambda would: each receives batches of up to 10, and a
message group in flight with one is not delivered to the other (SQS's FIFO rule, which moto keeps). The emulator runs
one function body at a time in its process (``sleeper.emulator.functions``: the process has one environment), so the
two consumers interleave their receives, handler runs and deletes but not two handler bodies. Each table's files log
(DynamoDB) must hold its requests in the order sent, each once, the large ones pointing at their stored body. CI sends
100 requests (moto applied 6-11 commits/s on a busy 2-core machine); the nightly profile (``SLEEPER_NIGHTLY=1``) the
local test's 1,000.

moto's SQS is not atomic where SQS is (see ``atomic_moto_queues`` in ``tests/integration/aws/moto_atomic.py``): run
as is, two consumers took messages of one group at once and 2 of 3 tables' requests were applied out of order, so the
test serialises each queue's receives and deletes as SQS's own FIFO rule does.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from sleeper.core.operations import STATE_STORE_COMMITTER_Q, STATESTORE_COMMITTER
from sleeper.core.operations import handler as registry_handler
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.emulator.rounds import PumpRound
from sleeper.statestore.committer import send_transaction
from tests.integration.aws.moto_atomic import atomic_moto_queues  # noqa: F401 - a fixture
from tests.integration.runtime.crash_harness import SCHEMA
from tests.integration.runtime.test_committer_ordering import LARGE_EVERY, LARGE_REFERENCES, log_order
from tests.reliability_report import NIGHTLY, Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws, pytest.mark.slow, pytest.mark.usefixtures("atomic_moto_queues")]

REQUESTS = 1000 if NIGHTLY else 100
CONSUMERS = 2


def _consume(pump: Pump, emulated: EmulatedAwsInstance, start: threading.Barrier, total: PumpRound) -> None:
    """One consumer: delivers rounds until the committer's queue holds nothing, visible or in flight."""
    queue = emulated.instance().queue(STATE_STORE_COMMITTER_Q)
    start.wait()
    while True:
        total.add(pump.deliver(STATESTORE_COMMITTER))
        if queue.approximate_counts() == (0, 0):
            return


@pytest.mark.parametrize("tables", [1, 3])
def should_apply_each_tables_commit_requests_once_in_the_order_sent_on_the_emulated_instance(
    emulated: EmulatedAwsInstance, tables: int, reliability: Reliability
) -> None:
    # Given tables of the emulated instance, and commit requests sent to the committer's queue, some with large bodies
    instance = emulated.instance()
    run = uuid.uuid4().hex[:8]
    names = [f"a7-{run}-{n}" for n in range(tables)]
    for name in names:
        instance.create_table(name, SCHEMA)
    stores = {name: instance.table(name).state_store for name in names}
    prefixes = {name: instance.table(name).data_prefix.rstrip("/") for name in names}
    queue = instance.queue(STATE_STORE_COMMITTER_Q)
    sent: dict[str, list[str]] = {name: [] for name in names}
    large = files = 0
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
    # When two pumps of the committer's handler deliver the queue at once
    spec = registry_handler(STATESTORE_COMMITTER)
    pumps = [emulated.pump(handlers=(spec,), containers=()) for _ in range(CONSUMERS)]
    totals = [PumpRound() for _ in range(CONSUMERS)]
    start = threading.Barrier(CONSUMERS)
    threads = [
        threading.Thread(target=_consume, args=(pump, emulated, start, total))
        for pump, total in zip(pumps, totals, strict=True)
    ]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    # Then each table's log holds its requests once, in the order sent, the large ones pointing at their stored body
    out_of_order, lost, duplicated, from_body_store = log_order(instance, names, stores, sent)
    delivered = [total.delivered.get(STATESTORE_COMMITTER, 0) for total in totals]
    failed = sum(total.failed.get(STATESTORE_COMMITTER, 0) for total in totals)
    dead_lettered = instance.dead_letter_queue(STATE_STORE_COMMITTER_Q).approximate_counts().visible
    reliability.record(
        "A7",
        backend="emulated",
        tables=tables,
        requests=REQUESTS,
        large_bodies=large,
        large_bodies_from_store=from_body_store,
        files=files,
        workers=CONSUMERS,
        delivered_per_worker=delivered,
        deliveries_failed=failed,
        dead_lettered=dead_lettered,
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
    assert dead_lettered == 0
    assert queue.approximate_counts() == (0, 0)
