"""What the ingest batcher tracks: files submitted for ingest, waiting for or assigned to a job.

A file is tracked under its table and path. Until the job creator puts it in a job it is *pending* (Sleeper stores it
under the job id ``not_assigned_to_job``); resubmitting a pending path replaces its record. Once assigned, the record
keeps its job id until its time to live expires. Submitting the same path again while that record is kept tracks it
afresh as pending only if the file changed since (its size or modification time differ, or either is unknown): the
same file submitted again (a redelivered request, which carries no id) is skipped, as a :class:`SkippedFile`, so it
is never put in a second job. Sleeper tracks it again in either case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

__all__ = [
    "DEFAULT_TRACKING_TTL",
    "NOT_ASSIGNED_TO_JOB",
    "SkippedFile",
    "SubmitRequest",
    "TrackedFile",
    "from_epoch_millis",
    "newest_first",
    "oldest_first",
    "to_epoch_millis",
]

NOT_ASSIGNED_TO_JOB = "not_assigned_to_job"
"""The job id under which Sleeper's store keeps files that are not yet in a job."""

DEFAULT_TRACKING_TTL = timedelta(minutes=10080)
"""How long a file's record is kept by default (``sleeper.table.ingest.batcher.file.tracking.ttl.minutes``)."""


def to_epoch_millis(time: datetime) -> int:
    """A timezone-aware time as whole milliseconds since the epoch (rounded down)."""
    delta = time - datetime(1970, 1, 1, tzinfo=UTC)
    return delta // timedelta(milliseconds=1)


def from_epoch_millis(millis: int) -> datetime:
    """A time in UTC from milliseconds since the epoch."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)


def _to_epoch_seconds(time: datetime) -> int:
    return (time - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(seconds=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedFile:
    """A file submitted to the ingest batcher.

    Times are kept at the precision Sleeper stores them: the received time in milliseconds, the expiry time in
    seconds (both rounded down on creation), so a record reads back equal to what was written.

    Attributes:
        file: The file as an ingest job names it: ``bucket/key`` for S3, an absolute path for a local file.
        file_size_bytes: The file's size.
        table_id: The table the file is for.
        received_time: When the submit request was received (timezone-aware).
        expiry_time: When the record may be forgotten; by default the received time plus a week.
        job_id: The job the file was assigned to, or None while it is pending.
        file_modified_time: The file's modification time when it was submitted (milliseconds, rounded down), or None
            if unknown (records stored before it was kept, or a filesystem that does not give it).

    Raises:
        ValueError: If a time is not timezone-aware, the size is negative, or the path or table id is empty.
    """

    file: str
    file_size_bytes: int
    table_id: str
    received_time: datetime
    expiry_time: datetime | None = None
    job_id: str | None = None
    file_modified_time: datetime | None = None

    def __post_init__(self) -> None:
        if not self.file:
            raise ValueError("a tracked file needs a path")
        if not self.table_id or "/" in self.table_id:
            raise ValueError(f"invalid table id {self.table_id!r}")
        if self.file_size_bytes < 0:
            raise ValueError(f"negative file size {self.file_size_bytes}")
        if self.received_time.tzinfo is None:
            raise ValueError("received_time must be timezone-aware")
        received = from_epoch_millis(to_epoch_millis(self.received_time))
        object.__setattr__(self, "received_time", received)
        expiry = self.expiry_time if self.expiry_time is not None else received + DEFAULT_TRACKING_TTL
        if expiry.tzinfo is None:
            raise ValueError("expiry_time must be timezone-aware")
        object.__setattr__(self, "expiry_time", from_epoch_millis(_to_epoch_seconds(expiry) * 1000))
        if self.job_id == NOT_ASSIGNED_TO_JOB or self.job_id == "":
            object.__setattr__(self, "job_id", None)
        if self.file_modified_time is not None:
            if self.file_modified_time.tzinfo is None:
                raise ValueError("file_modified_time must be timezone-aware")
            modified = from_epoch_millis(to_epoch_millis(self.file_modified_time))
            object.__setattr__(self, "file_modified_time", modified)

    @property
    def is_assigned_to_job(self) -> bool:
        """Whether the file has been put in a job."""
        return self.job_id is not None

    @property
    def key(self) -> str:
        """The file's key within its job (or the pending files): ``<table id>/<file>``, Sleeper's ``FilePath``."""
        return f"{self.table_id}/{self.file}"

    @property
    def job_id_or_unassigned(self) -> str:
        """The job id, or ``not_assigned_to_job`` while pending (Sleeper's ``JobId`` attribute)."""
        return self.job_id if self.job_id is not None else NOT_ASSIGNED_TO_JOB

    @property
    def received_millis(self) -> int:
        """The received time in milliseconds since the epoch (Sleeper's ``ReceivedTime``)."""
        return to_epoch_millis(self.received_time)

    @property
    def expiry_seconds(self) -> int:
        """The expiry time in seconds since the epoch (Sleeper's ``ExpiryTime``, the DynamoDB time to live)."""
        assert self.expiry_time is not None
        return _to_epoch_seconds(self.expiry_time)

    @property
    def modified_millis(self) -> int | None:
        """The file's modification time in milliseconds since the epoch, or None if unknown."""
        return to_epoch_millis(self.file_modified_time) if self.file_modified_time is not None else None

    def is_unchanged_since(self, earlier: TrackedFile) -> bool:
        """Whether this is the same file as an earlier record of it: same table, path, size and modification time.

        A file whose modification time is unknown, in either record, counts as changed.
        """
        return (
            self.key == earlier.key
            and self.file_size_bytes == earlier.file_size_bytes
            and self.file_modified_time is not None
            and self.file_modified_time == earlier.file_modified_time
        )

    def assigned_to(self, job_id: str) -> TrackedFile:
        """This file assigned to a job."""
        return replace(self, job_id=job_id)

    def pending_order(self) -> tuple[int, str]:
        """Sort key of pending files, oldest first: received time, then ``<table id>/<file>``."""
        return self.received_millis, self.key

    @staticmethod
    def split_key(key: str) -> tuple[str, str]:
        """Splits Sleeper's ``FilePath`` (``<table id>/<file>``) into table id and file."""
        table_id, sep, file = key.partition("/")
        if not sep or not table_id or not file:
            raise ValueError(f"invalid batcher file key {key!r}")
        return table_id, file


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedFile:
    """A submitted file that was not tracked, because it was already batched into a job and is unchanged since.

    Attributes:
        file: The file as submitted (not stored).
        batched: The kept record of the file in its job.
    """

    file: TrackedFile
    batched: TrackedFile

    @property
    def job_id(self) -> str:
        """The job the file was already batched into."""
        assert self.batched.job_id is not None
        return self.batched.job_id

    @property
    def reason(self) -> str:
        """Why the file was skipped, for a log or a report."""
        return f"already batched into job {self.job_id} and unchanged since (same size and modification time)"


def newest_first(files: list[TrackedFile]) -> list[TrackedFile]:
    """Files sorted newest first: received time descending, then table id and path ascending, then job id."""
    ordered = sorted(files, key=lambda f: (f.key, f.job_id_or_unassigned))
    return sorted(ordered, key=lambda f: f.received_millis, reverse=True)


def oldest_first(files: list[TrackedFile]) -> list[TrackedFile]:
    """Pending files sorted oldest first: received time, then table id and path."""
    return sorted(files, key=TrackedFile.pending_order)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitRequest:
    """A request to ingest files through the batcher: Sleeper's ``{"tableName": ..., "files": [...]}``.

    Attributes:
        table_name: The table.
        files: Files or directories: ``bucket/key``, ``s3://…``, ``s3a://…``, or local paths where allowed.
        json_message: The message the request was read from, if any (not compared).
    """

    table_name: str
    files: tuple[str, ...]
    json_message: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))

    def to_json(self) -> str:
        """Sleeper's submit request JSON."""
        return json.dumps({"tableName": self.table_name, "files": list(self.files)}, separators=(",", ":"))
