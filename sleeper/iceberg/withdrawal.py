"""Withdrawing a table's Iceberg view: the one place that takes a view away when it may no longer show the table's
rows, for every runtime and every caller.

A view lists the table's files as they are. It shows the table's rows only while the table has no iterator,
aggregations or filters (:func:`sleeper.iceberg.publisher.processing_refusal`), and only while the files it lists
exist. So a view is withdrawn:

* when a table's properties are saved with such rules (:func:`save_table_properties`, which both runtimes'
  ``update_table_properties`` call): the view is withdrawn *before* the properties are saved, so no moment exists
  when the rules are saved and the view still serves rows they would hide. If the withdrawal fails, nothing is
  saved. It is withdrawn again just after the save, which catches a publish that read the properties before the save
  and committed in between (a publish also checks the saved properties again after committing, see
  :func:`sleeper.iceberg.publisher.publish_table`);
* when a publish, scheduled or explicit, finds the table has such rules (defense in depth): it withdraws whatever is
  left and reports it, and the schedule does not fail for ever on that table;
* when a table is reinitialised (:func:`sleeper.iceberg.publisher.reinitialise_with_view`): the view is withdrawn
  before any file is deleted and, if the table is publishable, published again (empty) once the reinitialisation is
  done, so the view never lists a deleted file.

Withdrawing a view (:func:`withdraw_views`), in an order that cuts readers off before letting files go:

1. every Iceberg table in the catalog that is this table's view (it carries the table's id) is dropped: the name the
   table gives, the one it gave before an edit, and any other whose metadata is under the table's Iceberg
   directory;
2. every file under ``<table data prefix>/iceberg/`` other than holds is deleted: the views' metadata (so a reader
   that names a ``metadata.json`` directly, as DuckDB's ``iceberg_scan`` does, fails too) and the trimmed copies;
3. the table's holds are released, so the garbage collector may delete the files the view held.

A table with nothing under its Iceberg directory has never been published there: the catalog is not consulted, so a
table that never named a view costs one listing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from sleeper.core import HOLDS_DIRECTORY, SLEEPER_TABLE_ID_KEY, IcebergIdentifier, iceberg_location, parse_iceberg_name
from sleeper.core.properties import (
    AGGREGATION_CONFIG,
    FILTERING_CONFIG,
    ICEBERG_NAME,
    ITERATOR_CLASS_NAME,
    UPSERT,
    TableProperties,
)
from sleeper.iceberg.exceptions import Withdrawal, WithdrawalError
from sleeper.io import delete_in_table, list_files, resolve
from sleeper.iterators import table_rules_refusal
from sleeper.statestore import SleeperRuntime, SleeperTable

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

__all__ = [
    "REINIT_REASON",
    "RULE_PROPERTIES",
    "Withdrawal",
    "rules_refusal",
    "save_table_properties",
    "view_notice",
    "withdraw_views",
]

_LOG = logging.getLogger(__name__)

RULE_PROPERTIES = (ITERATOR_CLASS_NAME, AGGREGATION_CONFIG, FILTERING_CONFIG, UPSERT)
"""The table properties that change a table's rows when read: a table setting any of them has no view."""

REINIT_REASON = "the table is being reinitialised, which deletes every file the view lists"
"""Why a reinitialisation withdraws the view (:func:`sleeper.iceberg.publisher.reinitialise_with_view`)."""


def rules_refusal(properties: TableProperties) -> str | None:
    """Why a table with these properties may have no view (it sets an iterator, aggregations, filters or upsert), or
    None (:func:`sleeper.iterators.pipeline.table_rules_refusal`)."""
    return table_rules_refusal(properties, "an Iceberg reader")


def _name(table: SleeperTable) -> str:
    return table.properties.get("sleeper.table.name") or table.table_id


def _named(properties: Iterable[TableProperties]) -> list[IcebergIdentifier]:
    out: list[IcebergIdentifier] = []
    for props in properties:
        value = (props.get(ICEBERG_NAME) or "").strip()
        identifier = parse_iceberg_name(value) if value else None
        if identifier is not None and identifier not in out:
            out.append(identifier)
    return out


def withdraw_views(
    instance: SleeperRuntime,
    table: SleeperTable,
    reason: str,
    *,
    also_named: Iterable[TableProperties] = (),
    catalog: Catalog | None = None,
) -> Withdrawal:
    """Withdraws every view of the table (see the module docs); nothing to withdraw is not an error.

    Args:
        instance: The instance the table is in.
        table: The table.
        reason: Why, for the result and the log.
        also_named: Other properties of the table whose ``sleeper.table.iceberg.name`` may name a view (the
            properties an edit replaces).
        catalog: The catalog to use instead of the instance's.

    Raises:
        WithdrawalError: If the view could not be withdrawn (some of it may have been).
    """
    options = instance.filesystem_options
    prefix = table.data_prefix
    try:
        fs, directory = resolve(iceberg_location(prefix), options)
        files = [str(info.path) for info in list_files(fs, directory)]
    except OSError as e:
        raise WithdrawalError(
            f"table {_name(table)}: could not list its Iceberg directory to withdraw its view: {type(e).__name__}: {e}"
        ) from e
    if not files:
        return Withdrawal(table_name=_name(table), reason=reason)
    holds_dir = f"{directory.rstrip('/')}/{HOLDS_DIRECTORY.rsplit('/', 1)[-1]}/"
    holds = [f for f in files if f.startswith(holds_dir)]
    others = [f for f in files if not f.startswith(holds_dir)]
    candidates = _named([table.properties, *also_named])
    for path in others:
        first = path[len(directory.rstrip("/")) + 1 :].split("/", 1)[0]
        identifier = parse_iceberg_name(first)
        if identifier is not None and identifier not in candidates:
            candidates.append(identifier)
    try:
        dropped = _drop_owned(instance, table, candidates, catalog) if candidates and others else ()
        for path in others:
            delete_in_table(fs, path, prefix)
        for path in holds:
            delete_in_table(fs, path, prefix)
    except WithdrawalError:
        raise
    except Exception as e:
        raise WithdrawalError(
            f"table {_name(table)}: could not withdraw its Iceberg view ({reason}): {type(e).__name__}: {e}"
        ) from e
    withdrawal = Withdrawal(
        table_name=_name(table),
        reason=reason,
        dropped=dropped,
        deleted_files=len(others),
        released_holds=len(holds),
    )
    if withdrawal.withdrew_anything:
        _LOG.warning("%s", withdrawal.describe())
    return withdrawal


def _drop_owned(
    instance: SleeperRuntime,
    table: SleeperTable,
    identifiers: list[IcebergIdentifier],
    catalog: Catalog | None,
) -> tuple[str, ...]:
    """Drops each named Iceberg table that is this table's view; leaves any other."""
    from sleeper.core import MissingExtraError

    try:
        from pyiceberg.exceptions import NoSuchTableError

        from sleeper.iceberg.catalog import load_catalog

        catalog = catalog or load_catalog(instance.data_root, instance.filesystem_options)
    except (ImportError, MissingExtraError) as e:
        raise WithdrawalError(
            f"table {_name(table)} has published an Iceberg view, and withdrawing it needs the 'iceberg' extra "
            f"(pip install 'sleeper-lsm[iceberg]'): {e}"
        ) from e
    dropped: list[str] = []
    for identifier in identifiers:
        key = (identifier.namespace, identifier.name)
        try:
            view = catalog.load_table(key)
        except NoSuchTableError:
            continue
        if view.properties.get(SLEEPER_TABLE_ID_KEY) != table.table_id:
            continue
        try:
            catalog.drop_table(key)
        except NoSuchTableError:
            continue
        dropped.append(str(identifier))
    return tuple(dropped)


def save_table_properties(
    instance: SleeperRuntime,
    table: SleeperTable,
    updated: TableProperties,
    save: Callable[[], None],
) -> Withdrawal | None:
    """Saves a table's edited properties, withdrawing its view first if the edit leaves the table with rules that
    change its rows (see the module docs): both runtimes' ``update_table_properties`` call this.

    Args:
        instance: The instance the table is in.
        table: The table, with the properties before the edit.
        updated: The properties after the edit, already validated.
        save: Saves ``updated``.

    Returns:
        The withdrawal, or None if the table has no rules after the edit (nothing is withdrawn).

    Raises:
        WithdrawalError: If the view could not be withdrawn; nothing is saved.
    """
    refusal = rules_refusal(updated)
    if refusal is None:
        save()
        return None
    before = withdraw_views(instance, table, refusal, also_named=[updated])
    save()
    after = withdraw_views(instance, table, refusal, also_named=[updated])
    return before.merged(after)


def view_notice(before: TableProperties, after: TableProperties) -> str | None:
    """The notice an edit of a table's properties gives about its view: None unless, after the edit, the table names
    a view (or named one before) and has rules that change its rows, and the edit changed those rules or the name."""
    refusal = rules_refusal(after)
    names = _named([after, before])
    if refusal is None or not names:
        return None
    watched = [*(p.name for p in RULE_PROPERTIES), ICEBERG_NAME.name]
    if all(before.get(name) == after.get(name) for name in watched):
        return None
    views = ", ".join(str(n) for n in names)
    return (
        f"Iceberg view {views}: withdrawn (if it was published: dropped from the catalog, its metadata deleted and "
        "its holds released, so the garbage collector may delete the files it listed), and never published while "
        f"the table sets {', '.join(p.name for p in RULE_PROPERTIES if after.is_set(p))}, which an Iceberg reader "
        "would not apply"
    )
