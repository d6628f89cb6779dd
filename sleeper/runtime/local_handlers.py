"""What the local runtime's workers run for each queue: the same domain code as Sleeper's Lambdas and tasks."""

from __future__ import annotations

from sleeper.ingest.job_runner import INGEST_JOB_QUEUE, IngestJobRunner, JobOutcome
from sleeper.runtime.local import LocalInstance
from sleeper.runtime.local_runner import Handler
from sleeper.statestore.upkeep import create_snapshot, delete_old_snapshots, delete_old_transactions

__all__ = ["default_handlers"]


def _ingest_job(instance: LocalInstance, body: str) -> str:
    outcome = IngestJobRunner(instance, local_dir=instance.directory / "tmp").run_message(body)
    if outcome.outcome is JobOutcome.FAILED:
        raise RuntimeError(f"ingest job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is JobOutcome.REJECTED:
        return f"ingest job {outcome.job_id} rejected: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result else 0
    return f"ingest job {outcome.job_id} finished: {rows:,} rows written"


def _snapshot_creation(instance: LocalInstance, table_id: str) -> str:
    created = create_snapshot(instance.table_by_id(table_id).state_store).created
    return f"table {table_id}: {len(created)} snapshots created" if created else ""


def _snapshot_deletion(instance: LocalInstance, table_id: str) -> str:
    deleted = delete_old_snapshots(instance.table_by_id(table_id).state_store)
    return f"table {table_id}: {len(deleted)} old snapshots deleted" if deleted else ""


def _transaction_deletion(instance: LocalInstance, table_id: str) -> str:
    result = delete_old_transactions(instance.table_by_id(table_id).state_store)
    count = sum(result.entries_deleted.values())
    return f"table {table_id}: {count} old transactions deleted" if count else ""


def default_handlers() -> dict[str, Handler]:
    """Every queue's handler, in the order a round drains them (work flows from earlier queues to later ones)."""
    return {
        INGEST_JOB_QUEUE: _ingest_job,
        "TransactionLogSnapshotQ.fifo": _snapshot_creation,
        "TransactionLogSnapshotDeletionQ.fifo": _snapshot_deletion,
        "TransactionLogTransactionDeletionQ.fifo": _transaction_deletion,
    }
