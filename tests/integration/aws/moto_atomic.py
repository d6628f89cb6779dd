"""A fixture making the in-process moto server's item writes and queries atomic with respect to each other.

moto is not atomic where DynamoDB is: its TransactWriteItems (which the transaction log's append uses, with a
ConditionCheck on the table's tombstone) backs up each table it touches and, when a condition fails, puts the backup
back, undoing every write other threads made meanwhile. A losing append's rollback can so erase a winning,
acknowledged entry (seen in the concurrent log tests: one entry of 73 gone, a gap). Its conditional PutItem checks and
writes without a lock too, so two writers can both pass ``attribute_not_exists`` and the second overwrite the first
(seen: one acknowledged entry of 1,600 gone), and a query can iterate a table another thread is changing
("dictionary changed size during iteration"). Serialising moto's item writes and queries gives it DynamoDB's isolation,
so the concurrency tests test the log head and the adapter, not moto.

moto also keeps every model object it ever made (``BaseModel.instances_tracked``, for its dashboard), and the backup
above is a deep copy of each table, items and stream records included. Each TransactWriteItems so left one more copy
of the whole files log alive: memory grew with the square of the commits (16 writers x 200 commits reached 23.8 GB
and were killed). The serialised calls here forget moto's tracked DynamoDB objects after each call; nothing but moto's
dashboard reads them.

That backup also made each commit cost a copy of the whole log, so the nightly run's time grew with the square of
its commits too (1,297 of 3,200 commits in 37 minutes). Under the lock a transaction needs no copy of the tables:
the fixture backs up only the items the transaction names (and the length of each table's stream) and, if moto
cancels the transaction, puts those items back and drops the stream records it added, as moto's own rollback would.
Import the fixture into a test module and ask for it (``@pytest.mark.usefixtures("atomic_moto_transactions")``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["atomic_moto_transactions"]


@pytest.fixture
def atomic_moto_transactions() -> Iterator[None]:
    """Serialises the in-process moto server's item writes and queries (see the module docstring)."""
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
        for name in ("put_item", "update_item", "delete_item", "query", "batch_write_item"):
            if hasattr(DynamoDBBackend, name):
                patch.setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
        patch.setattr(
            DynamoDBBackend,
            "transact_write_items",
            serialised(_rolled_back_by_item(DynamoDBBackend.transact_write_items)),
        )
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
