"""The process's pool of threads that decode row groups read ahead, and the ordered read ahead over it."""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice

import pyarrow as pa

__all__ = ["read_ahead", "read_pool"]

_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def read_pool() -> ThreadPoolExecutor:
    """The process's pool of threads decoding row groups read ahead (``read_plan(readahead=...)``): as many as the
    machine has cores, at least two; made when first needed, and made afresh in a forked child."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(2, os.cpu_count() or 1), thread_name_prefix="parquet-read")
        return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


def read_ahead(reads: Iterator[Callable[[], list[pa.RecordBatch]]], readahead: int) -> Iterator[pa.RecordBatch]:
    """The batches of the row group reads in order, up to ``readahead`` of them running at once on the pool.

    Closed early, the reads not started are cancelled and those running are waited for (they read the file, which
    the caller closes next)."""
    pool = read_pool()
    pending: deque[Future[list[pa.RecordBatch]]] = deque()
    try:
        for read in islice(reads, readahead):
            pending.append(pool.submit(read))
        while pending:
            batches = pending.popleft().result()
            following = next(reads, None)
            if following is not None:
                pending.append(pool.submit(following))
            yield from batches
    finally:
        for future in pending:
            future.cancel()
        for future in pending:
            if not future.cancelled():
                future.exception()
