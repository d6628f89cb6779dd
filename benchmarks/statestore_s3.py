"""Benchmark of the object-log state store (``S3TransactionLogStateStore``) beside the DynamoDB/SQLite one, in one run.

Figures, each store adding ``--commits`` files one ADD_FILES each through the real log head (Sleeper's defaults: read
the log before every add):

- local files: ``files_*`` (``sleeper.adapters.local.file_log``, exclusive hard links) and ``sqlite_*`` (the local
  instance's SQLite log, the same-run baseline): commits/s and per-commit latency p50/p99 in ms.
- moto (a local S3 and DynamoDB emulator over HTTP; its figures are NOT AWS's, only the two stores side by side on the
  same emulator): ``s3_*`` (``sleeper.adapters.aws.s3_log``, PutObject If-None-Match) and ``dynamodb_*`` (the
  DynamoDB log), with ``--moto-commits`` commits, and the AWS requests each commit made, counted on the client:
  ``*_requests_per_commit`` by operation.
- ``cost_per_million_commits_usd``: the requests counted, priced at AWS list prices (S3 PUT/LIST $0.005 per 1,000,
  GET/HEAD $0.0004 per 1,000; DynamoDB on-demand $1.25 per million WRU, $0.25 per million RRU). Assumptions: a log
  item of at most 1 KB; a DynamoDB transactional write costs 2 WRU per KB per item, and the append's TransactWriteItems
  (the entry's Put and the tombstone's ConditionCheck) 2 + 2 = 4 WRU; a strongly consistent Query reading at most
  4 KB 1 RRU. Storage, data transfer and the readers following the log are not counted.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/statestore_s3.py [--commits 1000] [--moto-commits 200]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sleeper.adapters.local.file_log import FileStateStoreBackend  # noqa: E402
from sleeper.adapters.local.statestore import SqliteStateStoreBackend  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema  # noqa: E402
from sleeper.core.statestore.references import FileReference  # noqa: E402
from sleeper.statestore.ports import StateStoreBackend  # noqa: E402
from sleeper.statestore.store import StateStore  # noqa: E402

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
TABLE = "0a1b2c3d"
S3_CLASS_A = 0.005 / 1000  # PUT, COPY, POST, LIST
S3_CLASS_B = 0.0004 / 1000  # GET, HEAD and the rest
WRU = 1.25 / 1_000_000
RRU = 0.25 / 1_000_000


def _commits(backend: StateStoreBackend, count: int) -> dict[str, float]:
    store = StateStore(schema=SCHEMA, table_id=TABLE, backend=backend)
    store.initialise()
    latencies: list[float] = []
    started = time.perf_counter()
    for i in range(count):
        reference = FileReference(filename=f"f{i:06d}.parquet", partition_id="root", number_of_rows=i)
        t0 = time.perf_counter()
        store.add_files([reference])
        latencies.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "commits_per_s": round(count / elapsed, 1),
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 2),
        "latency_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }


class _RequestCounter:
    """Counts the AWS operations a boto3 client makes."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        client.meta.events.register("before-call.*.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1


def _moto(count: int) -> dict[str, Any]:
    from sleeper.adapters.aws.clients import dynamodb_client, s3_client
    from sleeper.adapters.aws.dynamodb_state_store import DynamoDBStateStoreBackend
    from sleeper.adapters.aws.resources import create_bucket, create_state_store_tables
    from sleeper.adapters.aws.s3_log import S3StateStoreBackend
    from sleeper.core.naming import StateStoreTableNames
    from tests.contract import aws_backends

    aws_backends.atomic_conditional_puts()
    settings = aws_backends.aws_settings()
    out: dict[str, Any] = {}
    # the S3 log
    s3 = s3_client(settings)
    bucket = f"sleeper-{aws_backends.new_instance_id()}-table-data"
    create_bucket(s3, bucket, aws_backends.REGION)
    counter = _RequestCounter(s3)
    figures = _commits(S3StateStoreBackend(s3, bucket), count)
    out.update({f"s3_{k}": v for k, v in figures.items()})
    out["s3_requests_per_commit"] = {op: round(n / count, 2) for op, n in sorted(counter.counts.items())}
    # the DynamoDB log
    dynamodb, s3b = dynamodb_client(settings), s3_client(settings)
    instance = aws_backends.new_instance_id()
    names = StateStoreTableNames.for_instance(instance)
    create_state_store_tables(dynamodb, names)
    data_bucket = f"sleeper-{instance}-table-data"
    create_bucket(s3b, data_bucket, aws_backends.REGION)
    counter_d = _RequestCounter(dynamodb)
    figures = _commits(DynamoDBStateStoreBackend(dynamodb, s3b, table_names=names, data_bucket=data_bucket), count)
    out.update({f"dynamodb_{k}": v for k, v in figures.items()})
    out["dynamodb_requests_per_commit"] = {op: round(n / count, 2) for op, n in sorted(counter_d.counts.items())}
    return out


def _cost(figures: dict[str, Any]) -> dict[str, float]:
    s3 = figures.get("s3_requests_per_commit", {})
    class_a = sum(v for op, v in s3.items() if op in ("PutObject", "ListObjectsV2", "DeleteObjects"))
    class_b = sum(v for op, v in s3.items() if op in ("GetObject", "HeadObject"))
    ddb = figures.get("dynamodb_requests_per_commit", {})
    wru = 4 * ddb.get("TransactWriteItems", 0) + ddb.get("PutItem", 0)
    rru = ddb.get("Query", 0) + ddb.get("GetItem", 0)
    return {
        "s3": round(1_000_000 * (class_a * S3_CLASS_A + class_b * S3_CLASS_B), 2),
        "dynamodb": round(1_000_000 * (wru * WRU + rru * RRU), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--moto-commits", type=int, default=200)
    args = parser.parse_args()
    figures: dict[str, Any] = {"commits": args.commits, "moto_commits": args.moto_commits}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        figures.update(
            {f"files_{k}": v for k, v in _commits(FileStateStoreBackend(root / "files"), args.commits).items()}
        )
        sqlite = SqliteStateStoreBackend(root / "sqlite" / "sleeper.db", root / "sqlite" / "data")
        figures.update({f"sqlite_{k}": v for k, v in _commits(sqlite, args.commits).items()})
    print(
        f"local files: {figures['files_commits_per_s']} commits/s (p50 {figures['files_latency_p50_ms']} ms); "
        f"SQLite baseline: {figures['sqlite_commits_per_s']} commits/s (p50 {figures['sqlite_latency_p50_ms']} ms)"
    )
    figures.update(_moto(args.moto_commits))
    figures["cost_per_million_commits_usd"] = _cost(figures)
    print(
        f"moto (not AWS): S3 log {figures['s3_commits_per_s']} commits/s, {figures['s3_requests_per_commit']}; "
        f"DynamoDB log {figures['dynamodb_commits_per_s']} commits/s, {figures['dynamodb_requests_per_commit']}"
    )
    print(f"cost per million commits at list prices: {figures['cost_per_million_commits_usd']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
