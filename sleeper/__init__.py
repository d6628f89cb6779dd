"""Sleeper: a serverless, cloud-native log-structured merge tree key-value store, in Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from sleeper.runtime.local.instance import LocalInstance

__all__ = ["local"]


def local(directory: str | Path) -> LocalInstance:
    """Opens (or creates) the embedded local instance held in a directory.

    Args:
        directory: The instance directory.

    Returns:
        The local instance.
    """
    from sleeper.runtime.local.instance import LocalInstance

    return LocalInstance.open_or_create(directory)
