"""Trimmed copies: for a file only part of whose rows belong to the table (:mod:`sleeper.iceberg.coverage`), the view
reads a copy holding exactly its rows in the partitions referencing it, written under the table's Iceberg directory.

A copy is named by a digest of the file and the referencing partitions, so the same references give the same copy:
a publish reuses the copy the current snapshot already lists and writes any other afresh (an existing file of that
name that no snapshot lists may be a crashed write). Copies no retained snapshot lists are deleted by the publisher
once they are old enough (:mod:`sleeper.iceberg.retention`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import PartitionTree, Schema, iceberg_location
from sleeper.iceberg.types import view_arrow_schema
from sleeper.io import FileSystemOptions, KeyBounds, Region, open_output, read_sorted, resolve

__all__ = ["TRIMMED_DIRECTORY", "trimmed_location", "write_trimmed"]

TRIMMED_DIRECTORY = "trimmed"
"""Where trimmed copies are, under the table's Iceberg directory."""


def trimmed_location(data_prefix: str, filename: str, partition_ids: Sequence[str]) -> str:
    """The URI of the trimmed copy of a file for a set of referencing partitions."""
    digest = hashlib.sha256("\n".join([filename, *sorted(partition_ids)]).encode("utf-8")).hexdigest()[:40]
    return f"{iceberg_location(data_prefix)}/{TRIMMED_DIRECTORY}/{digest}.parquet"


def _regions(tree: PartitionTree, partition_ids: Sequence[str]) -> list[Region]:
    out: list[Region] = []
    for pid in partition_ids:
        region = tree.get(pid).region
        out.append([KeyBounds(name, r.canonical_min, r.canonical_max) for name, r in region.ranges.items()])
    return out


def write_trimmed(
    filename: str,
    partition_ids: Sequence[str],
    tree: PartitionTree,
    schema: Schema,
    location: str,
    *,
    options: FileSystemOptions | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> int:
    """Writes the rows of ``filename`` in the referencing partitions to ``location``, batch by batch, in the file's
    order, with the view's column types (:func:`sleeper.iceberg.types.view_arrow_schema`); returns the rows written.

    Raises:
        MissingFileError: If the file is gone.
    """
    fs, path = resolve(location, options, filesystem=filesystem)
    rows = 0
    target = view_arrow_schema(schema)
    with open_output(fs, path) as sink, pq.ParquetWriter(sink, target) as writer:
        for batch in read_sorted(
            filename, schema, regions=_regions(tree, partition_ids), options=options, filesystem=filesystem
        ):
            if batch.num_rows:
                writer.write_batch(batch if batch.schema.equals(target) else batch.cast(target))
                rows += batch.num_rows
    return rows
