"""Ports of the Iceberg publisher: the table published and the instance it is in."""

from __future__ import annotations

from typing import Protocol

from sleeper.io.filesystem import FileSystemOptions
from sleeper.statestore.tables import SleeperInstance, SleeperTable

__all__ = ["IcebergRuntime", "IcebergTable"]

IcebergTable = SleeperTable
"""A table published as an Iceberg view."""


class IcebergRuntime(SleeperInstance, Protocol):
    """What publishing needs of an instance beyond tables by id: how to reach its files and where they are. The
    catalog follows from where the data lives (:mod:`sleeper.iceberg.catalog`)."""

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How to reach the data files (None for the defaults: a local instance)."""
        ...

    @property
    def data_root(self) -> str:
        """The URI every table's data prefix is under (``file://`` locally, ``s3a://`` on AWS)."""
        ...
