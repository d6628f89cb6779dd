"""The batcher's submitter: reads requests from ``IngestBatcherSubmitQ`` and tracks their files.

A request is ``{"tableName": "...", "files": ["bucket/key", "bucket/dir", ...]}``. The submitter finds the table by
name, expands each path to the files it names with their sizes (a file is itself; a directory is every file under
it, recursively; Hadoop checksum files ending ``.crc`` are skipped, as Sleeper skips them), and stores every file as
pending with the time the request was received, its modification time and an expiry of
``sleeper.table.ingest.batcher.file.tracking.ttl.minutes`` after it. S3 files are stored as ``bucket/key`` (the form
ingest jobs take), local files by absolute path.

A file already batched into a job whose record is still kept, and unchanged since (same size and modification time),
is not tracked again: a request carries no id, so this is how a redelivered request is kept from putting its files in
a second job. Such files are logged at INFO with their job and returned as :class:`SkippedFile` in the
:class:`SubmitResult`. A file rewritten under the same path is tracked again, as Sleeper tracks it.

A request that can never succeed (not valid JSON, an unsafe path, an unknown table, a path naming no file, a file
named twice: the same path twice or a directory and a file inside it) raises a
``SubmitRequestError`` before anything is stored; :func:`handle_submit_message` sends it to the dead-letter queue.
Other failures (a filesystem or store that cannot be reached) propagate, so the message is delivered again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pyarrow import fs as pafs

from sleeper.core import INGEST_BATCHER_SUBMIT_Q as SUBMIT_QUEUE
from sleeper.core import Queue, TableNotFoundError, check_safe_path, is_s3_path, normalise_s3_path
from sleeper.core.jobs import MessageError, expand_job_files, wire
from sleeper.core.properties import INGEST_BATCHER_TRACKING_TTL_MINUTES
from sleeper.ingest.batcher.exceptions import (
    BatcherFileNotFoundError,
    BatcherTableNotFoundError,
    InvalidSubmitRequestError,
    SubmitRequestError,
)
from sleeper.ingest.batcher.model import SkippedFile, SubmitRequest, TrackedFile
from sleeper.ingest.batcher.ports import IngestBatcherStore
from sleeper.io import FileSystemOptions, list_files, resolve
from sleeper.statestore import SleeperInstance

__all__ = [
    "SUBMIT_QUEUE",
    "SUBMIT_REQUEST_FIELDS",
    "IngestBatcherSubmitter",
    "SubmitOutcome",
    "SubmitResult",
    "handle_submit_message",
    "parse_submit_request",
    "submit_files",
]


SUBMIT_REQUEST_FIELDS = frozenset({"tableName", "files"})
"""The fields of a submit request."""

CHECKSUM_SUFFIX = ".crc"
"""Files with this suffix (Hadoop checksums) are never tracked."""

_LOG = logging.getLogger(__name__)


def parse_submit_request(
    text: str | bytes, *, allow_local: bool = False, allowed_buckets: Collection[str] | None = None
) -> SubmitRequest:
    """Reads a submit request message.

    Args:
        text: The message body.
        allow_local: Whether local paths are accepted (the local runtime only).
        allowed_buckets: If given, every S3 path must be in one of these buckets.

    Raises:
        InvalidSubmitRequestError: If the message is not a valid request; the message names the bad value.
    """
    raw = wire.message_text(text)
    try:
        data = wire.expect_object(wire.parse_json(text))
        wire.check_fields(data, SUBMIT_REQUEST_FIELDS)
        table_name = wire.required_str(data, "tableName")
        files = wire.str_list(data, "files", non_empty=True)
        for i, path in enumerate(files):
            check_safe_path(path, where=f"$.files[{i}]", allow_local=allow_local, allowed_buckets=allowed_buckets)
    except MessageError as e:
        raise InvalidSubmitRequestError(f"invalid ingest batcher request: {e}", json_message=raw) from e
    return SubmitRequest(table_name=table_name, files=files, json_message=raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitResult:
    """What one submit request did.

    Attributes:
        tracked: The files stored as pending, in the order of the request's paths.
        skipped: The files not stored because they were already batched into a job and are unchanged since.
    """

    tracked: tuple[TrackedFile, ...] = field(default=())
    skipped: tuple[SkippedFile, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class _Found:
    path: str
    size: int
    modified: datetime | None


class IngestBatcherSubmitter:
    """Tracks the files of submit requests in the batcher's store.

    Args:
        instance: The instance (tables by name and their properties).
        store: The batcher store.
        options: How to reach S3 for S3 paths.
        filesystem: A filesystem to find every path on instead of the one its form names (tests).
        allow_local: Whether local paths are accepted (the local runtime only).
        allowed_buckets: If given, every S3 path must be in one of these buckets.
        clock: The time a request is received, when not given (timezone-aware).
    """

    def __init__(
        self,
        instance: SleeperInstance,
        store: IngestBatcherStore,
        *,
        options: FileSystemOptions | None = None,
        filesystem: pafs.FileSystem | None = None,
        allow_local: bool = False,
        allowed_buckets: Collection[str] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    ) -> None:
        self._instance = instance
        self._store = store
        self._options = options
        self._filesystem = filesystem
        self._allow_local = allow_local
        self._allowed_buckets = allowed_buckets
        self._clock = clock

    def submit_message(self, body: str | bytes, *, received_time: datetime | None = None) -> list[TrackedFile]:
        """Reads a request message and tracks its files (see ``submit``); returns the files stored.

        Raises:
            SubmitRequestError: If the request can never be stored; nothing was stored.
        """
        return list(self.track_message(body, received_time=received_time).tracked)

    def track_message(self, body: str | bytes, *, received_time: datetime | None = None) -> SubmitResult:
        """Reads a request message and tracks its files (see ``track``).

        Raises:
            SubmitRequestError: If the request can never be stored; nothing was stored.
        """
        request = parse_submit_request(body, allow_local=self._allow_local, allowed_buckets=self._allowed_buckets)
        return self.track(request, received_time=received_time)

    def submit(self, request: SubmitRequest, *, received_time: datetime | None = None) -> list[TrackedFile]:
        """Tracks the files a request names (see ``track``); returns the files stored."""
        return list(self.track(request, received_time=received_time).tracked)

    def track(self, request: SubmitRequest, *, received_time: datetime | None = None) -> SubmitResult:
        """Tracks every file a request names as pending, replacing pending records of the same paths, except files
        already batched into a job and unchanged since (their record is kept; they are logged and skipped).

        Args:
            request: The request.
            received_time: When it was received; now if not given.

        Returns:
            The files stored and the files skipped, each in the order of the request's paths (each directory's
            files sorted by path).

        Raises:
            SubmitRequestError: If the table does not exist, a path names no file, or a file is named twice (the same
                path twice, or a directory and a file inside it); nothing was stored.
            OSError: If a filesystem could not be reached (the request may be retried).
        """
        received = received_time if received_time is not None else self._clock()
        for i, path in enumerate(request.files):
            try:
                check_safe_path(
                    path, where=f"$.files[{i}]", allow_local=self._allow_local, allowed_buckets=self._allowed_buckets
                )
            except MessageError as e:
                raise InvalidSubmitRequestError(
                    f"invalid ingest batcher request: {e}", json_message=request.json_message
                ) from e
        try:
            table = self._instance.table(request.table_name)
        except TableNotFoundError as e:
            raise BatcherTableNotFoundError(str(e), json_message=request.json_message) from e
        ttl = timedelta(minutes=table.properties.get_int(INGEST_BATCHER_TRACKING_TTL_MINUTES))
        files = [
            TrackedFile(
                file=found.path,
                file_size_bytes=found.size,
                table_id=table.table_id,
                received_time=received,
                expiry_time=received + ttl,
                file_modified_time=found.modified,
            )
            for found in self._expand(request)
        ]
        skipped = self._store.add_files_unless_batched(files)
        for skip in skipped:
            _LOG.info(
                "Ingest batcher did not track %s for table %s again: it is already in job %s, unchanged since "
                "(size %d, modified %s)",
                skip.file.file,
                table.table_id,
                skip.job_id,
                skip.file.file_size_bytes,
                skip.file.file_modified_time,
            )
        not_tracked = {skip.file for skip in skipped}
        tracked = tuple(f for f in files if f not in not_tracked)
        _LOG.info(
            "Tracked %d files for table %s in the ingest batcher (%d skipped as already batched)",
            len(tracked),
            table.table_id,
            len(skipped),
        )
        return SubmitResult(tracked=tracked, skipped=tuple(skipped))

    def _expand(self, request: SubmitRequest) -> list[_Found]:
        found, duplicates = expand_job_files(
            [p for p in request.files if not p.endswith(CHECKSUM_SUFFIX)],
            lambda path: (self._expand_path(path, request), ()),
            lambda f: f.path,
        )
        if duplicates:
            raise InvalidSubmitRequestError(
                f"invalid ingest batcher request: {'; '.join(duplicates)}", json_message=request.json_message
            )
        return found

    def _expand_path(self, path: str, request: SubmitRequest) -> list[_Found]:
        fs, resolved = self._resolve(path)
        info = fs.get_file_info(resolved)
        if info.type == pafs.FileType.File:
            return [_Found(self._job_path(path, resolved), int(info.size), _modified(info))]
        listed = (
            [
                _Found(self._job_path(path, str(f.path)), int(f.size), _modified(f))
                for f in list_files(fs, resolved)
                if not str(f.path).endswith(CHECKSUM_SUFFIX)
            ]
            if info.type == pafs.FileType.Directory
            else []
        )
        if not listed:
            raise BatcherFileNotFoundError(f"no files found at {path}", json_message=request.json_message)
        return listed

    def _resolve(self, path: str) -> tuple[pafs.FileSystem, str]:
        if is_s3_path(path):
            return resolve(f"s3a://{normalise_s3_path(path)}", self._options, filesystem=self._filesystem)
        return resolve(path, self._options, filesystem=self._filesystem)

    @staticmethod
    def _job_path(requested: str, found: str) -> str:
        # S3 filesystems name files bucket/key, which is how ingest jobs name them; local files keep their path.
        return found.lstrip("/") if is_s3_path(requested) else found


def _modified(info: pafs.FileInfo) -> datetime | None:
    """A file's modification time, timezone-aware (UTC if the filesystem gives none), or None if unknown."""
    modified = info.mtime
    if not isinstance(modified, datetime):
        return None
    return modified if modified.tzinfo is not None else modified.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitOutcome:
    """What became of one submit request message.

    Attributes:
        files: The files tracked (empty if the request was rejected).
        rejected_reason: Why the request was sent to the dead-letter queue, if it was.
        skipped: The files not tracked because they were already batched into a job and are unchanged since (a
            redelivered request, or the same files submitted again while their records are kept).
    """

    files: tuple[TrackedFile, ...] = field(default=())
    rejected_reason: str | None = None
    skipped: tuple[SkippedFile, ...] = field(default=())

    @property
    def accepted(self) -> bool:
        """Whether the request's files were tracked."""
        return self.rejected_reason is None

    def describe(self) -> str:
        """One line for a log."""
        if self.rejected_reason is not None:
            return f"ingest batcher request sent to the dead-letter queue: {self.rejected_reason}"
        total = sum(f.file_size_bytes for f in self.files)
        line = f"ingest batcher tracked {len(self.files)} files ({total:,} bytes)"
        if self.skipped:
            first = self.skipped[0]
            line += (
                f"; skipped {len(self.skipped)} files already batched into a job and unchanged since"
                f" (e.g. {first.file.file} in job {first.job_id})"
            )
        return line


def handle_submit_message(
    submitter: IngestBatcherSubmitter,
    body: str,
    *,
    dead_letter_queue: Queue,
    received_time: datetime | None = None,
) -> SubmitOutcome:
    """Handles one message of the submit queue, as Sleeper's submitter Lambda does.

    A request that can never be stored is sent, unchanged, to the dead-letter queue; the caller then deletes the
    message from the submit queue. Any other error propagates, so the message is delivered again.

    Args:
        submitter: The submitter.
        body: The message body.
        dead_letter_queue: Where rejected requests go (``IngestBatcherSubmitDLQ``).
        received_time: When the message was received; now if not given.

    Returns:
        The files tracked and those skipped as already batched, or why the request was rejected.
    """
    try:
        result = submitter.track_message(body, received_time=received_time)
    except SubmitRequestError as e:
        _LOG.warning("Ingest batcher request rejected, sending it to the dead-letter queue: %s", e)
        dead_letter_queue.send(body)
        return SubmitOutcome(rejected_reason=str(e))
    return SubmitOutcome(files=result.tracked, skipped=result.skipped)


def submit_files(
    submitter: IngestBatcherSubmitter,
    table_name: str,
    files: Sequence[str],
    *,
    received_time: datetime | None = None,
) -> list[TrackedFile]:
    """Tracks files for a table directly, as a submit request naming them would (for the CLI).

    Raises:
        SubmitRequestError: If the request can never be stored; nothing was stored.
    """
    request = SubmitRequest(table_name=table_name, files=tuple(files))
    request = SubmitRequest(table_name=table_name, files=request.files, json_message=request.to_json())
    return submitter.submit(request, received_time=received_time)
