"""Writing query results as they are read: a rich table of the first rows, JSON, NDJSON, CSV or Parquet, to stdout or
a file.

Rows arrive as a ``pa.RecordBatchReader`` and are written batch by batch, so memory is bounded by a batch, not by the
result (the ``table`` format keeps only the rows it shows and counts the rest). ``--limit`` stops the reader once that
many rows came back, in every format. A file given with ``--output`` is written beside its final name and renamed into
place once every row is written, so a failed query leaves no partial file and changes nothing.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console

from sleeper.cli import render
from sleeper.cli.common import DISPLAY_ROWS
from sleeper.core import SleeperError, counted
from sleeper.query import json_float

__all__ = ["DISPLAY_ROWS", "FORMATS", "check_output", "limited", "write"]

FORMATS = ("table", "json", "ndjson", "csv", "parquet")
"""The values of ``--format``."""


def limited(reader: pa.RecordBatchReader, limit: int | None) -> pa.RecordBatchReader:
    """The reader's first ``limit`` rows (every row if None): batches are read only until that many came back, so the
    files behind a lazy reader are read no further."""
    if limit is None:
        return reader

    def batches() -> Iterator[pa.RecordBatch]:
        left = limit
        try:
            while left > 0:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                if batch.num_rows > left:
                    batch = batch.slice(0, left)
                left -= batch.num_rows
                yield batch
        finally:
            reader.close()

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def check_output(output_format: str, output: Path | None) -> None:
    """Checks the format and output file before the query runs.

    Raises:
        SleeperError: If the format is unknown, parquet has no file, a table has one, or the file's directory does not
            exist or the file is a directory.
    """
    if output_format not in FORMATS:
        raise SleeperError(f"--format must be one of {', '.join(FORMATS)}, got {output_format!r}")
    if output_format == "table" and output is not None:
        raise SleeperError("--output needs --format json, ndjson, csv or parquet")
    if output_format == "parquet" and output is None:
        raise SleeperError("--format parquet needs --output FILE")
    if output is None:
        return
    parent = output.parent
    if not parent.is_dir():
        raise SleeperError(f"cannot write {output}: the directory {parent} does not exist (create it first)")
    if output.is_dir():
        raise SleeperError(f"cannot write {output}: it is a directory; give a file name")


def write(
    reader: pa.RecordBatchReader, output_format: str, output: Path | None, *, console: Console, limit: int | None
) -> int:
    """Writes the rows in the format and returns how many were written (or, for ``table``, how many came back).

    ``table`` prints the first ``limit`` rows (:data:`DISPLAY_ROWS` without a limit) and counts the rest; the other
    formats write every row the reader gives (``limited`` applies ``--limit`` before). An empty result says ``0 rows``
    (on stderr when the rows themselves go to stdout, so the output stays valid data).

    Raises:
        SleeperError: If the output is refused (see :func:`check_output`), a column cannot be written as CSV, or the
            file cannot be written; nothing is left at the output path.
    """
    check_output(output_format, output)
    if output_format == "table":
        return _print_table(reader, console, shown=limit or DISPLAY_ROWS)
    if output_format == "csv":
        _check_csv(reader.schema)
    if output is None:
        if output_format == "parquet":  # refused by check_output; kept for the type checker
            raise SleeperError("--format parquet needs --output FILE")
        sys.stdout.flush()
        count = _write_text(reader, output_format, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        if count == 0:
            Console(stderr=True).print("0 rows", highlight=False)
        return count
    count = _write_file(reader, output_format, output)
    console.print(f"{counted(count, 'row')} written to {output}", highlight=False, markup=False, soft_wrap=True)
    return count


def _print_table(reader: pa.RecordBatchReader, console: Console, *, shown: int) -> int:
    rows: list[dict[str, Any]] = []
    total = 0
    for batch in reader:
        if len(rows) < shown:
            rows.extend(batch.slice(0, shown - len(rows)).to_pylist())
        total += batch.num_rows
    if total == 0:
        console.print("0 rows")
    else:
        console.print(render.rows_table(rows, total))
    return total


def _write_file(reader: pa.RecordBatchReader, output_format: str, output: Path) -> int:
    temporary = output.with_name(f".{output.name}.{os.getpid()}.partial")
    try:
        try:
            if output_format == "parquet":
                count = _write_parquet(reader, temporary)
            else:
                with temporary.open("wb") as sink:
                    count = _write_text(reader, output_format, sink)
            os.replace(temporary, output)
        except OSError as e:
            raise SleeperError(f"cannot write {output}: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return count


def _write_parquet(reader: pa.RecordBatchReader, path: Path) -> int:
    count = 0
    with pq.ParquetWriter(str(path), reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
            count += batch.num_rows
    return count


def _write_text(reader: pa.RecordBatchReader, output_format: str, sink: IO[bytes]) -> int:
    """Writes the rows as CSV, NDJSON or JSON (``{"rows": [...], "count": N}``, one row a line) to a byte sink."""
    if output_format == "csv":
        return _write_csv(reader, sink)
    count = 0
    if output_format == "json":
        sink.write(b'{"rows": [')
    for batch in reader:
        if output_format == "ndjson":
            lines = [json.dumps(_json_row(row)) + "\n" for row in batch.to_pylist()]
        else:
            lines = [
                ("," if count or i else "") + "\n" + json.dumps(_json_row(row))
                for i, row in enumerate(batch.to_pylist())
            ]
        sink.write("".join(lines).encode("utf-8"))
        count += batch.num_rows
    if output_format == "json":
        sink.write((("\n" if count else "") + f'], "count": {count}}}\n').encode("utf-8"))
    return count


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {name: _json_value(value) for name, value in row.items()}


def _json_value(value: object) -> object:
    """A value as JSON holds it: bytes as base64, dates and times as ISO 8601 text, a decimal as an integer when it is
    whole (a SQL sum) and a float otherwise, a struct as an object, any other value JSON has no type for as text."""
    if isinstance(value, float):
        return json_float(value)  # NaN and infinities as strings, as row JSON writes them: JSON has no such numbers
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, tuple)):  # a list as a list, a map as (key, value) pairs
        return [_json_value(v) for v in value]
    if isinstance(value, dict):  # a struct
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat()
    return str(value)


def _check_csv(schema: pa.Schema) -> None:
    nested = [f"{f.name} ({f.type})" for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise SleeperError(
            f"--format csv cannot hold the column {', '.join(nested)}: use --format json, ndjson or parquet, "
            "or leave it out (with --fields in a query, from the select list in sql)"
        )


def _csv_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, pa.string()) if pa.types.is_binary(f.type) else f for f in schema])


def _csv_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Byte arrays as base64 text, as the JSON formats write them (CSV is text)."""
    if batch.schema.equals(schema):
        return batch
    columns = [
        pa.array([None if v is None else base64.b64encode(v).decode("ascii") for v in column.to_pylist()], pa.string())
        if pa.types.is_binary(column.type)
        else column
        for column in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _write_csv(reader: pa.RecordBatchReader, sink: IO[bytes]) -> int:
    count = 0
    schema = _csv_schema(reader.schema)
    with pacsv.CSVWriter(sink, schema) as writer:
        for batch in reader:
            writer.write_batch(_csv_batch(batch, schema))
            count += batch.num_rows
    return count
