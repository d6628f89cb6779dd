"""A whole bulk export run in this process (``sleeper export TABLE DIR`` on a local instance): planned and tracked as
the queues' entries plan and track it, each leaf exported in turn, written under a directory of the caller's choice
as ``<dir>/<tableId>/<exportId>/<subExportId>.parquet``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from sleeper.bulk_export.entry import plan_bulk_export, run_leaf_partition_export
from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_export.model import BulkExportQuery, export_output_path
from sleeper.io import S3_SCHEMES, UnsupportedLocationError, is_s3_uri
from sleeper.statestore import SleeperRuntime

__all__ = ["ExportSummary", "export_root", "export_table"]

_LOCAL_URI = "file://"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportSummary:
    """What an export wrote.

    Attributes:
        export_id: The export's id.
        table_id: The table exported.
        files: The files written, one per leaf partition holding files, in key order of the leaves.
        rows_written: Rows written over all files.
        already_finished: The tracker already recorded this export as finished; nothing was written this time.
    """

    export_id: str
    table_id: str
    files: tuple[str, ...]
    rows_written: int
    already_finished: bool = False


def export_root(root: str) -> str:
    """Where an export given ``root`` writes, checked before anything is planned or written.

    An S3 URI (``s3://bucket/prefix`` or ``s3a://``) is kept: the files are written through pyarrow's S3 filesystem
    with the instance's S3 options (a local instance's: the standard AWS configuration), as local ingest reads
    ``s3://`` inputs. A ``file://`` URI or a path is a local directory, made absolute.

    Raises:
        UnsupportedLocationError: If the root is empty, has another scheme, is an S3 URI with no bucket, or starts
            like a URI missing a slash (a first segment ending in ``:``, such as ``s3:/bucket/x``, or ``s3:``,
            ``s3a:`` or ``file:`` then anything, such as ``s3:bucket``), which would otherwise become a local
            directory of that name.
    """
    text = root.strip()
    if not text:
        raise UnsupportedLocationError("the export location is empty: give a directory or an s3:// URI")
    if is_s3_uri(text):
        bucket = text.partition("://")[2].split("/", 1)[0]
        if not bucket:
            raise UnsupportedLocationError(f"cannot export to {root!r}: the S3 URI has no bucket (s3://bucket/prefix)")
        return text
    if text.lower().startswith(_LOCAL_URI):
        text = text[len(_LOCAL_URI) :]
        if not text.startswith("/"):
            raise UnsupportedLocationError(f"cannot export to {root!r}: a file:// URI must hold an absolute path")
    elif "://" in text:
        scheme = text.partition("://")[0]
        raise UnsupportedLocationError(
            f"cannot export to {root!r}: scheme {scheme!r} is not s3://, s3a:// or file:// (or a local path)"
        )
    first = text.split("/", 1)[0]
    prefix = first.partition(":")[0].lower() if ":" in first else None
    if (first.endswith(":") and len(first) > 1) or prefix in (*S3_SCHEMES, "file"):
        raise UnsupportedLocationError(
            f"cannot export to {root!r}: it starts like a URI with a missing slash; write s3://bucket/prefix for S3, "
            f"or ./{text} for a local directory of that name"
        )
    return os.path.abspath(os.path.expanduser(text))


def export_table(instance: SleeperRuntime, query: BulkExportQuery, root: str) -> ExportSummary:
    """Exports a table: one sorted Parquet file per leaf partition under ``root`` (a local directory or an S3 URI:
    see :func:`export_root`).

    Raises:
        UnsupportedLocationError: If ``root`` is not a location an export can write (nothing is planned or written).
        BulkExportError: If the query names no table or a leaf could not be exported (the export is tracked FAILED
            or PARTIALLY_FAILED).
    """
    root = export_root(root)
    plan = plan_bulk_export(instance, query, root=root)
    if plan.error is not None:
        raise BulkExportError(plan.error)
    assert plan.table_id is not None
    if plan.already_finished:
        return ExportSummary(
            export_id=query.export_id, table_id=plan.table_id, files=(), rows_written=0, already_finished=True
        )
    files: list[str] = []
    rows = 0
    for leaf in plan.leaves:
        try:
            result = run_leaf_partition_export(instance, leaf, root=root)
        except Exception as e:
            raise BulkExportError(f"bulk export {query.export_id}: leaf {leaf.leaf_partition_id} failed: {e}") from e
        files.append(result.output if result is not None else export_output_path(root, leaf))
        rows += result.rows_written if result is not None else 0
    return ExportSummary(export_id=query.export_id, table_id=plan.table_id, files=tuple(files), rows_written=rows)
