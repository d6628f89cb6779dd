"""Sleeper: a serverless, cloud-native log-structured merge tree key-value store, in Python.

``sleeper.connect(location)`` opens an instance (a local directory, or ``aws:ID``) and ``sleeper.create_instance(dir)``
creates a local one; tables are read and written with Arrow (``table.ingest(...)``, ``table.scan(...).to_arrow()``).
Schemas are built from :class:`Field` objects or from an Arrow schema (``Schema.from_arrow``). Importing ``sleeper``
loads only the schema types: the runtimes, pyarrow and AWS are imported when first used.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from sleeper.core import Field, ListType, MapType, PrimitiveType, Schema, TimestampType, ValueType

if TYPE_CHECKING:
    from pathlib import Path

    from sleeper.api import Instance

__all__ = [
    "Field",
    "ListType",
    "MapType",
    "PrimitiveType",
    "Schema",
    "TimestampType",
    "ValueType",
    "connect",
    "create_instance",
    "local",
]


def connect(location: str | Path, *, create: bool = False) -> Instance:
    """Opens an instance: a local instance directory, or ``aws:<instance id>`` (never creates one unless
    ``create=True``; see :func:`sleeper.runtime.connection.connect`).

    Raises:
        InstanceNotFoundError: If there is no instance there, naming the location and how to create one.
    """
    from sleeper.runtime import connect as _connect

    return _connect(location, create=create)


def create_instance(directory: str | Path, *, instance_id: str | None = None) -> Instance:
    """Creates a local instance in a directory (see :func:`sleeper.runtime.connection.create_instance`).

    Raises:
        InstanceAlreadyExistsError: If the directory already holds an instance.
    """
    from sleeper.runtime import create_instance as _create_instance

    return _create_instance(directory, instance_id=instance_id)


def local(directory: str | Path) -> Instance:
    """Deprecated: opens the local instance in a directory, creating one if there is none (with a warning).

    Use :func:`connect` to open an instance (it never creates one) and :func:`create_instance` to create one.
    """
    from sleeper.runtime.local import LocalApi, LocalInstance

    warnings.warn(
        "sleeper.local() is deprecated: it creates an instance where there is none; use sleeper.connect(dir) to open "
        "one and sleeper.create_instance(dir) to create one",
        FutureWarning,
        stacklevel=2,
    )
    return LocalApi(LocalInstance.open_or_create(directory))
