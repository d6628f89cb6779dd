"""What to tell a user who sets a property that does not simply take effect: one the port does not use, or one that
takes effect only when the instance is deployed again.

Both runtimes' ``instance properties --set/--unset`` and ``table properties --set/--unset`` print these lines, from
the definitions alone (``not_used`` and ``redeploy`` on :class:`~sleeper.core.properties.PropertyDefinition`).
"""

from __future__ import annotations

from collections.abc import Iterable

from sleeper.core.properties.definitions import PropertyIndex

__all__ = ["DEPLOY_COMMAND", "property_notices"]

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
