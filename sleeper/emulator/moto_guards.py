"""Guards that give moto's server the atomicity of the AWS services an instance relies on.

The state store's logs are correct only if a conditional append is atomic: two writers can never both take one
transaction number. DynamoDB and S3 guarantee it; moto 5 does not, so an emulated instance (``sleeper aws-local up``)
could acknowledge a commit and then lose it (seen: 1 round in 200 of 16 racing writers had two winners). The guards
here close each gap found, in moto's server process, and are the one copy that both the emulator and the tests use.

* :func:`atomic_conditional_puts` (S3): moto's PutObject checks ``If-None-Match`` / ``If-Match`` and then writes, with
  nothing held between, so two conditional puts of one key served by its threads at once could both pass. Conditional
  puts are serialised (plain puts, such as data files, are not: S3 gives them no such guarantee to keep).
* :func:`atomic_dynamodb_items` (DynamoDB): moto's conditional PutItem checks and writes without a lock, so two writers
  could both pass ``attribute_not_exists`` and the second overwrite the first (seen: one acknowledged entry of 1,600
  gone). Its TransactWriteItems (the log's append, with a ConditionCheck on the table's tombstone) backs up each table
  it touches and, when a condition fails, puts the backup back, undoing every write other threads made meanwhile (seen:
  one entry of 73 gone). Its UpdateItem makes a new item and then sets its attributes one by one, so a GetItem meanwhile
  could see an item holding its key alone; and a query could iterate a table another thread was changing. moto's item
  writes, reads, queries and scans are serialised, and a transaction backs up (and on cancellation restores) only the
  items it names, as DynamoDB's isolation would leave them, instead of copying whole tables. moto also keeps every
  model object it ever made (``BaseModel.instances_tracked``, for its dashboard); with the whole-table copies that kept
  a copy of the log alive per commit (memory grew with the square of the commits), so the tracked DynamoDB objects are
  forgotten after each call (nothing but moto's dashboard reads them).
* :func:`atomic_queues` (SQS): moto's ReceiveMessage reads which FIFO message groups are in flight, then walks the queue
  marking messages received, with no lock, so two receives could both take one group's messages (seen: 1-3 of 3 groups
  of 300 messages received out of order by two consumers); its DeleteMessage rebuilds the message list without the lock
  a send appends under. Both are done under the queue's own lock (a condition variable, which a long poll releases
  while it waits).

:func:`guard_moto` applies them all, once per process. They patch moto's internals, checked before anything is
patched: a moto whose internals differ raises :class:`MotoGuardError` naming what is missing, rather than running
unguarded. Written against moto 5.2 (``SUPPORTED_MOTO``).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from sleeper.core import SleeperError

__all__ = [
    "SUPPORTED_MOTO",
    "MotoGuardError",
    "atomic_conditional_puts",
    "atomic_dynamodb_items",
    "atomic_queues",
    "guard_moto",
]

SUPPORTED_MOTO = ">=5.2,<5.3"
"""The moto versions whose internals the guards were written against and tested with."""

_DYNAMODB_SERIALISED = ("put_item", "update_item", "delete_item", "query", "batch_write_item", "get_item", "scan")
_installing = threading.Lock()


class MotoGuardError(SleeperError):
    """moto's internals are not those the guards patch: the emulated services would not be atomic."""


def guard_moto() -> None:
    """Applies every guard of this module to this process's moto (each once per process).

    Raises:
        MotoGuardError: If the installed moto lacks what a guard patches.
    """
    atomic_conditional_puts()
    atomic_dynamodb_items()
    atomic_queues()


def _require(owner: Any, names: tuple[str, ...], what: str) -> None:
    missing = [name for name in names if not hasattr(owner, name)]
    if missing:
        raise MotoGuardError(
            f"cannot make moto {_moto_version()}'s {what} atomic: {getattr(owner, '__name__', owner)} has no "
            f"{', '.join(missing)} "
            f"(the guards support moto {SUPPORTED_MOTO}; install a moto in that range)"
        )


def _moto_version() -> str:
    import moto

    return str(getattr(moto, "__version__", "unknown"))


def atomic_conditional_puts() -> None:
    """Makes moto's server check ``If-None-Match`` / ``If-Match`` and write an object in one step, as S3 does.

    Raises:
        MotoGuardError: If moto's ``S3Response.put_object`` is missing.
    """
    from moto.s3.responses import S3Response

    with _installing:
        _require(S3Response, ("put_object",), "S3 conditional puts")
        if getattr(S3Response.put_object, "_sleeper_guarded", False):
            return
        original = S3Response.put_object
        lock = threading.Lock()

        def put_object(self: S3Response) -> Any:
            headers = getattr(self, "headers", None) or {}
            if headers.get("If-None-Match") is None and headers.get("If-Match") is None:
                return original(self)
            with lock:
                return original(self)

        put_object._sleeper_guarded = True  # type: ignore[attr-defined]
        S3Response.put_object = put_object  # type: ignore[method-assign]


def atomic_dynamodb_items() -> None:
    """Serialises moto's DynamoDB item writes, reads, queries, scans and transactions (see the module docstring).

    Raises:
        MotoGuardError: If moto's DynamoDB backend lacks a method patched, or its models module has no ``copy``.
    """
    import moto.dynamodb.models as models
    from moto.core.model_instances import model_data
    from moto.dynamodb.models import DynamoDBBackend

    with _installing:
        _require(DynamoDBBackend, (*_DYNAMODB_SERIALISED, "transact_write_items"), "DynamoDB items")
        _require(models, ("copy",), "DynamoDB transactions")
        if getattr(DynamoDBBackend.transact_write_items, "_sleeper_guarded", False):
            return
        lock = threading.RLock()
        tracked: list[Any] = list(model_data.get("dynamodb", {}).values())

        def serialised(original: Callable[..., Any]) -> Callable[..., Any]:
            def atomic(*args: Any, **kwargs: Any) -> Any:
                with lock:
                    try:
                        return original(*args, **kwargs)
                    finally:
                        for model in tracked:
                            model.instances_tracked.clear()

            atomic._sleeper_guarded = True  # type: ignore[attr-defined]
            return atomic

        for name in _DYNAMODB_SERIALISED:
            setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
        DynamoDBBackend.transact_write_items = serialised(  # type: ignore[method-assign]
            _rolled_back_by_item(DynamoDBBackend.transact_write_items)
        )


class _NoTableCopy:
    """Stands in for the ``copy`` module inside moto's DynamoDB backend: its whole-table backup is not taken."""

    def deepcopy(self, value: Any) -> Any:
        return value


def _rolled_back_by_item(original: Callable[..., Any]) -> Callable[..., Any]:
    """moto's TransactWriteItems without its whole-table backup: the items it names are backed up instead, and put back
    (with the stream records it added dropped) when moto cancels the transaction. Must run under the lock."""
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


def atomic_queues() -> None:
    """Makes moto's SQS receives, visibility changes and deletes atomic per queue, as SQS's are.

    Raises:
        MotoGuardError: If moto's SQS backend or queue lacks a method patched.
    """
    from moto.sqs.models import Queue, SQSBackend

    with _installing:
        _require(SQSBackend, ("receive_message", "change_message_visibility", "get_queue"), "SQS receives")
        _require(Queue, ("delete_message",), "SQS deletes")
        if getattr(SQSBackend.receive_message, "_sleeper_guarded", False):
            return

        def receive_atomically(original: Callable[..., Any]) -> Callable[..., Any]:
            def atomic(backend: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
                with _messages_lock(backend.get_queue(queue_name)):
                    return original(backend, queue_name, *args, **kwargs)

            atomic._sleeper_guarded = True  # type: ignore[attr-defined]
            return atomic

        def delete_atomically(original: Callable[..., Any]) -> Callable[..., Any]:
            def atomic(queue: Queue, *args: Any, **kwargs: Any) -> Any:
                with _messages_lock(queue):
                    return original(queue, *args, **kwargs)

            return atomic

        SQSBackend.receive_message = receive_atomically(SQSBackend.receive_message)  # type: ignore[method-assign]
        SQSBackend.change_message_visibility = receive_atomically(  # type: ignore[method-assign]
            SQSBackend.change_message_visibility
        )
        Queue.delete_message = delete_atomically(Queue.delete_message)  # type: ignore[method-assign]


def _messages_lock(queue: Any) -> Any:
    lock = getattr(queue, "_messages_lock", None)
    if lock is None:
        raise MotoGuardError(
            f"cannot make moto {_moto_version()}'s SQS atomic: its queues have no _messages_lock (the guards support "
            f"moto {SUPPORTED_MOTO}; install a moto in that range)"
        )
    return lock
