"""How the user API shows itself: short reprs and notebook HTML for an instance, a table and a scan, and the table's
metadata as Arrow with file sizes, per-partition sums and job runs."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.instance import Instance
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.filesystem import filesystem_path

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


@pytest.fixture
def instance(tmp_path: Path) -> Instance:
    created = sleeper.create_instance(tmp_path / "instance")
    created.create_table("t", SCHEMA, split_points=[50])
    rows = pa.table({"key": pa.array(range(100), pa.int64()), "value": [f"v{i}" for i in range(100)]})
    pq.write_table(rows, tmp_path / "in.parquet")
    created.ingest_files("t", [str(tmp_path / "in.parquet")], job_id="job-1")
    return created


def should_show_an_instance_a_table_and_a_scan_in_one_line_and_as_html(instance: Instance) -> None:
    # Given an instance with a table of 100 rows on 2 leaf partitions, and a scan of it
    table = instance.table("t")
    scan = table.scan(ranges={"key": (10, 20)}, columns=["key"], limit=5)
    # When they are shown
    shown = [repr(instance), repr(table), repr(scan)]
    # Then each repr is one short line naming what it is, with no state read into it
    assert all("\n" not in text and len(text) < 200 for text in shown), shown
    assert repr(table).startswith(f"Table('t', id='{table.table_id}', instance=LocalInstance(")
    assert repr(scan) == "Scan('t', regions=1, columns=['key'], limit=5)"
    # And the notebook views hold the figures a user looks for
    table_html = table._repr_html_()
    assert "Sleeper table t" in table_html and "<td style='text-align:left'>100</td>" in table_html
    assert "<td style='text-align:left'>2</td>" in table_html  # the leaf partitions
    assert "<td style='text-align:left'>Sleeper&#x27;s</td>" in table_html  # no value type beyond Sleeper's
    assert "Sleeper instance" in instance._repr_html_() and ">t<" in instance._repr_html_()
    assert "Scan of t" in scan._repr_html_() and "limit" in scan._repr_html_()


def should_inspect_file_sizes_partition_sums_and_job_runs(instance: Instance) -> None:
    # Given a table whose rows were ingested by one tracked job, then compacted
    instance.compact_now("t", compact_all=True)
    table = instance.table("t")
    # When its metadata is read
    files = table.inspect.files()
    partitions = table.inspect.partitions()
    jobs = table.inspect.jobs()
    # Then each file's size is its size on disk
    referenced = files.filter(files["partition_id"].is_valid())
    for name, size in zip(referenced["filename"].to_pylist(), referenced["file_size_bytes"].to_pylist(), strict=True):
        assert size == os.path.getsize(filesystem_path(name))
    # And each partition sums the rows, files and bytes referenced on it
    leaves = partitions.filter(partitions["is_leaf"])
    assert sum(leaves["rows"].to_pylist()) == 100
    assert all(b > 0 for b in leaves["bytes"].to_pylist())
    assert sum(partitions["files"].to_pylist()) == referenced.num_rows
    # And the job runs of the table are there: the ingest job and the compactions, one row a run
    assert ("job-1", "ingest", "FINISHED") in zip(
        jobs["job_id"].to_pylist(), jobs["kind"].to_pylist(), jobs["status"].to_pylist(), strict=True
    )
    compactions = jobs.filter(pa.compute.equal(jobs["kind"], "compaction"))
    assert compactions.num_rows >= 1 and all(p is not None for p in compactions["partition_id"].to_pylist())
