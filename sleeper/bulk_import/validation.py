"""Checks of a bulk import job before Spark starts, as the bulk import starter makes them.

The job itself (:class:`~sleeper.core.jobs.bulk_import.BulkImportJob`) already holds an id of lowercase
alphanumerics and dashes of at most 63 characters, and at least one file. Here:

* the table must exist (looked up by id when the job has one, else by name);
* every path must exist; a directory is expanded recursively to the ``.parquet`` files inside it (``.crc`` and other
  files are ignored), and a path that holds no such file rejects the job;
* no file may be named twice (the same path twice, or a directory and a file inside it), as for ingest jobs
  (:func:`sleeper.core.jobs.ingest.expand_job_files`);
* every file must be readable Parquet holding each column of the table with a type that reads as the table's;
* the algorithm the job names (its ``className``, else ``sleeper.bulk.import.class.name``) must be one this port runs
  (:mod:`sleeper.core.jobs.bulk_import_algorithms`).

The footers read for the schemas also give the number of rows of the input. The state store is not read here (the
starter has no access to it): whether the job id was already used for other input files is checked where the job
runs, against :attr:`JobValidation.inputs_hash`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyarrow import fs as pafs

from sleeper.core import TableNotFoundError
from sleeper.core.jobs import (
    DEFAULT_CLASS_NAME,
    BulkImportAlgorithm,
    BulkImportJob,
    UnknownBulkImportAlgorithmError,
    bulk_import_algorithm,
    expand_job_files,
)
from sleeper.core.properties import BULK_IMPORT_CLASS_NAME
from sleeper.core.statestore import input_files_hash
from sleeper.io import FileSystemOptions, arrow_schema, expand_paths, read_footer, reads_as, schema_problems
from sleeper.iterators import table_upserts
from sleeper.statestore import SleeperRuntime, SleeperTable

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
        algorithm: The algorithm the job runs (None if it names none this port runs, a reason to reject it).
    """

    table: SleeperTable | None
    files: tuple[InputFile, ...] = ()
    reasons: tuple[str, ...] = field(default=())
    algorithm: BulkImportAlgorithm | None = None

    @property
    def accepted(self) -> bool:
        """Whether the job passed every check."""
        return not self.reasons and self.table is not None

    @property
    def total_rows(self) -> int:
        """The rows in all the input files."""
        return sum(f.rows for f in self.files)

    @property
    def inputs_hash(self) -> str:
        """The hash of the input files, recorded with the job id when its files are added."""
        return input_files_hash(f.uri for f in self.files)


def validate_job(
    instance: SleeperRuntime,
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
        missing = TableNotFoundError.of(table_name=job.table_name, table_id=job.table_id)
        return JobValidation(table=None, reasons=(str(missing),))
    algorithm, reasons = _algorithm(job, table)
    if not table.schema.sort_key_names and table_upserts(table.properties):
        reasons.append(
            f"table {table.name} keeps the last committed row of each row key (sleeper.table.upsert, no sort key), "
            "which a bulk import cannot commit: write to it with Table.upsert or sleeper upsert"
        )
    paths, path_reasons = expand_job_files(
        job.files, lambda p: expand_paths([p], options, filesystem=filesystem), lambda f: f.uri
    )
    reasons.extend(path_reasons)
    files: list[InputFile] = []
    if not path_reasons:
        target = arrow_schema(table.schema)
        for path in paths:
            try:
                file_schema, rows = read_footer(path)
            except Exception as e:  # any unreadable file rejects the job, whatever pyarrow raised
                reasons.append(f"File {path.uri} is not readable Parquet: {e}")
                continue
            reasons.extend(schema_problems(path.uri, file_schema, target))
            files.append(InputFile(uri=path.uri, rows=rows))
    return JobValidation(table=table, files=tuple(files), reasons=tuple(reasons), algorithm=algorithm)


def _algorithm(job: BulkImportJob, table: SleeperTable) -> tuple[BulkImportAlgorithm | None, list[str]]:
    """The job's algorithm: its ``className``, else the instance's ``sleeper.bulk.import.class.name``."""
    if job.class_name is not None:
        name, source = job.class_name, "className"
    else:
        name = table.properties.instance_properties.get(BULK_IMPORT_CLASS_NAME) or DEFAULT_CLASS_NAME
        source = BULK_IMPORT_CLASS_NAME.name
    try:
        return bulk_import_algorithm(name, source=source), []
    except UnknownBulkImportAlgorithmError as e:
        return None, [str(e)]


def _find(lookup: object, key: str) -> SleeperTable | None:
    try:
        return lookup(key)  # type: ignore[operator,no-any-return]
    except TableNotFoundError:
        return None
