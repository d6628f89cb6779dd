"""File references: the part of a data file that lies in one partition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sleeper.core.exceptions import SerDeError


@dataclass(frozen=True, slots=True, kw_only=True)
class FileReference:
    """A reference from a partition to a data file.

    ``last_update_time`` is set by the state store when the transaction that made the reference is applied; it is
    not part of the transaction JSON, so references built by a job have no time until they are committed.
    """

    filename: str
    partition_id: str
    number_of_rows: int
    job_id: str | None = None
    count_approximate: bool = False
    only_contains_data_for_this_partition: bool = True
    last_update_time: datetime | None = None

    def with_job(self, job_id: str | None) -> FileReference:
        """This reference assigned to a job (or released with None)."""
        return FileReference(
            filename=self.filename,
            partition_id=self.partition_id,
            number_of_rows=self.number_of_rows,
            job_id=job_id,
            count_approximate=self.count_approximate,
            only_contains_data_for_this_partition=self.only_contains_data_for_this_partition,
            last_update_time=self.last_update_time,
        )

    def at(self, time: datetime) -> FileReference:
        """This reference as recorded at a time (made directly: ``dataclasses.replace`` costs several times more, and
        applying a transaction calls this once per reference)."""
        return FileReference(
            filename=self.filename,
            partition_id=self.partition_id,
            number_of_rows=self.number_of_rows,
            job_id=self.job_id,
            count_approximate=self.count_approximate,
            only_contains_data_for_this_partition=self.only_contains_data_for_this_partition,
            last_update_time=time,
        )

    def split_to(self, partition_id: str) -> FileReference:
        """The reference a pre-split gives one child partition: half the rows, approximate, shared file."""
        return FileReference(
            filename=self.filename,
            partition_id=partition_id,
            number_of_rows=self.number_of_rows // 2,
            count_approximate=True,
            only_contains_data_for_this_partition=False,
        )

    def same_reference(self, other: FileReference) -> bool:
        """Whether two references are equal apart from their update times."""
        return replace(self, last_update_time=None) == replace(other, last_update_time=None)

    def to_dict(self, *, with_filename: bool = True) -> dict[str, Any]:
        """Sleeper's file reference JSON (nulls omitted)."""
        out: dict[str, Any] = {}
        if with_filename:
            out["filename"] = self.filename
        out["partitionId"] = self.partition_id
        out["numberOfRows"] = self.number_of_rows
        if self.job_id is not None:
            out["jobId"] = self.job_id
        out["countApproximate"] = self.count_approximate
        out["onlyContainsDataForThisPartition"] = self.only_contains_data_for_this_partition
        return out

    @classmethod
    def from_dict(cls, data: object, *, filename: str | None = None, path: str = "reference") -> FileReference:
        """Reads Sleeper's file reference JSON; ``filename`` is given when the JSON nests it under its file."""
        if not isinstance(data, Mapping):
            raise SerDeError(f"{path} must be an object")
        name = filename if filename is not None else data.get("filename")
        if not isinstance(name, str) or not name:
            raise SerDeError(f"{path}.filename must be a non-empty string")
        pid = data.get("partitionId")
        if not isinstance(pid, str) or not pid:
            raise SerDeError(f"{path}.partitionId must be a non-empty string")
        rows = data.get("numberOfRows")
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise SerDeError(f"{path}.numberOfRows must be a non-negative integer")
        job = data.get("jobId")
        if job is not None and not isinstance(job, str):
            raise SerDeError(f"{path}.jobId must be a string")
        approx = data.get("countApproximate", False)
        only = data.get("onlyContainsDataForThisPartition", True)
        if not isinstance(approx, bool) or not isinstance(only, bool):
            raise SerDeError(f"{path}: countApproximate and onlyContainsDataForThisPartition must be booleans")
        return cls(
            filename=name,
            partition_id=pid,
            number_of_rows=rows,
            job_id=job,
            count_approximate=approx,
            only_contains_data_for_this_partition=only,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AllReferencesToAFile:
    """A tracked file with all its references, keyed by partition id. A file with none awaits garbage collection."""

    filename: str
    references: Mapping[str, FileReference]
    last_update_time: datetime | None = None

    @property
    def reference_count(self) -> int:
        """The number of partitions referencing the file."""
        return len(self.references)

    @property
    def total_rows(self) -> int:
        """The sum of rows over the file's references."""
        return sum(r.number_of_rows for r in self.references.values())
