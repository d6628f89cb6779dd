"""The process's pool of threads that decode row groups read ahead, and the ordered read ahead over it.

The pool runs work in order of priority, then of submission: foreground work (a read whose batches are being taken)
before background work (a read started early, such as a query's next sub-query while the current one is merged),
so background reads only use a core the foreground leaves idle, and never delay it by more than the read a thread
is already running. A background read becomes foreground, with every read of it still waiting, when its first batch
is taken.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from itertools import islice
from typing import Any, TypeVar

import pyarrow as pa

__all__ = ["BACKGROUND", "FOREGROUND", "ReadAhead", "ReadPool", "read_ahead", "read_pool"]

T = TypeVar("T")

FOREGROUND = 0
"""The priority of work whose results are being waited for."""

BACKGROUND = 1
"""The priority of work started early, run only when no foreground work waits."""


class _Task:
    """A function to run, its future, its priority (lowered in place; stale heap entries are skipped) and its place
    in submission order."""

    __slots__ = ("fn", "future", "order", "priority", "queued")

    def __init__(self, fn: Callable[[], Any], future: Future[Any], priority: int, order: int) -> None:
        self.fn: Callable[[], Any] | None = fn
        self.future: Future[Any] | None = future
        self.priority = priority
        self.order = order
        self.queued = True


class ReadPool:
    """A fixed set of daemon threads running submitted functions by priority, then in submission order.

    Args:
        threads: How many threads run work.
        name: The threads' name prefix.
    """

    def __init__(self, threads: int, name: str = "parquet-read") -> None:
        self._condition = threading.Condition(threading.Lock())
        self._heap: list[tuple[int, int, _Task]] = []
        self._order = itertools.count()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(max(1, threads))
        ]
        for thread in self._threads:
            thread.start()

    @property
    def threads(self) -> int:
        """How many threads run work."""
        return len(self._threads)

    def runs_on_current_thread(self) -> bool:
        """Whether the calling thread is one of the pool's."""
        return threading.current_thread() in self._threads

    def submit(self, fn: Callable[[], T], priority: int = FOREGROUND) -> Future[T]:
        """Runs ``fn`` on a thread of the pool, after the work of a lower priority number or submitted earlier with
        the same; the future gives its result or its exception. Cancelling the future before it starts skips it."""
        future: Future[T] = Future()
        with self._condition:
            task = _Task(fn, future, priority, next(self._order))
            heapq.heappush(self._heap, (priority, task.order, task))
            self._condition.notify()
        future.task = task  # type: ignore[attr-defined]
        return future

    def promote(self, future: Future[Any], priority: int = FOREGROUND) -> None:
        """Raises a waiting submission to ``priority``, keeping its place in submission order (no effect on one
        started, finished or already as high)."""
        task: _Task | None = getattr(future, "task", None)
        if task is None:
            return
        with self._condition:
            if task.queued and priority < task.priority:
                task.priority = priority
                heapq.heappush(self._heap, (priority, task.order, task))

    def _work(self) -> None:
        while True:
            with self._condition:
                while True:
                    while not self._heap:
                        self._condition.wait()
                    priority, _, task = heapq.heappop(self._heap)
                    if task.queued and priority == task.priority:
                        task.queued = False
                        break
            # The future refers to its task (for ``promote``): the task lets go of the future and its function here,
            # so that no reference cycle keeps a finished read's batches alive until the cyclic garbage collector
            # runs (memory would grow with every row group read between collections).
            future, fn = task.future, task.fn
            task.future = task.fn = None
            del task
            assert future is not None and fn is not None  # a task is popped to run once
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the waiting caller
                future.set_exception(e)
            else:
                future.set_result(result)
                del result
            del future, fn


_POOL_LOCK = threading.Lock()
_POOL: ReadPool | None = None


def read_pool() -> ReadPool:
    """The process's pool of threads decoding row groups read ahead (``read_plan(readahead=...)``): as many as the
    machine has cores, at least two; made when first needed, and made afresh in a forked child."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ReadPool(max(2, os.cpu_count() or 1))
        return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


class ReadAhead(Iterator[pa.RecordBatch]):
    """The batches of row group reads in order, up to ``readahead`` of them submitted to the pool at once.

    The first reads are submitted when it is made, so several read aheads made together (the files of a sub-query,
    or the next sub-query's) decode side by side before any batch is taken. Made with ``background``, its reads are
    submitted at background priority until its first batch is taken, then every read of it is foreground.

    Closed early, the reads not started are cancelled and those running are waited for (they read the file, which
    the caller closes next); let go of without closing, the reads not started are cancelled. An exception a read
    raised is raised where its batches are taken.
    """

    def __init__(
        self, reads: Iterator[Callable[[], list[pa.RecordBatch]]], readahead: int, *, background: bool = False
    ) -> None:
        self._pool = read_pool()
        self._reads = reads
        self._priority = BACKGROUND if background else FOREGROUND
        self._pending: deque[Future[list[pa.RecordBatch]]] = deque()
        self._batches: Iterator[pa.RecordBatch] = iter(())
        self._closed = False
        for read in islice(reads, max(1, readahead)):
            self._pending.append(self._pool.submit(read, self._priority))

    def __next__(self) -> pa.RecordBatch:
        while True:
            batch = next(self._batches, None)
            if batch is not None:
                return batch
            if not self._pending:
                self.close()
                raise StopIteration
            if self._priority != FOREGROUND:
                self._priority = FOREGROUND
                for future in self._pending:
                    self._pool.promote(future)
            future = self._pending.popleft()
            try:
                batches = future.result()
            except BaseException:
                self.close()
                raise
            following = next(self._reads, None)
            if following is not None:
                self._pending.append(self._pool.submit(following, self._priority))
            self._batches = iter(batches)

    def close(self) -> None:
        """Cancels the reads not started and waits for those running."""
        if self._closed:
            return
        self._closed = True
        pending, self._pending = self._pending, deque()
        self._batches = iter(())
        for future in pending:
            future.cancel()
        if self._pool.runs_on_current_thread():
            return  # closed by a reading thread (a finaliser run there): waiting could wait for itself
        for future in pending:
            if not future.cancelled():
                future.exception()

    def __del__(self) -> None:
        # Let go of without closing: cancel what has not started, without waiting (this may run on any thread,
        # a reading thread running one of these reads among them).
        for future in getattr(self, "_pending", ()):
            future.cancel()


def read_ahead(reads: Iterator[Callable[[], list[pa.RecordBatch]]], readahead: int) -> Iterator[pa.RecordBatch]:
    """The batches of the row group reads in order, up to ``readahead`` of them running at once on the pool (see
    :class:`ReadAhead`: its first reads are submitted now)."""
    return ReadAhead(reads, readahead)
