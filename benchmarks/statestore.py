"""Benchmark of the transaction-log state store on SQLite (a local instance's database).

Figures:

- ``baseline_sqlite_inserts_per_s``: raw SQLite, one process, one autocommitted INSERT per transaction into the same
  ``transaction_log`` table with the same pragmas (WAL, ``synchronous=NORMAL``): the ceiling for the log itself.
- ``one_writer_commits_per_s``: one ``StateStore`` adding files, one ADD_FILES transaction per file, through the real
  log head (read the log, validate, conditional INSERT, apply), Sleeper's default settings.
- ``writers_<n>_commits_per_s``: n writer processes (spawned, started together at a barrier) each adding
  ``--per-writer`` files to one table, with Sleeper's default retry waits (200 ms first ceiling doubling to 30 s, full
  jitter, 10 attempts) and again with short waits (2 ms to 50 ms, 50 attempts): commits over the wall time from the
  barrier to the last writer's end; attempts per commit p50/p99/max, and commits that ran out of attempts. Every run
  is checked: numbers 1..N contiguous and every file present once.
- ``snapshot_load_100k_s``: median time to load a files state of ``--references`` file references (one per file)
  from a snapshot file on local disk with ``SnapshotStore.load_files``, over ``--runs`` runs; plus the write time.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/statestore.py [--commits 3000] [--writers 8] [--per-writer 200]
[--references 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pyarrow import fs as pafs  # noqa: E402

from sleeper.adapters.local.statestore import SCHEMA as SQL_SCHEMA  # noqa: E402
from sleeper.adapters.local.statestore import SqliteStateStoreBackend  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference  # noqa: E402
from sleeper.core.statestore.state import FilesState  # noqa: E402
from sleeper.core.statestore.transactions.files import AddFilesTransaction  # noqa: E402
from sleeper.core.statestore.transactions.log import LogType  # noqa: E402
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError  # noqa: E402
from sleeper.statestore.log_head import StateStoreSettings  # noqa: E402
from sleeper.statestore.ports import SnapshotMetadata  # noqa: E402
from sleeper.statestore.snapshots import SnapshotStore  # noqa: E402
from sleeper.statestore.store import StateStore  # noqa: E402

TABLE = "0a1b2c3d"
SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
DEFAULT = StateStoreSettings()
SHORT_WAITS = StateStoreSettings(
    max_add_attempts=50, first_retry_wait_ceiling_seconds=0.002, max_retry_wait_ceiling_seconds=0.05
)

_start: Barrier | None = None


def _file(writer: int, sequence: int) -> str:
    return f"file:///instance/data/{TABLE}/data/partition_root/w{writer:02d}-{sequence:06d}.parquet"


def _add_files(writer: int, sequence: int) -> AddFilesTransaction:
    reference = FileReference(filename=_file(writer, sequence), partition_id="root", number_of_rows=1000 + sequence)
    return AddFilesTransaction.of_references([reference])


def baseline_inserts(directory: Path, count: int) -> float:
    """Raw SQLite inserts per second into the log table, one autocommitted INSERT each."""
    connection = sqlite3.connect(directory / "baseline.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    for statement in SQL_SCHEMA.split(";"):
        if statement.strip():
            connection.execute(statement)
    serde_body = json.dumps(_add_files(0, 0).to_dict(), separators=(",", ":"))
    started = time.perf_counter()
    for n in range(1, count + 1):
        connection.execute(
            "INSERT INTO transaction_log (table_id, log_type, number, update_time, type, body, body_key) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL)",
            (TABLE, "files", n, 1_700_000_000_000 + n, "ADD_FILES", serde_body),
        )
    elapsed = time.perf_counter() - started
    connection.close()
    return count / elapsed


def one_writer(directory: Path, count: int) -> float:
    """Commits per second of one StateStore adding one file per transaction."""
    backend = SqliteStateStoreBackend(directory / "one.db", directory / "one-data")
    store = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend, settings=DEFAULT)
    store.refresh()
    started = time.perf_counter()
    for sequence in range(count):
        store.add_transaction(_add_files(0, sequence))
    elapsed = time.perf_counter() - started
    fresh = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend)
    if len(fresh.files()) != count:
        raise AssertionError("one writer: files lost")
    return count / elapsed


@dataclass
class WriterResult:
    """What one writer process did."""

    writer: int
    numbers: list[int] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    exhausted: int = 0
    started: float = 0.0
    finished: float = 0.0


def _wait_together(barrier: Barrier) -> None:
    global _start
    _start = barrier


def _writer(database: str, data: str, writer: int, count: int, settings: StateStoreSettings) -> WriterResult:
    backend = SqliteStateStoreBackend(Path(database), Path(data))
    store = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend, settings=settings)
    store.refresh()
    result = WriterResult(writer)
    if _start is not None:
        _start.wait()
    result.started = time.time()
    for sequence in range(count):
        transaction = _add_files(writer, sequence)
        while True:
            try:
                added = store.commit(transaction)
            except AddTransactionRetriesExhaustedError:
                result.exhausted += 1
                continue
            result.numbers.append(added.transaction_number)
            result.attempts.append(added.attempts)
            break
    result.finished = time.time()
    return result


def _percentile(values: list[int], fraction: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def many_writers(
    directory: Path, name: str, writers: int, per_writer: int, settings: StateStoreSettings
) -> dict[str, Any]:
    """Runs writer processes against one table's log and checks the log afterwards."""
    database, data = directory / f"{name}.db", directory / f"{name}-data"
    StateStore(schema=SCHEMA, table_id=TABLE, backend=SqliteStateStoreBackend(database, data)).refresh()
    context = multiprocessing.get_context("spawn")
    arguments = [(str(database), str(data), w, per_writer, settings) for w in range(writers)]
    with context.Pool(writers, initializer=_wait_together, initargs=(context.Barrier(writers),)) as pool:
        results: list[WriterResult] = pool.starmap(_writer, arguments, chunksize=1)
    total = writers * per_writer
    entries = list(
        SqliteStateStoreBackend(database, data).transaction_log(TABLE, LogType.FILES).read_transactions_after(0)
    )
    if [e.transaction_number for e in entries] != list(range(1, total + 1)):
        raise AssertionError(f"{name}: transaction numbers are not 1..{total}")
    files = [f["filename"] for e in entries for f in json.loads(e.body or "{}")["files"]]
    if sorted(files) != sorted(_file(w, s) for w in range(writers) for s in range(per_writer)):
        raise AssertionError(f"{name}: files lost or repeated")
    wall = max(r.finished for r in results) - min(r.started for r in results)
    attempts = [a for r in results for a in r.attempts]
    return {
        "commits_per_s": total / wall,
        "seconds": wall,
        "attempts_p50": _percentile(attempts, 0.5),
        "attempts_p99": _percentile(attempts, 0.99),
        "attempts_max": max(attempts),
        "exhausted": sum(r.exhausted for r in results),
    }


def snapshot_load(directory: Path, references: int, runs: int) -> dict[str, float]:
    """Median seconds to load a files snapshot of ``references`` references from local disk."""
    time_now = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    files = []
    for i in range(references):
        name = _file(i % 8, i)
        ref = FileReference(
            filename=name,
            partition_id=f"partition-{i % 64:02d}",
            number_of_rows=1000 + i,
            job_id=f"job-{i}" if i % 10 == 0 else None,
            last_update_time=time_now,
        )
        files.append(AllReferencesToAFile(filename=name, references={ref.partition_id: ref}, last_update_time=time_now))
    state = FilesState.of(files, added_job_ids=[f"ingest-{i}" for i in range(1000)])
    store = SnapshotStore(
        table_id=TABLE,
        metadata=SqliteStateStoreBackend(directory / "snap.db", directory / "snap-data").snapshot_metadata(TABLE),
        filesystem=pafs.LocalFileSystem(),
        base_path=str(directory / "snap-data" / TABLE),
    )
    started = time.perf_counter()
    saved: SnapshotMetadata = store.save_files(state, 123, time_now)
    write_seconds = time.perf_counter() - started
    loads = []
    for _ in range(runs):
        started = time.perf_counter()
        loaded = store.load_files(saved)
        loads.append(time.perf_counter() - started)
        if len(loaded) != references:
            raise AssertionError("snapshot load: files lost")
    if loaded != state:
        raise AssertionError("snapshot load: state differs")
    return {"load_s": statistics.median(loads), "load_min_s": min(loads), "write_s": write_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=3000, help="commits for the baseline and the one writer")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=200)
    parser.add_argument("--references", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sleeper-statestore-bench-") as tmp:
        directory = Path(tmp)
        figures["baseline_sqlite_inserts_per_s"] = baseline_inserts(directory, args.commits)
        print(f"baseline: raw SQLite inserts            {figures['baseline_sqlite_inserts_per_s']:10.0f} /s")
        figures["one_writer_commits_per_s"] = one_writer(directory, args.commits)
        print(f"one writer: commits through the log head {figures['one_writer_commits_per_s']:10.0f} /s")
        for name, settings in (("default_waits", DEFAULT), ("short_waits", SHORT_WAITS)):
            run = many_writers(directory, name, args.writers, args.per_writer, settings)
            key = f"writers_{args.writers}_{name}"
            figures.update({f"{key}_{k}": v for k, v in run.items()})
            print(
                f"{args.writers} writer processes ({name}): {run['commits_per_s']:8.0f} commits/s over "
                f"{run['seconds']:.2f} s; attempts p50 {run['attempts_p50']}, p99 {run['attempts_p99']}, "
                f"max {run['attempts_max']}; exhausted {run['exhausted']}"
            )
        load = snapshot_load(directory, args.references, args.runs)
        figures["snapshot_references"] = args.references
        figures["snapshot_load_s"] = load["load_s"]
        figures["snapshot_load_min_s"] = load["load_min_s"]
        figures["snapshot_write_s"] = load["write_s"]
        print(
            f"snapshot of {args.references} references: load median {load['load_s']:.3f} s "
            f"(min {load['load_min_s']:.3f} s over {args.runs} runs), write {load['write_s']:.3f} s"
        )
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
