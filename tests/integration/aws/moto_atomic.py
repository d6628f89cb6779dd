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
        for name in ("transact_write_items", "put_item", "update_item", "delete_item", "query", "batch_write_item"):
            if hasattr(DynamoDBBackend, name):
                patch.setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
        yield
