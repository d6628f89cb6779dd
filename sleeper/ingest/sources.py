"""Where ingest jobs may read their input files from (docs/reliability.md, row E: an ingest source outside the allowed
buckets ... rejected by the port itself, not only by IAM").

Sleeper lets an ingest job name files in any bucket its task role can read: the allowlist is IAM's alone (the
deployment grants the data bucket and the buckets ``sleeper.ingest.source.bucket`` lists). Beyond Sleeper, the ingest
job runner checks every path of a job before it reads anything, and rejects the job (recorded in the ingest job
tracker, not retried) naming the path and what is allowed:

* on AWS, an S3 path must be in the instance's data bucket (where ``Table.ingest`` and Sleeper's Python client stage
  files, under ``for_ingest/``) or in a bucket ``sleeper.ingest.source.bucket`` lists; in the data bucket it must not
  lie under a table's prefix (``<table id>/``: a job cannot copy one table's data files into another); a local path
  is refused (it would be read from the task's own container);
* on a local instance, any path is allowed: the job runs as the user, who can read those files anyway.

So a job cannot read another table's files, the config bucket, or a bucket the role can read for another purpose,
even where IAM would let it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sleeper.core import INGEST_STAGING_PREFIX, is_s3_path, split_s3_path
from sleeper.ingest.exceptions import IngestError

__all__ = ["IngestSourceNotAllowedError", "IngestSources"]


class IngestSourceNotAllowedError(IngestError):
    """An ingest job names an input path outside the places the instance allows ingest to read from.

    Attributes:
        path: The path.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True, slots=True)
class IngestSources:
    """The places an instance's ingest jobs may read input files from.

    Attributes:
        local: Whether local paths are allowed.
        buckets: Buckets any key of which may be read; None allows every bucket.
        data_bucket: The instance's data bucket, whose keys may be read except under a table's prefix (None: none).
    """

    local: bool
    buckets: frozenset[str] | None
    data_bucket: str | None = None

    @classmethod
    def anywhere(cls) -> IngestSources:
        """Every path (a local instance)."""
        return cls(local=True, buckets=None)

    @classmethod
    def for_aws_instance(cls, data_bucket: str, source_buckets: Iterable[str]) -> IngestSources:
        """An AWS instance's: its data bucket outside the tables' prefixes, and the buckets of
        ``sleeper.ingest.source.bucket``; no local paths."""
        listed = frozenset(b.strip() for b in source_buckets if b.strip()) - {data_bucket}
        return cls(local=False, buckets=listed, data_bucket=data_bucket)

    def check(self, path: str, is_table_id: Callable[[str], bool]) -> None:
        """Checks that a path may be read.

        Args:
            path: The path, as the job names it.
            is_table_id: Whether a name is the id of one of the instance's tables.

        Raises:
            IngestSourceNotAllowedError: If it may not, naming it and what is allowed.
        """
        if not is_s3_path(path):
            if not self.local:
                raise IngestSourceNotAllowedError(
                    f"{path}: local paths cannot be ingested by this instance; stage the file in {self._allowed()}",
                    path=path,
                )
            return
        if self.buckets is None:
            return
        bucket, key = split_s3_path(path)
        if bucket in self.buckets:
            return
        if bucket == self.data_bucket:
            first = key.split("/", 1)[0]
            if not first or is_table_id(first):
                raise IngestSourceNotAllowedError(
                    f"{path}: ingest may not read table data files or the whole data bucket; stage the file under "
                    f"s3://{bucket}/{INGEST_STAGING_PREFIX}/",
                    path=path,
                )
            return
        raise IngestSourceNotAllowedError(
            f"{path}: ingest may only read files in {self._allowed()} (add the bucket to sleeper.ingest.source.bucket "
            f"to allow it)",
            path=path,
        )

    def problems(self, paths: Sequence[str], is_table_id: Callable[[str], bool]) -> list[str]:
        """Why each path that may not be read is refused (empty if every path may be read)."""
        reasons: list[str] = []
        for path in paths:
            try:
                self.check(path, is_table_id)
            except IngestSourceNotAllowedError as e:
                reasons.append(str(e))
        return reasons

    def _allowed(self) -> str:
        places = [] if self.data_bucket is None else [f"s3://{self.data_bucket}/{INGEST_STAGING_PREFIX}/"]
        places += [f"s3://{bucket}/" for bucket in sorted(self.buckets or ())]
        return ", ".join(places) if places else "no bucket"
