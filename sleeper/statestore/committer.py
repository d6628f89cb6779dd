"""The state store committer: applies transactions sent to ``StateStoreCommitterQ.fifo``.

Each message is Sleeper's commit request JSON: a transaction held inline, or a key of a body uploaded to the table's
transactions prefix (the log then reuses that key). A batch refreshes each table's state store once and adds each
transaction in order. The outcome of each message says whether to delete it (committed, or rejected because it no
longer fits the table, which a retry cannot change, or unreadable) or to leave it for redelivery (the store could not
be reached or every attempt collided).

Each request is one transaction in the log, as in Sleeper: ADD_FILES transactions of different jobs are not merged,
since each carries its own job, run and task, which the job tracker is told about when it is applied. An ADD_FILES
naming a job whose files were already added is a duplicate and is not added to the log (``DUPLICATE``): a message
delivered again after it was applied (its files are in the table; the tracker update is made again, which changes
nothing), or the commit of a second run of the job when another run's commit came first (its files are not added, its
run is recorded failed with the reason, and the orphan sweeper deletes its files). So a job's rows land once however
often its commit is delivered and however many workers ran it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from sleeper.core import Queue, SleeperError, TableNotFoundError, crash_point
from sleeper.core.jobs import MessageError, StateStoreCommitRequest
from sleeper.core.properties import STATESTORE_PROVIDER_CACHE_SIZE
from sleeper.core.statestore import JobIdReusedError, StateStoreError
from sleeper.core.statestore.transactions import (
    AddFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
    Transaction,
)
from sleeper.statestore.exceptions import COMMIT_NOT_IN_LOG
from sleeper.statestore.follower import follow_in
from sleeper.statestore.log_head import transaction_body_key
from sleeper.statestore.store import StateStore
from sleeper.statestore.tables import SleeperRuntime

__all__ = [
    "CommitRetryError",
    "CommitStatus",
    "CommitterResult",
    "apply_commit_requests",
    "commit_new_files",
    "committer_sender",
    "follow_result",
    "handle_commit_request",
    "send_commit_request",
    "send_transaction",
    "transaction_sender",
]

LOGGER = logging.getLogger(__name__)


class CommitStatus(Enum):
    """How one commit request ended."""

    COMMITTED = "COMMITTED"
    DUPLICATE = "DUPLICATE"
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
        status: Committed, a duplicate (an ADD_FILES of a job already added: not added again), rejected (does not fit
            the table), invalid (unreadable), or to retry.
        table_id: The table, if the message named one.
        transaction: The transaction, if it was read.
        transaction_number: Its number in the log, if committed.
        skipped_jobs: For a compaction commit, the jobs skipped because they no longer fit, with the reason.
        reason: Why it was rejected, invalid, a duplicate, or is to be retried.
        landed: For a duplicate, whether its own files are in the table (it was applied before: a redelivery) rather
            than another run's.
    """

    status: CommitStatus
    table_id: str | None = None
    transaction: Transaction | None = None
    transaction_number: int | None = None
    skipped_jobs: tuple[tuple[ReplaceFileReferencesRequest, str], ...] = ()
    reason: str | None = None
    landed: bool = False


def send_commit_request(queue: Queue, request: StateStoreCommitRequest) -> None:
    """Sends a commit request to the committer's FIFO queue, grouped by table as Sleeper does.

    Beyond Sleeper, whose deduplication ids are random: the id is a hash of the table and the request, so a producer
    that sends the same request again after a lost reply (docs/reliability.md B5) is collapsed by the queue within its
    deduplication window; a later repeat is rejected by the state store as already applied.
    """
    body = request.to_json()
    dedup_id = hashlib.sha256(f"{request.table_id}\n{body}".encode()).hexdigest()
    queue.send(body, group_id=request.table_id, dedup_id=dedup_id)


def committer_sender(queue: Queue) -> Callable[[StateStoreCommitRequest], None]:
    """A function that sends commit requests to the committer's queue (see :func:`send_commit_request`)."""
    return lambda request: send_commit_request(queue, request)


def send_transaction(queue: Queue, store: StateStore, transaction: Transaction) -> StateStoreCommitRequest:
    """Sends a transaction of a table to the committer's queue, its body uploaded first if it is too big for a message.

    As Sleeper's ``StateStoreCommitRequestUploader``: a body of ``body_store_threshold_bytes`` (200 KiB) or more goes
    to the table's transaction body store under a new key (``<table id>/statestore/transactions/<time>-<uuid>.json``)
    and the message names the key, which the committer's log entry then reuses; SQS holds at most 256 KiB.

    Args:
        queue: The committer's queue.
        store: The table's state store (its schema, body store and settings).
        transaction: The transaction.

    Returns:
        The request sent.
    """
    request = StateStoreCommitRequest.of_transaction(store.table_id, transaction, schema=store.schema)
    body = store.serde.to_json(transaction)
    if len(body.encode("utf-8")) >= store.settings.body_store_threshold_bytes:
        key = transaction_body_key(store.table_id, datetime.now(tz=UTC), str(uuid.uuid4()))
        store.body_store.store(key, body)
        request = StateStoreCommitRequest.in_body_store(store.table_id, transaction.TYPE, key)
    send_commit_request(queue, request)
    return request


def transaction_sender(queue: Queue, store: StateStore) -> Callable[[AddFilesTransaction], None]:
    """A function that sends a table's ADD_FILES transactions to the committer (see :func:`send_transaction`)."""

    def send(transaction: AddFilesTransaction) -> None:
        send_transaction(queue, store, transaction)

    return send


def commit_new_files(
    store: StateStore,
    transaction: AddFilesTransaction,
    *,
    send_commit: Callable[[AddFilesTransaction], None] | None,
    delete_files: Callable[[], None],
) -> bool:
    """Commits an ADD_FILES transaction of files a job run wrote, or sends it to the committer with ``send_commit``.

    The files are deleted (``delete_files``) only when the commit is known not to be in the log: it raised one of
    ``COMMIT_NOT_IN_LOG`` (then re-raised), or a synchronous commit carrying a job id was skipped because another run
    of the job committed first. After a failed send or any other error the commit may have landed, so the files stay
    for the orphan sweeper.

    Returns:
        False if the commit was skipped for another run's (its files deleted), True otherwise.
    """
    try:
        if send_commit is not None:
            send_commit(transaction)  # a failed send may yet have sent it: its files stay for the orphan sweeper
        else:
            store.commit(transaction)
    except COMMIT_NOT_IN_LOG:
        delete_files()  # known not to be in the log; after any other error it may be, so the files stay
        raise
    if (
        send_commit is None
        and transaction.job_id is not None
        and not store.holds_file_as_last_committed(transaction.files[0].filename)
    ):
        delete_files()  # another run of the job committed first, so the state store skipped this commit
        return False
    return True


class CommitRetryError(SleeperError):
    """A commit request could not be applied now (the store could not be reached, every attempt collided, its body
    could not be read): the message is to be delivered again."""


def handle_commit_request(instance: SleeperRuntime, body: str) -> str:
    """The committer's entry point for one ``StateStoreCommitterQ.fifo`` message, in either runtime: applies it and
    records in the job trackers what it did (:mod:`sleeper.statestore.follower`).

    Returns:
        A line for the log (a committed, rejected or unreadable request is finished with).

    Raises:
        CommitRetryError: If the request is to be delivered again.
    """
    stores = _stores_of(instance)
    (result,) = apply_commit_requests([body], lambda table_id: stores.state_store(instance, table_id))
    follow_result(instance, result)
    if result.status is CommitStatus.RETRY:
        raise CommitRetryError(f"state store commit for table {result.table_id} to be retried: {result.reason}")
    kind = result.transaction.TYPE.value if result.transaction is not None else "commit request"
    if result.status is CommitStatus.COMMITTED:
        return f"table {result.table_id}: {kind} committed as transaction {result.transaction_number}"
    return f"table {result.table_id}: {kind} {result.status.value.lower()}: {result.reason}"


def follow_result(instance: SleeperRuntime, result: CommitterResult) -> None:
    """Records a committed, duplicate or rejected request's jobs in the trackers (see
    :mod:`sleeper.statestore.follower`): a duplicate whose files landed before counts as committed (recording it again
    changes nothing), one superseded by another run's commit as refused."""
    if result.transaction is None or result.table_id is None:
        return
    if result.status not in (CommitStatus.COMMITTED, CommitStatus.DUPLICATE, CommitStatus.REJECTED):
        return
    committed = result.status is CommitStatus.COMMITTED or (result.status is CommitStatus.DUPLICATE and result.landed)
    follow_in(
        instance,
        result.table_id,
        result.transaction,
        datetime.now(tz=UTC),
        committed=committed,
        reason=result.reason,
        skipped_jobs={job.job_id: reason for job, reason in result.skipped_jobs},
    )


def apply_commit_requests(bodies: Sequence[str], state_store_for: Callable[[str], StateStore]) -> list[CommitterResult]:
    """Applies a batch of commit request messages in order; one result per message.

    Each table's state is brought up to date from its log once, before its first request of the batch.

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
    if isinstance(transaction, AddFilesTransaction) and transaction.job_id is not None:
        duplicate = _duplicate_of_added_job(table_id, transaction, transaction.job_id, store)
        if duplicate is not None:
            return duplicate
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


def _duplicate_of_added_job(
    table_id: str, transaction: AddFilesTransaction, job_id: str, store: StateStore
) -> CommitterResult | None:
    """The result of an ADD_FILES whose job's files were already added (not to be added again), or None."""
    try:
        if not store.job_already_added(job_id, transaction.inputs_hash):
            return None
    except JobIdReusedError as e:
        return CommitterResult(status=CommitStatus.REJECTED, table_id=table_id, transaction=transaction, reason=str(e))
    landed = bool(transaction.files) and all(store.has_file(f.filename) for f in transaction.files)
    if landed:
        reason = f"the files of job {job_id} were added before (the request was delivered again)"
    else:
        reason = (
            f"another run of job {job_id} added its files first; the {len(transaction.files)} files of run "
            f"{transaction.job_run_id or '(none)'} were not added (the orphan sweeper deletes them)"
        )
    LOGGER.info("Duplicate ADD_FILES for table %s: %s", table_id, reason)
    return CommitterResult(
        status=CommitStatus.DUPLICATE, table_id=table_id, transaction=transaction, reason=reason, landed=landed
    )


class _CachedStores:
    """The state stores the committer keeps between requests, per instance, as Sleeper's committer keeps them: a
    table's state is then brought up to date by reading the log entries added since it was last read, not loaded
    again. The table is still looked up for every request (through the instance, which caches table properties as
    it does for every reader), so a deleted table's requests are dropped as before. At most
    ``sleeper.statestore.provider.cache.size`` tables are kept, the least recently used dropped first (a negative
    size keeps every table, 0 none).

    They are kept against the instance weakly (:data:`_STORES`), and hold no reference to it: an entry whose value
    held its key would keep the instance, its database connections and its clients alive for the life of the
    process (one SQLite connection leaked per local instance made, until a long model run ran out of file
    descriptors)."""

    def __init__(self) -> None:
        self._stores: OrderedDict[str, StateStore] = OrderedDict()

    def state_store(self, instance: SleeperRuntime, table_id: str) -> StateStore:
        """The table's state store: the one kept for it, or the one the instance gives.

        Raises:
            TableNotFoundError: If the table does not exist.
        """
        given = instance.table_by_id(table_id).state_store
        kept = self._stores.get(table_id)
        if kept is not None:
            self._stores.move_to_end(table_id)
            return kept
        size = instance.properties.get_int(STATESTORE_PROVIDER_CACHE_SIZE)
        if size != 0:
            self._stores[table_id] = given
            while 0 < size < len(self._stores):
                self._stores.popitem(last=False)
        return given


_STORES: weakref.WeakKeyDictionary[SleeperRuntime, _CachedStores] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def _stores_of(instance: SleeperRuntime) -> _CachedStores:
    with _STORES_LOCK:
        try:
            stores = _STORES.get(instance)
        except TypeError:  # an instance that cannot be weakly referenced: nothing is kept
            return _CachedStores()
        if stores is None:
            stores = _STORES[instance] = _CachedStores()
        return stores
