"""A table's metadata as Arrow tables (``table.inspect``, as pyiceberg's): its file references with their sizes, its
partitions with the rows, files and bytes referenced on each, and its job runs.

These are the state store's lists in columns, so they can be filtered, joined or handed to pandas, polars or DuckDB
like the rows. Partition bounds are typed as their row key field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.core import Partition, Schema
from sleeper.core.statestore import AllReferencesToAFile
from sleeper.io import key_arrow_type

__all__ = ["FILES_SCHEMA", "JOB_RUNS_SCHEMA", "file_sizes", "files_table", "job_runs_table", "partitions_table"]

FILES_SCHEMA = pa.schema(
    [
        pa.field("filename", pa.string(), nullable=False),
        pa.field("partition_id", pa.string()),
        pa.field("number_of_rows", pa.int64()),
        pa.field("count_approximate", pa.bool_()),
        pa.field("only_contains_data_for_this_partition", pa.bool_()),
        pa.field("job_id", pa.string()),
        pa.field("last_update_time", pa.timestamp("ms", tz="UTC")),
        pa.field("file_size_bytes", pa.int64()),
    ]
)
"""The columns of :func:`files_table` (``file_size_bytes`` null for a file that cannot be found)."""

JOB_RUNS_SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("run_id", pa.string()),
        pa.field("task_id", pa.string()),
        pa.field("status", pa.string()),
        pa.field("partition_id", pa.string()),
        pa.field("start_time", pa.string()),
        pa.field("finish_time", pa.string()),
        pa.field("commit_time", pa.string()),
        pa.field("duration_seconds", pa.float64()),
        pa.field("rows_read", pa.int64()),
        pa.field("rows_written", pa.int64()),
        pa.field("failure_reasons", pa.list_(pa.string())),
    ]
)
"""The columns of :func:`job_runs_table`: one row per run of a job (times ISO 8601 UTC)."""


def file_sizes(filesystem: pafs.FileSystem, paths: Mapping[str, str]) -> dict[str, int | None]:
    """The size in bytes of each file (by its filename, given its filesystem path), in one listing call; None for a
    file that is not there."""
    if not paths:
        return {}
    infos = filesystem.get_file_info(list(paths.values()))
    by_path = {info.path: info.size if info.type == pafs.FileType.File else None for info in infos}
    return {name: by_path.get(path) for name, path in paths.items()}


def files_table(files: Sequence[AllReferencesToAFile], sizes: Mapping[str, int | None] | None = None) -> pa.Table:
    """One row per file reference, with the file's size when ``sizes`` gives it; a file with no reference (awaiting
    garbage collection) has one row with a null partition, row count and flags."""
    rows: list[dict[str, object]] = []
    sizes = sizes or {}
    for file in files:
        size = sizes.get(file.filename)
        if not file.references:
            rows.append({"filename": file.filename, "last_update_time": file.last_update_time, "file_size_bytes": size})
        for ref in file.references.values():
            rows.append(
                {
                    "file_size_bytes": size,
                    "filename": file.filename,
                    "partition_id": ref.partition_id,
                    "number_of_rows": ref.number_of_rows,
                    "count_approximate": ref.count_approximate,
                    "only_contains_data_for_this_partition": ref.only_contains_data_for_this_partition,
                    "job_id": ref.job_id,
                    "last_update_time": ref.last_update_time or file.last_update_time,
                }
            )
    return pa.Table.from_pylist(rows, schema=FILES_SCHEMA)


def partitions_table(partitions: Sequence[Partition], schema: Schema, files: pa.Table | None = None) -> pa.Table:
    """One row per partition: id, parent, children, whether it is a leaf, the row key dimension it was split on (-1
    if none), per row key field ``<field>_min`` (inclusive) and ``<field>_max`` (exclusive; null: unbounded), and, from
    ``files`` (a :func:`files_table`), the ``files``, ``rows`` and ``bytes`` referenced on it (a file referenced on
    several partitions counts its whole size on each; its rows are each reference's)."""
    fields = [
        pa.field("partition_id", pa.string(), nullable=False),
        pa.field("parent_id", pa.string()),
        pa.field("child_ids", pa.list_(pa.string())),
        pa.field("is_leaf", pa.bool_()),
        pa.field("dimension", pa.int32()),
    ]
    referenced: dict[str, tuple[int, int, int]] = {}
    if files is not None:
        sums = (
            files.filter(files["partition_id"].is_valid())
            .group_by("partition_id")
            .aggregate([("filename", "count"), ("number_of_rows", "sum"), ("file_size_bytes", "sum")])
        )
        for summed in sums.to_pylist():
            referenced[summed["partition_id"]] = (
                summed["filename_count"],
                summed["number_of_rows_sum"] or 0,
                summed["file_size_bytes_sum"] or 0,
            )
    for key in schema.row_key_fields:
        key_type = key_arrow_type(key.primitive_type)
        fields += [pa.field(f"{key.name}_min", key_type), pa.field(f"{key.name}_max", key_type)]
    rows: list[dict[str, object]] = []
    for partition in partitions:
        row: dict[str, object] = {
            "partition_id": partition.id,
            "parent_id": partition.parent_id,
            "child_ids": list(partition.child_ids),
            "is_leaf": partition.is_leaf,
            "dimension": partition.dimension,
        }
        for name, bounds in partition.region.ranges.items():
            row[f"{name}_min"] = bounds.min
            row[f"{name}_max"] = bounds.max
        row["files"], row["rows"], row["bytes"] = referenced.get(partition.id, (0, 0, 0))
        rows.append(row)
    fields += [pa.field("files", pa.int64()), pa.field("rows", pa.int64()), pa.field("bytes", pa.int64())]
    table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
    return table if files is not None else table.drop_columns(["files", "rows", "bytes"])


def job_runs_table(ingest_jobs: Sequence[dict[str, Any]], compaction_jobs: Sequence[dict[str, Any]]) -> pa.Table:
    """One row per run of a table's ingest (and bulk import) and compaction jobs, from the rows of
    :func:`sleeper.api.reports.ingest_job_rows` and :func:`~sleeper.api.reports.compaction_job_rows`."""
    rows: list[dict[str, object]] = []
    for kind, jobs in (("ingest", ingest_jobs), ("compaction", compaction_jobs)):
        for job in jobs:
            for run in job["jobRuns"]:
                rows.append(
                    {
                        "job_id": job["jobId"],
                        "kind": kind,
                        "run_id": run["runId"],
                        "task_id": run["taskId"],
                        "status": run["status"],
                        "partition_id": job.get("partitionId"),
                        "start_time": run["startTime"],
                        "finish_time": run["finishTime"],
                        "commit_time": run["commitTime"],
                        "duration_seconds": run["durationSeconds"],
                        "rows_read": run["rowsRead"],
                        "rows_written": run["rowsWritten"],
                        "failure_reasons": run["failureReasons"],
                    }
                )
    return pa.Table.from_pylist(rows, schema=JOB_RUNS_SCHEMA)
