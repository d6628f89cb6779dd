"""Bulk import jobs: the message on a bulk import platform queue.

Wire JSON: ``{"id"?, "tableName"|"tableId", "files", "className"?, "platformSpec"?: {k: v}, "sparkConf"?: {k: v}}``.
Read like an ingest job (blank id replaced, table id wins, files required, safe paths), plus the bulk import
starter's checks: the id has only lowercase alphanumerics and dashes and is at most 63 characters long (it names
EMR and Kubernetes resources), and there is at least one file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import InvalidFieldError, InvalidJobIdError
from sleeper.core.jobs.ingest import FileJob, IngestFields, IngestJob

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
class BulkImportJob(FileJob):
    """A request to import files into a table with Spark (the shared fields are :class:`FileJob`'s).

    Attributes:
        class_name: The Spark driver class to run, overriding the table's setting.
        platform_spec: Platform properties overriding the table's (instance types, counts, …).
        spark_conf: Spark configuration overriding the defaults.

    Raises:
        InvalidJobIdError: If the id breaks the rules (lowercase alphanumerics and dashes, at most 63 characters).
        InvalidFieldError: If there are no files.
        MissingFieldError: If neither a table name nor a table id is given.
    """

    FIELDS: ClassVar[frozenset[str]] = FileJob.FIELDS | {"className", "platformSpec", "sparkConf"}

    class_name: str | None = None
    platform_spec: Mapping[str, str] | None = None
    spark_conf: Mapping[str, str] | None = None

    def _check(self) -> None:
        if self.platform_spec is not None:
            object.__setattr__(self, "platform_spec", dict(self.platform_spec))
        if self.spark_conf is not None:
            object.__setattr__(self, "spark_conf", dict(self.spark_conf))
        check_bulk_import_job_id(self.id)
        if not self.files:
            raise InvalidFieldError("The input files must be set to a non-null and non-empty value.", path="$.files")

    def to_ingest_job(self) -> IngestJob:
        """The ingest part of the job (id, table and files), as used for validation and tracking."""
        return IngestJob(id=self.id, files=self.files, table_name=self.table_name, table_id=self.table_id)

    def to_dict(self) -> dict[str, Any]:
        """Sleeper's bulk import job JSON as a dictionary (nulls omitted, fields in Sleeper's order)."""
        out = FileJob.to_dict(self)
        if self.class_name is not None:
            out["className"] = self.class_name
        if self.platform_spec is not None:
            out["platformSpec"] = dict(self.platform_spec)
        if self.spark_conf is not None:
            out["sparkConf"] = dict(self.spark_conf)
        return out

    @classmethod
    def _check_extra_fields(cls, obj: Mapping[str, Any], job_id: str) -> None:
        check_bulk_import_job_id(job_id)
        class_name = wire.optional_str(obj, "className")
        if class_name is not None and not class_name.strip():
            raise InvalidFieldError("must not be blank", path="$.className")
        wire.optional_str_map(obj, "platformSpec")
        wire.optional_str_map(obj, "sparkConf")

    @classmethod
    def _from_fields(cls, fields: IngestFields, json_message: str | None) -> BulkImportJob:
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


BULK_IMPORT_JOB_FIELDS = BulkImportJob.FIELDS
"""The fields of a bulk import job message."""
