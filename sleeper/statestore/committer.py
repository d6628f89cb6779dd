"""The state store committer (spec 2.6): applies transactions sent to ``StateStoreCommitterQ.fifo``.

Each message is Sleeper's commit request JSON: a transaction held inline, or a key of a body uploaded to the table's
transactions prefix (the log then reuses that key). A batch refreshes each table's state store once and adds each
transaction in order. The outcome of each message says whether to delete it (committed, or rejected because it no
longer fits the table, which a retry cannot change, or unreadable) or to leave it for redelivery (the store could not
be reached or every attempt collided).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from sleeper.core.exceptions import SleeperError, TableNotFoundError
from sleeper.core.faults import crash_point
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.exceptions import MessageError
from sleeper.core.queue import Queue
from sleeper.core.statestore.exceptions import StateStoreError
from sleeper.core.statestore.transactions.files import ReplaceFileReferencesRequest, ReplaceFileReferencesTransaction
from sleeper.core.statestore.transactions.serde import Transaction
from sleeper.statestore.follower import TrackedInstance, follow_in
from sleeper.statestore.store import StateStore

__all__ = [
    "CommitRetryError",
    "CommitStatus",
    "CommitterResult",
    "apply_commit_requests",
    "committer_sender",
    "follow_result",
    "handle_commit_request",
    "send_commit_request",
]

LOGGER = logging.getLogger(__name__)


class CommitStatus(Enum):
    """How one commit request ended."""

    COMMITTED = "COMMITTED"
    REJECTED = "REJECTED"
    INVALID = "INVALID"
    RETRY = "RETRY"

    @property
    def done(self) -> bool:
        """Whether the message is finished with (delete it); False means deliver it again."""
        return self is not CommitStatus.RETRY


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitterResult:
    """The outcome of one commit request message.

    Attributes:
        status: Committed, rejected (does not fit the table), invalid (unreadable), or to retry.
        table_id: The table, if the message named one.
        transaction: The transaction, if it was read.
        transaction_number: Its number in the log, if committed.
        skipped_jobs: For a compaction commit, the jobs skipped because they no longer fit, with the reason.
        reason: Why it was rejected, invalid, or is to be retried.
    """

    status: CommitStatus
    table_id: str | None = None
    transaction: Transaction | None = None
    transaction_number: int | None = None
    skipped_jobs: tuple[tuple[ReplaceFileReferencesRequest, str], ...] = ()
    reason: str | None = None


def send_commit_request(queue: Queue, request: StateStoreCommitRequest) -> None:
    """Sends a commit request to the committer's FIFO queue, grouped by table as Sleeper does.

    Beyond Sleeper, whose deduplication ids are random: the id is a hash of the table and the request, so a producer
    that sends the same request again after a lost reply (RELIABILITY.md B5) is collapsed by the queue within its
    deduplication window; a later repeat is rejected by the state store as already applied.
    """
    body = request.to_json()
    dedup_id = hashlib.sha256(f"{request.table_id}\n{body}".encode()).hexdigest()
    queue.send(body, group_id=request.table_id, dedup_id=dedup_id)


def committer_sender(queue: Queue) -> Callable[[StateStoreCommitRequest], None]:
    """A function that sends commit requests to the committer's queue (see :func:`send_commit_request`)."""
    return lambda request: send_commit_request(queue, request)


class CommitRetryError(SleeperError):
    """A commit request could not be applied now (the store could not be reached, every attempt collided, its body
    could not be read): the message is to be delivered again."""


def handle_commit_request(instance: TrackedInstance, body: str) -> str:
    """The committer's entry point for one ``StateStoreCommitterQ.fifo`` message, in either runtime: applies it and
    records in the job trackers what it did (:mod:`sleeper.statestore.follower`).

    Returns:
        A line for the log (a committed, rejected or unreadable request is finished with).

    Raises:
        CommitRetryError: If the request is to be delivered again.
    """
    (result,) = apply_commit_requests([body], lambda table_id: instance.table_by_id(table_id).state_store)
    follow_result(instance, result)
    if result.status is CommitStatus.RETRY:
        raise CommitRetryError(f"state store commit for table {result.table_id} to be retried: {result.reason}")
    kind = result.transaction.TYPE.value if result.transaction is not None else "commit request"
    if result.status is CommitStatus.COMMITTED:
        return f"table {result.table_id}: {kind} committed as transaction {result.transaction_number}"
    return f"table {result.table_id}: {kind} {result.status.value.lower()}: {result.reason}"


def follow_result(instance: TrackedInstance, result: CommitterResult) -> None:
    """Records a committed or rejected request's jobs in the trackers (see :mod:`sleeper.statestore.follower`)."""
    if result.transaction is None or result.table_id is None:
        return
    if result.status not in (CommitStatus.COMMITTED, CommitStatus.REJECTED):
        return
    follow_in(
        instance,
        result.table_id,
        result.transaction,
        datetime.now(tz=UTC),
        committed=result.status is CommitStatus.COMMITTED,
        reason=result.reason,
        skipped_jobs={job.job_id: reason for job, reason in result.skipped_jobs},
    )


def apply_commit_requests(bodies: Sequence[str], state_store_for: Callable[[str], StateStore]) -> list[CommitterResult]:
    """Applies a batch of commit request messages in order; one result per message.

    Args:
        bodies: The message bodies.
        state_store_for: The state store of a table by id (raises ``TableNotFoundError`` for an unknown table).
    """
    stores: dict[str, StateStore] = {}
    results: list[CommitterResult] = []
    for body in bodies:
        try:
            request = StateStoreCommitRequest.from_json(body)
        except MessageError as e:
            results.append(CommitterResult(status=CommitStatus.INVALID, reason=str(e)))
            continue
        table_id = request.table_id
        try:
            store = stores.get(table_id)
            if store is None:
                store = state_store_for(table_id)
                store.refresh()
                stores[table_id] = store
        except TableNotFoundError as e:
            results.append(CommitterResult(status=CommitStatus.INVALID, table_id=table_id, reason=str(e)))
            continue
        results.append(_apply(request, store))
    return results


def _apply(request: StateStoreCommitRequest, store: StateStore) -> CommitterResult:
    table_id = request.table_id
    try:
        transaction = request.transaction(store.schema, load_body=store.body_store.load)
    except MessageError as e:
        return CommitterResult(status=CommitStatus.INVALID, table_id=table_id, reason=str(e))
    except SleeperError as e:  # the uploaded body could not be read: it may appear, or the store may recover
        return CommitterResult(status=CommitStatus.RETRY, table_id=table_id, reason=str(e))
    skipped: tuple[tuple[ReplaceFileReferencesRequest, str], ...] = ()
    if isinstance(transaction, ReplaceFileReferencesTransaction):
        skipped = tuple((job, str(error)) for job, error in transaction.failed_jobs(store.files_state()))
    try:
        added = store.commit(transaction, body_key=request.body_key)
        crash_point("committer.after_commit")
    except StateStoreError as e:
        LOGGER.info("Rejected %s for table %s: %s", request.transaction_type.value, table_id, e)
        return CommitterResult(
            status=CommitStatus.REJECTED,
            table_id=table_id,
            transaction=transaction,
            skipped_jobs=skipped,
            reason=str(e),
        )
    except SleeperError as e:
        LOGGER.warning("Could not commit %s for table %s: %s", request.transaction_type.value, table_id, e)
        return CommitterResult(status=CommitStatus.RETRY, table_id=table_id, transaction=transaction, reason=str(e))
    return CommitterResult(
        status=CommitStatus.COMMITTED,
        table_id=table_id,
        transaction=transaction,
        transaction_number=added.transaction_number,
        skipped_jobs=skipped,
    )
