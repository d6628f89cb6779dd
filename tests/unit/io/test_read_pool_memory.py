"""A read finished on the reading pool is freed as soon as its caller lets go of it, without the cyclic garbage
collector: otherwise every row group read ahead stays in memory until the next collection, and a query's memory grows
with the rows it reads."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sleeper.io.read_pool import ReadAhead, ReadPool


class _Rows:
    """Stands for a decoded row group."""


@pytest.fixture
def no_cyclic_collection() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@pytest.mark.usefixtures("no_cyclic_collection")
def should_free_a_finished_result_once_the_caller_lets_go() -> None:
    # Given a pool that ran a read
    pool = ReadPool(1, name="test-read-pool")
    future = pool.submit(_Rows)
    result = weakref.ref(future.result(timeout=30))
    # When the caller lets go of the future
    del future
    # Then the result is gone at once
    assert result() is None


@pytest.mark.usefixtures("no_cyclic_collection")
def should_hold_only_the_reads_ahead_while_batches_are_taken() -> None:
    # Given a read ahead of 2 over 20 reads, each giving one object
    made: list[weakref.ref[_Rows]] = []

    def read() -> list[_Rows]:
        rows = _Rows()
        made.append(weakref.ref(rows))
        return [rows]  # type: ignore[list-item]

    reads = ReadAhead((read for _ in range(20)), 2)
    # When every batch is taken and let go of
    taken = 0
    most_alive = 0
    for batch in reads:
        taken += 1
        most_alive = max(most_alive, sum(ref() is not None for ref in made))
        del batch
    # Then no more than the batch taken and the reads ahead were ever alive, and none is at the end
    assert taken == 20
    assert most_alive <= 3
    assert sum(ref() is not None for ref in made) == 0
