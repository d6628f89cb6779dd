"""The errors a user of the Python API may catch, in one place: ``from sleeper.exceptions import TableNotFoundError``.

Every error the package raises on purpose is a :class:`SleeperError`, so ``except SleeperError`` catches them all;
every public error of the package is named here (``tests/unit/test_public_exceptions.py`` holds it to that). Each is
defined once, in the package that raises it; ``sleeper.exceptions.X is`` the class raised. The errors of an instance
on AWS are loaded when first named, so this module needs no AWS extra. Sleeper's Python client keeps its own error
module, ``sleeper.client.errors``, as Sleeper's client does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sleeper.adapters.local.sqlite import DatabaseLockedError
from sleeper.api.ingest_job import IngestJobError
from sleeper.api.instance import LocalOnlyError, UnknownPlatformError
from sleeper.api.sql import SqlError
from sleeper.api.upserts import UpsertNotEnabledError
from sleeper.athena.exceptions import AthenaConnectorError
from sleeper.bulk_export.exceptions import BulkExportError, BulkExportQueryError
from sleeper.bulk_import.driver import BulkImportJobFileError
from sleeper.bulk_import.exceptions import (
    BulkImportConfigError,
    BulkImportError,
    InsufficientDataForSplittingError,
    SparkUnavailableError,
)
from sleeper.bulk_import.starter import PlatformFullError
from sleeper.compaction.creation import CompactionJobSendError, PendingBatchError
from sleeper.compaction.exceptions import (
    CompactionConfigError,
    CompactionError,
    CompactionInputError,
)
from sleeper.compaction.strategies import InvalidCompactionStrategyError, UnknownCompactionStrategyError
from sleeper.core.deploy.configuration import ConfigurationError
from sleeper.core.deploy.context import DeployContextError
from sleeper.core.exceptions import (
    InstanceAlreadyExistsError,
    InstanceNotFoundError,
    KeyTypeError,
    PartitionTreeError,
    PropertyError,
    RangeError,
    SchemaError,
    SerDeError,
    SleeperError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from sleeper.core.extras import MissingExtraError
from sleeper.core.filter import FilterError
from sleeper.core.held_files import HoldFormatError
from sleeper.core.jobs.bulk_import_algorithm import UnknownBulkImportAlgorithmError
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    InvalidJobIdError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    QueryValidationError,
    UnknownFieldError,
    UnknownTableError,
    UnsafeIdError,
    UnsafePathError,
)
from sleeper.core.queue import (
    InvalidQueueRequestError,
    MessageTooLargeError,
    QueueError,
    QueueNotFoundError,
    ReceiptHandleError,
    VisibilityLimitError,
)
from sleeper.core.statestore.exceptions import (
    FileAlreadyExistsError,
    FileHasReferencesError,
    FileNotFoundInStateError,
    FileOutsideTableError,
    FileReferenceAlreadyExistsError,
    FileReferenceAssignedToJobError,
    FileReferenceNotAssignedToJobError,
    FileReferenceNotFoundError,
    InvalidTransactionError,
    JobIdReusedError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PartitionNotLeafError,
    PendingDeleteNotAppliedError,
    StateStoreError,
    TableDeletedError,
)
from sleeper.core.trackers.base import TrackerError
from sleeper.core.websocket import ConnectionGoneError, WebSocketPostError
from sleeper.gc.exceptions import GarbageCollectionError, GarbageCollectionFailedError
from sleeper.iceberg.exceptions import (
    IcebergPublishError,
    NotPublishableError,
    PublishAbandonedError,
    RulesRefusedError,
    ViewOwnershipError,
    WithdrawalError,
)
from sleeper.ingest.batcher.exceptions import (
    BatcherError,
    BatcherFileNotFoundError,
    BatcherStoreError,
    BatcherTableNotFoundError,
    InvalidSubmitRequestError,
    SubmitRequestError,
)
from sleeper.ingest.exceptions import IngestConfigError, IngestError, UpsertRequiredError
from sleeper.ingest.sources import IngestSourceNotAllowedError
from sleeper.io.exceptions import (
    DataEngineError,
    DataFileError,
    EngineUnavailableError,
    InputFileError,
    MissingFileError,
    SchemaMismatchError,
    UnsafeDeleteError,
    UnsupportedLocationError,
    UnsupportedSettingError,
    WriterClosedError,
)
from sleeper.io.sketches import SketchesError
from sleeper.io.sort import NotSortedError
from sleeper.iterators.exceptions import IteratorConfigError, IteratorDataError, IteratorLoadError, IteratorRunError
from sleeper.iterators.shipping import UserCodeError
from sleeper.query.exceptions import QueryExecutionError
from sleeper.query.planner import ReferenceOnUnknownPartitionError
from sleeper.query.queued import ReusedQueryIdError
from sleeper.query.results_config import ResultsConfigError
from sleeper.query.results_reader import QueryWaitTimeoutError, QueuedQueryFailedError
from sleeper.runtime.faults_env import UnknownCrashPointError
from sleeper.runtime.table_definer import TableDefinitionError
from sleeper.splitting.exceptions import MissingSketchesError, SplittingError, UntrackedFileError
from sleeper.statestore.committer import CommitRetryError
from sleeper.statestore.exceptions import (
    AddTransactionRetriesExhaustedError,
    SnapshotFormatError,
    StateStoreStorageError,
    TransactionLogGapError,
)
from sleeper.statestore.history import AsOfError, StateNotReadableError
from sleeper.statestore.ports import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    TransactionBodyNotFoundError,
)

if TYPE_CHECKING:
    from sleeper.adapters.aws.dynamodb_stream import StreamRecordError
    from sleeper.adapters.aws.exceptions import AwsError, AwsResourceNotFoundError, AwsThrottledError
    from sleeper.runtime.aws.instance import AwsRuntimeConfigError

_ON_AWS = {
    "AwsError": "sleeper.adapters.aws.exceptions",
    "AwsResourceNotFoundError": "sleeper.adapters.aws.exceptions",
    "AwsRuntimeConfigError": "sleeper.runtime.aws.instance",
    "AwsThrottledError": "sleeper.adapters.aws.exceptions",
    "StreamRecordError": "sleeper.adapters.aws.dynamodb_stream",
}
"""The errors of an instance on AWS, by the module that defines them: loaded when first named."""

__all__ = [
    "AddTransactionRetriesExhaustedError",
    "AsOfError",
    "AthenaConnectorError",
    "AwsError",
    "AwsResourceNotFoundError",
    "AwsRuntimeConfigError",
    "AwsThrottledError",
    "BatcherError",
    "BatcherFileNotFoundError",
    "BatcherStoreError",
    "BatcherTableNotFoundError",
    "BulkExportError",
    "BulkExportQueryError",
    "BulkImportConfigError",
    "BulkImportError",
    "BulkImportJobFileError",
    "CommitRetryError",
    "CompactionConfigError",
    "CompactionError",
    "CompactionInputError",
    "CompactionJobSendError",
    "ConfigurationError",
    "ConnectionGoneError",
    "DataEngineError",
    "DataFileError",
    "DatabaseLockedError",
    "DeployContextError",
    "DuplicateTransactionNumberError",
    "EngineUnavailableError",
    "FileAlreadyExistsError",
    "FileHasReferencesError",
    "FileNotFoundInStateError",
    "FileOutsideTableError",
    "FileReferenceAlreadyExistsError",
    "FileReferenceAssignedToJobError",
    "FileReferenceNotAssignedToJobError",
    "FileReferenceNotFoundError",
    "FilterError",
    "GarbageCollectionError",
    "GarbageCollectionFailedError",
    "HoldFormatError",
    "IcebergPublishError",
    "IngestConfigError",
    "IngestError",
    "IngestJobError",
    "IngestSourceNotAllowedError",
    "InputFileError",
    "InstanceAlreadyExistsError",
    "InstanceNotFoundError",
    "InsufficientDataForSplittingError",
    "InvalidCompactionStrategyError",
    "InvalidFieldError",
    "InvalidJobIdError",
    "InvalidQueueRequestError",
    "InvalidSubmitRequestError",
    "InvalidTransactionError",
    "IteratorConfigError",
    "IteratorDataError",
    "IteratorLoadError",
    "IteratorRunError",
    "JobIdReusedError",
    "KeyTypeError",
    "LocalOnlyError",
    "MalformedJsonError",
    "MessageError",
    "MessageTooLargeError",
    "MissingExtraError",
    "MissingFieldError",
    "MissingFileError",
    "MissingSketchesError",
    "NotPublishableError",
    "NotSortedError",
    "PartitionAlreadyExistsError",
    "PartitionNotFoundError",
    "PartitionNotLeafError",
    "PartitionTreeError",
    "PendingBatchError",
    "PendingDeleteNotAppliedError",
    "PlatformFullError",
    "PropertyError",
    "PublishAbandonedError",
    "QueryExecutionError",
    "QueryValidationError",
    "QueryWaitTimeoutError",
    "QueueError",
    "QueueNotFoundError",
    "QueuedQueryFailedError",
    "RangeError",
    "ReceiptHandleError",
    "ReferenceOnUnknownPartitionError",
    "ResultsConfigError",
    "ReusedQueryIdError",
    "RulesRefusedError",
    "SchemaError",
    "SchemaMismatchError",
    "SerDeError",
    "SketchesError",
    "SleeperError",
    "SnapshotConflictError",
    "SnapshotFormatError",
    "SparkUnavailableError",
    "SplittingError",
    "SqlError",
    "StateNotReadableError",
    "StateStoreError",
    "StateStoreStorageError",
    "StreamRecordError",
    "SubmitRequestError",
    "TableAlreadyExistsError",
    "TableDefinitionError",
    "TableDeletedError",
    "TableNotFoundError",
    "TrackerError",
    "TransactionBodyNotFoundError",
    "TransactionLogGapError",
    "UnknownBulkImportAlgorithmError",
    "UnknownCompactionStrategyError",
    "UnknownCrashPointError",
    "UnknownFieldError",
    "UnknownPlatformError",
    "UnknownTableError",
    "UnsafeDeleteError",
    "UnsafeIdError",
    "UnsafePathError",
    "UnsupportedLocationError",
    "UnsupportedSettingError",
    "UntrackedFileError",
    "UpsertNotEnabledError",
    "UpsertRequiredError",
    "UserCodeError",
    "ViewOwnershipError",
    "VisibilityLimitError",
    "WebSocketPostError",
    "WithdrawalError",
    "WriterClosedError",
]


def __getattr__(name: str) -> Any:
    """An error of an instance on AWS, loaded when first named (its module needs the ``aws`` extra)."""
    module = _ON_AWS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
