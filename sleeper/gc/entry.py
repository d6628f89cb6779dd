"""The garbage collector's runtime-neutral entry: one ``GCJobQ.fifo`` message (a table id), in either runtime.

Garbage collection is composed here, once: the table's files unreferenced for longer than its delay are deleted and
DELETE_FILES committed, then its orphaned files are swept, then the files writers racing a table deletion left under
deleted tables' prefixes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.gc.collector import GcResult, run_garbage_collection
from sleeper.gc.orphans import DeletedTablesSweepResult, OrphanSweepResult, sweep_deleted_tables, sweep_orphans
from sleeper.statestore import SleeperRuntime

__all__ = ["GcRun", "garbage_collect_table", "handle_garbage_collection"]


@dataclass(frozen=True, slots=True)
class GcRun:
    """What one garbage collection of a table did: unreferenced files collected, orphans swept, and the files writers
    racing a table deletion left under deleted tables' prefixes."""

    collected: GcResult
    swept: OrphanSweepResult
    leftovers: DeletedTablesSweepResult = DeletedTablesSweepResult()

    def describe(self, table_id: str) -> str:
        """A line for the log, empty when nothing was deleted or kept."""
        parts = []
        if self.collected.deleted:
            parts.append(f"{len(self.collected.deleted)} files garbage collected")
        if self.swept.deleted:
            parts.append(f"{len(self.swept.deleted)} orphaned files deleted")
        if self.swept.bodies_deleted:
            parts.append(f"{len(self.swept.bodies_deleted)} unused transaction bodies deleted")
        if self.leftovers.deleted:
            parts.append(f"{len(self.leftovers.deleted)} files of deleted tables deleted")
        if self.collected.held:
            parts.append(f"{len(self.collected.held)} files kept: a published Iceberg snapshot holds them")
        return f"table {table_id}: {', '.join(parts)}" if parts else ""


def garbage_collect_table(instance: SleeperRuntime, table_id: str) -> GcRun:
    """Collects a table's garbage, sweeps its orphans and the leftovers of deleted tables.

    Raises:
        TableNotFoundError: If there is no such table.
        GarbageCollectionFailedError: If some files could not be collected (the others were; nothing is swept).
    """
    table_id = table_id.strip()
    options = instance.filesystem_options
    collected = run_garbage_collection(instance, table_id, options=options)
    swept = sweep_orphans(instance.table_by_id(table_id), options=options)
    leftovers = sweep_deleted_tables(
        instance.data_root,
        instance.is_table_deleted,
        live_table_ids=[t.table_id for t in instance.tables()],
        options=options,
    )
    return GcRun(collected=collected, swept=swept, leftovers=leftovers)


def handle_garbage_collection(instance: SleeperRuntime, body: str) -> str:
    """One ``GCJobQ.fifo`` message (body: the table id): see :func:`garbage_collect_table`.

    Returns:
        A line for the log.
    """
    return garbage_collect_table(instance, body).describe(body.strip())
