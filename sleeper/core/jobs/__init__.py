"""Job and message models with Sleeper's wire JSON: ingest, bulk import, compaction, partition splitting and state
store commit requests. Readers raise ``MessageError`` subclasses naming the JSON path of a bad value."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.core.jobs.bulk_import import BulkImportJob as BulkImportJob
    from sleeper.core.jobs.bulk_import_algorithms import DEFAULT_CLASS_NAME as DEFAULT_CLASS_NAME
    from sleeper.core.jobs.bulk_import_algorithms import BulkImportAlgorithm as BulkImportAlgorithm
    from sleeper.core.jobs.bulk_import_algorithms import (
        UnknownBulkImportAlgorithmError as UnknownBulkImportAlgorithmError,
    )
    from sleeper.core.jobs.bulk_import_algorithms import bulk_import_algorithm as bulk_import_algorithm
    from sleeper.core.jobs.commit import StateStoreCommitRequest as StateStoreCommitRequest
    from sleeper.core.jobs.commit import transaction_body_prefix as transaction_body_prefix
    from sleeper.core.jobs.compaction import CompactionJob as CompactionJob
    from sleeper.core.jobs.compaction import CompactionJobBatch as CompactionJobBatch
    from sleeper.core.jobs.compaction import CompactionJobCommitRequest as CompactionJobCommitRequest
    from sleeper.core.jobs.compaction import CompactionJobDispatchRequest as CompactionJobDispatchRequest
    from sleeper.core.jobs.compaction import batch_key_prefix as batch_key_prefix
    from sleeper.core.jobs.compaction import commit_requests_by_table as commit_requests_by_table
    from sleeper.core.jobs.exceptions import InvalidFieldError as InvalidFieldError
    from sleeper.core.jobs.exceptions import InvalidJobIdError as InvalidJobIdError
    from sleeper.core.jobs.exceptions import MalformedJsonError as MalformedJsonError
    from sleeper.core.jobs.exceptions import MessageError as MessageError
    from sleeper.core.jobs.exceptions import MissingFieldError as MissingFieldError
    from sleeper.core.jobs.exceptions import QueryValidationError as QueryValidationError
    from sleeper.core.jobs.exceptions import UnknownFieldError as UnknownFieldError
    from sleeper.core.jobs.exceptions import UnknownTableError as UnknownTableError
    from sleeper.core.jobs.exceptions import UnsafeIdError as UnsafeIdError
    from sleeper.core.jobs.exceptions import UnsafePathError as UnsafePathError
    from sleeper.core.jobs.ingest import IngestJob as IngestJob
    from sleeper.core.jobs.ingest import expand_job_files as expand_job_files
    from sleeper.core.jobs.outcome import FileJobOutcome as FileJobOutcome
    from sleeper.core.jobs.splitting import SplitPartitionJob as SplitPartitionJob
    from sleeper.core.jobs.task_creation import HostScaling as HostScaling
    from sleeper.core.jobs.task_creation import JobQueueCounts as JobQueueCounts
    from sleeper.core.jobs.task_creation import TaskCreation as TaskCreation
    from sleeper.core.jobs.task_creation import TaskKind as TaskKind
    from sleeper.core.jobs.task_creation import TaskLauncher as TaskLauncher
    from sleeper.core.jobs.task_creation import create_tasks as create_tasks
    from sleeper.core.jobs.task_creation import run_tasks_to_target as run_tasks_to_target
    from sleeper.core.jobs.task_loop import LoopSettings as LoopSettings
    from sleeper.core.jobs.task_loop import TaskExit as TaskExit
    from sleeper.core.jobs.task_loop import TaskLoop as TaskLoop
    from sleeper.core.jobs.task_loop import run_task_loop as run_task_loop
    from sleeper.core.jobs.workspace import JobWorkspace as JobWorkspace


__getattr__, __dir__ = lazy_face(__name__, __file__)
