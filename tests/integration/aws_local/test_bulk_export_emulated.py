"""Bulk export on the emulated instance, started by a script written for Sleeper's Python client (unchanged: ``from
sleeper.client import SleeperClient``, ``from sleeper.bulk_export import BulkExportQuery``): the pump delivers the
query to the planner Lambda, the task creation schedule starts one ECS task per leaf export, each runs the bulk export
container's entry point as a local process, and the export finishes: one sorted file per leaf in the bulk export
bucket whose rows are a full query's (the same count and checksum, and equal tables); with a filtering iterator on
the table, the filtered query's.

CI exports 60,000 rows over 4 leaves; the nightly profile (``SLEEPER_NIGHTLY=1``) also a larger size, 2,000,000 rows
over 16 leaves."""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper.core import operations
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.io.filesystem import resolve
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
from sleeper.runtime.aws.instance import ACCOUNT_ENV, CONFIG_BUCKET_ENV, INSTANCE_ID_ENV
from tests.reliability_report import nightly

pytestmark = [pytest.mark.integration, pytest.mark.aws]

_LOG = logging.getLogger(__name__)
KEY_SPACE = 1_000_000
SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.STRING)],
)
NOW_MS = int(time.time() * 1000)
DAY_MS = 86_400_000

EXPORT_SCRIPT = """
import sys

from sleeper.bulk_export import BulkExportQuery
from sleeper.client import SleeperClient

instance_id, table_name, export_id = sys.argv[1:4]
SleeperClient(instance_id).bulk_export(BulkExportQuery(export_id, table_name=table_name))
print("sent")
"""


def _rows(rows: int) -> pa.Table:
    rng = np.random.default_rng(18)
    keys = rng.integers(0, KEY_SPACE, rows, dtype=np.int64)
    ages = np.where(np.arange(rows) % 2 == 0, 10 * DAY_MS, rng.integers(0, 3_600_000, rows))  # half 10 days old
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array(NOW_MS - ages, pa.int64()),
            "value": pa.array(np.char.add("v", (keys % 1000).astype(str)), pa.string()),
        }
    )


def _send_export(emulated: EmulatedAwsInstance, table_name: str, export_id: str, tmp_path: Path) -> None:
    """Runs the script in its own process with only what a user exports (the client finds the account from STS)."""
    env = {**os.environ, **emulated.environment()}
    for name in (CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, ACCOUNT_ENV):
        env.pop(name, None)
    script = tmp_path / "export.py"
    script.write_text(EXPORT_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), emulated.instance_id, table_name, export_id],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _run_export(emulated: EmulatedAwsInstance, tmp_path: Path, task_seconds: float) -> list[tuple[str, int]]:
    """What AWS does with the query: the planner Lambda, then the task creation schedule and the tasks it starts."""
    pump = emulated.pump(task_log_dir=str(tmp_path / "tasks"), environment_extra={IDLE_WAIT_ENV: "1"})
    try:
        planned = pump.run_until_idle(timeout_seconds=120)
        assert planned.delivered.get(operations.BULK_EXPORT_PLANNER) == 1
        assert pump.fire(operations.BULK_EXPORT_TASK_CREATION)
        return pump.run_until_idle(timeout_seconds=task_seconds).tasks_finished
    finally:
        pump.close()


def _exported(emulated: EmulatedAwsInstance, table_id: str, export_id: str) -> list[pa.Table]:
    instance = emulated.instance()
    bucket = instance.properties.get(cdk.BULK_EXPORT_S3_BUCKET)
    filesystem, path = resolve(f"s3a://{bucket}/{table_id}/{export_id}", instance.filesystem_options)
    from pyarrow import fs as pafs

    files = sorted(i.path for i in filesystem.get_file_info(pafs.FileSelector(path)) if i.path.endswith(".parquet"))
    return [pq.read_table(f, filesystem=filesystem) for f in files]


def _in_key_order(parts: list[pa.Table]) -> pa.Table:
    for part in parts:
        order = pc.sort_indices(part, [("key", "ascending"), ("timestamp", "ascending")])
        assert part.equals(part.take(order)), "an exported file is not sorted"
    return pa.concat_tables(sorted(parts, key=lambda p: p["key"][0].as_py()))


def _count_and_checksum(rows: pa.Table) -> tuple[int, str]:
    """The row count and a SHA-256 of the rows' values in key order (key, timestamp, value; rows equal on all three are
    the same row), as the figures to compare between an export and a query."""
    ordered = rows.sort_by([("key", "ascending"), ("timestamp", "ascending"), ("value", "ascending")])
    digest = hashlib.sha256()
    for name in ("key", "timestamp"):
        digest.update(ordered[name].to_numpy().astype("<i8").tobytes())
    digest.update("\n".join(ordered["value"].to_pylist()).encode())
    return ordered.num_rows, digest.hexdigest()


@pytest.mark.parametrize(
    ("rows", "leaves", "task_seconds"),
    [
        pytest.param(60_000, 4, 300, id="60k-rows-4-leaves"),
        pytest.param(2_000_000, 16, 1800, id="2M-rows-16-leaves", marks=nightly),
    ],
)
def should_finish_an_export_sent_by_sleepers_client_script_with_one_sorted_file_per_leaf(
    emulated: EmulatedAwsInstance, tmp_path: Path, rows: int, leaves: int, task_seconds: float
) -> None:
    # Given a table of several leaves on the emulated instance, its rows ingested in two batches
    instance = emulated.instance()
    splits = [KEY_SPACE * i // leaves for i in range(1, leaves)]
    table = instance.create_table(f"export-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=splits)
    data = _rows(rows)
    table.ingest(data.slice(0, rows // 2), direct=True)
    table.ingest(data.slice(rows // 2), direct=True)
    expected = table.query()
    assert expected.num_rows == rows

    # When Sleeper's client script sends an export, and the instance runs it (export ids are the instance's: each
    # size's are its own, so the second is not taken for a repeat of the first)
    full_export, filtered_export = f"full-export-{table.name}", f"filtered-export-{table.name}"
    _send_export(emulated, table.name, full_export, tmp_path)
    finished = _run_export(emulated, tmp_path, task_seconds)

    # Then one task ran per leaf, each ending well, and the export is tracked COMPLETED with every row
    assert [code for _, code in finished] == [0] * leaves
    status = instance.query_tracker.status(full_export)
    assert status is not None and status.last_known_state is QueryState.COMPLETED and status.row_count == rows
    # And the bucket holds one sorted file per leaf, together the full query's rows in order (count and checksum)
    parts = _exported(emulated, table.table_id, full_export)
    assert len(parts) == leaves
    exported = _in_key_order(parts)
    figures = _count_and_checksum(exported)
    assert figures == _count_and_checksum(expected)
    _LOG.info("full export of %d leaves: %d rows, sha256 %s, equal to the query's", leaves, *figures)
    assert exported.equals(expected.select(exported.column_names))

    # When a filtering iterator is set on the table and another export is sent
    filtered_table = table.set_properties({"sleeper.table.filters": f"ageOff(timestamp,{DAY_MS})"})
    filtered = filtered_table.query()
    assert 0 < filtered.num_rows < rows
    _send_export(emulated, table.name, filtered_export, tmp_path)
    assert [code for _, code in _run_export(emulated, tmp_path, task_seconds)] == [0] * leaves

    # Then the export equals the filtered query
    exported = _in_key_order(_exported(emulated, table.table_id, filtered_export))
    figures = _count_and_checksum(exported)
    assert figures == _count_and_checksum(filtered)
    _LOG.info("filtered export of %d leaves: %d rows, sha256 %s, equal to the query's", leaves, *figures)
    assert exported.equals(filtered.select(exported.column_names))
