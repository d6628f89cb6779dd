"""Input Parquet files of ingest and bulk import jobs: paths expanded to files, and schemas checked against a table.

A job names files or directories, locally or on S3 (``bucket/key``, ``s3://`` or ``s3a://``). A directory stands for
the ``.parquet`` files under it, recursively; a path that names nothing, or a directory without such a file, is a
reason to reject the job. Each file must hold every column of the table with a type that reads as the table's type
without loss; its footer gives the schema and the number of rows without reading any data.

:func:`read_batches` reads a file's rows a row group at a time; a page that cannot be decoded raises
``InputFileError`` naming the file, the row group and (found by decoding that row group's columns one by one) the
column, instead of pyarrow's bare message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import is_s3_path, normalise_s3_path
from sleeper.io.exceptions import InputFileError
from sleeper.io.filesystem import FileSystemOptions, list_files, open_input, resolve

__all__ = ["InputFile", "expand_paths", "read_batches", "read_footer", "reads_as", "schema_problems"]

_READ_ERRORS = (pa.ArrowException, OSError)
"""What pyarrow raises for a file it cannot read or decode (``OSError`` for a corrupt page or a failed read)."""


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input file.

    Attributes:
        uri: The file as Spark and this port's filesystems name it: an absolute local path, or ``s3a://bucket/key``.
        filesystem: The filesystem that holds it.
        path: Its path on that filesystem (``bucket/key`` on S3).
    """

    uri: str
    filesystem: pafs.FileSystem
    path: str


def expand_paths(
    paths: Sequence[str], options: FileSystemOptions | None = None, *, filesystem: pafs.FileSystem | None = None
) -> tuple[list[InputFile], list[str]]:
    """The Parquet files the paths name, and why any path is unusable (empty if every path is usable).

    Args:
        paths: Files or directories, local or on S3.
        options: How to reach S3.
        filesystem: A filesystem to read every path from instead of the one its form names (tests).
    """
    files: list[InputFile] = []
    reasons: list[str] = []
    for given in paths:
        s3 = is_s3_path(given)
        uri = f"s3a://{normalise_s3_path(given)}" if s3 else given
        try:
            fs, path = resolve(uri, options, filesystem=filesystem)
            if fs.get_file_info(path).type == pafs.FileType.File:
                found = [path]
            else:
                found = [str(f.path) for f in list_files(fs, path) if str(f.path).endswith(".parquet")]
        except (OSError, ValueError) as e:
            reasons.append(f"Could not read {given}: {e}")
            continue
        if not found:
            reasons.append(f"No files found at {given}")
        files.extend(InputFile(f"s3a://{p}" if s3 else p, fs, p) for p in found)
    return files, reasons


def read_footer(file: InputFile) -> tuple[pa.Schema, int]:
    """The file's Arrow schema and row count, from its Parquet footer alone.

    Raises:
        Exception: Whatever pyarrow raises for a file that is not readable Parquet.
    """
    with open_input(file.filesystem, file.path) as source:
        parquet = pq.ParquetFile(source, pre_buffer=False)
        return parquet.schema_arrow, parquet.metadata.num_rows


def read_batches(file: InputFile, columns: Sequence[str], *, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The file's rows in the given columns as Arrow batches of at most ``batch_rows`` rows, a row group at a time.

    Raises:
        InputFileError: If the file cannot be opened as Parquet or a page cannot be decoded; the message names the
            file, the row group and, when it can be found, the column.
    """
    with open_input(file.filesystem, file.path) as source:
        try:
            parquet = pq.ParquetFile(source, pre_buffer=False)
            row_groups = parquet.metadata.num_row_groups
        except _READ_ERRORS as e:
            raise InputFileError(f"File {file.uri} is not readable Parquet: {_one_line(e)}") from None
        for group in range(row_groups):
            try:
                yield from parquet.iter_batches(batch_size=batch_rows, row_groups=[group], columns=list(columns))
            except _READ_ERRORS as e:
                column = _undecodable_column(parquet, group, columns)
                where = f"row group {group}" if column is None else f"row group {group}, column {column!r}"
                raise InputFileError(f"File {file.uri} cannot be read ({where}): {_one_line(e)}") from None


def _undecodable_column(parquet: pq.ParquetFile, group: int, columns: Sequence[str]) -> str | None:
    """The first column of a row group that cannot be decoded on its own, if any (only called once a read failed)."""
    for column in columns:
        try:
            parquet.read_row_group(group, columns=[column])
        except _READ_ERRORS:
            return column
    return None


def _one_line(error: BaseException) -> str:
    """pyarrow's message, which may span lines, on one line."""
    return " ".join(str(error).split())


def schema_problems(label: str, found: pa.Schema, target: pa.Schema, *, values_checked: bool = False) -> list[str]:
    """Why a file's columns do not suit the table's: one reason per missing or unreadable column, naming both.

    Args:
        label: The file, as named in the reasons.
        found: The file's schema.
        target: The table's Arrow schema.
        values_checked: Whether each value is checked as it is read (ingest conforms every batch with a safe cast,
            as rows given to the Python API are): then a wider integer column is accepted for an integer field, and a
            value that does not fit fails the job naming it. Bulk import's Spark cast would wrap such a value
            silently, so it keeps the lossless rule.
    """
    problems: list[str] = []
    for wanted in target:
        index = found.get_field_index(wanted.name)
        if index < 0:
            problems.append(f"File {label} has no column {wanted.name!r} of the table")
            continue
        actual = found.field(index).type
        if not reads_as(actual, wanted.type, values_checked=values_checked):
            problems.append(
                f"File {label} column {wanted.name!r} has type {actual}, which cannot be read as {wanted.type}"
            )
    return problems


def reads_as(found: pa.DataType, wanted: pa.DataType, *, values_checked: bool = False) -> bool:
    """Whether a column of one Arrow type reads as the table's type without loss (with ``values_checked``: an integer
    column reads as any integer type, each value checked to fit as it is read)."""
    if found.equals(wanted):
        return True
    if values_checked and pa.types.is_integer(found) and pa.types.is_integer(wanted):
        return True
    if pa.types.is_string(wanted):
        return bool(pa.types.is_string(found) or pa.types.is_large_string(found) or pa.types.is_string_view(found))
    if pa.types.is_binary(wanted):
        return bool(pa.types.is_binary(found) or pa.types.is_large_binary(found) or pa.types.is_binary_view(found))
    if pa.types.is_int64(wanted):
        return bool(pa.types.is_signed_integer(found) or found in (pa.uint8(), pa.uint16(), pa.uint32()))
    if pa.types.is_int32(wanted):
        return found in (pa.int8(), pa.int16(), pa.uint8(), pa.uint16())
    if pa.types.is_float64(wanted):
        return bool(pa.types.is_float32(found))
    if pa.types.is_timestamp(wanted):
        # Parquet has no unit of seconds and keeps no zone name: a file gives s as ms and any zone as UTC. Both
        # must be instants or both wall-clock times; a finer unit is cast to the table's with a safe cast, which
        # fails naming the column if a value has digits the table's unit cannot hold.
        return bool(pa.types.is_timestamp(found) and (found.tz is None) == (wanted.tz is None))
    if pa.types.is_map(wanted):
        return bool(
            pa.types.is_map(found)
            and reads_as(found.key_type, wanted.key_type, values_checked=values_checked)
            and reads_as(found.item_type, wanted.item_type, values_checked=values_checked)
        )
    if pa.types.is_list(wanted):
        return bool(
            (pa.types.is_list(found) or pa.types.is_large_list(found))
            and reads_as(found.value_type, wanted.value_type, values_checked=values_checked)
        )
    return False
