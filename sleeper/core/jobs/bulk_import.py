"""Bulk import jobs: the message on a bulk import platform queue (spec 3.5, 13.3).

Wire JSON: ``{"id"?, "tableName"|"tableId", "files", "className"?, "platformSpec"?: {k: v}, "sparkConf"?: {k: v}}``.
Read like an ingest job (blank id replaced, table id wins, files required, safe paths), plus the bulk import
starter's checks: the id has only lowercase alphanumerics and dashes and is at most 63 characters long (it names
EMR and Kubernetes resources), and there is at least one file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import InvalidFieldError, InvalidJobIdError, MessageError, MissingFieldError
from sleeper.core.jobs.ingest import INGEST_JOB_FIELDS, IngestJob, new_job_id, read_ingest_fields

T = TypeVar("T")

BULK_IMPORT_JOB_FIELDS = INGEST_JOB_FIELDS | {"className", "platformSpec", "sparkConf"}
"""The fields of a bulk import job message."""

MAX_BULK_IMPORT_JOB_ID_LENGTH = 63
"""The longest bulk import job id allowed."""

_JOB_ID = re.compile(r"^[a-z0-9-]+$")


def check_bulk_import_job_id(job_id: str, *, path: str = "$.id") -> str:
    """Checks a bulk import job id: lowercase alphanumerics and dashes only, at most 63 characters.

    Returns:
        The id, unchanged.

    Raises:
        InvalidJobIdError: Naming every rule the id breaks.
    """
    reasons = []
    if not _JOB_ID.match(job_id):
        reasons.append("Job Ids must only contain lowercase alphanumerics and dashes.")
    if len(job_id) > MAX_BULK_IMPORT_JOB_ID_LENGTH:
        reasons.append(f"Job IDs are only allowed to be up to {MAX_BULK_IMPORT_JOB_ID_LENGTH} characters long.")
    if reasons:
        raise InvalidJobIdError(" ".join(reasons), path=path)
    return job_id


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportJob:
    """A request to import files into a table with Spark.

    Attributes:
        id: The job id (lowercase alphanumerics and dashes, at most 63 characters).
        files: The files or directories to import, as given.
        table_name: The table's name, if given.
        table_id: The table's id, if given; it wins over the name.
        class_name: The Spark driver class to run, overriding the table's setting.
        platform_spec: Platform properties overriding the table's (instance types, counts, …).
        spark_conf: Spark configuration overriding the defaults.
        json_message: The raw message the job was read from, if any, for tracker reports (not compared).

    Raises:
        InvalidJobIdError: If the id breaks the rules.
        InvalidFieldError: If there are no files.
        MissingFieldError: If neither a table name nor a table id is given.
    """

    id: str
    files: tuple[str, ...]
    table_name: str | None = None
    table_id: str | None = None
    class_name: str | None = None
    platform_spec: Mapping[str, str] | None = None
    spark_conf: Mapping[str, str] | None = None
    json_message: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))
        if self.platform_spec is not None:
            object.__setattr__(self, "platform_spec", dict(self.platform_spec))
        if self.spark_conf is not None:
            object.__setattr__(self, "spark_conf", dict(self.spark_conf))
        check_bulk_import_job_id(self.id)
        if not self.files:
            raise InvalidFieldError("The input files must be set to a non-null and non-empty value.", path="$.files")
        if self.table_name is None and self.table_id is None:
            raise MissingFieldError("one of tableName or tableId must be given", path="$.tableName")

    def to_ingest_job(self) -> IngestJob:
        """The ingest part of the job (id, table and files), as used for validation and tracking."""
        return IngestJob(id=self.id, files=self.files, table_name=self.table_name, table_id=self.table_id)

    def resolve_table(self, *, by_id: Callable[[str], T | None], by_name: Callable[[str], T | None]) -> T | None:
        """Finds the job's table: by id when the job has one (the id wins), otherwise by name."""
        return self.to_ingest_job().resolve_table(by_id=by_id, by_name=by_name)

    def with_table(self, *, table_id: str, table_name: str) -> BulkImportJob:
        """This job with its table resolved to both id and name."""
        return replace(self, table_id=table_id, table_name=table_name)

    def with_files(self, files: Iterable[str]) -> BulkImportJob:
        """This job with its files replaced (e.g. directories expanded)."""
        return replace(self, files=tuple(files))

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's bulk import job JSON as a dictionary (nulls omitted, fields in Sleeper's order)."""
        out: dict[str, Any] = {"id": self.id}
        if self.table_name is not None:
            out["tableName"] = self.table_name
        if self.table_id is not None:
            out["tableId"] = self.table_id
        out["files"] = list(self.files)
        if self.class_name is not None:
            out["className"] = self.class_name
        if self.platform_spec is not None:
            out["platformSpec"] = dict(self.platform_spec)
        if self.spark_conf is not None:
            out["sparkConf"] = dict(self.spark_conf)
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """Sleeper's bulk import job JSON."""
        return wire.to_json(self.to_dict(), indent=indent)

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        id_supplier: wire.JobIdSupplier = new_job_id,
        allow_local: bool = False,
        allowed_buckets: Collection[str] | None = None,
    ) -> BulkImportJob:
        """Reads a bulk import job message.

        Args:
            text: The message body.
            id_supplier: Makes the job id when the message has none (called at most once).
            allow_local: Whether local file paths are accepted (local runtime only).
            allowed_buckets: If given, every S3 path must be in one of these buckets.

        Raises:
            MessageError: If the message is not a valid bulk import job (``InvalidJobIdError`` for a bad id);
                ``job_id`` and ``json_message`` are set on it.
        """
        raw = wire.message_text(text)
        try:
            data = wire.parse_json(text)
        except MessageError as e:
            e.job_id = id_supplier()
            e.json_message = raw
            raise
        return cls.from_dict(
            data, id_supplier=id_supplier, json_message=raw, allow_local=allow_local, allowed_buckets=allowed_buckets
        )

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        id_supplier: wire.JobIdSupplier = new_job_id,
        json_message: str | None = None,
        allow_local: bool = False,
        allowed_buckets: Collection[str] | None = None,
    ) -> BulkImportJob:
        """Reads a parsed bulk import job message (see ``from_json``).

        Raises:
            MessageError: If the message is not a valid bulk import job.
        """
        fields = read_ingest_fields(
            data,
            allowed=BULK_IMPORT_JOB_FIELDS,
            id_supplier=id_supplier,
            json_message=json_message,
            allow_local=allow_local,
            allowed_buckets=allowed_buckets,
            extra=_check_extra_fields,
        )
        obj = fields.data
        return cls(
            id=fields.id,
            files=fields.files,
            table_name=fields.table_name,
            table_id=fields.table_id,
            class_name=wire.optional_str(obj, "className"),
            platform_spec=wire.optional_str_map(obj, "platformSpec"),
            spark_conf=wire.optional_str_map(obj, "sparkConf"),
            json_message=json_message,
        )


def _check_extra_fields(obj: Mapping[str, Any], job_id: str) -> None:
    check_bulk_import_job_id(job_id)
    class_name = wire.optional_str(obj, "className")
    if class_name is not None and not class_name.strip():
        raise InvalidFieldError("must not be blank", path="$.className")
    wire.optional_str_map(obj, "platformSpec")
    wire.optional_str_map(obj, "sparkConf")
