"""The ingest batcher report (Sleeper's admin client "ingest batcher report": all files or pending only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.ports import IngestBatcherStore

__all__ = ["batcher_report", "report_rows"]


def batcher_report(store: IngestBatcherStore, *, pending_only: bool = False) -> list[TrackedFile]:
    """The files to report: pending ones oldest first, or every tracked file newest first."""
    return store.pending_files_oldest_first() if pending_only else store.all_files_newest_first()


def report_rows(files: Sequence[TrackedFile], table_names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One JSON-ready row per file, for a table or ``--json`` output.

    Args:
        files: The files, in the order to show them.
        table_names: Table names by id; a table not named (e.g. deleted) is shown by its id.

    Returns:
        Rows with ``file``, ``tableName``, ``tableId``, ``sizeBytes``, ``receivedTime`` (ISO 8601, UTC),
        ``status`` (``PENDING`` or ``ASSIGNED``), ``jobId`` (None while pending) and ``modifiedTime`` (the file's
        modification time when submitted, ISO 8601, UTC; None if unknown). While an assigned record is kept, the same
        file submitted again with this size and modification time is skipped rather than tracked again.
    """
    names = table_names or {}
    return [
        {
            "file": f.file,
            "tableName": names.get(f.table_id, f.table_id),
            "tableId": f.table_id,
            "sizeBytes": f.file_size_bytes,
            "receivedTime": f.received_time.isoformat(timespec="milliseconds"),
            "status": "ASSIGNED" if f.is_assigned_to_job else "PENDING",
            "jobId": f.job_id,
            "modifiedTime": (
                f.file_modified_time.isoformat(timespec="milliseconds") if f.file_modified_time is not None else None
            ),
        }
        for f in files
    ]
