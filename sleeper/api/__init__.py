"""The user API of a Sleeper table: :class:`~sleeper.api.table.Table` (ingest, scan, properties, metadata, time
travel), :class:`~sleeper.api.scan.Scan` (a planned read, to Arrow, pandas or a file) and the instance's verbs.

This package is what a user of ``sleeper.connect(...)`` is handed. It builds only on the core, the storage and the
features: the runtimes (``sleeper.runtime``) compose it with their own plumbing, never the reverse.
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.api.deletes import delete as delete
    from sleeper.api.deletes import purge as purge
    from sleeper.api.html_report import render_html_report as render_html_report
    from sleeper.api.ingest_job import STAGING_PREFIX as STAGING_PREFIX
    from sleeper.api.ingest_job import IngestJobError as IngestJobError
    from sleeper.api.ingest_job import send_ingest_job as send_ingest_job
    from sleeper.api.instance import AWS_PREFIX as AWS_PREFIX
    from sleeper.api.instance import BulkImportReport as BulkImportReport
    from sleeper.api.instance import IngestJobReport as IngestJobReport
    from sleeper.api.instance import Instance as Instance
    from sleeper.api.instance import LocalOnlyError as LocalOnlyError
    from sleeper.api.instance import OperationReport as OperationReport
    from sleeper.api.instance import UnknownPlatformError as UnknownPlatformError
    from sleeper.api.instance import bulk_import_platform_queue as bulk_import_platform_queue
    from sleeper.api.instance import job_table_name as job_table_name
    from sleeper.api.queued_scan import QueuedScan as QueuedScan
    from sleeper.api.reports import TimeRange as TimeRange
    from sleeper.api.reports import compaction_summary as compaction_summary
    from sleeper.api.reports import ingest_summary as ingest_summary
    from sleeper.api.reports import query_row as query_row
    from sleeper.api.reports import queues_report as queues_report
    from sleeper.api.reports import tracker_rows as tracker_rows
    from sleeper.api.schema_change import add_column as add_column
    from sleeper.api.schema_change import parse_field_type as parse_field_type
    from sleeper.api.schema_change import truncate as truncate
    from sleeper.api.sql import SqlError as SqlError
    from sleeper.api.table import Table as Table
    from sleeper.api.table import TableInstance as TableInstance
    from sleeper.api.table import check_table_name as check_table_name
    from sleeper.api.table import create_table as create_table
    from sleeper.api.table import edited_properties as edited_properties
    from sleeper.api.table import has_dynamodb_transaction_log as has_dynamodb_transaction_log
    from sleeper.api.upserts import UpsertNotEnabledError as UpsertNotEnabledError


__getattr__, __dir__ = lazy_face(__name__, __file__)
