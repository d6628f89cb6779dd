"""The outcome of a bulk import run whose platform reports its end: the EKS state machine calls
:func:`record_platform_failure` when the Kubernetes job running the Spark driver did not succeed.

The driver records its own run finished or failed. When the driver never got that far (its pod could not start,
ran out of memory or was killed), nothing would record the run's end and it would stay in progress in the ingest job
tracker for ever. So the state machine hands its state (the job, its run id and the error) here: a run the tracker
does not already record as finished or failed is recorded failed with the platform's reason; one it does is left as
it is (the driver's own record wins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sleeper.core.trackers import IngestJobStatusType, IngestRun
from sleeper.statestore import SleeperRuntime

__all__ = ["PlatformOutcomeError", "record_platform_failure"]

_ENDED = frozenset({IngestJobStatusType.FINISHED, IngestJobStatusType.FAILED, IngestJobStatusType.UNCOMMITTED})


class PlatformOutcomeError(ValueError):
    """The platform's report does not name a job, its table and its run."""


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise PlatformOutcomeError(f"the platform's report has no {what}")
    return value


def record_platform_failure(
    instance: SleeperRuntime,
    event: Mapping[str, Any],
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> dict[str, Any]:
    """Records a run failed if the tracker does not already record its end.

    Args:
        instance: The instance (its ingest job tracker).
        event: The state machine's state: ``job`` (with ``id`` and ``tableId``), ``jobRunId``, ``taskId`` (the state
            machine) and ``error`` (Step Functions' ``Error`` and ``Cause``), or ``jobResult`` when the job ended
            without succeeding.

    Returns:
        ``{"jobId", "jobRunId", "recorded"}``: whether a failure was recorded.

    Raises:
        PlatformOutcomeError: If the event names no job, table or run.
    """
    job = event.get("job")
    if not isinstance(job, Mapping):
        raise PlatformOutcomeError("the platform's report has no job")
    job_id = _text(job.get("id"), "job id")
    table_id = _text(job.get("tableId"), "table id")
    run_id = _text(event.get("jobRunId"), "job run id")
    status = instance.ingest_job_tracker.job(job_id)
    run = next((r for r in status.runs if r.job_run_id == run_id), None) if status is not None else None
    if run is not None and run.status in _ENDED:
        return {"jobId": job_id, "jobRunId": run_id, "recorded": False}
    IngestRun(
        instance.ingest_job_tracker,
        job_id=job_id,
        table_id=table_id,
        task_id=event.get("taskId") if isinstance(event.get("taskId"), str) else None,
        run_id=run_id,
        clock=clock,
    ).failed((_reason(job_id, event),))
    return {"jobId": job_id, "jobRunId": run_id, "recorded": True}


def _reason(job_id: str, event: Mapping[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, Mapping):
        detail = ": ".join(str(error[k]) for k in ("Error", "Cause") if error.get(k))
        return f"the Kubernetes job of bulk import job {job_id} failed ({detail or 'no detail'})"
    return f"the Kubernetes job of bulk import job {job_id} ended without succeeding; see the driver pod's logs"
