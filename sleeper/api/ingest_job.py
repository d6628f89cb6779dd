"""What ``Table.ingest`` takes, and ingest as a job: rows staged as Parquet, an ingest job sent, its tracker polled.

``Table.ingest`` accepts data in the forms users of Arrow have it: Parquet paths (local, made absolute by
:func:`sleeper.io.input_paths.resolve_input_paths`, or ``s3://``/``s3a://``), a pyarrow Table, RecordBatch, iterable of
batches or RecordBatchReader, a list of dicts, a pandas DataFrame, and any object exporting an Arrow stream through the
Arrow PyCapsule interface (``__arrow_c_stream__``: polars DataFrames, DuckDB relations, arro3 tables). Anything else is
refused naming what is accepted. :func:`normalise_ingest_data` turns them into what
:func:`sleeper.ingest.inputs.ingest_rows` reads.

An instance on AWS ingests as Sleeper's Python client does: rows given in memory (or read from local files) are
written as one Parquet file under the data bucket's ``for_ingest/`` prefix, an ingest job naming it (or naming the S3
files given) goes to the ingest job queue, and the deployed ingest tasks run it. :func:`send_ingest_job` does that;
:func:`wait_for_ingest_job` polls the ingest job tracker until the job finishes, and raises if it fails or is
rejected.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.core import INGEST_JOB_Q, INGEST_STAGING_PREFIX, Schema, SleeperError, check_safe_id, join_under
from sleeper.core.jobs import IngestJob
from sleeper.core.trackers import IngestJobStatusType, IngestJobTracker
from sleeper.ingest import IngestInput, IngestResult, parquet_batches
from sleeper.io import arrow_schema, conform_batch, is_s3_uri, resolve, resolve_input_paths
from sleeper.statestore import SleeperRuntime

__all__ = [
    "STAGING_PREFIX",
    "IngestData",
    "IngestJobError",
    "IngestJobSent",
    "normalise_ingest_data",
    "send_ingest_job",
    "wait_for_ingest_job",
]

STAGING_PREFIX = INGEST_STAGING_PREFIX
"""Where rows sent as an ingest job are written first, under the data bucket (as Sleeper's Python client does)."""

IngestData: TypeAlias = IngestInput | pa.RecordBatchReader | Any
"""What ``Table.ingest`` accepts (checked when called: see :func:`normalise_ingest_data`)."""

ACCEPTED = (
    "Parquet paths (local, or s3:// / s3a://), a pyarrow Table, RecordBatch, RecordBatchReader or iterable of "
    "RecordBatches, a list of dicts, a pandas DataFrame, or an object with __arrow_c_stream__ (polars, DuckDB)"
)
"""What ``Table.ingest`` accepts, as named when it refuses something."""


class IngestJobError(SleeperError):
    """An ingest job sent for ``Table.ingest`` failed or was rejected, or did not finish in time."""


@dataclass(frozen=True, slots=True)
class IngestJobSent:
    """An ingest job sent to the ingest job queue (``Table.ingest(..., wait=False)``).

    Attributes:
        job_id: The job id, to follow in the ingest job tracker (``sleeper report ingest-jobs``).
        files: The files the job reads.
        queue: The queue it was sent to.
    """

    job_id: str
    files: tuple[str, ...]
    queue: str


def normalise_ingest_data(data: object) -> IngestInput:
    """Data in any accepted form as one :func:`sleeper.ingest.inputs.ingest_rows` reads; paths resolved.

    Raises:
        SleeperError: If the data is of no accepted form (naming its type and what is accepted).
        MissingFileError: If a local path names nothing.
    """
    if isinstance(data, (str, Path)):
        return list(resolve_input_paths([data]))
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data
    if hasattr(data, "__arrow_c_stream__"):  # polars, DuckDB relations, pandas >= 2.2, arro3
        return pa.RecordBatchReader.from_stream(data)
    if _is_pandas(data):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, (list, tuple)):
        if data and all(isinstance(item, (str, Path)) for item in data):
            return list(resolve_input_paths(data))
        if all(isinstance(item, Mapping) for item in data) or all(isinstance(item, pa.RecordBatch) for item in data):
            return list(data)
    elif isinstance(data, Iterable) and not isinstance(data, (bytes, Mapping)):
        return _batches_only(iter(data))
    raise SleeperError(f"cannot ingest data of type {type(data).__name__}: give {ACCEPTED}")


def _batches_only(items: Iterable[object]) -> Iterable[pa.RecordBatch]:
    for item in items:
        if not isinstance(item, pa.RecordBatch):
            raise SleeperError(f"cannot ingest an iterable of {type(item).__name__}: give {ACCEPTED}")
        yield item


def _is_pandas(data: object) -> bool:
    return any(c.__module__.startswith("pandas") and c.__name__ == "DataFrame" for c in type(data).__mro__)


def _paths(data: IngestInput) -> list[str] | None:
    if isinstance(data, list) and data and all(isinstance(item, str) for item in data):
        return [str(item) for item in data]
    return None


def send_ingest_job(
    instance: SleeperRuntime,
    table_name: str,
    schema: Schema,
    data: IngestInput,
    *,
    job_id: str | None = None,
) -> IngestJobSent:
    """Sends data as an ingest job: S3 paths as they are, anything else first written as one Parquet file under the
    data bucket's ``for_ingest/`` prefix (local Parquet files are read with the table's columns).

    Raises:
        UnsafeIdError: If the job id breaks the safe id rule.
        SchemaMismatchError: If the rows do not suit the table schema (nothing is sent).
    """
    job = check_safe_id(job_id or str(uuid.uuid4()), what="ingest job id")
    paths = _paths(data)
    if paths is not None and all(is_s3_uri(p) for p in paths):
        files = tuple(paths)
    else:
        if paths is not None:
            if any(is_s3_uri(p) for p in paths):
                raise SleeperError("give either local paths or S3 paths to one ingest, not both")
            batches: Iterable[pa.RecordBatch] = parquet_batches(paths, schema)
        else:
            batches = _as_batches(data, schema)
        files = (_stage(instance, job, schema, batches),)
    queue = instance.queue(INGEST_JOB_Q)
    queue.send(IngestJob(id=job, files=files, table_name=table_name).to_json())
    return IngestJobSent(job_id=job, files=files, queue=queue.name)


def _as_batches(data: IngestInput, schema: Schema) -> Iterable[pa.RecordBatch]:
    from sleeper.ingest import as_batches

    return as_batches(data, schema)


def _stage(instance: SleeperRuntime, job_id: str, schema: Schema, batches: Iterable[pa.RecordBatch]) -> str:
    """Writes the rows as one Parquet file ``<data root>/for_ingest/<job id>.parquet``; returns its URI."""
    uri = join_under(instance.data_root, STAGING_PREFIX, f"{job_id}.parquet")
    filesystem, path = resolve(uri, instance.filesystem_options)
    target = arrow_schema(schema)
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as sink, pq.ParquetWriter(sink, target) as writer:
        for batch in batches:
            writer.write_batch(conform_batch(batch, target, where="the rows to ingest"))
    return uri


def wait_for_ingest_job(
    tracker: IngestJobTracker,
    job_id: str,
    *,
    timeout_seconds: float,
    poll_seconds: float = 1.0,
    sleep: Any = time.sleep,
    clock: Any = time.monotonic,
) -> IngestResult:
    """Polls the ingest job tracker until the job finishes; returns its rows read and written (the files it wrote are
    known to its task only, so ``files`` and ``references`` are empty).

    Raises:
        IngestJobError: If the job is rejected or a run fails (with the tracker's reasons), or it has not finished
            within the timeout (it may still finish: follow it in the tracker).
    """
    deadline = clock() + timeout_seconds
    while True:
        status = tracker.job(job_id)
        if status is not None:
            run = status.latest_run
            if status.status is IngestJobStatusType.FINISHED:
                return IngestResult(rows_read=run.rows_read, rows_written=run.rows_written)
            if run.status in (IngestJobStatusType.REJECTED, IngestJobStatusType.FAILED):
                reasons = "; ".join(run.failure_reasons) or "no reason recorded"
                raise IngestJobError(f"ingest job {job_id} {run.status.value.lower()}: {reasons}")
        if clock() >= deadline:
            state = "not yet seen by an ingest task" if status is None else status.status.value.lower()
            raise IngestJobError(
                f"ingest job {job_id} did not finish within {timeout_seconds:g} s ({state}); follow it with "
                "'sleeper report ingest-jobs'"
            )
        sleep(poll_seconds)
