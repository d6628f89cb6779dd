"""A bounded-memory, vectorised k-way merge of sorted streams of Arrow record batches.

Used by compaction (merge sorted files), ingest (merge sorted spills) and queries (merge the files of a partition).

The merge holds one current batch per input and works in rounds. No later row of an input sorts before that input's
current rows, so every row whose key is at most the smallest of one key chosen per input can be emitted now. A
round chooses those keys at most ``ROUND_ROWS / inputs`` rows into each input (or at the input's last row), cuts the
rows up to the smallest of them from every input with a binary search, orders the cut slices' rows by their keys
(:class:`sleeper.io.sort.KeyOrderer`, where numpy's stable sort merely merges the sorted runs) and takes them in that
order. Rounds stay small enough for their data to stay in the CPU cache, and the memory held depends on the number
of inputs and the batch sizes, never on the number of rows. No row is ever converted to a Python object; a round
reads a few key values per input.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import SchemaError
from sleeper.io.sort import KeyOrderer, NotSortedError, check_key_columns, check_sorted, key_at

__all__ = ["DEFAULT_BATCH_ROWS", "ROUND_ROWS", "RowCounter", "merge_sorted"]

DEFAULT_BATCH_ROWS = 65536
"""The default largest number of rows in an output batch."""

ROUND_ROWS = 65536
"""The number of rows a round aims to order at once (more when keys tie), small enough to stay in cache."""


class RowCounter:
    """Counts the rows of batches passing through, a batch at a time (e.g. the rows a merge read)."""

    def __init__(self) -> None:
        self.rows = 0

    def count(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The batches, unchanged, each counted as it passes."""
        for batch in batches:
            self.rows += batch.num_rows
            yield batch


def merge_sorted(
    streams: Sequence[Iterable[pa.RecordBatch]],
    key_names: Sequence[str],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    prefetch_threads: int = 0,
    pipeline: bool = False,
    check_inputs: bool = False,
) -> Generator[pa.RecordBatch, None, None]:
    """Merges streams of record batches, each sorted by the key columns, into one sorted stream.

    The merge is stable: rows with equal keys come out in stream order (all such rows of stream 0 before those of
    stream 1), and in their order within a stream. All batches must have the same column names and types. A single
    stream, or the last stream left, passes through without copying (its batches only re-cut to size).

    Memory: the merge holds one batch per stream (two with ``prefetch_threads``), the rows of one round (two with
    ``pipeline``; a round holds about ``ROUND_ROWS`` rows, but all rows equal to the round's bound) and fewer than
    ``batch_rows`` rows waiting to be emitted. It never depends on the number of rows in the streams.

    Args:
        streams: The inputs, each an iterable of record batches sorted by the keys within and across its batches.
            Empty batches and empty streams are allowed. Streams with a ``close`` method (generators) are closed
            when the merge ends or is closed.
        key_names: The key columns, row keys then sort keys, compared in Sleeper's order (see
            :mod:`sleeper.io.sort`).
        batch_rows: The largest number of rows in an output batch. Output batches hold at least half as many rows,
            except the last.
        prefetch_threads: If positive, each stream's next batch is read ahead on a pool of that many threads, so that
            reading (pyarrow's Parquet decoding releases the GIL) overlaps with merging.
        pipeline: If true, the output batches of one round are assembled (the ``take`` of every column) on a
            background thread while the next round is ordered. This uses a second core.
        check_inputs: If true, every input batch is checked to be sorted, and to start no lower than the previous
            batch of its stream ended (a vectorised pass over the key columns of every row). Otherwise unsorted
            input gives unsorted output.

    Yields:
        Record batches of rows in key order. Closing the generator early stops the merge and closes the streams.

    Raises:
        SchemaError: If there are no key columns, a key column is missing or the streams' columns differ.
        NotSortedError: If ``check_inputs`` is set and an input is not sorted.
        ValueError: If ``batch_rows`` or ``prefetch_threads`` is out of range.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    if prefetch_threads < 0:
        raise ValueError(f"prefetch_threads must not be negative, got {prefetch_threads}")
    if not key_names:
        raise SchemaError("at least one key column is needed to merge")
    return _merge(list(streams), tuple(key_names), batch_rows, prefetch_threads, pipeline, check_inputs)


def _merge(
    streams: list[Iterable[pa.RecordBatch]],
    key_names: tuple[str, ...],
    batch_rows: int,
    prefetch_threads: int,
    pipeline: bool,
    check_inputs: bool,
) -> Generator[pa.RecordBatch, None, None]:
    with ExitStack() as cleanup:
        reader = None
        if prefetch_threads and streams:
            reader = cleanup.enter_context(ThreadPoolExecutor(prefetch_threads, thread_name_prefix="merge-read"))
        assembler = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix="merge-take")) if pipeline else None
        schema_check = _SchemaCheck(key_names)
        inputs = [
            _Input(iter(stream), key_names, schema_check, reader, f"stream {index}" if check_inputs else None)
            for index, stream in enumerate(streams)
        ]
        cleanup.callback(_close_all, inputs)
        output = _Output(batch_rows, key_names)
        in_flight: deque[Future[list[pa.RecordBatch]]] = deque()
        round_rows = min(batch_rows, ROUND_ROWS)
        for inp in inputs:
            inp.start()

        def emit(job: _Job | None) -> Iterator[pa.RecordBatch]:
            if assembler is None:
                if job is not None:
                    yield from job.run()
                return
            if job is not None:
                in_flight.append(assembler.submit(job.run))
            while in_flight and (job is None or len(in_flight) > 1 or in_flight[0].done()):
                yield from in_flight.popleft().result()

        previous: tuple[object, ...] | None = None
        while True:
            active = [inp for inp in inputs if inp.rows]
            if len(active) <= 1:
                break
            reach = max(1, round_rows // len(active))
            chosen = [inp.key_at(min(reach, inp.rows) - 1) for inp in active]
            bound = min(chosen)
            # An input whose batch ends at the bound may have more rows equal to it in its next batch. Those must
            # come out before the rows equal to the bound of every later input, so later inputs keep theirs.
            ends_at_bound = next(
                (
                    i
                    for i, (inp, key) in enumerate(zip(active, chosen, strict=True))
                    if key == bound and inp.ends_at(key)
                ),
                len(active),
            )
            pieces = [inp.take(inp.count_up_to(bound, inclusive=i <= ends_at_bound)) for i, inp in enumerate(active)]
            yield from emit(output.push([piece for piece in pieces if piece.num_rows], previous, bound))
            previous = bound
        for inp in active:
            while inp.rows:
                yield from emit(output.push([inp.take(inp.rows)], None, None))
        yield from emit(output.flush())
        yield from emit(None)


class _KeyColumn:
    """A sorted key column of one batch, read and searched with numpy for integers and pyarrow otherwise."""

    __slots__ = ("_array", "_numbers")

    def __init__(self, array: pa.Array) -> None:
        self._array = array
        self._numbers: np.ndarray | None = None
        if pa.types.is_integer(array.type) and not array.null_count:
            self._numbers = array.to_numpy(zero_copy_only=True)

    def value(self, row: int) -> object:
        if self._numbers is not None:
            return int(self._numbers[row])
        return self._array[row].as_py()

    def search(self, value: object, low: int, high: int, *, right: bool) -> int:
        """The position among rows low to high before which ``value`` goes, after equal values if ``right``."""
        side: Literal["left", "right"] = "right" if right else "left"
        if self._numbers is not None:
            assert isinstance(value, int)
            return low + int(np.searchsorted(self._numbers[low:high], value, side=side))
        if self._array.null_count:
            needle = pa.scalar(value, type=self._array.type)
            return low + int(pc.search_sorted(self._array.slice(low, high - low), needle, side=side).as_py())
        # A binary search reading O(log n) values: pyarrow's search_sorted costs time linear in the slice.
        values = _Values(self._array)
        return bisect_right(values, value, low, high) if right else bisect_left(values, value, low, high)


class _Values:
    """The values of an Arrow array as Python objects, read one at a time (for :mod:`bisect`).

    Python compares ``str`` by code point and ``bytes`` as unsigned bytes, which is Sleeper's order (UTF-8 bytes
    and unsigned bytes).
    """

    __slots__ = ("_array",)

    def __init__(self, array: pa.Array) -> None:
        self._array = array

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, index: int) -> Any:
        return self._array[index].as_py()


class _SchemaCheck:
    """Checks that every batch has the first batch's columns, and that the keys are among them."""

    def __init__(self, key_names: tuple[str, ...]) -> None:
        self._key_names = key_names
        self._schema: pa.Schema | None = None

    def check(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        schema = batch.schema
        if self._schema is None:
            check_key_columns(schema, self._key_names)
            self._schema = schema
            return batch
        if schema is self._schema or schema.equals(self._schema):
            return batch
        if schema.names != self._schema.names or schema.types != self._schema.types:
            raise SchemaError(f"merged streams differ in their columns: {self._schema} and {schema}")
        return pa.RecordBatch.from_arrays(batch.columns, schema=self._schema)


class _Input:
    """One input stream: its current batch, how many rows of it are used up and, with a pool, the batch read ahead."""

    def __init__(
        self,
        batches: Iterator[pa.RecordBatch],
        key_names: tuple[str, ...],
        schema_check: _SchemaCheck,
        reader: ThreadPoolExecutor | None,
        checked_as: str | None,
    ) -> None:
        self._batches = batches
        self._checked_as = checked_as
        self._last_read: tuple[object, ...] | None = None
        self._key_names = key_names
        self._schema_check = schema_check
        self._reader = reader
        self._ahead: Future[pa.RecordBatch | None] | None = None
        self._exhausted = False
        self._batch: pa.RecordBatch | None = None
        self._keys: list[_KeyColumn] = []
        self._used = 0
        self.rows = 0
        """The number of rows left in the current batch; 0 once the stream is finished."""

    def start(self) -> None:
        if self._reader is not None:
            self._ahead = self._reader.submit(self._read)
        self._next_batch()

    def key_at(self, row: int) -> tuple[object, ...]:
        """The key of the row at this position among the rows left."""
        return tuple(column.value(self._used + row) for column in self._keys)

    def ends_at(self, key: tuple[object, ...]) -> bool:
        """Tells whether the last row left has this key."""
        return self.key_at(self.rows - 1) == key

    def count_up_to(self, bound: tuple[object, ...], *, inclusive: bool) -> int:
        """The number of rows left whose keys are less than (or equal to) ``bound``.

        A binary search on the first key column; where rows tie with the bound on a column, the search narrows to
        those rows and goes on with the next column.
        """
        low, high = self._used, self._used + self.rows
        last = len(self._keys) - 1
        for position, column in enumerate(self._keys):
            value = bound[position]
            if position == last:
                return column.search(value, low, high, right=inclusive) - self._used
            start = column.search(value, low, high, right=False)
            after = column.search(value, low, high, right=True)
            if start == after:
                return start - self._used
            low, high = start, after
        raise AssertionError("unreachable")

    def take(self, rows: int) -> pa.RecordBatch:
        """Removes and returns the first ``rows`` rows left, moving on to the next batch when none are left."""
        batch = self._batch
        assert batch is not None
        piece = batch.slice(self._used, rows) if rows < batch.num_rows else batch
        self._used += rows
        self.rows -= rows
        if not self.rows:
            self._next_batch()
        return piece

    def close(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None and not ahead.cancel():
            ahead.exception()
        close = getattr(self._batches, "close", None)
        if callable(close):
            close()

    def _next_batch(self) -> None:
        batch = self._fetch()
        self._batch = batch
        self._used = 0
        self.rows = 0 if batch is None else batch.num_rows
        self._keys = [] if batch is None else [_KeyColumn(batch.column(name)) for name in self._key_names]

    def _fetch(self) -> pa.RecordBatch | None:
        if self._ahead is None:
            return self._read()
        batch = self._ahead.result()
        self._ahead = None
        if batch is not None and self._reader is not None:
            self._ahead = self._reader.submit(self._read)
        return batch

    def _read(self) -> pa.RecordBatch | None:
        if self._exhausted:
            return None
        for batch in self._batches:
            if batch.num_rows:
                batch = self._schema_check.check(batch)
                if self._checked_as is not None:
                    self._check_sorted(batch, self._checked_as)
                return batch
        self._exhausted = True
        return None

    def _check_sorted(self, batch: pa.RecordBatch, what: str) -> None:
        check_sorted(batch, self._key_names, what=f"a batch of {what}")
        first = key_at(batch, self._key_names, 0)
        if self._last_read is not None and first < self._last_read:
            raise NotSortedError(
                f"{what} is not sorted: a batch starts at {first!r} after one ending at {self._last_read!r}"
            )
        self._last_read = key_at(batch, self._key_names, -1)


def _close_all(inputs: list[_Input]) -> None:
    errors: list[Exception] = []
    for inp in inputs:
        try:
            inp.close()
        except Exception as error:
            errors.append(error)
    if errors:
        raise errors[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """Output batches to assemble: the rows of ``table`` in ``order`` (all rows if None), cut to size."""

    table: pa.Table | pa.RecordBatch
    order: np.ndarray | None
    batch_rows: int

    def run(self) -> list[pa.RecordBatch]:
        data = self.table
        if isinstance(data, pa.Table):
            # One copy of the pieces into a batch, then the take: cheaper than a take over the chunks (which
            # concatenates them internally anyway) followed by combining the result's chunks.
            batches = data.to_batches()
            data = batches[0] if len(batches) == 1 else pa.concat_batches(batches)
        if self.order is not None:
            data = data.take(pa.array(self.order))
        rows = data.num_rows
        count = -(-rows // self.batch_rows)
        if count <= 1:
            return [data]
        edges = [rows * i // count for i in range(count + 1)]
        return [data.slice(start, end - start) for start, end in zip(edges[:-1], edges[1:], strict=True)]


class _Output:
    """Orders the rows of each round and groups rounds into output batches of half to all of ``batch_rows`` rows.

    A round of one slice big enough on its own passes through without a copy. Smaller rounds wait, and the rows of
    the waiting rounds are then taken together in one ``take``.
    """

    def __init__(self, batch_rows: int, key_names: tuple[str, ...]) -> None:
        self._batch_rows = batch_rows
        self._minimum = max(1, batch_rows // 2)
        self._key_names = key_names
        self._orderer = KeyOrderer()
        self._pieces: list[pa.RecordBatch] = []
        self._orders: list[np.ndarray] = []
        self._rows = 0

    def push(
        self, pieces: list[pa.RecordBatch], low: tuple[object, ...] | None, high: tuple[object, ...] | None
    ) -> _Job | None:
        """Adds the slices cut in one round: each sorted, all sorting after every row pushed before.

        ``low`` and ``high``, if known, bound the keys of the round's rows.
        """
        rows = sum(piece.num_rows for piece in pieces)
        if not rows:
            return None
        if not self._rows and len(pieces) == 1 and rows >= self._minimum:
            return _Job(table=pieces[0], order=None, batch_rows=self._batch_rows)
        order = self._order(pieces, rows, low, high)
        if self._rows:
            order += self._rows
        self._pieces.extend(pieces)
        self._orders.append(order)
        self._rows += rows
        if self._rows < self._minimum:
            return None
        return self.flush()

    def flush(self) -> _Job | None:
        """Hands over the rows waiting, if any."""
        if not self._rows:
            return None
        table = pa.Table.from_batches(self._pieces)
        order = self._orders[0] if len(self._orders) == 1 else np.concatenate(self._orders)
        self._pieces, self._orders, self._rows = [], [], 0
        return _Job(table=table, order=order, batch_rows=self._batch_rows)

    def _order(
        self, pieces: list[pa.RecordBatch], rows: int, low: tuple[object, ...] | None, high: tuple[object, ...] | None
    ) -> np.ndarray:
        if len(pieces) == 1:
            return np.arange(rows, dtype=np.int64)
        first = self._key_names[0]
        columns = [pa.chunked_array([piece.column(name) for piece in pieces]) for name in self._key_names]
        bounds = None
        if not pa.types.is_integer(columns[0].type):
            bounds = (
                low[0] if low is not None else min(piece.column(first)[0].as_py() for piece in pieces),
                high[0] if high is not None else max(piece.column(first)[-1].as_py() for piece in pieces),
            )
        return self._orderer.order(columns, first_column_bounds=bounds, sorted_runs=len(pieces))
