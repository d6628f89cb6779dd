"""What to tell a user who changes properties that do not simply take effect: one the port does not use, one that
takes effect only when the instance is deployed again, and on AWS when processes already running see the change.

Both runtimes' ``instance properties --set/--unset`` and ``table properties --set/--unset`` print these lines:
:func:`property_notices` from the definitions alone (``not_used`` and ``redeploy`` on
:class:`~sleeper.core.properties.PropertyDefinition`), :func:`change_notice` from the instance properties.
"""

from __future__ import annotations

from collections.abc import Iterable

from sleeper.core.properties.definitions import PropertyIndex
from sleeper.core.properties.instance_common import FORCE_RELOAD_PROPERTIES
from sleeper.core.properties.properties import InstanceProperties

__all__ = ["DEPLOY_COMMAND", "TABLE_CACHE_SECONDS", "change_notice", "property_notices"]

TABLE_CACHE_SECONDS = 60
"""How long a process on AWS reuses a table it has loaded (its properties and state store) before it reads the
table's properties again: a table looked up by name is read again at every lookup, one looked up by id (as queued
work names it) once its copy is this old. It is the default ``table_cache_seconds`` of
:class:`sleeper.runtime.aws.instance.AwsInstance`, and the bound :func:`change_notice` states."""

DEPLOY_COMMAND = "sleeper deploy"
"""The command that deploys an instance again with its saved properties."""


def property_notices(index: PropertyIndex, names: Iterable[str], *, local: bool) -> list[str]:
    """One line per changed property that does not simply take effect, in the order given.

    Args:
        index: The definitions of the properties' kind (instance or table).
        names: The properties set or unset. Unknown names are skipped (setting them is refused elsewhere).
        local: Whether the instance is a local one, which nothing deploys.

    Returns:
        ``warning: ...`` for a property this port does not use (its value is kept but does nothing), ``note: ...``
        for one that takes effect only when the instance is deployed again.
    """
    lines: list[str] = []
    redeploy: list[str] = []
    for name in names:
        definition = index.get(name)
        if definition is None:
            continue
        if definition.not_used is not None:
            lines.append(
                f"warning: {name} is not used by this port ({definition.not_used}); it is saved but does nothing"
            )
        elif definition.redeploy:
            redeploy.append(name)
    if redeploy:
        what = ", ".join(redeploy)
        verb = "takes" if len(redeploy) == 1 else "take"
        if local:
            lines.append(f"note: on AWS, {what} {verb} effect only when the instance is deployed ({DEPLOY_COMMAND})")
        else:
            lines.append(
                f"note: {what} {verb} effect when the instance is deployed again: set the same value in the "
                f"configuration's instance.properties and run {DEPLOY_COMMAND} DIR (a deployment writes that file "
                "to the config bucket)"
            )
    return lines


def change_notice(instance_properties: InstanceProperties, *, table: bool, local: bool) -> str | None:
    """When processes already running on AWS see a change of properties, as one ``note: ...`` line.

    On AWS, a Lambda function stays warm between invocations and a task (compaction, ingest, bulk export) runs for
    many jobs, each keeping what it has read. A table's properties are read again within
    :data:`TABLE_CACHE_SECONDS`. The instance properties (among them the ``sleeper.default.table.…`` defaults that a
    table's unset properties fall back to) are kept until the process starts again, unless
    ``sleeper.properties.force.reload`` is true, when a Lambda function reads them again at every invocation. Work
    already under way finishes with the properties it started with.

    Args:
        instance_properties: The instance's properties after the change (``sleeper.properties.force.reload`` is
            read from them).
        table: True for a change of a table's properties, False for the instance's.
        local: Whether the instance is a local one, whose every command reads the saved properties: nothing stays
            running, so there is nothing to say.

    Returns:
        The line, or None for a local instance.
    """
    if local:
        return None
    if table:
        return (
            f"note: on AWS, running processes use the new table properties within {TABLE_CACHE_SECONDS} s (each reads "
            f"a table's properties again once its copy is {TABLE_CACHE_SECONDS} s old); work already under way "
            "finishes with the properties it started with"
        )
    if instance_properties.get_bool(FORCE_RELOAD_PROPERTIES):
        return (
            f"note: on AWS, Lambda functions read the instance properties again at every invocation "
            f"({FORCE_RELOAD_PROPERTIES.name}=true); a running task keeps the ones it started with until it next starts"
        )
    return (
        "note: on AWS, running processes keep the instance properties they started with, including the "
        "sleeper.default.table.* defaults of tables: a Lambda function sees this change when it next starts cold, a "
        f"task when it next starts; set {FORCE_RELOAD_PROPERTIES.name}=true for functions to read them at every "
        "invocation"
    )
