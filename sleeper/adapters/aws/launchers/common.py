"""What the launchers share: an instance property a stack sets, or a clear error saying it is not set."""

from __future__ import annotations

from sleeper.core import PropertyError
from sleeper.core.properties import InstanceProperties, PropertyDefinition

__all__ = ["required_property"]


def required_property(properties: InstanceProperties, prop: PropertyDefinition) -> str:
    """The value of a property a stack sets.

    Raises:
        PropertyError: If it is not set (the stack that sets it has not been deployed).
    """
    value = properties.get(prop)
    if not value:
        raise PropertyError(f"{prop.name} is not set: has the stack that sets it been deployed?")
    return value
