"""Sleeper's own Python client, on this package: ``from sleeper.client import SleeperClient``.

The constructor and methods of gchq/sleeper's ``SleeperClient`` with the same arguments and return shapes, so a script
written for Sleeper's client runs unchanged against an instance of this package on AWS or on the emulated instance
(see docs/usage/client.md). The request shapes its ``sleeper.query`` and ``sleeper.bulk_export`` modules define are
here as ``sleeper.client.query``.
"""

from __future__ import annotations

from sleeper.client.client import BULK_IMPORT_PLATFORMS, DEFAULT_MAX_WAIT_TIME, BatchWriter, SleeperClient
from sleeper.client.errors import (
    ClientArgumentError,
    InstanceNotFoundError,
    NotYetAvailableError,
    QueryFailedError,
    QueryTimeoutError,
    SleeperClientError,
)
from sleeper.client.query import BulkExportQuery, Query, Range, Region

__all__ = [
    "BULK_IMPORT_PLATFORMS",
    "DEFAULT_MAX_WAIT_TIME",
    "BatchWriter",
    "BulkExportQuery",
    "ClientArgumentError",
    "InstanceNotFoundError",
    "NotYetAvailableError",
    "Query",
    "QueryFailedError",
    "QueryTimeoutError",
    "Range",
    "Region",
    "SleeperClient",
    "SleeperClientError",
]
