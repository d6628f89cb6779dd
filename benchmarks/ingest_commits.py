"""Benchmark: ingest commits per second with 1, 8 and 64 concurrent ingest jobs on a local instance.

Each job ingests one small Parquet file (``--rows`` rows, default 100) into one table, so its time is mostly its
commit. ``--jobs`` jobs (default 128) are shared among N worker processes (1, 8 or 64), all forked after the imports
and started together; a worker runs its share one after another with :class:`sleeper.ingest.IngestJobRunner`.

- ``sync``: ``sleeper.table.ingest.job.files.commit.async=false``: each job adds its ADD_FILES to the log itself, a
  conditional append on the next transaction number, retried with backoff when another writer got there first
  (at most ``sleeper.table.statestore.transactionlog.add.transaction.max.attempts``, 10).
- ``async``: each job sends its ADD_FILES to the state store committer's queue, and one committer process (a FIFO
  queue lets one consumer handle a table at a time) applies them as the local runner does
  (:func:`sleeper.statestore.committer.handle_commit_request` per message), from the start.

Reported: the wall time from the start until every job's files are in the table (or its job failed), commits/s
(ADD_FILES landed per second), jobs failed, and for ``async`` the committer's own rate (requests applied per second
of its busy time). Every run checks that the table holds each finished job's rows once (the ADD_FILES count equals
the jobs that finished, and the rows equal their rows).

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/ingest_commits.py [--jobs 128] [--workers 1,8,64] [--rows 100]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from sleeper.core.jobs.ingest import IngestJob  # noqa: E402
from sleeper.core.operations import STATE_STORE_COMMITTER_Q  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.transactions.log import LogType, TransactionType  # noqa: E402
from sleeper.core.trackers.runs import JobOutcome  # noqa: E402
from sleeper.ingest import IngestJobRunner  # noqa: E402
from sleeper.statestore.committer import handle_commit_request  # noqa: E402

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _worker(directory: str, jobs: list[tuple[str, str]], go: Any, results: Any) -> None:
    instance = sleeper.connect(Path(directory)).runtime
    runner = IngestJobRunner(instance, local_dir=Path(directory) / "tmp" / f"w-{jobs[0][0]}")
    go.wait()
    finished = failed = 0
    reasons: list[str] = []
    for job_id, path in jobs:
        outcome = runner.run(IngestJob(id=job_id, table_name="t", files=(path,)))
        if outcome.outcome is JobOutcome.FINISHED:
            finished += 1
        else:
            failed += 1
            reasons.extend(outcome.reasons[:1])
    results.put((finished, failed, reasons[:3], time.perf_counter()))


def _committer(directory: str, expected: Any, go: Any, results: Any) -> None:
    instance = sleeper.connect(Path(directory)).runtime
    queue = instance.queue(STATE_STORE_COMMITTER_Q)
    go.wait()
    applied = 0
    busy = 0.0
    while applied < expected.value or expected.value < 0:
        messages = queue.receive(10)
        if not messages:
            time.sleep(0.002)
            continue
        start = time.perf_counter()
        for message in messages:
            handle_commit_request(instance, message.body)
            queue.delete(message.receipt_handle)
            applied += 1
        busy += time.perf_counter() - start
    results.put(("committer", applied, busy, time.perf_counter()))


def run_case(mode: str, workers: int, jobs: int, rows: int, base: Path) -> dict[str, Any]:
    directory = base / f"{mode}-{workers}"
    instance = sleeper.connect(directory, create=True).runtime
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={"sleeper.table.ingest.job.files.commit.async": "true" if mode == "async" else "false"},
    )
    inputs = directory / "inputs"
    inputs.mkdir()
    paths = []
    for i in range(jobs):
        path = inputs / f"job-{i:04d}.parquet"
        keys = pa.array(range(i * rows, (i + 1) * rows), type=pa.int64())
        pq.write_table(pa.table({"key": keys, "value": keys}), path)
        paths.append((f"job-{i:04d}", str(path)))
    shares = [paths[w::workers] for w in range(workers)]
    ctx = mp.get_context("fork")
    go = ctx.Event()
    results = ctx.Queue()
    expected = ctx.Value("i", -1)
    processes = [ctx.Process(target=_worker, args=(str(directory), share, go, results)) for share in shares if share]
    if mode == "async":
        processes.append(ctx.Process(target=_committer, args=(str(directory), expected, go, results)))
    for p in processes:
        p.start()
    time.sleep(1.0 + 0.05 * workers)  # let every process open the instance before the start
    start = time.perf_counter()
    go.set()
    finished = failed = 0
    reasons: list[str] = []
    ends: list[float] = []
    for _ in range(len([s for s in shares if s])):
        done, fails, why, end = results.get()
        finished += done
        failed += fails
        reasons.extend(why)
        ends.append(end)
    committer: dict[str, Any] = {}
    if mode == "async":
        expected.value = finished
        _, applied, busy, end = results.get()
        ends.append(end)
        committer = {"applied": applied, "busy_seconds": busy, "commits_per_busy_second": applied / busy if busy else 0}
    for p in processes:
        p.join()
    seconds = max(ends) - start
    store = instance.table("t").state_store
    log = store.backend.transaction_log(table.table_id, LogType.FILES)
    add_files = sum(1 for e in log.read_transactions_after(0) if e.transaction_type is TransactionType.ADD_FILES)
    landed_rows = sum(r.number_of_rows for r in store.file_references())
    if add_files != finished or landed_rows != finished * rows:
        raise SystemExit(f"{mode}/{workers}: {add_files} ADD_FILES and {landed_rows} rows for {finished} jobs")
    return {
        "seconds": seconds,
        "commits_per_second": add_files / seconds,
        "jobs_finished": finished,
        "jobs_failed": failed,
        "failure_examples": reasons[:2],
        **({"committer": committer} if committer else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=128)
    parser.add_argument("--workers", default="1,8,64")
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args()
    figures: dict[str, Any] = {"jobs": args.jobs, "rows_per_job": args.rows, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="ingest-commits-") as tmp:
        for workers in (int(w) for w in args.workers.split(",")):
            for mode in ("sync", "async"):
                result = run_case(mode, workers, args.jobs, args.rows, Path(tmp))
                figures["cases"][f"{mode}_{workers}"] = result
                extra = ""
                if "committer" in result:
                    c = result["committer"]
                    extra = f"  committer {c['commits_per_busy_second']:.0f}/s of its busy time"
                print(
                    f"{mode:5} {workers:3} workers: {result['seconds']:6.2f} s  {result['commits_per_second']:6.1f} "
                    f"commits/s  {result['jobs_finished']} finished, {result['jobs_failed']} failed{extra}"
                )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
