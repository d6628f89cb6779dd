"""Checks of a bulk import job before Spark starts (spec 3.2, 3.5), as the bulk import starter makes them.

The job itself (:class:`~sleeper.core.jobs.bulk_import.BulkImportJob`) already holds an id of lowercase
alphanumerics and dashes of at most 63 characters, and at least one file. Here:

* the table must exist (looked up by id when the job has one, else by name);
* every path must exist; a directory is expanded recursively to the ``.parquet`` files inside it (``.crc`` and other
  files are ignored), and a path that holds no such file rejects the job;
* every file must be readable Parquet holding each column of the table with a type that reads as the table's.

The footers read for the schemas also give the number of rows of the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.bulk_import.ports import BulkImportInstance, BulkImportTable
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.jobs.paths import is_s3_path, normalise_s3_path
from sleeper.io.arrow_schema import arrow_schema
from sleeper.io.filesystem import FileSystemOptions, list_files, open_input, resolve

__all__ = ["InputFile", "JobValidation", "reads_as", "validate_job"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InputFile:
    """An input Parquet file of a job.

    Attributes:
        uri: The file as a URI Spark and this port's filesystems read: an absolute local path, or ``s3a://bucket/key``.
        rows: The rows in the file, from its footer.
    """

    uri: str
    rows: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JobValidation:
    """The result of checking a job.

    Attributes:
        table: The job's table, if it was found.
        files: The Parquet files the job's paths expanded to.
        reasons: Why the job is rejected; empty if it is accepted.
    """

    table: BulkImportTable | None
    files: tuple[InputFile, ...] = ()
    reasons: tuple[str, ...] = field(default=())

    @property
    def accepted(self) -> bool:
        """Whether the job passed every check."""
        return not self.reasons and self.table is not None

    @property
    def total_rows(self) -> int:
        """The rows in all the input files."""
        return sum(f.rows for f in self.files)


def validate_job(
    instance: BulkImportInstance,
    job: BulkImportJob,
    *,
    options: FileSystemOptions | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> JobValidation:
    """Checks a job's table and files.

    Args:
        instance: The instance whose tables the job may name.
        job: The job.
        options: How to reach S3 for S3 paths (``bucket/key``, ``s3://``, ``s3a://``).
        filesystem: A filesystem to read every path from instead of the one its form names (tests).

    Returns:
        The table, the expanded files with their row counts, and any reasons to reject the job.
    """
    table = job.resolve_table(
        by_id=lambda i: _find(instance.table_by_id, i), by_name=lambda n: _find(instance.table, n)
    )
    if table is None:
        name = f"id {job.table_id!r}" if job.table_id is not None else f"name {job.table_name!r}"
        return JobValidation(table=None, reasons=(f"Table not found with {name}",))
    paths, reasons = _expand(job.files, options, filesystem)
    files: list[InputFile] = []
    if not reasons:
        target = arrow_schema(table.schema)
        for uri, fs, path in paths:
            try:
                with open_input(fs, path) as source:
                    parquet = pq.ParquetFile(source, pre_buffer=False)
                    file_schema = parquet.schema_arrow
                    rows = parquet.metadata.num_rows
            except Exception as e:  # any unreadable file rejects the job, whatever pyarrow raised
                reasons.append(f"File {uri} is not readable Parquet: {e}")
                continue
            reasons.extend(_schema_problems(uri, file_schema, target))
            files.append(InputFile(uri=uri, rows=rows))
    return JobValidation(table=table, files=tuple(files), reasons=tuple(reasons))


def _find(lookup: object, key: str) -> BulkImportTable | None:
    try:
        return lookup(key)  # type: ignore[operator,no-any-return]
    except TableNotFoundError:
        return None


def _expand(
    paths: Sequence[str], options: FileSystemOptions | None, filesystem: pafs.FileSystem | None
) -> tuple[list[tuple[str, pafs.FileSystem, str]], list[str]]:
    """The Parquet files the paths name (URI, filesystem, path), and why any path is unusable."""
    out: list[tuple[str, pafs.FileSystem, str]] = []
    reasons: list[str] = []
    for given in paths:
        s3 = is_s3_path(given)
        uri = f"s3a://{normalise_s3_path(given)}" if s3 else given
        try:
            fs, path = resolve(uri, options, filesystem=filesystem)
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                found = [path]
            else:
                found = [str(f.path) for f in list_files(fs, path) if str(f.path).endswith(".parquet")]
        except (OSError, ValueError) as e:
            reasons.append(f"Could not read {given}: {e}")
            continue
        if not found:
            reasons.append(f"No files found at {given}")
        out.extend((f"s3a://{p}" if s3 else p, fs, p) for p in found)
    return out, reasons


def _schema_problems(uri: str, found: pa.Schema, target: pa.Schema) -> list[str]:
    problems: list[str] = []
    for wanted in target:
        index = found.get_field_index(wanted.name)
        if index < 0:
            problems.append(f"File {uri} has no column {wanted.name!r} of the table")
            continue
        actual = found.field(index).type
        if not reads_as(actual, wanted.type):
            problems.append(
                f"File {uri} column {wanted.name!r} has type {actual}, which cannot be read as {wanted.type}"
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
