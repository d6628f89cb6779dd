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

from sleeper.adapters.local import DatabaseLockedError
from sleeper.api import IngestJobError, LocalOnlyError, SqlError, UnknownPlatformError, UpsertNotEnabledError
from sleeper.athena import AthenaConnectorError
from sleeper.bulk_export import BulkExportError, BulkExportQueryError
from sleeper.bulk_import import (
    BulkImportConfigError,
    BulkImportError,
    BulkImportJobFileError,
    InsufficientDataForSplittingError,
    PlatformFullError,
    SparkUnavailableError,
)
from sleeper.compaction import (
    CompactionConfigError,
    CompactionError,
    CompactionInputError,
    CompactionJobSendError,
    InvalidCompactionStrategyError,
    PendingBatchError,
    UnknownCompactionStrategyError,
)
from sleeper.core import (
    ConnectionGoneError,
    FilterError,
    HoldFormatError,
    InstanceAlreadyExistsError,
    InstanceNotFoundError,
    InvalidQueueRequestError,
    KeyTypeError,
    MessageTooLargeError,
    MissingExtraError,
    PartitionTreeError,
    PropertyError,
    QueueError,
    QueueNotFoundError,
    RangeError,
    ReceiptHandleError,
    SchemaError,
    SerDeError,
    SleeperError,
    TableAlreadyExistsError,
    TableNotFoundError,
    VisibilityLimitError,
    WebSocketPostError,
)
from sleeper.core.deploy import ConfigurationError, DeployContextError
from sleeper.core.jobs import (
    InvalidFieldError,
    InvalidJobIdError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    QueryValidationError,
    UnknownBulkImportAlgorithmError,
    UnknownFieldError,
    UnknownTableError,
    UnsafeIdError,
    UnsafePathError,
)
from sleeper.core.statestore import (
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
from sleeper.core.trackers import TrackerError
from sleeper.gc import GarbageCollectionError, GarbageCollectionFailedError
from sleeper.iceberg import (
    IcebergPublishError,
    NotPublishableError,
    PublishAbandonedError,
    RulesRefusedError,
    ViewOwnershipError,
    WithdrawalError,
)
from sleeper.ingest import IngestConfigError, IngestError, IngestSourceNotAllowedError, UpsertRequiredError
from sleeper.ingest.batcher import (
    BatcherError,
    BatcherFileNotFoundError,
    BatcherStoreError,
    BatcherTableNotFoundError,
    InvalidSubmitRequestError,
    SubmitRequestError,
)
from sleeper.io import (
    DataEngineError,
    DataFileError,
    EngineUnavailableError,
    InputFileError,
    MissingFileError,
    NotSortedError,
    SchemaMismatchError,
    SketchesError,
    UnsafeDeleteError,
    UnsupportedLocationError,
    UnsupportedSettingError,
    WriterClosedError,
)
from sleeper.iterators import IteratorConfigError, IteratorDataError, IteratorLoadError, IteratorRunError, UserCodeError
from sleeper.query import (
    QueryExecutionError,
    QueryWaitTimeoutError,
    QueuedQueryFailedError,
    ReferenceOnUnknownPartitionError,
    ResultsConfigError,
    ReusedQueryIdError,
)
from sleeper.runtime import TableDefinitionError, UnknownCrashPointError
from sleeper.splitting import MissingSketchesError, SplittingError, UntrackedFileError
from sleeper.statestore import (
    AddTransactionRetriesExhaustedError,
    AsOfError,
    CommitRetryError,
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotFormatError,
    StateNotReadableError,
    StateStoreStorageError,
    TransactionBodyNotFoundError,
    TransactionLogGapError,
)

if TYPE_CHECKING:
    from sleeper.adapters.aws import AwsError, AwsResourceNotFoundError, AwsThrottledError, StreamRecordError
    from sleeper.runtime.aws import AwsRuntimeConfigError

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
