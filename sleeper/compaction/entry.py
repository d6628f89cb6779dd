"""The runtime-neutral entries of compaction's queue-fed and per-table operations, run by either runtime through the
router (:mod:`sleeper.runtime.router`)."""

from __future__ import annotations

from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.ports import COMPACTION_JOB_QUEUE, CompactionInstance

__all__ = ["handle_compaction_job_creation"]


def handle_compaction_job_creation(instance: CompactionInstance, body: str) -> str:
    """One ``CompactionJobCreationQ.fifo`` message (body: the table id): pre-splits the table's file references,
    plans jobs with its strategy, assigns their input files and sends them to ``CompactionJobQ`` (recorded created
    in the compaction job tracker).

    Returns:
        A line for the log (empty when nothing was done).

    Raises:
        TableNotFoundError: If there is no such table.
        UnknownCompactionStrategyError: If the table's strategy is unknown.
        CompactionJobSendError: If assigned jobs could not all be sent.
        StateStoreError: If the pre-split is refused twice.
    """
    table_id = body.strip()
    result = create_compaction_jobs(
        instance.table_by_id(table_id), instance.queue(COMPACTION_JOB_QUEUE), instance.compaction_job_tracker
    )
    if not result.jobs_created and not result.references_pre_split and not result.jobs_over_limit:
        return ""
    line = (
        f"table {table_id}: {result.jobs_created} compaction jobs created, "
        f"{result.references_pre_split} file references pre-split"
    )
    return line + (f", {result.jobs_over_limit} over the limit" if result.jobs_over_limit else "")
