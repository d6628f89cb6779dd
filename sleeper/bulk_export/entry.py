"""The runtime-neutral entries of the bulk export queues, run by either runtime through the router
(:mod:`sleeper.runtime.router`), by the planner Lambda and by the bulk export task container.

:func:`handle_bulk_export` reads a bulk export query from ``BulkExport-Q``, finds its table (by name or id), plans one
leaf partition export per leaf holding files (:mod:`sleeper.bulk_export.planner`) and sends them to
``BulkExportLeafPartition-Q``. :func:`handle_leaf_partition_export` runs one leaf export and writes
``<export root>/<tableId>/<exportId>/<subExportId>.parquet``.

Exports are tracked in the instance's query tracker, as queries are: the export id is the query id and each leaf
export a sub-query, so the tracker's roll-up gives the export COMPLETED (with the rows written) once every leaf is
done, FAILED or PARTIALLY_FAILED otherwise; ``sleeper export`` waits on it. A query that cannot be read, names a
table that does not exist or has a filter that does not suit its table (``$.filter``) is tracked FAILED (when its
export id can be read) and its message is done, with nothing planned or written. An export whose id the tracker
already records as finished is not run again, and planning an export again (a redelivery) gives its leaves the same
sub-export ids and deletes any earlier output of that export not in the new plan, so a second export of the same
``exportId`` never duplicates rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sleeper.bulk_export.exceptions import BulkExportQueryError
from sleeper.bulk_export.executor import ExportResult, run_leaf_export
from sleeper.bulk_export.model import (
    BulkExportQuery,
    LeafPartitionExport,
    LeafPartitionExportSerDe,
    export_output_path,
    read_bulk_export_query,
)
from sleeper.bulk_export.planner import plan_export
from sleeper.core import BULK_EXPORT_Q, LEAF_PARTITION_BULK_EXPORT_Q, Schema, TableNotFoundError, join_under
from sleeper.core.statestore import PendingDelete, filters_of_each
from sleeper.core.trackers import QueryState, QueryUpdate
from sleeper.io import FileSystemOptions, resolve
from sleeper.statestore import SleeperRuntime

__all__ = [
    "BULK_EXPORT_Q",
    "LEAF_PARTITION_BULK_EXPORT_Q",
    "ExportPlan",
    "handle_bulk_export",
    "handle_leaf_partition_export",
    "plan_bulk_export",
    "run_leaf_partition_export",
]

_LOG = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportPlan:
    """What planning one bulk export query did.

    Attributes:
        export_id: The export id, if it could be read.
        table_id: The table exported, if found.
        leaves: The leaf exports planned (and sent, when planned from the queue).
        error: Why the export failed, if it did.
        already_finished: The tracker already records the export as finished; nothing was done.
    """

    export_id: str | None
    table_id: str | None = None
    leaves: tuple[LeafPartitionExport, ...] = ()
    error: str | None = None
    already_finished: bool = False


def _serde(instance: SleeperRuntime) -> LeafPartitionExportSerDe:
    def by_id(table_id: str) -> Schema:
        return instance.table_by_id(table_id).schema

    return LeafPartitionExportSerDe(by_id)


def plan_bulk_export(
    instance: SleeperRuntime,
    query: BulkExportQuery | str,
    *,
    root: str | None = None,
    clock: Callable[[], datetime] = _now,
) -> ExportPlan:
    """Reads, tracks and plans a bulk export; never raises for a bad query (it is tracked FAILED).

    Args:
        instance: The instance.
        query: The query, or its JSON.
        root: Where the export is written (default: the instance's bulk export location); earlier output of the
            same export not in the plan is deleted there.
        clock: The time of tracker updates.
    """
    tracker = instance.query_tracker
    try:
        parsed = query if isinstance(query, BulkExportQuery) else read_bulk_export_query(query)
        if parsed.table_name is not None:
            table = instance.table(parsed.table_name)
        else:
            table = instance.table_by_id(parsed.table_id or "")
        row_filter = parsed.parsed_filter(table.schema)
    except (BulkExportQueryError, TableNotFoundError) as e:
        export_id = getattr(e, "export_id", None) or (query.export_id if isinstance(query, BulkExportQuery) else None)
        if export_id is not None:
            tracker.record(
                QueryUpdate(query_id=export_id, state=QueryState.FAILED, update_time=clock(), error_message=str(e))
            )
        return ExportPlan(export_id=export_id, error=str(e))
    previous = tracker.status(parsed.export_id)
    if previous is not None and previous.last_known_state.is_finished:
        return ExportPlan(export_id=parsed.export_id, table_id=table.table_id, already_finished=True)
    tracker.record(QueryUpdate(query_id=parsed.export_id, state=QueryState.IN_PROGRESS, update_time=clock()))
    store = table.state_store
    references = store.file_references()
    tree = store.partition_tree()  # after the files: see sleeper.query.executor.plan_table_query
    leaves = plan_export(parsed, tree, references, table_id=table.table_id, row_filter=row_filter, schema=table.schema)
    leaves = _with_pending_deletes(leaves, store.pending_deletes())  # after the files: they cover every file planned
    _delete_stale_output(
        root if root is not None else instance.bulk_export_uri, table.table_id, parsed.export_id, leaves,
        instance.filesystem_options,
    )  # fmt: skip
    if not leaves:
        tracker.record(QueryUpdate(query_id=parsed.export_id, state=QueryState.COMPLETED, update_time=clock()))
    else:
        now = clock()
        tracker.record_all(
            [
                QueryUpdate(
                    query_id=parsed.export_id,
                    sub_query_id=leaf.sub_export_id,
                    state=QueryState.QUEUED,
                    update_time=now,
                )  # fmt: skip
                for leaf in leaves
            ]
        )
    return ExportPlan(export_id=parsed.export_id, table_id=table.table_id, leaves=tuple(leaves))


def _with_pending_deletes(
    leaves: list[LeafPartitionExport], deletes: Sequence[PendingDelete]
) -> list[LeafPartitionExport]:
    """Each leaf export with the filters of the pending row deletes that hide rows of its files, so the task that
    runs it leaves those rows out as a query does (``sleeper.core.statestore.deletes``)."""
    if not deletes:
        return leaves
    carried = filters_of_each(deletes, [leaf.files for leaf in leaves])
    return [replace(leaf, pending_deletes=c) if c else leaf for leaf, c in zip(leaves, carried, strict=True)]


def _delete_stale_output(
    root: str, table_id: str, export_id: str, leaves: list[LeafPartitionExport], options: FileSystemOptions | None
) -> None:
    """Deletes files of an earlier run of the same export that this plan does not write again (its leaves changed)."""
    from pyarrow import fs as pafs

    directory = join_under(root, table_id, export_id)
    filesystem, path = resolve(directory, options)
    keep = {f"{leaf.sub_export_id}.parquet" for leaf in leaves}
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name.endswith(".parquet") and info.base_name not in keep:
            filesystem.delete_file(info.path)


def handle_bulk_export(instance: SleeperRuntime, body: str) -> str:
    """One ``BulkExport-Q`` message: plans the export and sends one leaf partition export per leaf with files to
    ``BulkExportLeafPartition-Q``. A bad query is tracked FAILED and its message is done.

    Returns:
        A line for the log.
    """
    plan = plan_bulk_export(instance, body)
    if plan.error is not None:
        return f"bulk export {plan.export_id or '(no id)'} failed: {plan.error}"
    if plan.already_finished:
        return f"bulk export {plan.export_id} already finished; not run again"
    serde = _serde(instance)
    messages = [serde.to_json(leaf) for leaf in plan.leaves]
    queue = instance.queue(LEAF_PARTITION_BULK_EXPORT_Q)
    for start in range(0, len(messages), 10):
        queue.send_batch(messages[start : start + 10])
    return f"bulk export {plan.export_id} of table {plan.table_id}: {len(messages)} leaf partition exports sent"


def run_leaf_partition_export(
    instance: SleeperRuntime,
    leaf: LeafPartitionExport,
    *,
    root: str | None = None,
    clock: Callable[[], datetime] = _now,
) -> ExportResult | None:
    """Runs one leaf export and tracks it; returns None if it was already completed.

    Raises:
        Exception: Whatever stopped the export, after tracking the leaf FAILED.
    """
    tracker = instance.query_tracker
    previous = tracker.status(leaf.export_id, leaf.sub_export_id)
    if previous is not None and previous.last_known_state is QueryState.COMPLETED:
        return None
    tracker.record(
        QueryUpdate(
            query_id=leaf.export_id, sub_query_id=leaf.sub_export_id, state=QueryState.IN_PROGRESS, update_time=clock()
        )
    )
    try:
        table = instance.table_by_id(leaf.table_id)
        output = export_output_path(root if root is not None else instance.bulk_export_uri, leaf)
        result = run_leaf_export(
            leaf, table, output, now_ms=int(clock().timestamp() * 1000), options=instance.filesystem_options
        )
    except Exception as e:
        _LOG.exception("leaf partition export %s of export %s failed", leaf.sub_export_id, leaf.export_id)
        tracker.record(
            QueryUpdate(
                query_id=leaf.export_id,
                sub_query_id=leaf.sub_export_id,
                state=QueryState.FAILED,
                update_time=clock(),
                error_message=str(e),
            )
        )
        raise
    tracker.record(
        QueryUpdate(
            query_id=leaf.export_id,
            sub_query_id=leaf.sub_export_id,
            state=QueryState.COMPLETED,
            update_time=clock(),
            row_count=result.rows_written,
        )
    )
    return result


def handle_leaf_partition_export(instance: SleeperRuntime, body: str) -> str:
    """One ``BulkExportLeafPartition-Q`` message: exports the leaf partition to its file.

    Returns:
        A line for the log.

    Raises:
        BulkExportQueryError: If the message is not a valid leaf partition export.
        Exception: If the export failed (tracked FAILED; the message is delivered again).
    """
    leaf = _serde(instance).from_json(body)
    result = run_leaf_partition_export(instance, leaf)
    if result is None:
        return f"leaf partition export {leaf.sub_export_id} of export {leaf.export_id} already completed"
    return (
        f"leaf partition export {leaf.sub_export_id} of export {leaf.export_id}: {result.rows_written:,} rows "
        f"written to {result.output}"
    )
