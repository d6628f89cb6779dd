"""Benchmark of compaction (sleeper.compaction.execution.run_compaction) beside plain read+write and full sorts.

Data (PERFORMANCE.md B.1): ``--files`` Parquet files (default 10) of ``--rows`` rows each (default 1,000,000), each
sorted by ``key``, with columns ``key`` (12-20 random letters, or int64 in [0, 1e10) with ``--key-type long``),
``value`` (int64) and ``payload`` (30 random letters); zstd level 1, no dictionary, 100k-row row groups, as Sleeper
writes them.

Methods, each run in a fresh process (imports excluded from the time):

- ``rw_pa_stream``: pyarrow streaming read (``iter_batches``, ``pre_buffer=False``) of every file into one
  ``ParquetWriter``, with no sort: the pyarrow read+write limit.
- ``sort_pa``: pyarrow ``read_table`` of every file, ``concat``, ``sort_by``, write: the plain pyarrow baseline.
- ``sort_duckdb``: DuckDB ``COPY (SELECT * FROM read_parquet([...]) ORDER BY key) TO ...`` (zstd, 100k row groups).
- ``compact_arrow``: ``run_compaction`` of one job over the files on a local table, pyarrow merge engine (bounded
  memory streaming k-way merge, writer thread, sketches).
- ``compact_datafusion``: the same with the DataFusion engine (skipped if ``datafusion`` is not installed).

Every output is checked: as many rows as the inputs and keys in order. Figures are medians over the repetitions:
seconds, rows/s, CPU seconds and the peak RSS of the process (``VmHWM``). Ratios divide by ``rw_pa_stream``,
``sort_pa`` and ``sort_duckdb`` in the same repetition, then take the median. The last line printed is one JSON
object with every figure.

Usage: ``.venv/bin/python benchmarks/compaction.py [--files 10] [--rows 1000000] [--key-type string]
[--repeats 3] [--methods compact_arrow,sort_duckdb]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

METHODS = ("rw_pa_stream", "sort_pa", "sort_duckdb", "compact_arrow", "compact_datafusion")
BASELINES = ("rw_pa_stream", "sort_pa", "sort_duckdb")
ROW_GROUP_ROWS = 100_000
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
_WRITE = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": False,
    "write_statistics": True,
    "data_page_version": "2.0",
}


def _random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.Array:
    lengths = rng.integers(min_len, max_len + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = _LETTERS[rng.integers(0, 26, int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def make_file(path: Path, rows: int, key_type: str, seed: int) -> None:
    """Writes one sorted input file."""
    rng = np.random.default_rng(seed)
    key = (
        _random_strings(rng, rows, 12, 20)
        if key_type == "string"
        else pa.array(rng.integers(0, 10**10, rows), type=pa.int64())
    )
    table = pa.table(
        {
            "key": key,
            "value": pa.array(rng.integers(0, 1 << 40, rows), type=pa.int64()),
            "payload": _random_strings(rng, rows, 30, 30),
        }
    ).sort_by("key")
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS, **_WRITE)


def _peak_rss_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _check(out: Path, expected_rows: int, *, ordered: bool = True) -> None:
    """The output holds every row, with keys in order if ``ordered`` (checked a row group at a time)."""
    parquet = pq.ParquetFile(out, pre_buffer=False)
    rows = 0
    previous = None
    for batch in parquet.iter_batches(columns=["key"], batch_size=ROW_GROUP_ROWS):
        keys = batch.column(0)
        rows += len(keys)
        if not ordered:
            continue
        if len(keys) > 1 and not pc.all(pc.less_equal(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py():
            raise SystemExit(f"{out}: keys out of order")
        if previous is not None and len(keys) and keys[0].as_py() < previous:
            raise SystemExit(f"{out}: keys out of order across batches")
        if len(keys):
            previous = keys[len(keys) - 1].as_py()
    if rows != expected_rows:
        raise SystemExit(f"{out}: {rows} rows, expected {expected_rows}")


def _compact(files: list[Path], work_dir: Path, key_type: str, engine: str) -> Path:
    from sleeper.compaction.execution import run_compaction
    from sleeper.core.jobs.compaction import CompactionJob
    from sleeper.core.schema import Field, PrimitiveType, Schema
    from sleeper.core.statestore.references import FileReference
    from sleeper.core.statestore.transactions import AssignJobIdRequest, AssignJobIdsTransaction
    from sleeper.runtime.local import LocalInstance

    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING if key_type == "string" else PrimitiveType.LONG)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )
    instance = LocalInstance.create(work_dir / "instance")
    table = instance.create_table("bench", schema, properties={"sleeper.table.data.engine": engine})
    inputs = [str(f) for f in files]
    table.state_store.add_files(
        [
            FileReference(filename=name, partition_id="root", number_of_rows=pq.ParquetFile(name).metadata.num_rows)
            for name in inputs
        ]
    )
    job_id = str(uuid.uuid4())
    output = work_dir / f"{job_id}.parquet"
    job = CompactionJob(
        table_id=table.table_id, job_id=job_id, input_files=tuple(inputs), output_file=str(output), partition_id="root"
    )
    table.state_store.commit(
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=job.input_files),)
        )
    )
    start = time.perf_counter()
    cpu = _cpu_seconds()
    result = run_compaction(job, table)
    _TIMES["seconds"] = time.perf_counter() - start
    _TIMES["cpu_seconds"] = _cpu_seconds() - cpu
    if result.engine.lower() != engine.lower():
        raise SystemExit(f"asked for engine {engine}, ran {result.engine}")
    return output


_TIMES: dict[str, float] = {}


def run_one(method: str, input_dir: Path, work_dir: Path, key_type: str) -> dict[str, Any]:
    """Runs one method in this process and returns its figures."""
    files = sorted(input_dir.glob("*.parquet"))
    expected = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    out = work_dir / "out.parquet"
    _TIMES.clear()
    start = time.perf_counter()
    cpu = _cpu_seconds()
    if method == "rw_pa_stream":
        schema = pq.ParquetFile(files[0]).schema_arrow
        with pq.ParquetWriter(out, schema, **_WRITE) as writer:
            for f in files:
                parquet = pq.ParquetFile(f, pre_buffer=False)
                for batch in parquet.iter_batches(batch_size=65536):
                    writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
    elif method == "sort_pa":
        table = pa.concat_tables(pq.read_table(f) for f in files).sort_by("key")
        pq.write_table(table, out, row_group_size=ROW_GROUP_ROWS, **_WRITE)
    elif method == "sort_duckdb":
        import duckdb

        names = ", ".join(f"'{f}'" for f in files)
        duckdb.connect().execute(
            f"COPY (SELECT * FROM read_parquet([{names}]) ORDER BY key) TO '{out}' "  # noqa: S608
            f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
        )
    elif method in ("compact_arrow", "compact_datafusion"):
        out = _compact(files, work_dir, key_type, "ARROW" if method == "compact_arrow" else "DATAFUSION")
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = _TIMES.get("seconds", time.perf_counter() - start)
    cpu_seconds = _TIMES.get("cpu_seconds", _cpu_seconds() - cpu)
    _check(out, expected, ordered=method != "rw_pa_stream")
    return {
        "seconds": seconds,
        "rows_per_second": expected / seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mib": _peak_rss_bytes() / 2**20,
        "rows": expected,
    }


def _available(method: str) -> bool:
    if method == "compact_datafusion":
        import importlib.util

        return importlib.util.find_spec("datafusion") is not None
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per input file")
    parser.add_argument("--key-type", choices=("string", "long"), default="string")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--child", nargs=4, metavar=("METHOD", "INPUT", "WORKDIR", "KEY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, input_dir, work_dir, key_type = args.child
        print(json.dumps(run_one(method, Path(input_dir), Path(work_dir), key_type)))
        return
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods: {sorted(unknown)}")
    methods = [m for m in methods if _available(m)]
    summary: dict[str, Any] = {
        "files": args.files,
        "rows_per_file": args.rows,
        "key_type": args.key_type,
        "repeats": args.repeats,
        "methods": {},
        "ratios": {},
    }
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    with tempfile.TemporaryDirectory(prefix="sleeper-compaction-bench-") as tmp:
        input_dir = Path(tmp) / "input"
        input_dir.mkdir()
        for i in range(args.files):
            make_file(input_dir / f"input-{i:03d}.parquet", args.rows, args.key_type, seed=i)
        summary["input_parquet_mib"] = sum(f.stat().st_size for f in input_dir.glob("*.parquet")) / 2**20
        for repeat in range(args.repeats):
            order = list(methods)
            np.random.default_rng(repeat).shuffle(order)
            for method in order:
                work_dir = Path(tmp) / f"{method}-{repeat}"
                work_dir.mkdir()
                subprocess.run(["sync"], check=False)
                out = subprocess.run(
                    [sys.executable, __file__, "--child", method, str(input_dir), str(work_dir), args.key_type],
                    capture_output=True,
                    text=True,
                )
                if out.returncode:
                    raise SystemExit(f"{method} failed:\n{out.stderr}")
                runs[method].append(json.loads(out.stdout.strip().splitlines()[-1]))
                subprocess.run(["rm", "-rf", str(work_dir)], check=True)
    for method in methods:
        figures = {
            key: statistics.median(run[key] for run in runs[method])
            for key in ("seconds", "rows_per_second", "cpu_seconds", "peak_rss_mib")
        }
        summary["methods"][method] = figures
        ratios = {
            f"x_{base}": statistics.median(
                mine["seconds"] / theirs["seconds"] for mine, theirs in zip(runs[method], runs[base], strict=True)
            )
            for base in BASELINES
            if base in runs and base != method
        }
        summary["ratios"][method] = ratios
        ratio_text = "  ".join(f"{name} {value:5.2f}" for name, value in ratios.items())
        print(
            f"{method:20s} {figures['seconds']:7.2f} s  {figures['rows_per_second']:>12,.0f} rows/s  "
            f"CPU {figures['cpu_seconds']:6.2f} s  peak RSS {figures['peak_rss_mib']:7.1f} MiB  {ratio_text}",
            flush=True,
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
