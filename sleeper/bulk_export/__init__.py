"""Bulk export (Sleeper's ``java/bulk-export``): every row of a table written out as one sorted Parquet file per
leaf partition, read through the merge of :mod:`sleeper.io` with the table's iterators.

- :mod:`~sleeper.bulk_export.model`: the bulk export query and leaf partition export, in Sleeper's JSON;
- :mod:`~sleeper.bulk_export.planner`: one leaf export per leaf holding files;
- :mod:`~sleeper.bulk_export.executor`: one leaf's files merged, processed and written;
- :mod:`~sleeper.bulk_export.entry`: the queues' entries, tracked in the query tracker;
- :mod:`~sleeper.bulk_export.local`: a whole export run in this process (``sleeper export TABLE DIR``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.bulk_export.exceptions import BulkExportError, BulkExportQueryError
from sleeper.bulk_export.model import BulkExportQuery, LeafPartitionExport
from sleeper.core import lazy_face

__all__ = ["BulkExportError", "BulkExportQuery", "BulkExportQueryError", "LeafPartitionExport"]

if TYPE_CHECKING:
    from sleeper.bulk_export.local import export_table as export_table
    from sleeper.bulk_export.model import read_bulk_export_query as read_bulk_export_query
    from sleeper.bulk_export.task import JOBS_PER_TASK as JOBS_PER_TASK
    from sleeper.bulk_export.task import bulk_export_loop_settings as bulk_export_loop_settings
    from sleeper.bulk_export.task_creation import create_bulk_export_tasks as create_bulk_export_tasks

__getattr__, __dir__ = lazy_face(__name__, __file__)
