"""What a publish cleans up once its snapshot is current: the snapshots superseded for longer than the table's GC
delay are expired and their holds released, so the garbage collector may then delete their files; holds no snapshot
names (a publish that failed, crashed or found nothing changed) are released once older than :data:`PENDING_MAX_AGE`;
trimmed copies and manifests no retained snapshot lists are deleted once that old too.

A snapshot is superseded when the next one is committed. Keeping it, its hold and its trimmed copies for the GC delay
gives a reader that planned its scan just before that the same grace a Sleeper query gets.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pyarrow import fs as pafs

from sleeper.core import SNAPSHOT_HOLD_KEY, iceberg_location
from sleeper.iceberg.holds import delete_hold, list_holds
from sleeper.iceberg.trim import TRIMMED_DIRECTORY
from sleeper.io import delete_in_table, list_files, resolve

if TYPE_CHECKING:
    from pyiceberg.table import Table as PyIcebergTable
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["PENDING_MAX_AGE", "RetentionResult", "apply_retention", "expired_snapshot_ids", "retained_files"]

PENDING_MAX_AGE = timedelta(hours=24)
"""How old a hold no snapshot names, or a file under the Iceberg directory no retained snapshot lists, must be before
it is removed: a publish still running may yet commit them. A publish older than half of this when it would commit
gives up instead (:mod:`sleeper.iceberg.publisher`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionResult:
    """What the cleanup after a publish did."""

    expired_snapshots: int = 0
    released_holds: int = 0
    deleted_files: int = 0


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def expired_snapshot_ids(
    snapshots: Iterable[Snapshot], current_id: int | None, now: datetime, delay: timedelta
) -> set[int]:
    """The snapshots superseded (by the next one in time) for longer than the delay; never the current one."""
    ordered = sorted(snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number or 0))
    limit = _millis(now - delay)
    expired = set()
    for snapshot, successor in zip(ordered, ordered[1:], strict=False):
        if snapshot.snapshot_id != current_id and successor.timestamp_ms <= limit:
            expired.add(snapshot.snapshot_id)
    return expired


def retained_files(table: PyIcebergTable, snapshots: Iterable[Snapshot]) -> set[str]:
    """The paths the snapshots read or are made of: data files, manifests and manifest lists."""
    io = table.io
    paths: set[str] = set()
    for snapshot in snapshots:
        paths.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            paths.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                paths.add(entry.data_file.file_path)
    return paths


def _normal(path: str) -> str:
    """A path or URI as a filesystem path without leading slashes, for comparisons."""
    for scheme in ("s3://", "s3a://", "file://"):
        if path.startswith(scheme):
            path = path[len(scheme) :]
            break
    return path.lstrip("/")


def apply_retention(
    table: PyIcebergTable,
    fs: pafs.FileSystem,
    data_prefix: str,
    metadata_directory: str,
    *,
    now: datetime,
    delay: timedelta,
) -> RetentionResult:
    """Expires snapshots superseded for longer than ``delay``, releases their holds and stale pending ones, and deletes
    trimmed copies and manifests no retained snapshot lists that are older than :data:`PENDING_MAX_AGE`.

    Args:
        table: The view, as just committed.
        fs: The filesystem of the table's data prefix.
        data_prefix: The table's data prefix URI.
        metadata_directory: The URI of the view's ``metadata/`` directory.
        now: The time of the publish.
        delay: The table's GC delay.
    """
    metadata = table.metadata
    current = metadata.current_snapshot_id
    expired = expired_snapshot_ids(metadata.snapshots, current, now, delay)
    if expired:
        from pyiceberg.exceptions import CommitFailedException

        try:
            table.maintenance.expire_snapshots().by_ids(sorted(expired)).commit()
        except CommitFailedException:
            expired = set()  # another publish committed meanwhile: the next one expires them
        table.refresh()
    retained = [s for s in table.metadata.snapshots if s.snapshot_id not in expired]
    live_holds = {s.summary[SNAPSHOT_HOLD_KEY] for s in retained if s.summary is not None}
    expired_holds = {
        s.summary[SNAPSHOT_HOLD_KEY] for s in metadata.snapshots if s.snapshot_id in expired and s.summary is not None
    }
    released = 0
    for hold in list_holds(fs, data_prefix):
        if hold.hold_id in live_holds:
            continue
        if hold.hold_id in expired_holds or now - hold.created_at >= PENDING_MAX_AGE:
            delete_hold(fs, data_prefix, hold.hold_id)
            released += 1
    listed = {_normal(p) for p in retained_files(table, retained)}
    deleted = 0
    iceberg_dir = iceberg_location(data_prefix)
    for directory in (f"{iceberg_dir}/{TRIMMED_DIRECTORY}", metadata_directory):
        _, path = resolve(directory, filesystem=fs)
        for info in list_files(fs, path):
            name = str(info.path)
            if _normal(name) in listed or not _removable(name):
                continue
            mtime = info.mtime
            if mtime is None or now - (mtime if mtime.tzinfo else mtime.replace(tzinfo=UTC)) < PENDING_MAX_AGE:
                continue
            delete_in_table(fs, name, data_prefix)
            deleted += 1
    return RetentionResult(expired_snapshots=len(expired), released_holds=released, deleted_files=deleted)


def _removable(path: str) -> bool:
    """Trimmed copies, manifests and manifest lists; never a ``metadata.json`` (the catalog points at one, and
    pyiceberg keeps a bounded history of them itself)."""
    name = posixpath.basename(path)
    return name.endswith((".parquet", ".avro"))
