"""The emulator's function lock hands itself to waiters in turn (``sleeper.emulator.functions.TurnLock``)."""

from __future__ import annotations

import threading

import pytest

from sleeper.emulator.functions import TurnLock


def _wait_for_waiters(lock: TurnLock, count: int) -> None:
    seen = threading.Event()
    for _ in range(10_000):
        if lock.waiting() >= count:
            return
        seen.wait(0.001)
    raise AssertionError(f"fewer than {count} threads came to wait for the lock")


def should_hand_the_lock_to_a_waiting_thread_before_its_holder_takes_it_again() -> None:
    # Given a lock held by this thread, and another thread waiting for it
    lock = TurnLock()
    order: list[str] = []
    lock.acquire()
    waiter = threading.Thread(target=lambda: (lock.acquire(), order.append("waiter"), lock.release()))
    waiter.start()
    _wait_for_waiters(lock, 1)
    # When the holder releases it and asks for it again at once
    lock.release()
    lock.acquire()
    order.append("holder")
    lock.release()
    waiter.join()
    # Then the waiting thread had it first
    assert order == ["waiter", "holder"]


def should_let_its_holder_take_it_again_inside_and_release_it_level_by_level() -> None:
    # Given a lock taken twice by one thread
    lock = TurnLock()
    taken = threading.Event()
    with lock, lock:
        other = threading.Thread(target=lambda: (lock.acquire(), taken.set(), lock.release()))
        other.start()
        _wait_for_waiters(lock, 1)
        # When one level is released, the other thread still waits
        lock.release()
        assert not taken.wait(0.05)
        lock.acquire()
    # Then once the last level is released it has the lock
    other.join()
    assert taken.is_set()


def should_refuse_a_release_by_a_thread_that_does_not_hold_it() -> None:
    with pytest.raises(RuntimeError, match="does not hold"):
        TurnLock().release()
