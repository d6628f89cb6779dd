"""Rows to ingest in the forms a user has them: record batches, a pyarrow Table, Python dicts, or Parquet files.

:func:`ingest_rows` turns any of them into record batches for :func:`sleeper.ingest.standard.ingest_batches` and
ingests them into a table. Parquet files are read batch by batch (``pre_buffer=False``), so a large file is never
held in memory whole. With a job id, the hash of the Parquet files read is recorded with it, so the id cannot be reused
for other files; rows given in memory record none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

import pyarrow as pa

from sleeper.core import Schema
from sleeper.core.jobs import expand_job_files
from sleeper.core.statestore import input_files_hash
from sleeper.ingest.exceptions import IngestError
from sleeper.ingest.standard import IngestLimits, IngestResult, ingest_batches
from sleeper.io import FileSystemOptions, InputFile, arrow_schema, expand_paths, read_batches
from sleeper.statestore import SleeperTable

__all__ = ["READ_BATCH_ROWS", "IngestInput", "as_batches", "ingest_rows", "parquet_batches"]

READ_BATCH_ROWS = 65536
"""Rows per batch read from a Parquet file."""

IngestInput: TypeAlias = (
    pa.RecordBatch | pa.Table | Iterable[pa.RecordBatch] | Sequence[Mapping[str, object]] | str | Path | Sequence[str]
)
"""What :func:`ingest_rows` accepts."""


def parquet_batches(
    paths: Iterable[str | Path], schema: Schema, *, options: FileSystemOptions | None = None
) -> Iterator[pa.RecordBatch]:
    """The table's columns of Parquet files, batch by batch; a directory stands for the .parquet files under it.

    The paths are expanded and checked when this is called, before any batch is asked for, so a caller that opens an
    output for the batches (staging them for an ingest job) opens nothing for paths that are refused.

    Raises:
        IngestError: If a path names nothing, a directory holds no .parquet file, or a file is named twice (the
            same path twice, or a directory and a file inside it).
        InputFileError: If a file cannot be read or decoded (naming the file, row group and column).
    """
    return _read_parquet(_expand(paths, options), schema)


def _expand(paths: Iterable[str | Path], options: FileSystemOptions | None) -> list[InputFile]:
    inputs, reasons = expand_job_files([str(p) for p in paths], lambda p: expand_paths([p], options), _uri)
    if reasons:
        raise IngestError("; ".join(reasons))
    return inputs


def _uri(file: InputFile) -> str:
    return file.uri


def _read_parquet(inputs: Iterable[InputFile], schema: Schema) -> Iterator[pa.RecordBatch]:
    columns = list(schema.field_names)
    for file in inputs:
        yield from read_batches(file, columns, batch_rows=READ_BATCH_ROWS)


def _paths(data: IngestInput) -> list[str] | None:
    """The Parquet paths the data names, or None if it holds rows."""
    if isinstance(data, (str, Path)):
        return [str(data)]
    if isinstance(data, Sequence) and data and all(isinstance(item, str) for item in data):
        return [str(item) for item in data]
    return None


def as_batches(
    data: IngestInput, schema: Schema, *, options: FileSystemOptions | None = None
) -> Iterator[pa.RecordBatch]:
    """Record batches of rows given in any form :func:`ingest_rows` accepts.

    Raises:
        IngestError: If the data is of no accepted form, or dicts do not suit the schema.
    """
    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, (str, Path)):
        yield from parquet_batches([data], schema, options=options)
    elif isinstance(data, Sequence) and all(isinstance(item, str) for item in data) and data:
        yield from parquet_batches([str(item) for item in data], schema, options=options)
    elif isinstance(data, Sequence) and all(isinstance(item, Mapping) for item in data):
        if not data:
            return
        try:
            yield pa.RecordBatch.from_pylist(list(data), schema=arrow_schema(schema))
        except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as e:
            raise IngestError(f"rows do not suit the table schema: {e}") from e
    elif isinstance(data, Iterable):
        for batch in data:
            if not isinstance(batch, pa.RecordBatch):
                raise IngestError(f"expected record batches, got {type(batch).__name__}")
            yield batch
    else:
        raise IngestError(f"cannot ingest a {type(data).__name__}")


def ingest_rows(
    table: SleeperTable,
    data: IngestInput,
    *,
    job_id: str | None = None,
    limits: IngestLimits | None = None,
    local_dir: str | Path | None = None,
    options: FileSystemOptions | None = None,
) -> IngestResult:
    """Ingests rows into a table with standard ingest and commits them (see :func:`ingest_batches`).

    Args:
        table: The table.
        data: Record batches, a pyarrow Table, a list of dicts (one per row), or Parquet file or directory paths.
        job_id: An ingest job id: if its files were added before, nothing is done (idempotent retries); if they were
            added from other Parquet files, ``JobIdReusedError`` is raised and nothing is added.
        limits: The memory and local disk limits; by default those the table's and instance's properties set.
        local_dir: Where sorted runs spill.
        options: How to reach S3 for S3 paths and data.

    Returns:
        What was written and committed.
    """
    paths = _paths(data)
    inputs_hash: str | None = None
    if paths is None:
        batches = as_batches(data, table.schema, options=options)
    else:
        inputs = _expand(paths, options)
        inputs_hash = input_files_hash(i.uri for i in inputs)
        batches = _read_parquet(inputs, table.schema)
    return ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        batches,
        job_id=job_id,
        inputs_hash=inputs_hash,
        limits=limits,
        local_dir=local_dir,
        options=options,
    )
