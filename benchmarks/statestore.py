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
- snapshots, for each size in ``--references`` (100k and 1M by default), one reference per file on 10,000 partitions:
  ``snapshot_<n>_load_s``, the median time to load the files state from a snapshot file on local disk with
  ``SnapshotStore.load_files`` over ``--runs`` runs (and ``snapshot_<n>_first_lookup_s``, the first look-up of a file by
  name, which indexes the names), beside ``snapshot_<n>_pyarrow_read_s``, a plain pyarrow read of
  the same file (its floor); ``snapshot_<n>_load_rss_mb``, the resident memory the loaded state holds
  (a fresh process loads it to measure that; ``_indexed_rss_mb`` after its first look-up by name);
  ``snapshot_<n>_apply_add_files_1000_ms``, the median time to validate and apply an ADD_FILES transaction of 1,000
  references to the loaded state; ``snapshot_<n>_save_s``, saving the state after those transactions;
  ``snapshot_<n>_partition_files_s``, building the files-by-partition index a query plans from, and
  ``snapshot_<n>_all_objects_s``, making every reference an object (what any caller reading every file pays once).
  At 100k the loaded state is checked equal to the one saved.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/statestore.py [--commits 3000] [--writers 8] [--per-writer 200]
[--references 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import sqlite3
import statistics
import subprocess
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

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyarrow import fs as pafs  # noqa: E402

from sleeper.adapters.local.statestore import SCHEMA as SQL_SCHEMA  # noqa: E402
from sleeper.adapters.local.statestore import SqliteStateStoreBackend  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import FileReference  # noqa: E402
from sleeper.core.statestore.state import FilesState  # noqa: E402
from sleeper.core.statestore.transactions.files import AddFilesTransaction  # noqa: E402
from sleeper.core.statestore.transactions.log import LogType  # noqa: E402
from sleeper.statestore.arrow_files import ArrowFileEntries, PartitionFiles, SnapshotFiles  # noqa: E402
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError  # noqa: E402
from sleeper.statestore.log_head import StateStoreSettings  # noqa: E402
from sleeper.statestore.ports import SnapshotMetadata  # noqa: E402
from sleeper.statestore.snapshots import FILES_SCHEMA, SnapshotStore, filesystem_path  # noqa: E402
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


def _memory_in_child(path: str) -> dict[str, float]:
    """The resident memory a fresh process holds after loading a snapshot, and after its first look-up by name."""
    code = (
        "import json, sys, pyarrow as pa\n"
        "from sleeper.statestore.snapshots import read_files_snapshot\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024\n"
        "before = rss()\n"
        "state = read_files_snapshot(pa.OSFile(sys.argv[1])).state\n"
        "loaded = rss()\n"
        "'x' in state.entries\n"
        "print(json.dumps({'load_rss_mb': loaded - before, 'indexed_rss_mb': rss() - before}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, path], check=True, capture_output=True, text=True, cwd=ROOT)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def _snapshot_state(references: int, time_now: datetime) -> FilesState:
    """A files state of ``references`` files with one reference each on 10,000 partitions, made as a snapshot's
    columns (making a million objects first would take longer than everything measured)."""
    names = pa.array([_file(i % 8, i) for i in range(references)], pa.utf8())
    ms = int(time_now.timestamp() * 1000)
    references_array = pa.StructArray.from_arrays(
        [
            pa.array([f"partition-{i % 10_000:05d}" for i in range(references)], pa.utf8()),
            pa.array(np.full(references, ms), pa.timestamp("ms")),
            pa.array([f"job-{i}" if i % 10 == 0 else None for i in range(references)], pa.utf8()),
            pa.array(np.arange(references, dtype=np.uint64) + 1000, pa.uint64()),
            pa.array(np.zeros(references, dtype=np.bool_)),
            pa.array(np.ones(references, dtype=np.bool_)),
        ],
        fields=list(FILES_SCHEMA.field("partitionReferences").type.value_type),
    )
    table = pa.Table.from_arrays(
        [
            names,
            pa.array(np.full(references, ms), pa.timestamp("ms")),
            pa.ListArray.from_arrays(
                pa.array(np.arange(references + 1, dtype=np.int32)),
                references_array,
                type=FILES_SCHEMA.field("partitionReferences").type,
            ),
        ],
        schema=FILES_SCHEMA,
    )
    return FilesState.over(ArrowFileEntries(SnapshotFiles(table)), added_job_ids=[f"ingest-{i}" for i in range(1000)])


def snapshot_figures(directory: Path, references: int, runs: int) -> dict[str, float]:
    """Loading, changing and saving a files snapshot of ``references`` references from local disk."""
    time_now = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    state = _snapshot_state(references, time_now)
    store = SnapshotStore(
        table_id=TABLE,
        metadata=SqliteStateStoreBackend(
            directory / f"snap-{references}.db", directory / "snap-data"
        ).snapshot_metadata(TABLE),
        filesystem=pafs.LocalFileSystem(),
        base_path=str(directory / f"snap-data-{references}" / TABLE),
    )
    saved: SnapshotMetadata = store.save_files(state, 123, time_now)
    path = filesystem_path(saved.path)
    plain, loads = [], []
    loaded = state
    for _ in range(runs):
        started = time.perf_counter()
        with pa.OSFile(path) as source:
            table = pa.ipc.open_stream(source).read_all()
        plain.append(time.perf_counter() - started)
        del table
        del loaded
        gc.collect()
        started = time.perf_counter()
        loaded = store.load_files(saved)
        loads.append(time.perf_counter() - started)
    started = time.perf_counter()
    if _file(0, 0) not in loaded.entries:
        raise AssertionError("snapshot load: a file is missing")
    first_lookup = time.perf_counter() - started
    if len(loaded) != references:
        raise AssertionError("snapshot load: files lost")
    if references <= 100_000:
        expected = store.load_files(saved)
        expected_objects = FilesState.of(expected.files(), expected.added_job_ids)
        if loaded != expected_objects:
            raise AssertionError("snapshot load: state differs")
    applies = []
    for k in range(20):
        transaction = AddFilesTransaction.of_references(
            [
                FileReference(filename=_file(9, k * 1000 + i), partition_id=f"partition-{i:05d}", number_of_rows=10)
                for i in range(1000)
            ]
        )
        started = time.perf_counter()
        transaction.validate(loaded)
        transaction.apply(loaded, time_now)
        applies.append(time.perf_counter() - started)
    if len(loaded) != references + 20_000:
        raise AssertionError("ADD_FILES: files not added")
    started = time.perf_counter()
    store.save_files(loaded, 124, time_now)
    save_seconds = time.perf_counter() - started
    started = time.perf_counter()
    index = PartitionFiles(loaded.entries)
    on_partition = index.files_on("partition-00007")
    index_seconds = time.perf_counter() - started
    if len(on_partition) != len(range(7, references, 10_000)) + 20:  # the snapshot put file i on partition i % 10,000
        raise AssertionError("files by partition: wrong files")
    started = time.perf_counter()
    every = sum(1 for _ in loaded.references())
    objects_seconds = time.perf_counter() - started
    if every != references + 20_000:
        raise AssertionError("references lost")
    return {
        "load_s": statistics.median(loads),
        "pyarrow_read_s": statistics.median(plain),
        "load_over_pyarrow_read": statistics.median(loads) / statistics.median(plain),
        **_memory_in_child(path),
        "first_lookup_s": first_lookup,
        "apply_add_files_1000_ms": statistics.median(applies) * 1000,
        "save_s": save_seconds,
        "partition_files_s": index_seconds,
        "all_objects_s": objects_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=3000, help="commits for the baseline and the one writer")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=200)
    parser.add_argument("--references", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--snapshots-only", action="store_true", help="skip the commit figures")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sleeper-statestore-bench-") as tmp:
        directory = Path(tmp)
        for name, settings in () if args.snapshots_only else (("default_waits", DEFAULT), ("short_waits", SHORT_WAITS)):
            if name == "default_waits":
                figures["baseline_sqlite_inserts_per_s"] = baseline_inserts(directory, args.commits)
                print(f"baseline: raw SQLite inserts            {figures['baseline_sqlite_inserts_per_s']:10.0f} /s")
                figures["one_writer_commits_per_s"] = one_writer(directory, args.commits)
                print(f"one writer: commits through the log head {figures['one_writer_commits_per_s']:10.0f} /s")
            run = many_writers(directory, name, args.writers, args.per_writer, settings)
            key = f"writers_{args.writers}_{name}"
            figures.update({f"{key}_{k}": v for k, v in run.items()})
            print(
                f"{args.writers} writer processes ({name}): {run['commits_per_s']:8.0f} commits/s over "
                f"{run['seconds']:.2f} s; attempts p50 {run['attempts_p50']}, p99 {run['attempts_p99']}, "
                f"max {run['attempts_max']}; exhausted {run['exhausted']}"
            )
        for references in args.references:
            snap = snapshot_figures(directory, references, args.runs)
            figures.update({f"snapshot_{references}_{k}": v for k, v in snap.items()})
            print(
                f"snapshot of {references} references: load median {snap['load_s']:.3f} s (plain pyarrow read "
                f"{snap['pyarrow_read_s']:.3f} s; first look-up {snap['first_lookup_s']:.3f} s), holding "
                f"{snap['load_rss_mb']:.0f} MB ({snap['indexed_rss_mb']:.0f} MB once indexed); ADD_FILES of 1000 "
                f"applied in {snap['apply_add_files_1000_ms']:.1f} ms; save {snap['save_s']:.3f} s; files by partition "
                f"{snap['partition_files_s']:.3f} s; every reference as an object {snap['all_objects_s']:.3f} s",
                flush=True,
            )
        figures["load_average"] = list(os.getloadavg())
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
