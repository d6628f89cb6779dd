"""The reading pool runs foreground work before background work (each in submission order), a background read ahead
becomes foreground when its first batch is taken, a read ahead submits its first reads when made, closing one
cancels the reads not started, and a read's error is raised where its batches are taken."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from sleeper.io.read_pool import BACKGROUND, FOREGROUND, ReadAhead, ReadPool, read_pool


def _batch(value: int) -> list[pa.RecordBatch]:
    return [pa.record_batch({"v": pa.array([value], pa.int64())})]


def _blocked(pool: ReadPool) -> threading.Event:
    """Occupies every thread of the pool until the event returned is set."""
    release = threading.Event()
    started = threading.Barrier(pool.threads + 1)

    def hold() -> None:
        started.wait(timeout=10)
        release.wait(timeout=10)

    for _ in range(pool.threads):
        pool.submit(hold)
    started.wait(timeout=10)
    return release


def should_run_foreground_work_before_background_work_each_in_submission_order() -> None:
    # Given a pool of one thread, busy
    pool = ReadPool(1)
    release = _blocked(pool)
    ran: list[str] = []
    # When background and foreground work is submitted, interleaved
    futures = [
        pool.submit(lambda: ran.append("b1"), BACKGROUND),
        pool.submit(lambda: ran.append("f1"), FOREGROUND),
        pool.submit(lambda: ran.append("b2"), BACKGROUND),
        pool.submit(lambda: ran.append("f2"), FOREGROUND),
    ]
    release.set()
    for future in futures:
        future.result(timeout=10)
    # Then the foreground work ran first, then the background work, each in the order submitted
    assert ran == ["f1", "f2", "b1", "b2"]


def should_run_promoted_background_work_as_foreground() -> None:
    pool = ReadPool(1)
    release = _blocked(pool)
    ran: list[str] = []
    background = pool.submit(lambda: ran.append("b"), BACKGROUND)
    foreground = pool.submit(lambda: ran.append("f"), FOREGROUND)
    pool.promote(background)
    release.set()
    foreground.result(timeout=10)
    background.result(timeout=10)
    assert ran == ["b", "f"]


def _reads(values: range, calls: list[int]) -> Iterator[Callable[[], list[pa.RecordBatch]]]:
    for value in values:

        def read(value: int = value) -> list[pa.RecordBatch]:
            calls.append(value)
            return _batch(value)

        yield read


def should_submit_the_first_reads_when_made_and_give_batches_in_order() -> None:
    # Given a read ahead of 3 of 10 reads
    calls: list[int] = []
    ahead = ReadAhead(_reads(range(10), calls), 3)
    # When nothing is taken yet, its first reads still run
    read_pool().submit(lambda: None).result(timeout=10)
    for _ in range(100):
        if len(calls) == 3:
            break
        threading.Event().wait(0.01)
    assert sorted(calls) == [0, 1, 2]
    # Then its batches come in order of the reads
    assert [b["v"][0].as_py() for b in ahead] == list(range(10))


def should_take_a_background_read_ahead_before_foreground_work_once_its_batches_are_taken() -> None:
    # Given a background read ahead whose reads wait behind foreground work on a busy pool
    pool = read_pool()
    release = _blocked(pool)
    ran: list[str] = []

    def read() -> list[pa.RecordBatch]:
        ran.append("ahead")
        return _batch(1)

    ahead = ReadAhead(iter([read]), 1, background=True)
    foreground = pool.submit(lambda: ran.append("foreground"))
    # When its first batch is taken (promoting its reads) and the pool freed
    taken: list[pa.RecordBatch] = []
    taker = threading.Thread(target=lambda: taken.append(next(ahead)))
    taker.start()
    for _ in range(100):
        if ahead._priority == FOREGROUND:
            break
        threading.Event().wait(0.01)
    release.set()
    taker.join(timeout=10)
    foreground.result(timeout=10)
    # Then its read ran before the foreground work submitted after it
    assert ran == ["ahead", "foreground"]
    assert taken[0]["v"][0].as_py() == 1


def should_cancel_the_reads_not_started_when_closed() -> None:
    # Given a read ahead of 4 reads waiting on a busy pool
    pool = read_pool()
    release = _blocked(pool)
    calls: list[int] = []
    ahead = ReadAhead(_reads(range(100), calls), 4)
    # When it is closed before any read ran
    ahead.close()
    release.set()
    pool.submit(lambda: None).result(timeout=10)
    # Then none of its reads ran, and it gives no batch
    assert calls == []
    assert list(ahead) == []


def should_raise_a_reads_error_where_its_batches_are_taken() -> None:
    def failing() -> list[pa.RecordBatch]:
        raise OSError("disk gone")

    calls: list[int] = []
    reads = iter([lambda: _batch(0), failing, *_reads(range(1, 50), calls)])
    ahead = ReadAhead(reads, 2)
    assert next(ahead)["v"][0].as_py() == 0
    with pytest.raises(OSError, match="disk gone"):
        next(ahead)
    # and the read ahead is closed: nothing more is submitted
    assert list(ahead) == []
    assert len(calls) <= 2


def should_not_wait_for_its_running_reads_when_closed_on_a_reading_thread() -> None:
    # Given a read ahead whose one read is running (held until released)
    running, release = threading.Event(), threading.Event()

    def held() -> list[pa.RecordBatch]:
        running.set()
        release.wait(timeout=10)
        return _batch(0)

    ahead = ReadAhead(iter([held]), 1)
    assert running.wait(timeout=10)
    # When it is closed on another of the pool's threads (as a finaliser might be)
    closed = read_pool().submit(ahead.close)
    # Then the close returns while the read still runs (waiting there could wait for a read on its own thread)
    closed.result(timeout=10)
    assert not release.is_set()
    release.set()
