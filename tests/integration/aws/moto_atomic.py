"""Fixtures making the in-process moto server's item writes, reads and queries atomic with respect to each other
(``atomic_moto_transactions``), and its queues' receives and deletes atomic per queue (``atomic_moto_queues``).

moto is not atomic where DynamoDB is: its TransactWriteItems (which the transaction log's append uses, with a
ConditionCheck on the table's tombstone) backs up each table it touches and, when a condition fails, puts the backup
back, undoing every write other threads made meanwhile. A losing append's rollback can so erase a winning,
acknowledged entry (seen in the concurrent log tests: one entry of 73 gone, a gap). Its conditional PutItem checks and
writes without a lock too, so two writers can both pass ``attribute_not_exists`` and the second overwrite the first
(seen: one acknowledged entry of 1,600 gone), and a query can iterate a table another thread is changing
("dictionary changed size during iteration"). Its UpdateItem makes a new item and then sets its attributes one by one,
so a GetItem meanwhile can see an item holding its key alone (seen in the emulated A3: an ingest's wait read a job's
tracker entry without its ``TableId`` and failed with ``KeyError``, while the job went on and landed). Serialising
moto's item writes, reads, queries and scans gives it DynamoDB's isolation, so the concurrency tests test the log head
and the adapter, not moto.

moto also keeps every model object it ever made (``BaseModel.instances_tracked``, for its dashboard), and the backup
above is a deep copy of each table, items and stream records included. Each TransactWriteItems so left one more copy
of the whole files log alive: memory grew with the square of the commits (16 writers x 200 commits reached 23.8 GB
and were killed). The serialised calls here forget moto's tracked DynamoDB objects after each call; nothing but moto's
dashboard reads them.

That backup also made each commit cost a copy of the whole log, so the nightly run's time grew with the square of
its commits too (1,297 of 3,200 commits in 37 minutes). Under the lock a transaction needs no copy of the tables:
the fixture backs up only the items the transaction names (and the length of each table's stream) and, if moto
cancels the transaction, puts those items back and drops the stream records it added, as moto's own rollback would.
Import the fixture into a test module and ask for it (``@pytest.mark.usefixtures("atomic_moto_transactions")``);
likewise ``atomic_moto_queues``, whose own docstring says what in moto's SQS it makes atomic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["atomic_moto_queues", "atomic_moto_transactions"]


@pytest.fixture
def atomic_moto_transactions() -> Iterator[None]:
    """Serialises the in-process moto server's item writes, reads, queries and scans (see the module docstring)."""
    from moto.core.model_instances import model_data
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    tracked: list[Any] = list(model_data["dynamodb"].values())

    def serialised(original: Callable[..., Any]) -> Callable[..., Any]:
        def atomic(*args: Any, **kwargs: Any) -> Any:
            with lock:
                try:
                    return original(*args, **kwargs)
                finally:
                    for model in tracked:
                        model.instances_tracked.clear()

        return atomic

    with pytest.MonkeyPatch.context() as patch:
        for name in ("put_item", "update_item", "delete_item", "query", "batch_write_item", "get_item", "scan"):
            if hasattr(DynamoDBBackend, name):
                patch.setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
        patch.setattr(
            DynamoDBBackend,
            "transact_write_items",
            serialised(_rolled_back_by_item(DynamoDBBackend.transact_write_items)),
        )
        yield


@pytest.fixture
def atomic_moto_queues() -> Iterator[None]:
    """Makes the in-process moto server's receives and deletes atomic per queue, as SQS's are.

    moto's ReceiveMessage reads which FIFO message groups are in flight, then walks the queue marking messages
    received, with no lock: two concurrent receives can both pass a group's check and take its messages, so two
    consumers run one group's messages at once (seen with plain boto3: 1-3 of 3 groups of 300 messages received out of
    order by two consumers, none with this fixture). Its DeleteMessage rebuilds the message list without the lock a
    send appends under, so a message sent meanwhile could be dropped (read in moto 5.2's code, not seen). Both are
    done here under the queue's own lock (a condition variable, which a long poll releases while it waits).
    """
    from moto.sqs.models import Queue, SQSBackend

    def receive_atomically(original: Callable[..., Any]) -> Callable[..., Any]:
        def atomic(backend: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
            with backend.get_queue(queue_name)._messages_lock:
                return original(backend, queue_name, *args, **kwargs)

        return atomic

    def delete_atomically(original: Callable[..., Any]) -> Callable[..., Any]:
        def atomic(queue: Queue, *args: Any, **kwargs: Any) -> Any:
            with queue._messages_lock:
                return original(queue, *args, **kwargs)

        return atomic

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SQSBackend, "receive_message", receive_atomically(SQSBackend.receive_message))
        patch.setattr(SQSBackend, "change_message_visibility", receive_atomically(SQSBackend.change_message_visibility))
        patch.setattr(Queue, "delete_message", delete_atomically(Queue.delete_message))
        yield


class _NoTableCopy:
    """Stands in for the ``copy`` module inside moto's DynamoDB backend: its whole-table backup is not taken."""

    def deepcopy(self, value: Any) -> Any:
        return value


def _rolled_back_by_item(original: Callable[..., Any]) -> Callable[..., Any]:
    """moto's TransactWriteItems without its whole-table backup: the items it names are backed up instead, and put back
    (with the stream records it added dropped) when moto cancels the transaction. Must run under the lock."""
    import copy

    import moto.dynamodb.models as models

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> Any:
        backups: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        streams: dict[str, int] = {}
        for item in transact_items:
            _, op = next(iter(item.items()))
            table = backend.tables.get(op.get("TableName"))
            if table is None:
                continue
            if "Item" in op:
                key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = op["Item"][table.range_key_attr]
            else:
                key = op["Key"]
            current = backend.get_item(table.name, key)
            backups.append((table.name, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None))
            if table.stream_shard is not None:
                streams[table.name] = len(table.stream_shard.items)
        setattr(models, "copy", _NoTableCopy())  # noqa: B010 - the module does not export it
        try:
            return original(backend, transact_items)
        except Exception:
            for name, key, attributes in reversed(backups):
                if attributes is None:
                    if backend.get_item(name, key) is not None:
                        backend.delete_item(name, key)
                else:
                    backend.put_item(name, attributes)
            for name, length in streams.items():
                del backend.tables[name].stream_shard.items[length:]
            raise
        finally:
            setattr(models, "copy", copy)  # noqa: B010

    return transact_write_items
