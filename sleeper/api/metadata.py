"""A table's metadata as Arrow tables (``table.inspect``, as pyiceberg's): its file references and its partitions.

These are the state store's lists in columns, so they can be filtered, joined or handed to pandas, polars or DuckDB
like the rows. Partition bounds are typed as their row key field.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from sleeper.core.partition import Partition
from sleeper.core.schema import Schema
from sleeper.core.statestore.references import AllReferencesToAFile
from sleeper.io.arrow_schema import key_arrow_type

__all__ = ["FILES_SCHEMA", "files_table", "partitions_table"]

FILES_SCHEMA = pa.schema(
    [
        pa.field("filename", pa.string(), nullable=False),
        pa.field("partition_id", pa.string()),
        pa.field("number_of_rows", pa.int64()),
        pa.field("count_approximate", pa.bool_()),
        pa.field("only_contains_data_for_this_partition", pa.bool_()),
        pa.field("job_id", pa.string()),
        pa.field("last_update_time", pa.timestamp("ms", tz="UTC")),
    ]
)
"""The columns of :func:`files_table`."""


def files_table(files: Sequence[AllReferencesToAFile]) -> pa.Table:
    """One row per file reference; a file with no reference (awaiting garbage collection) has one row with a null
    partition, row count and flags."""
    rows: list[dict[str, object]] = []
    for file in files:
        if not file.references:
            rows.append({"filename": file.filename, "last_update_time": file.last_update_time})
        for ref in file.references.values():
            rows.append(
                {
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


def partitions_table(partitions: Sequence[Partition], schema: Schema) -> pa.Table:
    """One row per partition: id, parent, children, whether it is a leaf, the row key dimension it was split on (-1
    if none), and per row key field ``<field>_min`` (inclusive) and ``<field>_max`` (exclusive; null: unbounded)."""
    fields = [
        pa.field("partition_id", pa.string(), nullable=False),
        pa.field("parent_id", pa.string()),
        pa.field("child_ids", pa.list_(pa.string())),
        pa.field("is_leaf", pa.bool_()),
        pa.field("dimension", pa.int32()),
    ]
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
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))
