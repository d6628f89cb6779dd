"""Sweeping orphan files (beyond Sleeper; docs/reliability.md I7, D5).

An orphan is a data file (or sidecar) under the table's ``data/partition_*/`` prefix that no transaction ever
added: written by an ingest, bulk import or compaction that crashed or lost a race before committing. Sleeper never
collects them (gchq/sleeper#2688). The garbage collector cannot see them because the state store does not track
them, so the sweeper lists the table's data files and compares them with the files state.

A listed file is deleted only if all of these hold:

* it is ``data/partition_<id>/<name>.parquet`` or ``.sketches`` (nothing else under the prefix is touched);
* its data file (for a sidecar, the ``.parquet`` beside it) is not tracked, referenced or not;
* it is older than the minimum age, by its modification time (a file without one is kept). The age stands in for
  "its job can no longer commit": a job writes its files before it commits them, so an uncommitted file younger
  than the longest a job takes between writing and committing may still be committed;
* its name is not the id of a compaction job that holds input files (its output, which may still be committed);
* it is still untracked when the state is read again just before the deletes.

The listing is taken before the state is read, so a file committed between the two is seen as tracked.

Large transaction bodies (``<table id>/statestore/transactions/*.json``, docs/reliability.md C7) are swept alike: a body
no entry of the table's logs names, older than :data:`DEFAULT_BODY_MIN_AGE`, was uploaded by a writer that crashed or
lost its race before its log entry, or was left by a transaction deletion that failed half way. The body age is the
longest SQS keeps a message, since a commit request sent to the committer may name a body it uploaded and wait in
the queue that long before its entry exists.

A deleted table has no state store left to compare with, and a writer racing its deletion may still write data files
under its prefix after the table deletion removed everything there (its commit is then refused, but on AWS it may
not delete what it wrote). :func:`sweep_deleted_tables` removes those: the data files and sidecars under the prefix of
each table the state store marks deleted, once they are older than the minimum age.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyarrow import fs as pafs

from sleeper.core.jobs import transaction_body_prefix
from sleeper.core.statestore.transactions import LogType
from sleeper.io import FileSystemOptions, delete_in_table, filesystem_path, list_files, resolve
from sleeper.statestore import SleeperTable

__all__ = [
    "DEFAULT_BODY_MIN_AGE",
    "DEFAULT_ORPHAN_MIN_AGE",
    "DeletedTablesSweepResult",
    "OrphanSweepResult",
    "sweep_deleted_tables",
    "sweep_orphans",
]

DEFAULT_ORPHAN_MIN_AGE = timedelta(hours=24)
"""How old an untracked file must be before it is swept by default. Long, because a bulk import or a large ingest
may write files hours before it commits them; Iceberg's orphan removal defaults to 3 days, with 24 hours as its
minimum."""

DEFAULT_BODY_MIN_AGE = timedelta(days=14)
"""How old a transaction body no log entry names must be before it is swept: the longest SQS keeps a message, so no
commit request naming it can still be waiting in the committer queue."""

_BODY_FILE = re.compile(r"^[^/]+\.json$")
_DATA_FILE = re.compile(r"^partition_[^/]+/[^/]+\.(parquet|sketches)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanSweepResult:
    """What an orphan sweep of a table did.

    Attributes:
        table_id: The table.
        listed: Files listed under the table's ``data/`` prefix.
        deleted: Orphans deleted (filesystem paths).
        young: Untracked files kept because they are younger than the minimum age (or have no modification time).
        in_flight: Untracked files kept because they are named after a compaction job that holds input files.
        failed: Orphans whose delete failed, with the reason.
        bodies_deleted: Keys of transaction bodies no log entry names, deleted.
        bodies_young: Keys of unnamed transaction bodies kept because they are younger than the body minimum age.
        dry_run: Whether deletes were only reported.
    """

    table_id: str
    listed: int = 0
    deleted: tuple[str, ...] = ()
    young: tuple[str, ...] = ()
    in_flight: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    bodies_deleted: tuple[str, ...] = ()
    bodies_young: tuple[str, ...] = ()
    dry_run: bool = False


def sweep_orphans(
    table: SleeperTable,
    *,
    min_age: timedelta = DEFAULT_ORPHAN_MIN_AGE,
    body_min_age: timedelta = DEFAULT_BODY_MIN_AGE,
    now: datetime | None = None,
    dry_run: bool = False,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> OrphanSweepResult:
    """Deletes the table's data files and sidecars that no transaction added and that are older than ``min_age``, and
    its transaction bodies that no log entry names and that are older than ``body_min_age``.

    Args:
        table: The table.
        min_age: How old an untracked file must be, by its modification time.
        body_min_age: How old a transaction body no log entry names must be, by its modification time.
        now: The time the ages are measured from; now if None.
        dry_run: Only report what would be deleted (as ``deleted``).
        filesystem: A filesystem to use instead of the one the data prefix names.
        options: How to reach S3.

    Raises:
        ValueError: If ``min_age`` is not positive.
    """
    if min_age <= timedelta(0) or body_min_age <= timedelta(0):
        raise ValueError(f"the minimum ages of orphans must be positive, got {min_age} and {body_min_age}")
    start = now or datetime.now(tz=UTC)
    fs, prefix = resolve(table.data_prefix, options, filesystem=filesystem)
    bodies_deleted, bodies_young = _sweep_bodies(table, fs, prefix, min_age=body_min_age, now=start, dry_run=dry_run)
    data_dir = prefix.rstrip("/") + "/data"
    listing = list_files(fs, data_dir)  # before the state is read: a file committed since is then seen as tracked
    tracked, job_ids = _tracked(table)
    candidates: list[str] = []
    young: list[str] = []
    in_flight: list[str] = []
    for info in listing:
        path = str(info.path)
        relative = _relative(path, data_dir)
        if relative is None or not _DATA_FILE.match(relative):
            continue
        data_path = _data_path(path)
        if _normal(data_path) in tracked:
            continue
        stem = posixpath.splitext(posixpath.basename(path))[0]
        if stem in job_ids:
            in_flight.append(path)
            continue
        mtime = info.mtime
        if mtime is None or start - _aware(mtime) < min_age:
            young.append(path)
            continue
        candidates.append(path)
    if candidates:
        tracked_again, job_ids_again = _tracked(table)
        candidates = [
            p
            for p in candidates
            if _normal(_data_path(p)) not in tracked_again
            and posixpath.splitext(posixpath.basename(p))[0] not in job_ids_again
        ]
    deleted: list[str] = []
    failed: list[tuple[str, str]] = []
    for path in candidates:
        if dry_run:
            deleted.append(path)
            continue
        try:
            delete_in_table(fs, path, table.data_prefix)
        except Exception as e:  # noqa: BLE001 - reported; one failure must not stop the sweep
            failed.append((path, f"{type(e).__name__}: {e}"))
            continue
        deleted.append(path)
    return OrphanSweepResult(
        table_id=table.table_id,
        listed=len(listing),
        deleted=tuple(deleted),
        young=tuple(young),
        in_flight=tuple(in_flight),
        failed=tuple(failed),
        bodies_deleted=bodies_deleted,
        bodies_young=bodies_young,
        dry_run=dry_run,
    )


def _sweep_bodies(
    table: SleeperTable, fs: pafs.FileSystem, prefix: str, *, min_age: timedelta, now: datetime, dry_run: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Deletes the table's transaction bodies that no log entry names and that are older than ``min_age``; returns
    the keys deleted and the keys of unnamed bodies kept as too young.

    The bodies are listed before the logs are read, so a body whose entry lands between the two is seen as named.
    """
    key_prefix = transaction_body_prefix(table.table_id)
    body_dir = prefix.rstrip("/") + "/" + key_prefix.removeprefix(f"{table.table_id}/").rstrip("/")
    listing = list_files(fs, body_dir)
    if not listing:
        return (), ()
    store = table.state_store
    named = {
        entry.body_key
        for log_type in LogType
        for entry in store.backend.transaction_log(table.table_id, log_type).read_transactions_after(0)
        if entry.body_key is not None
    }
    bodies = store.body_store
    deleted: list[str] = []
    young: list[str] = []
    for info in listing:
        relative = _relative(str(info.path), body_dir)
        if relative is None or not _BODY_FILE.match(relative):
            continue
        key = key_prefix + relative
        if key in named:
            continue
        if info.mtime is None or now - _aware(info.mtime) < min_age:
            young.append(key)
            continue
        if not dry_run:
            bodies.delete(key)
        deleted.append(key)
    return tuple(deleted), tuple(young)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletedTablesSweepResult:
    """What a sweep of deleted tables' leftovers did.

    Attributes:
        tables: The deleted tables whose prefix still held data files.
        deleted: Files deleted (filesystem paths).
        young: Files kept because they are younger than the minimum age (or have no modification time).
        failed: Files whose delete failed, with the reason.
    """

    tables: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    young: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()


def sweep_deleted_tables(
    data_root: str,
    is_deleted: Callable[[str], bool],
    *,
    live_table_ids: Collection[str] = (),
    min_age: timedelta = DEFAULT_ORPHAN_MIN_AGE,
    now: datetime | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> DeletedTablesSweepResult:
    """Deletes the data files and sidecars left under the prefixes of deleted tables, older than ``min_age``.

    Each directory directly under the data root is a table's prefix (``<data root>/<table id>``); only those of
    tables the state store marks deleted are swept, and in them only ``data/partition_<id>/<name>.parquet`` or
    ``.sketches``, each deleted through the table's delete guard. A deleted table's prefix left with no file at all
    is removed (the empty directories a local writer left).

    Args:
        data_root: The URI the tables' prefixes are under (``s3a://<data bucket>``, ``file:///<instance>/data``).
        is_deleted: Whether the state store marks a table id deleted.
        live_table_ids: Tables known to exist (their prefixes are not looked up).
        min_age: How old a file must be, by its modification time.
        now: The time the ages are measured from; now if None.
        filesystem: A filesystem to use instead of the one the data root names.
        options: How to reach S3.

    Raises:
        ValueError: If ``min_age`` is not positive.
    """
    if min_age <= timedelta(0):
        raise ValueError(f"the minimum age of leftovers must be positive, got {min_age}")
    start = now or datetime.now(tz=UTC)
    fs, root = resolve(data_root, options, filesystem=filesystem)
    root = root.rstrip("/")
    selector = pafs.FileSelector(root, recursive=False, allow_not_found=True)
    live = set(live_table_ids)
    tables: list[str] = []
    deleted: list[str] = []
    young: list[str] = []
    failed: list[tuple[str, str]] = []
    for entry in fs.get_file_info(selector):
        table_id = posixpath.basename(str(entry.path).rstrip("/"))
        if entry.type != pafs.FileType.Directory or table_id in live or not is_deleted(table_id):
            continue
        data_dir = f"{root}/{table_id}/data"
        prefix = f"{data_root.rstrip('/')}/{table_id}"
        found = False
        for info in list_files(fs, data_dir):
            path = str(info.path)
            relative = _relative(path, data_dir)
            if relative is None or not _DATA_FILE.match(relative):
                continue
            found = True
            mtime = info.mtime
            if mtime is None or start - _aware(mtime) < min_age:
                young.append(path)
                continue
            try:
                delete_in_table(fs, path, prefix)
            except Exception as e:  # noqa: BLE001 - reported; one failure must not stop the sweep
                failed.append((path, f"{type(e).__name__}: {e}"))
                continue
            deleted.append(path)
        if found:
            tables.append(table_id)
        if not list_files(fs, f"{root}/{table_id}"):
            delete_in_table(fs, f"{root}/{table_id}", prefix, whole_table=True)  # empty directories left locally
    return DeletedTablesSweepResult(
        tables=tuple(tables), deleted=tuple(deleted), young=tuple(young), failed=tuple(failed)
    )


def _tracked(table: SleeperTable) -> tuple[set[str], set[str]]:
    """The filesystem paths of every tracked file, and the ids of compaction jobs holding input files."""
    store = table.state_store
    store.refresh()
    state = store.files_state()
    paths: set[str] = set()
    job_ids: set[str] = set()
    for entry in state.files():
        paths.add(_normal(filesystem_path(entry.filename)))
        for reference in entry.references.values():
            if reference.job_id is not None:
                job_ids.add(reference.job_id)
    return paths, job_ids


def _normal(path: str) -> str:
    return path.lstrip("/")


def _relative(path: str, directory: str) -> str | None:
    base = _normal(directory).rstrip("/") + "/"
    normal = _normal(path)
    return normal[len(base) :] if normal.startswith(base) else None


def _data_path(path: str) -> str:
    """The data file a listed file belongs to: itself, or for a sidecar the ``.parquet`` beside it."""
    if path.endswith(".sketches"):
        return path[: -len(".sketches")] + ".parquet"
    return path


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
