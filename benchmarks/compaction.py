"""Benchmark of compaction (sleeper.compaction.execution.run_compaction) against its targets (below).

Data: ``--files`` Parquet files (default 10) of ``--rows`` rows each (default 1,000,000), each
sorted by ``key``, with columns ``key`` (12-20 random letters, or int64 in [0, 1e10) for the ``long`` variant),
``value`` (int64) and ``payload`` (30 random letters); zstd level 1, no dictionary, writer version 2 encodings
(``DELTA_BINARY_PACKED``, ``DELTA_BYTE_ARRAY``), 100k-row row groups, as Sleeper writes them. Both key types run
by default (``--key-types string,long``).

Methods, each run in a fresh process started with the environment Sleeper's images give theirs
(``sleeper.core.IMAGE_ENVIRONMENT``: Arrow allocates from the C library, as in the compaction task, and DataFusion's
mimalloc keeps off transparent huge pages, its fastest setting measured, for its bare merge too; imports
excluded from the time: each method first imports what it uses, and
``compact*`` first compacts two 1,000-row files, as a task that has run a job has; peak RSS from ``VmHWM``; for the
DataFusion engine, whose worker processes merge key ranges, the CPU time includes the workers' and the peak RSS adds
the largest worker's peak, ``peak_rss_workers_mb``, to the process's own):

- ``rw_pa_stream``: pyarrow streaming read (``iter_batches``, ``pre_buffer=False``) of every file into one
  ``ParquetWriter``, no sort: the serial pyarrow read+write limit.
- ``rw_pa_stream_thr``: the same with the writes on a writer thread behind a queue of 3: the threaded limit that
  the wall-time target divides by.
- ``rw_sleeper``: the compaction's own input and output without its merge: every file read with
  ``SortedFileReader`` (batches of 65,536 rows, the next batch read ahead on a thread, as the merge reads) and
  written in file order, unsorted, by ``SortedFileWriter`` with the table's Parquet settings, row groups encoded on
  its threads, and sketches. The floor of any merge on pyarrow's Parquet reader and writer, a compiled one
  included: the time a compaction would take if ordering and copying the rows cost nothing.
- ``merge_datafusion``: DataFusion's sort-preserving merge (each file a partition with its sort order declared, as
  Sleeper's Rust compaction plans it; the plan is checked to hold no ``SortExec``) written by DataFusion's own
  Parquet writer (zstd(1), 100k-row row groups, no dictionary).
- ``sort_duckdb``: DuckDB ``COPY (SELECT * FROM read_parquet([...]) ORDER BY key) TO ...`` (zstd, 100k row groups).
- ``merge_polars``: polars' ``merge_sorted`` of the lazy scans as a balanced tree, streamed to Parquet with
  ``sink_parquet`` (zstd level 1, 100k-row row groups): an option measured for comparison, not an engine.
- ``sort_pa``: pyarrow ``read_table`` of everything, ``sort_by``, write (not run unless asked for).
- ``compact``: ``run_compaction`` of one job over the files on a local table with the table's default engine, as
  Sleeper runs it (sketches included).
- ``compact_arrow`` / ``compact_datafusion``: the same with the engine forced.
- ``compact_2x``, ``compact_arrow_2x``, ``compact_datafusion_2x``: the same over files of twice as many rows, for the
  check that peak RSS stays flat when the input doubles.

``compact`` and ``compact_2x`` are not run by default: they repeat whichever of the two engines is the default, which
the summary names (``default_engine``).

Every output is checked: as many rows as the inputs, keys in order. Figures are medians over ``--repeats`` (default 3)
repetitions; the methods of a repetition run back to back in shuffled order, and ratios are taken within a
repetition, then the median. The load average before each run is recorded (the machine is shared), and besides the
wall-time ratios the CPU-time ratios (``cpu_x_...``), which a shared machine disturbs less. The targets, checked for
each engine: wall time <= 1.1x ``rw_pa_stream_thr`` (first 1.3x); throughput >=
``merge_datafusion``'s and >= 1.1x ``sort_duckdb``'s; peak RSS <= 700 MB, and the peak RSS at twice the rows within
10% of it. The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/compaction.py [--files 10] [--rows 1000000] [--key-types string,long]
[--repeats 3] [--methods compact,rw_pa_stream_thr] [--data-dir DIR] [--plot out.png]``; ``--plot`` draws seconds and
peak RSS against the rows compacted (matplotlib, installed into the virtualenv for the benchmark only:
``.venv/bin/pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.measure import peak_rss_bytes  # noqa: E402
from benchmarks.plot import Panel, Series, plot_panels, require_matplotlib  # noqa: E402
from sleeper.core import IMAGE_ENVIRONMENT  # noqa: E402

METHODS = (
    "rw_pa_stream",
    "rw_pa_stream_thr",
    "rw_sleeper",
    "merge_datafusion",
    "sort_duckdb",
    "sort_pa",
    "merge_polars",
    "compact",
    "compact_arrow",
    "compact_datafusion",
    "compact_2x",
    "compact_arrow_2x",
    "compact_datafusion_2x",
)
DEFAULT_METHODS = (
    "rw_pa_stream",
    "rw_pa_stream_thr",
    "rw_sleeper",
    "merge_datafusion",
    "sort_duckdb",
    "compact_arrow",
    "compact_datafusion",
    "compact_arrow_2x",
    "compact_datafusion_2x",
)
COMPACTIONS = ("compact", "compact_arrow", "compact_datafusion")
BASELINES = ("rw_pa_stream", "rw_pa_stream_thr", "rw_sleeper", "merge_datafusion", "sort_duckdb")
ROW_GROUP_ROWS = 100_000
SCALE = 2
TARGETS = {
    "max_x_rw_pa_stream_thr": 1.1,
    "min_throughput_vs_merge_datafusion": 1.0,
    "min_throughput_vs_sort_duckdb": 1.1,
    "max_peak_rss_mb": 700.0,
    "max_rss_growth_2x": 1.1,
}
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
_WRITE = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": False,
    "write_statistics": True,
    "data_page_version": "2.0",
}


def _sleeper_schema(key_type: str) -> Any:
    from sleeper.core.schema import Field, PrimitiveType, Schema

    return Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING if key_type == "string" else PrimitiveType.LONG)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )


def _write_options(schema: pa.Schema) -> dict[str, Any]:
    """``_WRITE`` with each column's encoding as a table's files have it (writer version v2, no dictionaries)."""
    from sleeper.io.parquet import ParquetSettings

    key_type = "string" if pa.types.is_string(schema.field("key").type) else "long"
    return {**_WRITE, "column_encoding": ParquetSettings().writer_options(_sleeper_schema(key_type))["column_encoding"]}


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
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS, **_write_options(table.schema))


def make_inputs(directory: Path, files: int, rows: int, key_type: str) -> Path:
    """The input files of one key type and size in a directory under ``directory``, made unless already there."""
    target = directory / f"{key_type}-{files}x{rows}"
    done = target / ".complete-v2-encodings"  # inputs written before the table encodings are remade
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            make_file(target / f"input-{i:03d}.parquet", rows, key_type, seed=i)
        done.touch()
    return target


def _children_peak_rss_bytes() -> int:
    """The peak RSS of the largest child process waited for (the DataFusion engine's workers), 0 if none."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def _cpu_seconds() -> float:
    """The CPU time of this process and of the child processes it has waited for (DataFusion workers)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


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


_TIMES: dict[str, float] = {}


def _compact(files: list[Path], work_dir: Path, key_type: str, engine: str | None) -> tuple[Path, str]:
    import sleeper.compaction.execution as _execution
    from sleeper.core.jobs.compaction import CompactionJob
    from sleeper.core.statestore.references import FileReference
    from sleeper.core.statestore.transactions.files import AssignJobIdRequest, AssignJobIdsTransaction
    from sleeper.runtime.local.instance import LocalInstance

    schema = _sleeper_schema(key_type)
    instance = LocalInstance.create(work_dir / "instance")
    properties = {} if engine is None else {"sleeper.table.data.engine": engine}
    table = instance.create_table("bench", schema, properties=properties)
    # The state store refuses files outside the table's data prefix: the inputs are linked (or copied) under it.
    data_dir = Path(table.data_prefix.removeprefix("file://")) / "data" / "partition_root"
    data_dir.mkdir(parents=True, exist_ok=True)
    inputs = []
    for f in files:
        placed = data_dir / f.name
        try:
            os.link(f, placed)
        except OSError:
            shutil.copyfile(f, placed)
        inputs.append(str(placed))
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
    result = _execution.run_compaction(job, table)
    _TIMES["seconds"] = time.perf_counter() - start
    _TIMES["cpu_seconds"] = _cpu_seconds() - cpu
    if engine is not None and result.engine.lower() != engine.lower():
        raise SystemExit(f"asked for engine {engine}, ran {result.engine}")
    return output, result.engine


def _rw_pa_stream(files: list[Path], out: Path, *, threaded: bool) -> None:
    schema = pq.ParquetFile(files[0]).schema_arrow
    with pq.ParquetWriter(out, schema, **_write_options(schema)) as writer:
        pending: queue.Queue[pa.Table | None] = queue.Queue(maxsize=3)

        def drain() -> None:
            while (table := pending.get()) is not None:
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)

        thread = threading.Thread(target=drain) if threaded else None
        if thread is not None:
            thread.start()
        buffered: list[pa.RecordBatch] = []
        rows = 0

        def flush(final: bool) -> None:
            nonlocal buffered, rows
            while rows >= ROW_GROUP_ROWS or (final and rows):
                table = pa.Table.from_batches(buffered, schema=schema)
                group, rest = table.slice(0, ROW_GROUP_ROWS), table.slice(ROW_GROUP_ROWS)
                buffered, rows = rest.to_batches(), rest.num_rows
                if thread is not None:
                    pending.put(group)
                else:
                    writer.write_table(group, row_group_size=ROW_GROUP_ROWS)

        for f in files:
            parquet = pq.ParquetFile(f, pre_buffer=False)
            for batch in parquet.iter_batches(batch_size=65536):
                buffered.append(batch)
                rows += batch.num_rows
                flush(False)
        flush(True)
        if thread is not None:
            pending.put(None)
            thread.join()


def _rw_sleeper(files: list[Path], out: Path, key_type: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from sleeper.io import ParquetSettings, SortedFileWriter

    schema = _sleeper_schema(key_type)
    with ExitStack() as stack, ThreadPoolExecutor(1) as reader:
        batches = _file_batches(stack, files, schema)
        with SortedFileWriter(str(out), schema, settings=ParquetSettings(), writer_thread=True) as writer:
            ahead = reader.submit(next, batches, None)
            while (batch := ahead.result()) is not None:
                ahead = reader.submit(next, batches, None)
                writer.write(batch)


def _file_batches(stack: ExitStack, files: list[Path], schema: Any) -> Iterator[pa.RecordBatch]:
    """Every file's batches in file order, each file opened on ``stack`` (``schema`` is the table's)."""
    from sleeper.io import SortedFileReader

    for f in files:
        yield from stack.enter_context(SortedFileReader(str(f), schema)).read(None, batch_size=65536, use_threads=False)


def _merge_datafusion(files: list[Path], out: Path) -> None:
    import datafusion
    from datafusion import ParquetWriterOptions, col

    config = (
        datafusion.SessionConfig({"datafusion.execution.parquet.schema_force_view_types": "false"})
        .with_target_partitions(len(files))
        .with_repartition_file_scans(False)
        .with_repartition_sorts(False)
    )
    context = datafusion.SessionContext(config)
    order = [col("key").sort(ascending=True, nulls_first=True)]
    frame = None
    for f in files:
        scan = context.read_parquet(str(f), file_sort_order=[order])
        frame = scan if frame is None else frame.union(scan)
    assert frame is not None
    frame = frame.sort(*order)
    plan = frame.execution_plan().display_indent()
    if "SortExec:" in plan or "SortPreservingMergeExec" not in plan:
        raise SystemExit(f"DataFusion did not plan a sort-preserving merge:\n{plan}")
    frame.write_parquet_with_options(
        str(out),
        ParquetWriterOptions(
            compression="zstd(1)",
            dictionary_enabled=False,
            max_row_group_size=ROW_GROUP_ROWS,
            writer_version="2.0",
            data_pagesize_limit=128 * 1024,
        ),
    )


def _warm_up(method: str, files: list[Path], work_dir: Path, key_type: str) -> None:
    """Imports what a method uses before it is timed, as a process that has run a job before has: the engines'
    packages, and for ``compact*`` a compaction of two 1,000-row files (which imports the modules the job imports
    lazily, pandas among them: pyarrow imports it on its first conversion from or to numpy)."""
    if method == "merge_datafusion":
        import datafusion  # noqa: F401
    elif method == "merge_polars":
        import polars  # noqa: F401
    elif method == "sort_duckdb":
        import duckdb  # noqa: F401
    elif method == "rw_sleeper":
        import sleeper.io.parquet  # noqa: F401
        import sleeper.io.parquet_reader  # noqa: F401
    elif method.startswith("compact"):
        warm = work_dir / "warm-up"
        warm.mkdir()
        tiny = []
        for number, f in enumerate(files[:2]):
            tiny.append(warm / f"tiny-{number}.parquet")
            tiny_table = pq.ParquetFile(f).read_row_group(0).slice(0, 1000)
            pq.write_table(tiny_table, tiny[-1], **_write_options(tiny_table.schema))
        engine = {"compact_arrow": "ARROW", "compact_datafusion": "DATAFUSION"}.get(method.removesuffix("_2x"))
        _compact(tiny, warm, key_type, engine)
        shutil.rmtree(warm)


def run_one(method: str, input_dir: Path, work_dir: Path, key_type: str) -> dict[str, Any]:
    """Runs one method in this process and returns its figures."""
    files = sorted(input_dir.glob("*.parquet"))
    expected = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    out = work_dir / "out.parquet"
    engine_used = None
    _warm_up(method, files, work_dir, key_type)
    _TIMES.clear()
    start = time.perf_counter()
    cpu = _cpu_seconds()
    if method in ("rw_pa_stream", "rw_pa_stream_thr"):
        _rw_pa_stream(files, out, threaded=method == "rw_pa_stream_thr")
    elif method == "rw_sleeper":
        _rw_sleeper(files, out, key_type)
    elif method == "merge_datafusion":
        _merge_datafusion(files, out)
        if out.is_dir():  # DataFusion writes a directory when the path has no extension it knows
            out = next(out.glob("*.parquet"))
    elif method == "sort_pa":
        table = pa.concat_tables(pq.read_table(f) for f in files).sort_by("key")
        pq.write_table(table, out, row_group_size=ROW_GROUP_ROWS, **_write_options(table.schema))
    elif method == "merge_polars":
        import polars as pl

        frames = [pl.scan_parquet(str(f)) for f in files]
        while len(frames) > 1:
            frames = [
                frames[i].merge_sorted(frames[i + 1], key="key") if i + 1 < len(frames) else frames[i]
                for i in range(0, len(frames), 2)
            ]
        frames[0].sink_parquet(
            str(out), compression="zstd", compression_level=1, row_group_size=ROW_GROUP_ROWS, statistics=True
        )
    elif method == "sort_duckdb":
        import duckdb

        names = ", ".join(f"'{f}'" for f in files)
        duckdb.connect().execute(
            f"COPY (SELECT * FROM read_parquet([{names}]) ORDER BY key) TO '{out}' "  # noqa: S608
            f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
        )
    elif method.startswith("compact"):
        engine = {"compact_arrow": "ARROW", "compact_datafusion": "DATAFUSION"}.get(method.removesuffix("_2x"))
        out, engine_used = _compact(files, work_dir, key_type, engine)
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = _TIMES.get("seconds", time.perf_counter() - start)
    cpu_seconds = _TIMES.get("cpu_seconds", _cpu_seconds() - cpu)
    own_peak = peak_rss_bytes()
    children_peak = _children_peak_rss_bytes()
    # The job's memory: this process's peak plus its largest worker's, which run at the same time.
    peak = own_peak + children_peak
    _check(out, expected, ordered=not method.startswith("rw_"))
    return {
        "seconds": seconds,
        "rows_per_second": expected / seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mib": peak / 2**20,
        "peak_rss_mb": peak / 1e6,
        "peak_rss_workers_mb": children_peak / 1e6,
        "rows": expected,
        "engine": engine_used,
    }


def _available(method: str) -> bool:
    import importlib.util

    if method in ("merge_datafusion", "compact_datafusion", "compact_datafusion_2x"):
        return importlib.util.find_spec("datafusion") is not None
    if method == "merge_polars":
        return importlib.util.find_spec("polars") is not None
    return True


def _targets(method: str, runs: dict[str, list[dict[str, Any]]], result: dict[str, Any]) -> dict[str, Any]:
    """The targets (``TARGETS``) for one compaction method, from ratios taken within each repetition."""
    ratios = result["ratios"][method]
    rss = result["methods"][method]["peak_rss_mb"]
    checks: dict[str, Any] = {"peak_rss_mb": rss, "peak_rss_ok": rss <= TARGETS["max_peak_rss_mb"]}
    if "x_rw_pa_stream_thr" in ratios:
        checks["x_rw_pa_stream_thr"] = ratios["x_rw_pa_stream_thr"]
        checks["x_rw_pa_stream_thr_ok"] = ratios["x_rw_pa_stream_thr"] <= TARGETS["max_x_rw_pa_stream_thr"]
    for base, target in (
        ("merge_datafusion", "min_throughput_vs_merge_datafusion"),
        ("sort_duckdb", "min_throughput_vs_sort_duckdb"),
    ):
        if f"x_{base}" in ratios:
            checks[f"throughput_vs_{base}"] = 1 / ratios[f"x_{base}"]
            checks[f"throughput_vs_{base}_ok"] = 1 / ratios[f"x_{base}"] >= TARGETS[target]
    doubled = f"{method}_2x"
    if doubled in runs:
        growth = statistics.median(
            big["peak_rss_mb"] / small["peak_rss_mb"] for big, small in zip(runs[doubled], runs[method], strict=True)
        )
        checks["peak_rss_2x_mb"] = result["methods"][doubled]["peak_rss_mb"]
        checks["rss_growth_2x"] = growth
        checks["rss_flat_ok"] = growth <= TARGETS["max_rss_growth_2x"]
    checks["all_ok"] = all(v for k, v in checks.items() if k.endswith("_ok"))
    return checks


def _default_engine() -> str:
    from sleeper.core.properties import InstanceProperties, TableProperties
    from sleeper.io.data_engine import resolve_engine

    return resolve_engine(TableProperties(InstanceProperties()))


def _run_key_type(args: argparse.Namespace, key_type: str, methods: list[str], data_dir: Path) -> dict[str, Any]:
    inputs = make_inputs(data_dir, args.files, args.rows, key_type)
    scaled = any(m.endswith("_2x") for m in methods)
    inputs_2x = make_inputs(data_dir, args.files, args.rows * SCALE, key_type) if scaled else None
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    with tempfile.TemporaryDirectory(prefix="sleeper-compaction-bench-") as tmp:
        for repeat in range(args.repeats):
            order = list(methods)
            np.random.default_rng(repeat).shuffle(order)
            for method in order:
                work_dir = Path(tmp) / f"{method}-{repeat}"
                work_dir.mkdir()
                subprocess.run(["sync"], check=False)
                load = os.getloadavg()[0]
                source = inputs_2x if method.endswith("_2x") else inputs
                out = subprocess.run(
                    [sys.executable, __file__, "--child", method, str(source), str(work_dir), key_type],
                    capture_output=True,
                    text=True,
                    env={**os.environ, **IMAGE_ENVIRONMENT},
                )
                if out.returncode:
                    raise SystemExit(f"{method} failed:\n{out.stderr}")
                child_figures = json.loads(out.stdout.strip().splitlines()[-1])
                child_figures["load_average"] = load
                runs[method].append(child_figures)
                subprocess.run(["rm", "-rf", str(work_dir)], check=True)
    result: dict[str, Any] = {"methods": {}, "ratios": {}, "targets": {}}
    print(f"== {key_type} keys: {args.files} files x {args.rows:,} rows, {args.repeats} repeats (medians)", flush=True)
    for method in methods:
        figures: dict[str, Any] = {
            key: statistics.median(run[key] for run in runs[method])
            for key in ("seconds", "rows_per_second", "cpu_seconds", "peak_rss_mib", "peak_rss_mb", "load_average")
        }
        figures["peak_rss_workers_mb"] = statistics.median(run.get("peak_rss_workers_mb", 0.0) for run in runs[method])
        figures["seconds_all"] = [round(run["seconds"], 3) for run in runs[method]]
        figures["load_average_max"] = max(run["load_average"] for run in runs[method])
        if runs[method][0]["engine"]:
            figures["engine"] = runs[method][0]["engine"]
        result["methods"][method] = figures
        ratios = {
            f"x_{base}": statistics.median(
                mine["seconds"] / theirs["seconds"] for mine, theirs in zip(runs[method], runs[base], strict=True)
            )
            for base in BASELINES
            if base in runs and base != method and not method.endswith("_2x")
        }
        ratios.update(
            {
                f"cpu_x_{base}": statistics.median(
                    mine["cpu_seconds"] / theirs["cpu_seconds"]
                    for mine, theirs in zip(runs[method], runs[base], strict=True)
                )
                for base in ("rw_pa_stream_thr", "merge_datafusion")
                if base in runs and base != method and not method.endswith("_2x")
            }
        )
        result["ratios"][method] = ratios
        ratio_text = "  ".join(f"{name} {value:5.2f}" for name, value in ratios.items())
        print(
            f"{method:20s} {figures['seconds']:7.2f} s  {figures['rows_per_second']:>12,.0f} rows/s  "
            f"CPU {figures['cpu_seconds']:6.2f} s  peak RSS {figures['peak_rss_mb']:6.0f} MB  "
            f"load {figures['load_average']:4.2f}  {ratio_text}",
            flush=True,
        )
    for method in COMPACTIONS:
        if method in runs:
            result["targets"][method] = _targets(method, runs, result)
            checks = result["targets"][method]
            print(
                f"targets {method}: "
                + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in checks.items()),
                flush=True,
            )
    return result


def _plot(path: str, summary: dict[str, Any]) -> None:
    """Seconds and peak RSS against the rows compacted, a panel of each per key type: a line for each method run at
    both sizes (``X`` and ``X_2x``), a point for each run at one."""
    panels = []
    rows = summary["files"] * summary["rows_per_file"] / 1e6
    for key_type, result in summary["key_types"].items():
        methods = result["methods"]
        seconds = Panel(f"{key_type} keys: time", "rows compacted (millions)", "seconds")
        memory = Panel(f"{key_type} keys: memory", "rows compacted (millions)", "peak RSS (MB, with workers)")
        for method, figures in methods.items():
            if method.endswith("_2x"):
                continue
            twice = methods.get(f"{method}_2x")
            xs = [rows] if twice is None else [rows, rows * SCALE]
            runs = [figures] if twice is None else [figures, twice]
            seconds.series.append(Series(method, xs, [run["seconds"] for run in runs]))
            memory.series.append(Series(method, xs, [run["peak_rss_mb"] for run in runs]))
        panels += [seconds, memory]
    plot_panels(path, panels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per input file")
    parser.add_argument("--key-types", default="string,long", help="comma-separated: string, long")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--data-dir", type=Path, help="keep the generated inputs here and reuse them")
    parser.add_argument("--plot", help="write a PNG of seconds and peak RSS against the rows compacted here")
    parser.add_argument("--child", nargs=4, metavar=("METHOD", "INPUT", "WORKDIR", "KEY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, input_dir, work_dir, key_type = args.child
        print(json.dumps(run_one(method, Path(input_dir), Path(work_dir), key_type)))
        return
    if args.plot:
        require_matplotlib()
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods: {sorted(unknown)}")
    methods = [m for m in methods if _available(m)]
    key_types = [k for k in args.key_types.split(",") if k]
    if set(key_types) - {"string", "long"}:
        raise SystemExit(f"unknown key types: {key_types}")
    summary: dict[str, Any] = {
        "files": args.files,
        "rows_per_file": args.rows,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg()[0],
        "targets": TARGETS,
        "default_engine": _default_engine(),
        "key_types": {},
    }
    with tempfile.TemporaryDirectory(prefix="sleeper-compaction-data-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        for key_type in key_types:
            summary["key_types"][key_type] = _run_key_type(args, key_type, methods, data_dir)
    summary["load_average_end"] = os.getloadavg()[0]
    if args.plot:
        _plot(args.plot, summary)
        print(f"plot written to {args.plot}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
