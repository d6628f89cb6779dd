"""Benchmark: the cost of a table iterator in compaction, SecurityFilteringIterator against none.

Data: ``--files`` sorted Parquet files (default 10) of ``--rows`` rows each (default 1,000,000) on one partition of a
local table, columns ``key`` (int64), ``value`` (int64), ``payload`` (30 random letters) and ``visibility`` (one of
``A``, ``B``, ``C`` or empty). Each repetition compacts them into one file with
:func:`sleeper.compaction.execution.run_compaction` (Arrow engine) twice, back to back in alternating order: once with
no iterator (``none``), once with ``sleeper.iterators.examples.SecurityFilteringIterator`` configured
``visibility,A,B,C`` (``security``), so every row passes and both write the same rows: the figure is the iterator's
cost (its vectorised ``is_in`` and the guard checking that output keeps its columns and key order), not the saving of
writing fewer rows. ``--auths`` changes what the iterator keeps (e.g. ``A`` keeps about half).

Figures: wall seconds, CPU seconds (this process, writer thread included) and rows/s per method, median over
``--repeats`` (default 3); the ratios security/none (wall and CPU) are taken within each repetition, then the median.
The target (<= 1.2) is judged on the CPU ratio: on a loaded shared machine the wall time of a compaction depends on
what else runs (the wall ratio swung from 0.76 to 1.38 between repetitions of one run), while the CPU seconds this
process spends do not, and the iterator's cost is CPU work. Both ratios are reported. The last line is one JSON
object with every figure; its ``meets_target`` is the CPU ratio's (``wall_meets_target`` the wall ratio's).

Usage: ``.venv/bin/python benchmarks/iterator_compaction.py [--files 10] [--rows 1000000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from sleeper.compaction.execution import run_compaction
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.parquet import ParquetSettings, SortedFileWriter
from sleeper.runtime.local.instance import LocalInstance

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("value", PrimitiveType.LONG),
        Field("payload", PrimitiveType.STRING),
        Field("visibility", PrimitiveType.STRING),
    ],
)
SECURITY = "sleeper.iterators.examples.SecurityFilteringIterator"
LABELS = np.array(["A", "B", "C", ""], dtype=object)


def _file_rows(rng: np.random.Generator, rows: int) -> pa.Table:
    keys = np.sort(rng.integers(0, 10**10, rows))
    letters = rng.integers(97, 123, (rows, 30), dtype=np.uint8)
    payload = pa.array(letters.view("S30").ravel().astype(str))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "value": pa.array(rng.integers(0, 1000, rows), pa.int64()),
            "payload": payload,
            "visibility": pa.array(LABELS[rng.integers(0, 4, rows)], pa.string()),
        }
    )


def _prepare(directory: Path, files: int, rows: int) -> tuple[Any, list[str]]:
    instance = LocalInstance.create(directory / "instance")
    table = instance.create_table("bench", SCHEMA, properties={"sleeper.table.data.engine": "ARROW"})
    root = table.state_store.partition_tree().root
    rng = np.random.default_rng(16)
    settings = ParquetSettings.from_table_properties(table.properties)
    references = []
    for i in range(files):
        location = f"{table.data_prefix}/data/partition_{root.id}/input-{i}.parquet"
        with SortedFileWriter(location, SCHEMA, settings=settings) as writer:
            for batch in _file_rows(rng, rows).to_batches(65536):
                writer.write(batch)
        written = writer.result
        references.append(
            FileReference(
                filename=written.location,
                partition_id=root.id,
                number_of_rows=written.rows,
                only_contains_data_for_this_partition=True,
            )
        )
    table.state_store.add_files(references)
    return table, [r.filename for r in references]


def _compact(table: Any, inputs: list[str], iterator: str | None, config: str | None) -> tuple[float, float, int]:
    root = table.state_store.partition_tree().root
    job_id = str(uuid.uuid4())
    job = CompactionJob(
        table_id=table.table_id,
        job_id=job_id,
        input_files=tuple(inputs),
        output_file=f"{table.data_prefix}/data/partition_{root.id}/{job_id}.parquet",
        partition_id=root.id,
        iterator_class_name=iterator,
        iterator_config=config,
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_compaction(job, table, partition=root)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    os.remove(result.output.location.removeprefix("file://"))
    if result.output.sketches_location:
        os.remove(result.output.sketches_location.removeprefix("file://"))
    return seconds, cpu, result.rows_written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--auths", default="A,B,C")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sleeper-bench-iterators-") as tmp:
        started = time.perf_counter()
        table, inputs = _prepare(Path(tmp), args.files, args.rows)
        print(f"prepared {args.files} x {args.rows:,} rows in {time.perf_counter() - started:.1f} s", flush=True)
        methods = {"none": (None, None), "security": (SECURITY, f"visibility,{args.auths}")}
        seconds: dict[str, list[float]] = {m: [] for m in methods}
        cpu: dict[str, list[float]] = {m: [] for m in methods}
        written: dict[str, int] = {}
        ratios, cpu_ratios = [], []
        for repeat in range(args.repeats):
            order = list(methods) if repeat % 2 == 0 else list(reversed(methods))
            load = os.getloadavg()[0]
            for name in order:
                took, used, rows = _compact(table, inputs, *methods[name])
                seconds[name].append(took)
                cpu[name].append(used)
                written[name] = rows
                print(
                    f"repeat {repeat} {name}: {took:.2f} s wall, {used:.2f} s CPU, {rows:,} rows written "
                    f"(load {load:.2f})",
                    flush=True,
                )
            ratios.append(seconds["security"][-1] / seconds["none"][-1])
            cpu_ratios.append(cpu["security"][-1] / cpu["none"][-1])
    total = args.files * args.rows
    summary = {
        "benchmark": "iterator_compaction",
        "files": args.files,
        "rows_per_file": args.rows,
        "auths": args.auths,
        "rows_written": written,
        "seconds_median": {m: round(statistics.median(s), 3) for m, s in seconds.items()},
        "rows_per_second_median": {m: round(total / statistics.median(s)) for m, s in seconds.items()},
        "ratio_security_over_none_median": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "cpu_seconds_median": {m: round(statistics.median(s), 3) for m, s in cpu.items()},
        "cpu_ratio_security_over_none_median": round(statistics.median(cpu_ratios), 3),
        "cpu_ratios": [round(r, 3) for r in cpu_ratios],
        "target_ratio": 1.2,
        "target_measure": "cpu",
    }
    # CPU, not wall: on a shared machine the wall ratio measures the neighbours as much as the iterator
    summary["meets_target"] = summary["cpu_ratio_security_over_none_median"] <= 1.2
    summary["wall_meets_target"] = summary["ratio_security_over_none_median"] <= 1.2
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
