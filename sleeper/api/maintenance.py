"""Emptying a table and choosing its split points: the table maintenance the front door
(:meth:`sleeper.api.instance.Instance.reinitialise_table`, :meth:`~sleeper.api.instance.Instance.estimate_split_points`)
and the tests of both runtimes call."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sleeper.core import KeyValue, Schema, SleeperError, partitions_from_split_points
from sleeper.io import Sketches, UnsafeDeleteError, delete_in_table, filesystem_path, sketches_path

if TYPE_CHECKING:
    from sleeper.api.table import Table
    from sleeper.statestore import StateStore

__all__ = ["estimate_split_points", "reinitialise_table"]

_LOG = logging.getLogger(__name__)


class _AdministeredTable(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> Schema: ...

    @property
    def data_prefix(self) -> str: ...

    @property
    def state_store(self) -> StateStore: ...

    @property
    def instance(self) -> Any: ...


_T = TypeVar("_T", bound=_AdministeredTable)


def reinitialise_table(table: _T, split_points: Sequence[KeyValue] | None = None) -> _T:
    """Empties a table: stops tracking every file and deletes the files; with split points, repartitions it too.

    Without split points the partition tree is kept. The split points are validated before anything changes. With
    them the new partitions are committed before the files are cleared, so a write racing the reinitialisation is
    either cleared with the rest of the table or refused, never left on partitions that no longer exist (see
    :meth:`sleeper.statestore.store.StateStore.reinitialise`). Only files under the table's data prefix are deleted
    (through :func:`sleeper.io.filesystem.delete_in_table`): a tracked file anywhere else is logged and left.
    """
    partitions = partitions_from_split_points(table.schema, list(split_points)) if split_points is not None else None
    store = table.state_store
    store.refresh()
    files = [f.filename for f in store.files()]
    store.reinitialise(partitions)
    filesystem = table.instance.filesystem
    for filename in files:
        for location in (filename, sketches_path(filename)):
            try:
                delete_in_table(filesystem, filesystem_path(location), table.data_prefix)
            except UnsafeDeleteError as e:
                _LOG.warning("Table %s reinitialised without deleting a file it tracked: %s", table.name, e)
    return table


def estimate_split_points(table: Table[Any], partitions: int) -> list[KeyValue]:
    """Split points that cut the table's rows into ``partitions`` parts of about equal size, from the files' sketches.

    Raises:
        SleeperError: If the table has no files, or fewer than 2 partitions are asked for.
    """
    if partitions < 2:
        raise SleeperError("estimate split points for at least 2 partitions")
    filenames = sorted({r.filename for r in table.file_references()})
    if not filenames:
        raise SleeperError(f"table {table.name} has no files to estimate split points from")
    filesystem = table.instance.filesystem
    merged = Sketches.merge(
        Sketches.read(filesystem, filesystem_path(sketches_path(name)), table.schema) for name in filenames
    )
    key = table.schema.row_key_fields[0].name
    ranks = [i / partitions for i in range(1, partitions)]
    points: list[KeyValue] = []
    for value in merged.quantiles(key, ranks):
        if not points or value != points[-1]:
            points.append(value)
    return points
