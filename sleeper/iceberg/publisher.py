"""Publishing a table's current state as an Apache Iceberg snapshot over its own Parquet files (beyond Sleeper).

One publish, for a table naming its view in ``sleeper.table.iceberg.name``:

1. refuse a table whose rows are not the rows of its files: an iterator, aggregations or filters change them when
   read, and an Iceberg reader would not apply them. Whatever view such a table still has is withdrawn
   (:mod:`sleeper.iceberg.withdrawal`), and the refusal says so;
2. read the table's state (partitions and file references, at one transaction) at time ``t0``;
3. write a hold (:mod:`sleeper.core.held_files`) naming every referenced file, and give up unless it was written
   within half the table's GC delay of ``t0``: the collector only deletes a file unreferenced for the whole delay,
   and reads the holds after choosing what to delete, so it sees this hold before it could delete a file the state
   read at ``t0`` references (half the delay leaves the other half for clocks that disagree);
4. plan each file (:mod:`sleeper.iceberg.coverage`): whole, or through a trimmed copy of its rows in its referencing
   partitions (:mod:`sleeper.iceberg.trim`);
5. commit one Iceberg snapshot (an overwrite: files that left Sleeper's state leave the view, new ones are registered
   in place from their footers, with no data rewritten), carrying the hold's id in its summary. The catalog's commit
   is conditional on the view not having moved, so of two racing publishes one fails and releases its hold. The
   table's properties are read as saved at the start (the table given may be a cached copy), just before the commit
   and just after it: if rules were set meanwhile, the publish withdraws the view (an edit setting rules withdraws it
   too, before and after saving them, so whichever comes last takes the view away);
6. expire the snapshots superseded for longer than the GC delay and release their holds, so the collector may then
   delete their files (:mod:`sleeper.iceberg.retention`).

If nothing changed since the current snapshot, no snapshot is made and the new hold is released.

A reinitialisation of the table runs through :func:`reinitialise_with_view`: the view is withdrawn before any file is
deleted and published again once the table is empty (or repartitioned), so it never lists a deleted file.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from sleeper.core import (
    SLEEPER_TABLE_ID_KEY,
    SNAPSHOT_HOLD_KEY,
    IcebergIdentifier,
    iceberg_location,
    parse_iceberg_name,
)
from sleeper.core.properties import GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION, ICEBERG_NAME, TableProperties
from sleeper.iceberg.catalog import iceberg_path, load_catalog
from sleeper.iceberg.coverage import FilePlan, plan_files
from sleeper.iceberg.exceptions import (
    NotPublishableError,
    PublishAbandonedError,
    RulesRefusedError,
    ViewOwnershipError,
)
from sleeper.iceberg.holds import delete_hold, write_hold
from sleeper.iceberg.retention import PENDING_MAX_AGE, RetentionResult, apply_retention
from sleeper.iceberg.trim import trimmed_location, write_trimmed
from sleeper.iceberg.types import type_refusal, view_arrow_schema
from sleeper.iceberg.withdrawal import REINIT_REASON, rules_refusal, withdraw_views
from sleeper.io import read_file_metadata, resolve
from sleeper.statestore import SleeperRuntime, SleeperTable

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table as PyIcebergTable

__all__ = [
    "PublishResult",
    "iceberg_identifier",
    "processing_refusal",
    "publish_table",
    "reinitialise_with_view",
    "view_location",
]

_LOG = logging.getLogger(__name__)

_T = TypeVar("_T")

NAME_MAPPING_KEY = "schema.name-mapping.default"
"""The Iceberg table property mapping column names to field ids, for data files written without field ids."""

COMMIT_RETRIES_KEY = "commit.retry.num-retries"
"""pyiceberg retries a commit that lost a race by replaying it on the new snapshot. A publish's snapshot is the whole
table as one state read saw it, so replaying it over a newer publish could list a file beside its compaction's output:
the view allows no retries, and the publish that lost gives up (the next one starts from a fresh state)."""

METADATA_VERSIONS_KEPT = 10
"""How many earlier ``metadata.json`` files the view keeps (pyiceberg deletes older ones after each commit)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishResult:
    """What a publish did.

    Attributes:
        table_name: The Sleeper table.
        iceberg_name: The view, ``namespace.table``.
        changed: Whether a new snapshot was committed (False: the current one already showed this state).
        snapshot_id: The view's current snapshot (None for a table that has never had a file).
        metadata_location: The view's current ``metadata.json`` (what ``iceberg_scan`` reads).
        files: Data files in the current snapshot.
        whole_files: Of those, Sleeper's files registered as they are.
        trimmed_files: Of those, trimmed copies of files only part of whose rows belong to the table.
        added: Data files the new snapshot added.
        removed: Data files the new snapshot removed.
        rows: Rows in the current snapshot (from the files' footers).
        retention: The cleanup after the commit.
    """

    table_name: str
    iceberg_name: str
    changed: bool
    snapshot_id: int | None
    metadata_location: str
    files: int
    whole_files: int
    trimmed_files: int
    added: int
    removed: int
    rows: int
    retention: RetentionResult

    def describe(self) -> str:
        """One line for the log."""
        what = "published" if self.changed else "unchanged"
        return (
            f"table {self.table_name}: Iceberg view {self.iceberg_name} {what}: snapshot {self.snapshot_id}, "
            f"{self.files} files ({self.trimmed_files} trimmed), {self.rows} rows, +{self.added} -{self.removed} files"
        )


def iceberg_identifier(properties: TableProperties) -> IcebergIdentifier | None:
    """The view a table names in ``sleeper.table.iceberg.name``, or None if it names none.

    Raises:
        NotPublishableError: If the value breaks the naming rule (property validation refuses such a value).
    """
    value = properties.get(ICEBERG_NAME)
    if value is None or not value.strip():
        return None
    identifier = parse_iceberg_name(value.strip())
    if identifier is None:
        raise NotPublishableError(
            f"{ICEBERG_NAME.name}={value!r} is not a valid Iceberg name: expected namespace.table"
        )
    return identifier


def processing_refusal(properties: TableProperties) -> str | None:
    """Why a table's rows are not the union of its files' rows, or None if they are (an iterator, aggregations or
    filters: :func:`sleeper.iceberg.withdrawal.rules_refusal`)."""
    return rules_refusal(properties)


def _refused(instance: SleeperRuntime, table: SleeperTable, refusal: str, when: str = "") -> RulesRefusedError:
    """Withdraws whatever view the table has (it may have none) and returns the error refusing the publish."""
    withdrawal = withdraw_views(instance, table, refusal)
    withdrawn = (
        f"; its view was withdrawn ({', '.join(withdrawal.dropped) or 'none in the catalog'} dropped, "
        f"{withdrawal.released_holds} holds released)"
        if withdrawal.withdrew_anything
        else ""
    )
    return RulesRefusedError(
        f"table {_name(table)} cannot be published as an Iceberg view{when}: {refusal}{withdrawn}", withdrawal
    )


def _saved_refusal(instance: SleeperRuntime, table: SleeperTable) -> str | None:
    """Why the table's properties as saved now (not as the publish first read them) refuse a view, or None.

    Raises:
        PublishAbandonedError: If the table is no longer found under its name with its id (renamed or deleted).
    """
    from sleeper.core import TableNotFoundError

    try:
        saved = instance.table(_name(table))
    except TableNotFoundError:
        saved = None
    if saved is None or saved.table_id != table.table_id:
        raise PublishAbandonedError(
            f"table {_name(table)} was renamed or deleted during the Iceberg publish, so its rules could not be "
            "checked again; publish again"
        )
    return rules_refusal(saved.properties) or deletes_refusal(saved)


def deletes_refusal(table: SleeperTable) -> str | None:
    """Why a table's files do not hold its rows because of pending row deletes (a file a delete lists is still
    referenced: an Iceberg reader would see the deleted rows), or None. A purge clears it."""
    store = table.state_store
    store.refresh()
    if not store.holds_deleted_rows():
        return None
    return (
        "it has pending row deletes, whose rows its files still hold and an Iceberg reader would see; purge the table "
        f"first (sleeper purge {_name(table)})"
    )


def view_location(table: SleeperTable, identifier: IcebergIdentifier) -> str:
    """Where the view's metadata lives: ``<table data prefix>/iceberg/<namespace>.<table>`` (``s3://`` on AWS)."""
    return iceberg_path(f"{iceberg_location(table.data_prefix)}/{identifier}")


def publish_table(
    instance: SleeperRuntime,
    table: SleeperTable,
    *,
    clock: Callable[[], datetime] | None = None,
    catalog: Catalog | None = None,
) -> PublishResult:
    """Publishes the table's current state as a new snapshot of its Iceberg view (see the module docs).

    Args:
        instance: The instance the table is in.
        table: The table.
        clock: The current time (UTC); ``datetime.now`` if None.
        catalog: The catalog to use instead of the instance's (:func:`sleeper.iceberg.catalog.load_catalog`).

    Raises:
        NotPublishableError: If the table names no view, or has a value type the view cannot hold
            (:func:`sleeper.iceberg.types.type_refusal`).
        RulesRefusedError: If its rows are not its files' rows (an iterator, aggregations or filters, as the publish
            first read the properties or as they were saved when it came to commit); any view it had is withdrawn.
        ViewOwnershipError: If the named Iceberg table exists but is not this table's view.
        PublishAbandonedError: If the publish was too slow to be safe or lost a race; nothing became current.
        MissingExtraError / ImportError: If pyiceberg is not installed.
    """
    now = clock or (lambda: datetime.now(tz=UTC))
    properties = table.properties
    identifier = iceberg_identifier(properties)
    if identifier is None:
        raise NotPublishableError(
            f"table {_name(table)} names no Iceberg table: set {ICEBERG_NAME.name} to namespace.table first"
        )
    unsupported = type_refusal(table.schema)
    if unsupported is not None:
        raise NotPublishableError(f"table {_name(table)} cannot be published as an Iceberg view: {unsupported}")
    refusal = processing_refusal(properties) or _saved_refusal(instance, table)  # the table given may be cached
    if refusal is not None:
        raise _refused(instance, table, refusal)
    delay = timedelta(minutes=properties.get_int(GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION))
    options = instance.filesystem_options
    fs, _ = resolve(table.data_prefix, options)

    started = now()
    store = table.state_store
    store.refresh()
    entries = [entry for entry in store.files_state().files() if entry.references]
    tree = store.partition_tree()  # after the files: see sleeper.query.executor.plan_table_query
    hold_id = f"{started.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}"
    write_hold(fs, table.data_prefix, hold_id, table.table_id, started, (e.filename for e in entries))
    if now() - started >= delay / 2:
        delete_hold(fs, table.data_prefix, hold_id)
        raise PublishAbandonedError(
            f"table {_name(table)}: the Iceberg publish took longer than half the GC delay ({delay}) to hold its "
            "files, so the garbage collector might already have deleted one; publish again"
        )
    committed = False
    view: PyIcebergTable | None = None
    try:
        schema = table.schema
        plans = plan_files(entries, tree, lambda f: read_file_metadata(f, schema, options=options))
        catalog = catalog or load_catalog(instance.data_root, options)
        view = _open_view(catalog, table, identifier)
        current = _current_data_files(view)
        targets: dict[str, FilePlan] = {}
        for plan in plans:
            if plan.whole:
                targets[iceberg_path(plan.filename)] = plan
            else:
                location = trimmed_location(table.data_prefix, plan.filename, plan.partition_ids)
                path = iceberg_path(location)
                if path not in current:
                    write_trimmed(plan.filename, plan.partition_ids, tree, schema, location, options=options)
                targets[path] = plan
        added = [path for path in targets if path not in current]
        removed = [data_file for path, data_file in current.items() if path not in targets]
        changed = bool(added or removed) or view.current_snapshot() is None
        if changed:
            if now() - started >= PENDING_MAX_AGE / 2:
                raise PublishAbandonedError(
                    f"table {_name(table)}: the Iceberg publish ran for longer than {PENDING_MAX_AGE / 2}; "
                    "publish again"
                )
            refusal = _saved_refusal(instance, table)
            if refusal is not None:
                raise _refused(instance, table, refusal, " (its rules changed during the publish)")
            _commit(view, hold_id, table.table_id, added, removed)
            committed = True
            view.refresh()
        result = apply_retention(
            view,
            fs,
            table.data_prefix,
            f"{view.location().rstrip('/')}/metadata",
            now=now(),
            delay=delay,
        )
    except Exception as e:
        if not committed and not _landed(view, hold_id):
            delete_hold(fs, table.data_prefix, hold_id)
        if _is_commit_conflict(e):
            raise PublishAbandonedError(
                f"table {_name(table)}: another publish of {identifier} committed first; publish again"
            ) from e
        raise
    if not committed:
        delete_hold(fs, table.data_prefix, hold_id)
    else:
        try:
            refusal = _saved_refusal(instance, table)
        except PublishAbandonedError:
            withdraw_views(instance, table, "it was renamed or deleted while its view was published")
            raise
        if refusal is not None:
            raise _refused(instance, table, refusal, " (its rules changed during the publish)")
    snapshot = view.current_snapshot()
    summary = snapshot.summary if snapshot is not None else None
    rows = int(summary["total-records"] or 0) if summary is not None else 0
    return PublishResult(
        table_name=_name(table),
        iceberg_name=str(identifier),
        changed=committed,
        snapshot_id=None if snapshot is None else snapshot.snapshot_id,
        metadata_location=view.metadata_location,
        files=len(targets),
        whole_files=sum(1 for p in targets.values() if p.whole),
        trimmed_files=sum(1 for p in targets.values() if not p.whole),
        added=len(added) if committed else 0,
        removed=len(removed) if committed else 0,
        rows=rows,
        retention=result,
    )


def reinitialise_with_view(instance: SleeperRuntime, table: SleeperTable, reinitialise: Callable[[], _T]) -> _T:
    """Runs a reinitialisation of the table with its view withdrawn first, and published again after it if it was
    published and can be (a failed publish is logged: the next scheduled one tries again; the view stays withdrawn
    meanwhile, never listing a deleted file).

    Raises:
        WithdrawalError: If the view could not be withdrawn; the table is not reinitialised.
    """
    withdrawal = withdraw_views(instance, table, REINIT_REASON)
    result = reinitialise()
    withdrawal = withdrawal.merged(withdraw_views(instance, table, REINIT_REASON))
    if withdrawal.dropped and processing_refusal(table.properties) is None:
        try:
            if iceberg_identifier(table.properties) is not None:
                _LOG.info("%s", publish_table(instance, table).describe())
        except Exception as e:  # noqa: BLE001 - the view stays withdrawn; the schedule publishes it again
            _LOG.warning(
                "table %s: reinitialised with its Iceberg view withdrawn; publishing it again failed (the next "
                "scheduled publish tries again): %s: %s",
                _name(table),
                type(e).__name__,
                e,
            )
    return result


def _name(table: SleeperTable) -> str:
    return table.properties.get("sleeper.table.name") or table.table_id


def _open_view(catalog: Catalog, table: SleeperTable, identifier: IcebergIdentifier) -> PyIcebergTable:
    """The view, created (with its namespace) if missing; refused if the table exists and is not this table's."""
    from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError

    key = (identifier.namespace, identifier.name)
    try:
        view = catalog.load_table(key)
    except NoSuchTableError:
        catalog.create_namespace_if_not_exists(identifier.namespace)
        try:
            view = catalog.create_table(
                key,
                schema=view_arrow_schema(table.schema),
                location=view_location(table, identifier),
                properties={
                    SLEEPER_TABLE_ID_KEY: table.table_id,
                    "write.metadata.delete-after-commit.enabled": "true",
                    "write.metadata.previous-versions-max": str(METADATA_VERSIONS_KEPT),
                    COMMIT_RETRIES_KEY: "0",
                },
            )
        except TableAlreadyExistsError:
            view = catalog.load_table(key)
    owner = view.properties.get(SLEEPER_TABLE_ID_KEY)
    if owner != table.table_id:
        whose = f"the view of Sleeper table id {owner}" if owner else "not made by Sleeper"
        raise ViewOwnershipError(
            f"table {_name(table)}: the Iceberg table {identifier} exists and is {whose}; it is never overwritten. "
            f"Set {ICEBERG_NAME.name} to another name, or drop that Iceberg table"
        )
    _add_new_columns(view, table)
    missing: dict[str, str] = {}
    if view.metadata.name_mapping() is None:
        # Sleeper's files carry no Parquet field ids: readers match their columns to the view's by name.
        missing[NAME_MAPPING_KEY] = view.schema().name_mapping.model_dump_json()
    if view.properties.get(COMMIT_RETRIES_KEY) != "0":
        missing[COMMIT_RETRIES_KEY] = "0"
    if missing:
        with view.transaction() as transaction:
            transaction.set_properties(missing)
        view.refresh()
    return view


def _add_new_columns(view: PyIcebergTable, table: SleeperTable) -> None:
    """Adds to the view's schema the table's value fields it lacks (columns added to the table since the view was
    made), as optional columns: Iceberg reads them as nulls from files without them. pyiceberg extends the view's
    name mapping with them, so files holding them match them by name."""
    known = set(view.schema().column_names)
    wanted = view_arrow_schema(table.schema)
    if all(name in known for name in wanted.names):
        return
    with view.update_schema() as update:
        update.union_by_name(wanted)
    view.refresh()


def _current_data_files(view: PyIcebergTable) -> dict[str, DataFile]:
    """The data files of the view's current snapshot, by path."""
    snapshot = view.current_snapshot()
    if snapshot is None:
        return {}
    io = view.io
    out: dict[str, DataFile] = {}
    for manifest in snapshot.manifests(io):
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            out[entry.data_file.file_path] = entry.data_file
    return out


def _commit(view: PyIcebergTable, hold_id: str, table_id: str, added: list[str], removed: list[DataFile]) -> None:
    """Commits one snapshot removing and adding data files; new files are registered from their footers."""
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    transaction = view.transaction()
    properties = {SNAPSHOT_HOLD_KEY: hold_id, SLEEPER_TABLE_ID_KEY: table_id}
    with transaction.update_snapshot(snapshot_properties=properties).overwrite() as overwrite:
        for data_file in removed:
            overwrite.delete_data_file(data_file)
        for path in added:
            overwrite.append_data_file(parquet_file_to_data_file(view.io, transaction.table_metadata, path))
    transaction.commit_transaction()


def _is_commit_conflict(error: Exception) -> bool:
    try:
        from pyiceberg.exceptions import CommitFailedException, ValidationException
    except ImportError:
        return False
    return isinstance(error, CommitFailedException | ValidationException)


def _landed(view: PyIcebergTable | None, hold_id: str) -> bool:
    """Whether a snapshot naming the hold is in the view after all (a commit reported failed that landed, as when a
    lost response is retried): its hold must then stay. Unknown counts as landed, keeping the hold (a hold no
    snapshot names is released after a day)."""
    if view is None:
        return False
    try:
        view.refresh()
    except Exception:  # noqa: BLE001 - cannot tell: keep the hold
        return True
    return any(s.summary is not None and s.summary[SNAPSHOT_HOLD_KEY] == hold_id for s in view.metadata.snapshots)
