"""A whole bulk export run in this process (``sleeper export TABLE DIR`` on a local instance): planned and tracked as
the queues' entries plan and track it, each leaf exported in turn, written under a directory of the caller's choice
as ``<dir>/<tableId>/<exportId>/<subExportId>.parquet``."""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.bulk_export.entry import BulkExportRuntime, plan_bulk_export, run_leaf_partition_export
from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_export.model import BulkExportQuery, export_output_path

__all__ = ["ExportSummary", "export_table"]


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


def export_table(instance: BulkExportRuntime, query: BulkExportQuery, root: str) -> ExportSummary:
    """Exports a table: one sorted Parquet file per leaf partition under ``root``.

    Raises:
        BulkExportError: If the query names no table or a leaf could not be exported (the export is tracked FAILED
            or PARTIALLY_FAILED).
    """
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
