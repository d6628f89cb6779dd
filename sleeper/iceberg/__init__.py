"""Tables every engine can read (beyond Sleeper): a table whose rows are exactly its files' rows is
published as an Apache Iceberg view over its own Parquet files, which DuckDB, Spark, Athena and pyiceberg read with
no connector. See docs/usage/iceberg.md.

Importing this package does not import pyiceberg; publishing does (the ``iceberg`` extra).
"""

from __future__ import annotations

from sleeper.iceberg.coverage import FilePlan, plan_files
from sleeper.iceberg.exceptions import (
    IcebergPublishError,
    NotPublishableError,
    PublishAbandonedError,
    ViewOwnershipError,
)

__all__ = [
    "FilePlan",
    "IcebergPublishError",
    "NotPublishableError",
    "PublishAbandonedError",
    "ViewOwnershipError",
    "plan_files",
]
