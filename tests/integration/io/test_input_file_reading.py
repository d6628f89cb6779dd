"""Reading a job's input file: rows a row group at a time, and an undecodable file reported by name, row group and
column instead of pyarrow's bare message."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from sleeper.core.schema import Schema
from sleeper.ingest.inputs import parquet_batches
from sleeper.io.exceptions import InputFileError
from sleeper.io.input_files import InputFile, read_batches

pytestmark = pytest.mark.integration


def _write(path: Path, rows: int, *, row_group_rows: int) -> InputFile:
    table = pa.table({"key": [f"k-{i:05d}" for i in range(rows)], "value": pa.array(range(rows), pa.int64())})
    pq.write_table(table, path, row_group_size=row_group_rows)
    return InputFile(str(path), pafs.LocalFileSystem(), str(path))


def _flip_bytes_in_page(path: Path, row_group: int, column: str) -> None:
    """Corrupts the first page of a column chunk; the footer stays readable."""
    group = pq.ParquetFile(path).metadata.row_group(row_group)
    chunk = next(group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema == column)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = bytearray(path.read_bytes())
    for offset in range(start + 40, start + 48):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def should_read_every_row_of_every_row_group(tmp_path: Path) -> None:
    # Given a file of 2,500 rows in row groups of 1,000
    file = _write(tmp_path / "in.parquet", 2500, row_group_rows=1000)
    # When it is read in batches of at most 600 rows
    batches = list(read_batches(file, ["key", "value"], batch_rows=600))
    # Then every row comes back in order, no batch longer than asked
    assert pa.Table.from_batches(batches).column("value").to_pylist() == list(range(2500))
    assert max(b.num_rows for b in batches) <= 600


def should_name_the_file_row_group_and_column_of_a_corrupt_page(tmp_path: Path) -> None:
    # Given a file whose second row group has a corrupt page in its value column
    file = _write(tmp_path / "in.parquet", 3000, row_group_rows=1000)
    _flip_bytes_in_page(tmp_path / "in.parquet", 1, "value")
    # When it is read
    # Then the error names the file, the row group and the column, on one line
    with pytest.raises(InputFileError) as raised:
        list(read_batches(file, ["key", "value"], batch_rows=600))
    message = str(raised.value)
    assert message.startswith(f"File {file.uri} cannot be read (row group 1, column 'value'): ")
    assert "\n" not in message


def should_name_a_file_that_is_not_parquet(tmp_path: Path) -> None:
    # Given a file cut short, without its footer
    file = _write(tmp_path / "in.parquet", 100, row_group_rows=1000)
    path = tmp_path / "in.parquet"
    path.write_bytes(path.read_bytes()[:200])
    # When it is read, then the error names the file
    with pytest.raises(InputFileError, match=f"File {file.uri} is not readable Parquet"):
        list(read_batches(file, ["key", "value"], batch_rows=600))


def should_name_a_corrupt_file_given_to_ingest_rows_by_path(tmp_path: Path) -> None:
    # Given a file with a corrupt page, ingested by path through the Python API's reader
    _write(tmp_path / "in.parquet", 3000, row_group_rows=1000)
    _flip_bytes_in_page(tmp_path / "in.parquet", 0, "value")
    schema = Schema.from_dict(
        {
            "rowKeyFields": [{"name": "key", "type": "StringType"}],
            "sortKeyFields": [],
            "valueFields": [{"name": "value", "type": "LongType"}],
        }
    )
    # When it is read, then the error names the file and column
    with pytest.raises(InputFileError, match=r"in\.parquet cannot be read \(row group 0, column 'value'\)"):
        list(parquet_batches([tmp_path / "in.parquet"], schema))
