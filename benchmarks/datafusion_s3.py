"""The DataFusion engine on S3: a compaction and a leaf query of files in an S3 bucket (a moto server), each engine in
a fresh process, at one size and twice that size, for the check that memory stays flat as the job grows.

For each size (``--rows`` and twice as many, in ``--files`` sorted input files of a table with one partition), the
inputs are written locally (``benchmarks/compaction.py``'s generator) and uploaded to a bucket of a moto server
running in its own process (so its memory is not counted). Then, each in a fresh process:

- ``compact``: the table's compaction of every input file into one output file on S3
  (``sleeper.compaction.execution.run_compaction``), by each engine (``sleeper.table.data.engine`` ARROW and
  DATAFUSION). The DataFusion engine merges key ranges of about 8M input rows, each in a worker process.
- ``query``: a sub-query of the whole leaf (``sleeper.query.executor.run_leaf_query``) read to the end, by each engine.
  The DataFusion read runs in worker processes retired after about 4M rows, a larger read split into key ranges.

Measured: wall and CPU time (the workers' included) and the peak RSS of the process plus its largest worker's
(``VmHWM``, and ``ru_maxrss`` of the children waited for), the most the job held at once, taken before the output is
read back for the check. Both engines must give the
same rows (count and sum of a column), else the benchmark fails. The growth at 2x is the peak at twice the rows over
the peak at the first size; flat means close to 1.

Usage: ``python benchmarks/datafusion_s3.py [--rows 6000000] [--files 8] [--key-type long|string]``. The last line is
one JSON object with every figure, the load average and the ARROW engine's figures as the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.compaction import make_inputs  # noqa: E402
from benchmarks.measure import peak_rss_bytes  # noqa: E402

REGION: Final = "eu-west-2"
ENGINES = ("ARROW", "DATAFUSION")
OPERATIONS = ("compact", "query")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def _options(endpoint: str) -> Any:
    from sleeper.io.filesystem import FileSystemOptions, S3Options

    return FileSystemOptions(
        s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing")
    )


def _schema(key_type: str) -> Any:
    from sleeper.core.schema import Field, PrimitiveType, Schema

    key = PrimitiveType.STRING if key_type == "string" else PrimitiveType.LONG
    return Schema.of(
        row_keys=[Field("key", key)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )


class _Table:
    """A table on an in-memory state store whose data files are in an S3 bucket (a ``SleeperTable``)."""

    def __init__(self, bucket: str, table_id: str, key_type: str, engine: str, files: list[str], rows: list[int]):
        from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
        from sleeper.core.partition import partitions_from_split_points
        from sleeper.core.properties import InstanceProperties, TableProperties
        from sleeper.core.statestore.references import FileReference
        from sleeper.statestore.store import StateStore

        self.table_id = table_id
        self.name = table_id
        self.schema = _schema(key_type)
        self.data_prefix = f"s3://{bucket}/{table_id}"
        self.properties = TableProperties(
            InstanceProperties({"sleeper.id": "bench", "sleeper.data.bucket": bucket}),
            {
                "sleeper.table.name": table_id,
                "sleeper.table.id": table_id,
                "sleeper.table.schema": self.schema.to_json(),
                "sleeper.table.data.engine": engine,
                "sleeper.table.compaction.job.commit.async": "false",
            },
        )
        self.state_store = StateStore(schema=self.schema, table_id=table_id, backend=InMemoryStateStoreBackend())
        self.state_store.initialise(partitions_from_split_points(self.schema, []))
        self.state_store.add_files(
            [
                FileReference(filename=name, partition_id="root", number_of_rows=count)
                for name, count in zip(files, rows, strict=True)
            ]
        )


def _compact(table: _Table, endpoint: str, engine: str) -> dict[str, Any]:
    from sleeper.compaction.execution import run_compaction
    from sleeper.core.jobs.compaction import CompactionJob
    from sleeper.core.statestore.transactions.files import AssignJobIdRequest, AssignJobIdsTransaction

    inputs = tuple(ref.filename for ref in table.state_store.file_references())
    job_id = str(uuid.uuid4())
    job = CompactionJob(
        table_id=table.table_id,
        job_id=job_id,
        input_files=inputs,
        output_file=f"{table.data_prefix}/data/partition_root/{job_id}.parquet",
        partition_id="root",
    )
    table.state_store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=inputs),))
    )
    result = run_compaction(job, table, options=_options(endpoint))
    if result.engine.upper() != engine:
        raise SystemExit(f"asked for engine {engine}, ran {result.engine}")
    return {"rows": result.rows_written, "output": job.output_file}


def _sum_of_values(location: str, endpoint: str) -> int:
    """The sum of the value column of a file on S3, read a batch at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from sleeper.io.filesystem import s3_filesystem

    filesystem = s3_filesystem(_options(endpoint).s3)
    total = 0
    with filesystem.open_input_file(location.removeprefix("s3://")) as source:
        for batch in pq.ParquetFile(source).iter_batches(columns=["value"]):
            total += pc.sum(batch.column(0)).as_py() or 0
    return total


def _query(table: _Table, endpoint: str, engine: str) -> dict[str, Any]:
    import pyarrow.compute as pc

    from sleeper.core.query import LeafPartitionQuery
    from sleeper.query.datafusion_read import stop_workers
    from sleeper.query.executor import query_iterators, run_leaf_query

    root = table.state_store.partition_tree().root
    leaf_query = LeafPartitionQuery(
        query_id="bench",
        sub_query_id="bench-root",
        table_id=table.table_id,
        leaf_partition_id=root.id,
        partition_region=root.region,
        regions=(root.region,),
        files=tuple(ref.filename for ref in table.state_store.file_references()),
    )
    rows = 0
    total = 0
    now_ms = int(time.time() * 1000)
    config = query_iterators(table.properties, table.schema, leaf_query.processing, now_ms)
    batches = run_leaf_query(leaf_query, table.schema, config, now_ms, options=_options(endpoint), engine=engine)
    for batch in batches:
        rows += batch.num_rows
        total += pc.sum(batch.column("value")).as_py() or 0
    stop_workers()  # waited for, so their CPU time and peak RSS are counted
    return {"rows": rows, "sum_value": total}


def child(operation: str, endpoint: str, bucket: str, table_id: str, key_type: str, engine: str, listing: str) -> None:
    """Runs one operation by one engine in this (fresh) process and prints its figures as JSON."""
    files_and_rows = json.loads(listing)
    table = _Table(bucket, table_id, key_type, engine, [f for f, _ in files_and_rows], [r for _, r in files_and_rows])
    start, cpu = time.perf_counter(), _cpu_seconds()
    outcome = (_compact if operation == "compact" else _query)(table, endpoint, engine)
    seconds, cpu_seconds = time.perf_counter() - start, _cpu_seconds() - cpu
    own, workers = peak_rss_bytes(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if "output" in outcome:  # checked after the peaks are taken: reading the output is not the job's memory
        outcome["sum_value"] = _sum_of_values(outcome.pop("output"), endpoint)
    print(
        json.dumps(
            {
                **outcome,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "peak_rss_mb": own / 1e6,
                "worker_peak_rss_mb": workers / 1e6,
                "held_mb": (own + workers) / 1e6,
            }
        )
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server, endpoint
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the moto server did not start within 60 s")


def _upload(local: Path, endpoint: str, bucket: str, table_id: str) -> list[tuple[str, int]]:
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    from sleeper.io.filesystem import s3_filesystem

    filesystem = s3_filesystem(_options(endpoint).s3)
    listing = []
    for path in sorted(local.glob("*.parquet")):
        target = f"{bucket}/{table_id}/data/partition_root/{path.name}"
        pafs.copy_files(str(path), target, destination_filesystem=filesystem)
        listing.append((f"s3://{target}", pq.ParquetFile(path).metadata.num_rows))
    return listing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=6_000_000, help="rows at 1x (in all files together)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--key-type", choices=("long", "string"), default="long")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    import boto3

    server, endpoint = _start_moto()
    figures: dict[str, Any] = {}
    try:
        s3 = boto3.client(
            "s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="x"
        )
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        with tempfile.TemporaryDirectory(prefix="sleeper-datafusion-s3-") as scratch:
            for scale in (1, 2):
                rows = args.rows * scale
                local = make_inputs(Path(scratch), args.files, rows // args.files, args.key_type)
                table_id = f"table-{scale}x"
                listing = json.dumps(_upload(local, endpoint, bucket, table_id))
                for operation in OPERATIONS:
                    outcomes = {}
                    for engine in ENGINES:
                        done = subprocess.run(
                            [sys.executable, __file__, "--child", operation, endpoint, bucket, table_id]
                            + [args.key_type, engine, listing],
                            check=True,
                            capture_output=True,
                            text=True,
                            env={**os.environ, "AWS_EC2_METADATA_DISABLED": "true"},
                        )
                        result = json.loads(done.stdout.strip().splitlines()[-1])
                        outcomes[engine] = result
                        print(
                            f"{rows:,} rows on S3, {operation} by {engine}: {result['seconds']:.2f} s, "
                            f"CPU {result['cpu_seconds']:.2f} s, peak RSS {result['peak_rss_mb']:.0f} MB + largest "
                            f"worker {result['worker_peak_rss_mb']:.0f} MB = {result['held_mb']:.0f} MB",
                            flush=True,
                        )
                    if len({(o["rows"], o["sum_value"]) for o in outcomes.values()}) != 1 or (
                        outcomes["ARROW"]["rows"] != rows
                    ):
                        raise AssertionError(f"the engines' {operation} results differ: {outcomes}")
                    figures.setdefault(operation, {})[f"{scale}x"] = outcomes
    finally:
        server.kill()
        server.wait()
    for operation in OPERATIONS:
        for engine in ENGINES:
            one = figures[operation]["1x"][engine]["held_mb"]
            two = figures[operation]["2x"][engine]["held_mb"]
            figures[operation][f"{engine}_growth_at_2x"] = two / one
            print(f"{operation} by {engine}: {one:.0f} MB at 1x, {two:.0f} MB at 2x: {two / one:.2f}x", flush=True)
    print(
        json.dumps(
            {
                "rows_1x": args.rows,
                "files": args.files,
                "key_type": args.key_type,
                "load_average": os.getloadavg(),
                "baseline": "ARROW",
                "results": figures,
            }
        )
    )


if __name__ == "__main__":
    main()
