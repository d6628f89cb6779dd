"""The transaction-log state store: log head, snapshots, committer and upkeep."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.statestore.committer import CommitRetryError as CommitRetryError
    from sleeper.statestore.committer import commit_new_files as commit_new_files
    from sleeper.statestore.committer import committer_sender as committer_sender
    from sleeper.statestore.committer import send_commit_request as send_commit_request
    from sleeper.statestore.committer import send_transaction as send_transaction
    from sleeper.statestore.committer import transaction_sender as transaction_sender
    from sleeper.statestore.exceptions import AddTransactionRetriesExhaustedError as AddTransactionRetriesExhaustedError
    from sleeper.statestore.exceptions import SnapshotFormatError as SnapshotFormatError
    from sleeper.statestore.exceptions import StateStoreStorageError as StateStoreStorageError
    from sleeper.statestore.exceptions import TransactionLogGapError as TransactionLogGapError
    from sleeper.statestore.follower import follow_log_entry as follow_log_entry
    from sleeper.statestore.follower import record_compaction_committed as record_compaction_committed
    from sleeper.statestore.follower import record_compaction_failed as record_compaction_failed
    from sleeper.statestore.follower import was_committed as was_committed
    from sleeper.statestore.history import AsOf as AsOf
    from sleeper.statestore.history import AsOfError as AsOfError
    from sleeper.statestore.history import StateNotReadableError as StateNotReadableError
    from sleeper.statestore.history import TableHistory as TableHistory
    from sleeper.statestore.history import TableStateAsOf as TableStateAsOf
    from sleeper.statestore.history import parse_as_of as parse_as_of
    from sleeper.statestore.history import table_history as table_history
    from sleeper.statestore.log_head import StateStoreSettings as StateStoreSettings
    from sleeper.statestore.metrics import MetricsRuntime as MetricsRuntime
    from sleeper.statestore.metrics import TableMetrics as TableMetrics
    from sleeper.statestore.object_log import ObjectLogFormatError as ObjectLogFormatError
    from sleeper.statestore.object_log import decode_entry as decode_entry
    from sleeper.statestore.object_log import decode_snapshot as decode_snapshot
    from sleeper.statestore.object_log import encode_entry as encode_entry
    from sleeper.statestore.object_log import encode_snapshot as encode_snapshot
    from sleeper.statestore.object_log import log_prefix as log_prefix
    from sleeper.statestore.object_log import number_of as number_of
    from sleeper.statestore.object_log import numbered_name as numbered_name
    from sleeper.statestore.object_log import snapshot_records_prefix as snapshot_records_prefix
    from sleeper.statestore.object_log import tombstone_key as tombstone_key
    from sleeper.statestore.ports import DuplicateTransactionNumberError as DuplicateTransactionNumberError
    from sleeper.statestore.ports import SnapshotConflictError as SnapshotConflictError
    from sleeper.statestore.ports import SnapshotMetadata as SnapshotMetadata
    from sleeper.statestore.ports import TransactionBodyNotFoundError as TransactionBodyNotFoundError
    from sleeper.statestore.ports import TransactionBodyStore as TransactionBodyStore
    from sleeper.statestore.ports import TransactionLogEntry as TransactionLogEntry
    from sleeper.statestore.store import StateStore as StateStore
    from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE as STATE_STORE_COMMITTER_QUEUE
    from sleeper.statestore.tables import QueuedQueries as QueuedQueries
    from sleeper.statestore.tables import SleeperInstance as SleeperInstance
    from sleeper.statestore.tables import SleeperRuntime as SleeperRuntime
    from sleeper.statestore.tables import SleeperTable as SleeperTable


__getattr__, __dir__ = lazy_face(__name__, __file__)
