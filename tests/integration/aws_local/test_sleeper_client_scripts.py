"""Scripts written for Sleeper's own Python client (as its README and python/examples use it: ``from sleeper.client
import SleeperClient``, a client made from the instance id alone, batch writes, a batch writer, ingest of Parquet files
in S3, a batcher submit, exact and range queries) run unchanged, in their own processes, against the emulated
instance; what they read back equals what this package's Table API reads.

The scripts get only the AWS environment a user of an emulated instance exports (endpoint, region, credentials): the
client finds the account through STS and the instance through its config bucket, as Sleeper's does. While they run,
a pump drives the instance in a thread, with the ingest task creation and batcher job creation schedules fired every
few seconds instead of every minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.runtime.aws.instance import ACCOUNT_ENV, CONFIG_BUCKET_ENV, INSTANCE_ID_ENV

try:  # where the task containers' entry points are moving (h14's change, in the working tree)
    from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
except ImportError:
    from sleeper.lambdas._common import IDLE_WAIT_ENV

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.STRING),), value_fields=(Field("value", PrimitiveType.STRING),)
)

WRITE_SCRIPT = """
import sys

from sleeper.client import SleeperClient

instance_id, table_name, s3_file, batcher_file = sys.argv[1:5]

my_sleeper = SleeperClient(instance_id)

first_row = {"key": "example-key", "value": "example-value"}
second_row = {"key": "example-key2", "value": "example-value2"}
my_sleeper.write_single_batch(table_name, [first_row, second_row])

with my_sleeper.create_batch_writer(table_name) as writer:
    for x in range(3):
        rows = []
        for y in range(100):
            rows.append({"key": "batch-%d-%03d" % (x, y), "value": "value-%d" % y})
        writer.write(rows)

my_sleeper.ingest_parquet_files_from_s3(table_name, [s3_file], "my-ingest-job")
my_sleeper.submit_to_ingest_batcher(table_name, [batcher_file])
print("written")
"""

QUERY_SCRIPT = """
import json
import sys

from sleeper.client import SleeperClient

instance_id, table_name = sys.argv[1:3]

my_sleeper = SleeperClient(instance_id, use_threads=False)
results = {
    "exact": my_sleeper.exact_key_query(table_name, {"key": ["example-key", "batch-1-050", "s3-007", "missing"]}),
    "exact_rows": my_sleeper.exact_key_query(table_name, [{"key": "batcher-003"}, {"key": "example-key2"}]),
    "range": my_sleeper.range_key_query(table_name, [{"key": ["a", True, "c", False]}]),
    "range_pair": my_sleeper.range_key_query(table_name, [{"key": ("batch-2-090", "batcher-002")}]),
    "open_range": my_sleeper.range_key_query(table_name, [{"key": ("s3", None)}], "my-query-id"),
}
print(json.dumps(results))
"""


def _rows(prefix: str, count: int) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([f"{prefix}-{i:03d}" for i in range(count)], pa.string()),
            "value": pa.array([f"{prefix}-value-{i}" for i in range(count)], pa.string()),
        }
    )


def _script_environment(emulated: EmulatedAwsInstance) -> dict[str, str]:
    """The environment a user of the emulated instance exports: no config bucket, instance id or account."""
    env = {**os.environ, **emulated.environment()}
    for name in (CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, ACCOUNT_ENV):
        env.pop(name, None)
    return env


def _run(script: str, *args: str, env: dict[str, str], tmp_path: Path) -> str:
    path = tmp_path / f"script-{uuid.uuid4().hex[:6]}.py"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, str(path), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture
def pumping(emulated: EmulatedAwsInstance, tmp_path: Path) -> Iterator[Pump]:
    """A pump driving the instance in a thread, firing the ingest schedules every 3 s."""
    pump = emulated.pump(task_log_dir=str(tmp_path), environment_extra={IDLE_WAIT_ENV: "1"})
    stop = threading.Event()

    def drive() -> None:
        last_fired = 0.0
        while not stop.is_set():
            if time.monotonic() - last_fired > 3:
                pump.fire(operations.INGEST_BATCHER_JOB_CREATION)
                pump.fire(operations.INGEST_TASK_CREATION)
                last_fired = time.monotonic()
            if not pump.run_once().active:
                stop.wait(0.2)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    try:
        yield pump
    finally:
        stop.set()
        thread.join(timeout=60)
        pump.close()


def _wait_for_rows(emulated: EmulatedAwsInstance, table_name: str, count: int, *, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if emulated.instance().table(table_name).query().num_rows >= count:
            return
        time.sleep(1)
    raise AssertionError(f"the table did not reach {count} rows in {timeout:g} s")


def _by_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["key"])


def should_run_scripts_written_for_sleepers_client_unchanged(
    emulated: EmulatedAwsInstance, pumping: Pump, tmp_path: Path
) -> None:
    # Given a table of two leaves whose batcher sends each file to standard ingest at once, and two Parquet files in
    # the data bucket: one to ingest directly, one to submit to the batcher
    instance = emulated.instance()
    batcher_properties = {
        "sleeper.table.ingest.batcher.job.min.size": "1",
        "sleeper.table.ingest.batcher.job.min.files": "1",
        "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
    }
    table = instance.create_table(
        f"my_table-{uuid.uuid4().hex[:6]}", SCHEMA, split_points=["m"], properties=batcher_properties
    )
    s3_file = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    batcher_file = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    pq.write_table(_rows("s3", 20), s3_file, filesystem=instance.filesystem)
    pq.write_table(_rows("batcher", 5), batcher_file, filesystem=instance.filesystem)
    env = _script_environment(emulated)
    # When a script written for Sleeper's client writes a batch, 300 rows through a batch writer, ingests the first
    # file and submits the second to the batcher, and the instance runs what it sent
    assert _run(WRITE_SCRIPT, emulated.instance_id, table.name, s3_file, batcher_file, env=env, tmp_path=tmp_path) == (
        "written\n"
    )
    _wait_for_rows(emulated, table.name, 2 + 300 + 20 + 5)
    # And a script written for Sleeper's client queries it by exact keys and by ranges
    results = json.loads(_run(QUERY_SCRIPT, emulated.instance_id, table.name, env=env, tmp_path=tmp_path))
    # Then every row is in the table, and each query returned what the Table API reads for the same keys and ranges
    ours = emulated.instance().table(table.name)
    assert ours.query().num_rows == 327
    assert results["exact"] == ours.query(keys=[["example-key"], ["batch-1-050"], ["s3-007"], ["missing"]]).to_pylist()
    assert _by_key(results["exact"]) == [
        {"key": "batch-1-050", "value": "value-50"},
        {"key": "example-key", "value": "example-value"},
        {"key": "s3-007", "value": "s3-value-7"},
    ]
    assert results["exact_rows"] == ours.query(keys=[["batcher-003"], ["example-key2"]]).to_pylist()
    assert len(results["exact_rows"]) == 2
    assert results["range"] == ours.range("a", "c").to_pylist()
    assert len(results["range"]) == 305
    assert results["range_pair"] == ours.range("batch-2-090", "batcher-002").to_pylist()
    assert len(results["range_pair"]) == 12
    assert results["open_range"] == ours.range("s3").to_pylist()
    assert len(results["open_range"]) == 20
