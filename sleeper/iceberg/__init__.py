"""Tables every engine can read (beyond Sleeper): a table whose rows are exactly its files' rows is
published as an Apache Iceberg view over its own Parquet files, which DuckDB, Spark, Athena and pyiceberg read with
no connector. See docs/usage/iceberg.md.

Importing this package does not import pyiceberg; publishing does (the ``iceberg`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
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

if TYPE_CHECKING:
    from sleeper.iceberg.exceptions import RulesRefusedError as RulesRefusedError
    from sleeper.iceberg.exceptions import WithdrawalError as WithdrawalError
    from sleeper.iceberg.publisher import PublishResult as PublishResult
    from sleeper.iceberg.publisher import publish_table as publish_table
    from sleeper.iceberg.publisher import reinitialise_with_view as reinitialise_with_view
    from sleeper.iceberg.types import type_refusal as type_refusal
    from sleeper.iceberg.withdrawal import save_table_properties as save_table_properties
    from sleeper.iceberg.withdrawal import view_notice as view_notice
    from sleeper.iceberg.withdrawal import withdraw_views as withdraw_views

__getattr__, __dir__ = lazy_face(__name__, __file__)
