"""Rows given as Python dicts (Sleeper's Python client's form) as Arrow data in the table's column types, and the
Parquet files the client uploads for ingest.

Sleeper's client infers each column's type from the first row (so an ``IntType`` field cannot be written: Python
integers become int64) and ignores fields the table does not have. Here the rows are converted to the table's own
Arrow schema: a field the table lacks, a missing non-nullable field or a value of the wrong type is refused before
anything is uploaded.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.client.errors import ClientArgumentError
from sleeper.core import Schema
from sleeper.io import SchemaMismatchError, arrow_schema, conform_batch

__all__ = ["ROW_GROUP_BYTES", "ParquetSpool", "parquet_bytes", "rows_to_batch"]

ROW_GROUP_BYTES = 64 * 1024 * 1024
"""Rows buffered in memory before they are written to the spool file as a row group."""


def rows_to_batch(rows: object, schema: Schema, *, table_name: str) -> pa.RecordBatch:
    """The rows as a record batch with the table's Arrow schema.

    Args:
        rows: A list of dicts, one per row, keyed by field name.
        schema: The table's schema.
        table_name: The table, for messages.

    Raises:
        ClientArgumentError: If the rows are not a list of dicts, name a field the table lacks, lack a non-nullable
            field or hold a value that does not suit its field's type.
    """
    if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Sequence):
        raise ClientArgumentError(f"rows must be a list of dicts, got {type(rows).__name__}")
    target = arrow_schema(schema)
    if not rows:
        return pa.RecordBatch.from_pylist([], schema=target)
    if not all(isinstance(row, Mapping) for row in rows):
        raise ClientArgumentError("rows must be a list of dicts, one per row")
    names: set[Any] = set().union(*rows)
    unknown = sorted(str(n) for n in names - set(target.names))
    if unknown:
        raise ClientArgumentError(
            f"rows hold fields that table {table_name!r} does not have: {', '.join(unknown)} "
            f"(its fields: {', '.join(target.names)})"
        )
    try:
        batch = pa.RecordBatch.from_pylist(list(rows), schema=target)
        return conform_batch(batch, target, where="rows")
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, SchemaMismatchError) as e:
        raise ClientArgumentError(f"rows do not suit the schema of table {table_name!r}: {e}") from None


def parquet_bytes(batch: pa.RecordBatch) -> bytes:
    """One Parquet file holding the batch."""
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_batches([batch], schema=batch.schema), sink)
    return sink.getvalue()


class ParquetSpool:
    """A local temporary Parquet file that batches of rows are appended to, buffered into row groups of about
    :data:`ROW_GROUP_BYTES`, as Sleeper's batch writer spools rows before uploading them.

    Args:
        schema: The Arrow schema of every batch.
        row_group_bytes: The in-memory bytes buffered before a row group is written.
    """

    def __init__(self, schema: pa.Schema, *, row_group_bytes: int = ROW_GROUP_BYTES) -> None:
        handle, self.path = tempfile.mkstemp(prefix="sleeper-client-", suffix=".parquet")
        os.close(handle)
        self._schema = schema
        self._writer = pq.ParquetWriter(self.path, schema)
        self._buffer: list[pa.RecordBatch] = []
        self._buffered_bytes = 0
        self._row_group_bytes = row_group_bytes
        self.num_rows = 0

    def append(self, batch: pa.RecordBatch) -> None:
        """Adds a batch; a row group is written once enough bytes are buffered."""
        if batch.num_rows == 0:
            return
        self._buffer.append(batch)
        self._buffered_bytes += batch.nbytes
        self.num_rows += batch.num_rows
        if self._buffered_bytes >= self._row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write_table(pa.Table.from_batches(self._buffer, schema=self._schema))
            self._buffer = []
            self._buffered_bytes = 0

    def close(self) -> str:
        """Writes what is buffered and the file's footer; returns the file's path."""
        self._flush()
        self._writer.close()
        return self.path

    def discard(self) -> None:
        """Closes and deletes the file."""
        try:
            self._writer.close()
        finally:
            if os.path.exists(self.path):
                os.remove(self.path)
