"""Benchmark: an ingest job larger than its local store, beside the same job held in memory.

Data: ``--rows`` rows (default 4M) with ``key`` (12-20 random letters), ``value`` (int64) and ``payload`` (30 random
letters), about 62 bytes a row in Arrow, written as 8 Parquet files; the table has 16 leaf partitions. Each method
runs the ingest job (:class:`sleeper.ingest.IngestJobRunner`, committing its files directly) in a fresh process:

- ``bounded``: the instance's ingest settings are small: ``sleeper.ingest.arrow.batch.buffer.bytes`` 32 MiB,
  ``working.buffer.bytes`` 64 MiB, ``max.local.store.bytes`` 96 MiB (under half the input's Arrow size),
  ``max.single.write.to.file.rows`` 1024 (Sleeper's default);
- ``bounded_half``: the same settings over the first half of the files: with memory bounded, the peak RSS should not
  grow with the input;
- ``in_memory`` (baseline): buffers large enough for the whole input, so nothing is written locally and the table
  is written once.

Reported per method: seconds, rows/s, the process's peak RSS and its growth over the RSS before the job started
(``VmHWM``), the most bytes the local runs held at once (the store's own count, and a thread that sums the local
directory every 5 ms), the number of sorted runs and of writes to the table. Every run is checked: the rows committed
equal the rows written to the inputs (count and the sum of ``value``), and one ADD_FILES was committed. For
``bounded`` it also checks that the local disk never held more than ``max.local.store.bytes``, and reports the RSS
growth beyond batch buffer + working buffer (what the merge, the Parquet writer and readers and the allocators keep,
which does not grow with the input), and the growth from half the input to all of it.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/ingest_bounded.py [--rows 4000000]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024
BOUNDED = {
    "sleeper.ingest.arrow.batch.buffer.bytes": 32 * MIB,
    "sleeper.ingest.arrow.working.buffer.bytes": 64 * MIB,
    "sleeper.ingest.arrow.max.local.store.bytes": 96 * MIB,
    "sleeper.ingest.arrow.max.single.write.to.file.rows": 1024,
}
IN_MEMORY = {
    "sleeper.ingest.arrow.batch.buffer.bytes": 16 * 1024 * MIB,
    "sleeper.ingest.arrow.working.buffer.bytes": 16 * 1024 * MIB,
    "sleeper.ingest.arrow.max.local.store.bytes": 16 * 1024 * MIB,
    "sleeper.ingest.arrow.max.single.write.to.file.rows": 65536,
}
FILES = 8
LEAVES = 16
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _strings(rng: np.random.Generator, n: int, low: int, high: int) -> pa.Array:
    lengths = rng.integers(low, high + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = _LETTERS[rng.integers(0, 26, int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def make_inputs(directory: Path, rows: int) -> dict[str, Any]:
    rng = np.random.default_rng(42)
    directory.mkdir(parents=True, exist_ok=True)
    total_value = 0
    arrow_bytes = 0
    half_rows = half_value = 0
    sample: list[str] = []
    for i, count in enumerate(np.array_split(np.arange(rows), FILES)):
        n = len(count)
        table = pa.table(
            {
                "key": _strings(rng, n, 12, 20),
                "value": pa.array(rng.integers(0, 1 << 40, n), type=pa.int64()),
                "payload": _strings(rng, n, 30, 30),
            }
        )
        total_value += int(np.sum(table["value"].to_numpy()))
        if i < FILES // 2:
            half_rows += n
            half_value += int(np.sum(table["value"].to_numpy()))
        arrow_bytes += table.nbytes
        sample.extend(table["key"].to_pylist()[:: max(1, n // 2000)])
        pq.write_table(table, directory / f"in-{i}.parquet", row_group_size=65536)
    sample.sort()
    points = [sample[len(sample) * i // LEAVES] for i in range(1, LEAVES)]
    return {
        "rows": rows,
        "value_sum": total_value,
        "half_rows": half_rows,
        "half_value_sum": half_value,
        "arrow_bytes": arrow_bytes,
        "split_points": points,
    }


def _vm_hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _vm_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _dir_bytes(directory: Path) -> int:
    total = 0
    for path in directory.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except FileNotFoundError:
            continue
    return total


def run_method(method: str, work: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    import sleeper
    from sleeper.core.jobs.ingest import IngestJob
    from sleeper.core.schema import Field, PrimitiveType, Schema
    from sleeper.core.statestore.transactions.log import LogType, TransactionType
    from sleeper.ingest import IngestJobRunner
    from sleeper.io.parquet import read_sorted

    settings = IN_MEMORY if method == "in_memory" else BOUNDED
    instance = sleeper.connect(work / f"instance-{method}", create=True).runtime
    for name, value in settings.items():
        instance.properties.set(name, str(value))
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )
    table = instance.create_table(
        "bench",
        schema,
        split_points=inputs["split_points"],
        properties={"sleeper.table.ingest.job.files.commit.async": "false"},
    )
    local = work / f"local-{method}"
    local.mkdir()
    peak_seen = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak_seen[0] = max(peak_seen[0], _dir_bytes(local))
            stop.wait(0.005)

    files = tuple(str(p) for p in sorted((work / "inputs").glob("*.parquet")))
    if method == "bounded_half":
        files = files[: FILES // 2]
        inputs = {**inputs, "rows": inputs["half_rows"], "value_sum": inputs["half_value_sum"]}
    runner = IngestJobRunner(instance, local_dir=local)
    rss_before = _vm_rss_mib()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    outcome = runner.run(IngestJob(id=f"job-{method}", table_name="bench", files=files))
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    peak_rss = _vm_hwm_mib()
    if outcome.result is None:
        raise SystemExit(f"{method}: the job did not finish: {outcome.outcome} {outcome.reasons}")
    result = outcome.result
    store = instance.table("bench").state_store
    references = store.file_references()
    rows = sum(r.number_of_rows for r in references)
    value_sum = 0
    for filename in {r.filename for r in references}:
        for batch in read_sorted(filename, schema, columns=["value"]):
            value_sum += int(np.sum(batch.column("value").to_numpy()))
    log = store.backend.transaction_log(table.table_id, LogType.FILES)
    add_files = sum(1 for e in log.read_transactions_after(0) if e.transaction_type is TransactionType.ADD_FILES)
    if rows != inputs["rows"] or value_sum != inputs["value_sum"] or add_files != 1:
        raise SystemExit(f"{method}: rows {rows}/{inputs['rows']}, value sum mismatch or {add_files} ADD_FILES")
    return {
        "seconds": seconds,
        "rows_per_second": rows / seconds,
        "peak_rss_mib": peak_rss,
        "rss_growth_mib": peak_rss - rss_before,
        "peak_local_bytes": result.peak_local_bytes,
        "peak_local_bytes_watched": peak_seen[0],
        "runs_spilled": result.runs_spilled,
        "table_writes": result.table_writes,
        "files": len(result.files),
        "rows_equal": True,
        "settings": settings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:
        work = Path(args.work)
        inputs = json.loads((work / "inputs.json").read_text())
        print(json.dumps(run_method(args.method, work, inputs)))
        return
    with tempfile.TemporaryDirectory(prefix="ingest-bounded-") as tmp:
        work = Path(tmp)
        inputs = make_inputs(work / "inputs", args.rows)
        (work / "inputs.json").write_text(json.dumps(inputs))
        figures: dict[str, Any] = {"rows": args.rows, "input_arrow_mib": inputs["arrow_bytes"] / MIB}
        for method in ("bounded_half", "bounded", "in_memory"):
            done = subprocess.run(
                [sys.executable, __file__, "--method", method, "--work", str(work)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"{method} failed:\n{done.stdout}\n{done.stderr}")
            figures[method] = json.loads(done.stdout.strip().splitlines()[-1])
            r = figures[method]
            print(
                f"{method:12}  {r['seconds']:6.2f} s  {r['rows_per_second']:10,.0f} rows/s  peak RSS "
                f"{r['peak_rss_mib']:7.1f} MiB (+{r['rss_growth_mib']:.1f})  local disk peak "
                f"{r['peak_local_bytes'] / MIB:6.1f} MiB (watched {r['peak_local_bytes_watched'] / MIB:.1f})  "
                f"{r['runs_spilled']} runs, {r['table_writes']} table writes, {r['files']} files"
            )
        bounded, half = figures["bounded"], figures["bounded_half"]
        limit = BOUNDED["sleeper.ingest.arrow.max.local.store.bytes"]
        buffers = (
            BOUNDED["sleeper.ingest.arrow.batch.buffer.bytes"] + BOUNDED["sleeper.ingest.arrow.working.buffer.bytes"]
        ) / MIB
        peak_disk = max(bounded["peak_local_bytes"], bounded["peak_local_bytes_watched"])
        figures["local_store_limit_mib"] = limit / MIB
        figures["local_disk_within_limit"] = peak_disk <= limit and half["peak_local_bytes_watched"] <= limit
        figures["input_over_local_store"] = inputs["arrow_bytes"] / limit
        figures["bounded_rss_growth_beyond_buffers_mib"] = bounded["rss_growth_mib"] - buffers
        figures["bounded_rss_growth_full_over_half"] = bounded["rss_growth_mib"] / half["rss_growth_mib"]
        figures["in_memory_rss_growth_over_bounded"] = (
            figures["in_memory"]["rss_growth_mib"] / bounded["rss_growth_mib"]
        )
        figures["bounded_seconds_over_in_memory"] = bounded["seconds"] / figures["in_memory"]["seconds"]
        print(
            f"input {figures['input_over_local_store']:.2f}x the local store; local disk within "
            f"{limit / MIB:.0f} MiB: {figures['local_disk_within_limit']}; bounded RSS growth "
            f"{bounded['rss_growth_mib']:.0f} MiB: batch + working buffers {buffers:.0f} MiB + "
            f"{figures['bounded_rss_growth_beyond_buffers_mib']:.0f} MiB; full / half input "
            f"{figures['bounded_rss_growth_full_over_half']:.2f}x; in memory "
            f"{figures['in_memory_rss_growth_over_bounded']:.2f}x bounded's growth; time "
            f"{figures['bounded_seconds_over_in_memory']:.2f}x in memory"
        )
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
