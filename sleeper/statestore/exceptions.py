"""Errors of the transaction-log state store beyond those of its ports (``sleeper.statestore.ports``)."""

from __future__ import annotations

from sleeper.core import SleeperError
from sleeper.core.statestore import StateStoreError


class AddTransactionRetriesExhaustedError(SleeperError):
    """A transaction could not be added to the log within the allowed number of attempts.

    Every attempt collided with another writer (or failed with an error that left its outcome unknown, and the entry
    was then found not to have landed). The transaction is not in the log; it is safe to try again later. Not a
    ``StateStoreError``: the transaction was not refused by the state, so callers should retry rather than report it
    as invalid.

    Attributes:
        table_id: The table.
        transaction_type: The name of the transaction's type, e.g. ``"ADD_FILES"``.
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, table_id: str, transaction_type: str, attempts: int) -> None:
        super().__init__(message)
        self.table_id = table_id
        self.transaction_type = transaction_type
        self.attempts = attempts


COMMIT_NOT_IN_LOG: tuple[type[Exception], ...] = (StateStoreError, AddTransactionRetriesExhaustedError)
"""The errors of a synchronous commit (``StateStore.commit``) after which its transaction is known not to be in the
log: refused by the state, or every attempt collided or was found not to have landed. Only after one of these may a
writer delete the files the transaction names. After any other error, or a crash, the outcome is unknown (the entry
may have landed, as in Iceberg's "commit state unknown"): the files stay, and the orphan sweeper deletes them after
its minimum age if no transaction ever named them (docs/reliability.md A2, C3)."""


class TransactionLogGapError(SleeperError):
    """The log no longer holds the transactions that follow the local state, and no snapshot covers them.

    Happens when old transactions are deleted behind a snapshot while a process reads on from an older point and the
    newer snapshot cannot be found. Retryable: a later attempt normally finds the snapshot. The local state is left as
    it was, never with a gap.
    """


class SnapshotFormatError(SleeperError):
    """A snapshot file cannot be read: its schema or content does not match the snapshot format."""


class StateStoreStorageError(SleeperError):
    """A local storage adapter (SQLite or files) failed for a reason other than an expected outcome."""
