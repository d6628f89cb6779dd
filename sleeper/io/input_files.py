"""Input Parquet files of ingest and bulk import jobs: paths expanded to files, and schemas checked against a table.

A job names files or directories, locally or on S3 (``bucket/key``, ``s3://`` or ``s3a://``). A directory stands for
the ``.parquet`` files under it, recursively; a path that names nothing, or a directory without such a file, is a
reason to reject the job. Each file must hold every column of the table with a type that reads as the table's type
without loss; its footer gives the schema and the number of rows without reading any data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core.jobs.paths import is_s3_path, normalise_s3_path
from sleeper.io.filesystem import FileSystemOptions, list_files, open_input, resolve

__all__ = ["InputFile", "expand_paths", "read_footer", "reads_as", "schema_problems"]


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


def schema_problems(label: str, found: pa.Schema, target: pa.Schema) -> list[str]:
    """Why a file's columns do not suit the table's: one reason per missing or unreadable column, naming both."""
    problems: list[str] = []
    for wanted in target:
        index = found.get_field_index(wanted.name)
        if index < 0:
            problems.append(f"File {label} has no column {wanted.name!r} of the table")
            continue
        actual = found.field(index).type
        if not reads_as(actual, wanted.type):
            problems.append(
                f"File {label} column {wanted.name!r} has type {actual}, which cannot be read as {wanted.type}"
            )
    return problems


def reads_as(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a column of one Arrow type reads as the table's type without loss."""
    if found.equals(wanted):
        return True
    if pa.types.is_string(wanted):
        return bool(pa.types.is_string(found) or pa.types.is_large_string(found) or pa.types.is_string_view(found))
    if pa.types.is_binary(wanted):
        return bool(pa.types.is_binary(found) or pa.types.is_large_binary(found) or pa.types.is_binary_view(found))
    if pa.types.is_int64(wanted):
        return bool(pa.types.is_signed_integer(found) or found in (pa.uint8(), pa.uint16(), pa.uint32()))
    if pa.types.is_int32(wanted):
        return found in (pa.int8(), pa.int16(), pa.uint8(), pa.uint16())
    if pa.types.is_map(wanted):
        return bool(
            pa.types.is_map(found)
            and reads_as(found.key_type, wanted.key_type)
            and reads_as(found.item_type, wanted.item_type)
        )
    if pa.types.is_list(wanted):
        return bool(
            (pa.types.is_list(found) or pa.types.is_large_list(found)) and reads_as(found.value_type, wanted.value_type)
        )
    return False
