"""Writing query results: a rich table of the first rows, JSON, CSV or Parquet, to stdout or a file."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console

from sleeper.cli import render
from sleeper.core.exceptions import SleeperError

FORMATS = ("table", "json", "csv", "parquet")


def _json_value(value: object) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def write(result: pa.Table, output_format: str, output: Path | None, *, console: Console, limit: int) -> None:
    """Writes the rows in the format: ``table`` prints the first ``limit`` rows; json and csv go to stdout or the
    file; parquet needs a file.

    Raises:
        SleeperError: If Parquet is asked for without an output file, or a table with one.
    """
    if output_format == "table":
        if output is not None:
            raise SleeperError("--output needs --format json, csv or parquet")
        console.print(render.rows_table(result.slice(0, max(limit, 0)).to_pylist(), result.num_rows))
        return
    if output_format == "parquet":
        if output is None:
            raise SleeperError("--format parquet needs --output FILE")
        pq.write_table(result, output)
        console.print(f"{result.num_rows:,} rows written to {output}")
        return
    if output_format == "csv":
        if output is None:
            buffer = pa.BufferOutputStream()
            pacsv.write_csv(result, buffer)
            sys.stdout.write(buffer.getvalue().to_pybytes().decode("utf-8"))
        else:
            pacsv.write_csv(result, str(output))
        return
    text = json.dumps(
        {"count": result.num_rows, "rows": [{k: _json_value(v) for k, v in r.items()} for r in result.to_pylist()]},
        indent=2,
    )
    if output is None:
        sys.stdout.write(text + "\n")
    else:
        output.write_text(text + "\n", encoding="utf-8")
