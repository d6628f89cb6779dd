"""The errors a user of the Python API may catch, in one place: ``from sleeper.exceptions import TableNotFoundError``.

Every error the package raises on purpose is a :class:`SleeperError`, so ``except SleeperError`` catches them all;
the classes here are the ones the public API (``sleeper.connect``, an instance, ``Table`` and its scans) documents.
Each is defined once, in the package that raises it, and named here; ``sleeper.exceptions.X is`` the class raised.
"""

from __future__ import annotations

from sleeper.api.ingest_job import IngestJobError
from sleeper.api.instance import LocalOnlyError, UnknownPlatformError
from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_import.exceptions import BulkImportError
from sleeper.compaction.exceptions import CompactionError
from sleeper.core.exceptions import (
    InstanceAlreadyExistsError,
    InstanceNotFoundError,
    KeyTypeError,
    PropertyError,
    RangeError,
    SchemaError,
    SleeperError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from sleeper.core.jobs.exceptions import UnsafeIdError
from sleeper.core.statestore.exceptions import JobIdReusedError, StateStoreError, TableDeletedError
from sleeper.iceberg.exceptions import NotPublishableError, RulesRefusedError, WithdrawalError
from sleeper.ingest.exceptions import IngestError
from sleeper.io.exceptions import MissingFileError, SchemaMismatchError, UnsupportedLocationError
from sleeper.iterators.exceptions import IteratorConfigError, IteratorLoadError, IteratorRunError
from sleeper.query.exceptions import QueryExecutionError
from sleeper.query.planner import ReferenceOnUnknownPartitionError
from sleeper.query.queued import ReusedQueryIdError
from sleeper.query.results_reader import QueryWaitTimeoutError, QueuedQueryFailedError
from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError
from sleeper.statestore.history import AsOfError, StateNotReadableError

__all__ = [
    "AddTransactionRetriesExhaustedError",
    "AsOfError",
    "BulkExportError",
    "BulkImportError",
    "CompactionError",
    "IngestError",
    "IngestJobError",
    "InstanceAlreadyExistsError",
    "InstanceNotFoundError",
    "IteratorConfigError",
    "IteratorLoadError",
    "IteratorRunError",
    "JobIdReusedError",
    "KeyTypeError",
    "LocalOnlyError",
    "MissingFileError",
    "NotPublishableError",
    "PropertyError",
    "QueryExecutionError",
    "QueryWaitTimeoutError",
    "QueuedQueryFailedError",
    "RangeError",
    "ReferenceOnUnknownPartitionError",
    "ReusedQueryIdError",
    "RulesRefusedError",
    "SchemaError",
    "SchemaMismatchError",
    "SleeperError",
    "StateNotReadableError",
    "StateStoreError",
    "TableAlreadyExistsError",
    "TableDeletedError",
    "TableNotFoundError",
    "UnknownPlatformError",
    "UnsafeIdError",
    "UnsupportedLocationError",
    "WithdrawalError",
]
