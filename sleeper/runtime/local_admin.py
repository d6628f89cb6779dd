"""Operator actions on a local instance (spec 10): instance properties, pause/resume, reinitialise tables,
split point estimates, dead-letter retries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sleeper.core.exceptions import SleeperError
from sleeper.core.partition import partitions_from_split_points
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.properties import validate_instance_update
from sleeper.core.schema import KeyValue
from sleeper.io.filesystem import filesystem_path
from sleeper.runtime.local import LOCAL_QUEUES, LocalInstance, LocalTable
from sleeper.sketches import Sketches, sketches_path

__all__ = [
    "PAUSED_FILE",
    "PropertyChange",
    "estimate_split_points",
    "is_paused",
    "pause",
    "reinitialise_table",
    "resume",
    "retry_dead_letters",
    "update_instance_properties",
]

PAUSED_FILE = "scheduler.paused"
"""The file whose presence in the instance directory pauses the scheduler (as disabling Sleeper's rules does)."""


@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One property's value before and after an edit (None = unset)."""

    name: str
    before: str | None
    after: str | None


def update_instance_properties(
    instance: LocalInstance, values: Mapping[str, str], unset: Sequence[str] = (), *, dry_run: bool = False
) -> list[PropertyChange]:
    """Validates and saves instance property edits; returns the changes (the diff).

    Raises:
        PropertyError: If a value is invalid or a property may not change (nothing is saved).
        SleeperError: If a property is one only a deployment sets.
    """
    old = instance.properties
    updated = InstanceProperties(dict(old.items()))
    for name in [*values, *unset]:
        definition = updated.index.get(name)
        if definition is not None and definition.set_by_cdk:
            raise SleeperError(f"{name} is set by the deployment (cdk deploy) and cannot be edited")
    for name, value in values.items():
        updated.set(name, value)
    for name in unset:
        updated.unset(name)
    updated.validate_all()
    validate_instance_update(old, updated)
    before, after = old.to_dict(), updated.to_dict()
    changes = [
        PropertyChange(name, before.get(name), after.get(name))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]
    if changes and not dry_run:
        instance.save_instance_properties(updated)
    return changes


def is_paused(instance: LocalInstance) -> bool:
    """Whether the scheduler is paused."""
    return (instance.directory / PAUSED_FILE).exists()


def pause(instance: LocalInstance) -> None:
    """Pauses the scheduler: no periodic operation is triggered until resumed (queued work still runs).

    Raises:
        SleeperError: If it is already paused.
    """
    if is_paused(instance):
        raise SleeperError("the system is already paused")
    (instance.directory / PAUSED_FILE).write_text("paused\n")


def resume(instance: LocalInstance) -> None:
    """Resumes the scheduler.

    Raises:
        SleeperError: If it is not paused.
    """
    if not is_paused(instance):
        raise SleeperError("the system is not paused")
    (instance.directory / PAUSED_FILE).unlink()


def reinitialise_table(table: LocalTable, split_points: Sequence[KeyValue] | None = None) -> LocalTable:
    """Empties a table: stops tracking every file and deletes the files; with split points, repartitions it too.

    Without split points the partition tree is kept. The split points are validated before anything changes.
    """
    partitions = partitions_from_split_points(table.schema, list(split_points)) if split_points is not None else None
    files = [f.filename for f in table.files()]
    table.state_store.clear_files()
    filesystem = table.instance.filesystem
    for filename in files:
        for path in (filesystem_path(filename), filesystem_path(sketches_path(filename))):
            if filesystem.get_file_info(path).type.name != "NotFound":
                filesystem.delete_file(path)
    if partitions is not None:
        table.state_store.initialise(partitions)
    return table


def estimate_split_points(table: LocalTable, partitions: int) -> list[KeyValue]:
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
    field = table.schema.row_key_fields[0].name
    ranks = [i / partitions for i in range(1, partitions)]
    points: list[KeyValue] = []
    for value in merged.quantiles(field, ranks):
        if not points or value != points[-1]:
            points.append(value)
    return points


def retry_dead_letters(instance: LocalInstance, queue_names: Sequence[str] | None = None) -> dict[str, int]:
    """Moves the messages of each dead-letter queue back to its queue; returns how many per queue (only non-zero).

    Raises:
        SleeperError: If a queue name is unknown.
    """
    names = list(queue_names) if queue_names else list(LOCAL_QUEUES)
    moved: dict[str, int] = {}
    for name in names:
        count = instance.dead_letter_queue(name).redrive_dead_letters(name)
        if count:
            moved[name] = count
    return moved
