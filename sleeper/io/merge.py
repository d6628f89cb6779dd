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

from collections import deque
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core.exceptions import SchemaError
from sleeper.io.sort import KeyOrderer, check_key_columns

__all__ = ["DEFAULT_BATCH_ROWS", "ROUND_ROWS", "merge_sorted"]

DEFAULT_BATCH_ROWS = 65536
"""The default largest number of rows in an output batch."""

ROUND_ROWS = 65536
"""The number of rows a round aims to order at once (more when keys tie), small enough to stay in cache."""


def merge_sorted(
    streams: Sequence[Iterable[pa.RecordBatch]],
    key_names: Sequence[str],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    prefetch_threads: int = 0,
    pipeline: bool = False,
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

    Yields:
        Record batches of rows in key order. Closing the generator early stops the merge and closes the streams.

    Raises:
        SchemaError: If there are no key columns, a key column is missing or the streams' columns differ.
        ValueError: If ``batch_rows`` or ``prefetch_threads`` is out of range.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    if prefetch_threads < 0:
        raise ValueError(f"prefetch_threads must not be negative, got {prefetch_threads}")
    if not key_names:
        raise SchemaError("at least one key column is needed to merge")
    return _merge(list(streams), tuple(key_names), batch_rows, prefetch_threads, pipeline)


def _merge(
    streams: list[Iterable[pa.RecordBatch]],
    key_names: tuple[str, ...],
    batch_rows: int,
    prefetch_threads: int,
    pipeline: bool,
) -> Generator[pa.RecordBatch, None, None]:
    with ExitStack() as cleanup:
        reader = None
        if prefetch_threads and streams:
            reader = cleanup.enter_context(ThreadPoolExecutor(prefetch_threads, thread_name_prefix="merge-read"))
        assembler = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix="merge-take")) if pipeline else None
        schema_check = _SchemaCheck(key_names)
        inputs = [_Input(iter(stream), schema_check, reader) for stream in streams]
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

        while True:
            active = [inp for inp in inputs if inp.batch is not None]
            if len(active) <= 1:
                break
            reach = max(1, round_rows // len(active))
            chosen = [inp.key_at(min(reach, inp.rows) - 1, key_names) for inp in active]
            bound = min(chosen)
            # An input whose batch ends at the bound may have more rows equal to it in its next batch. Those must
            # come out before the rows equal to the bound of every later input, so later inputs keep theirs.
            ends_at_bound = next(
                (
                    i
                    for i, (inp, key) in enumerate(zip(active, chosen, strict=True))
                    if key == bound and inp.ends_at(bound, key_names)
                ),
                len(active),
            )
            pieces: list[pa.RecordBatch] = []
            for i, inp in enumerate(active):
                cut = _count_up_to(inp.current, key_names, bound, inclusive=i <= ends_at_bound)
                if cut:
                    pieces.append(inp.current.slice(0, cut))
                inp.consume(cut)
            yield from emit(output.push(pieces))
        for inp in active:
            while inp.batch is not None:
                yield from emit(output.push([inp.current]))
                inp.consume(inp.rows)
        yield from emit(output.flush())
        yield from emit(None)


def _count_up_to(
    batch: pa.RecordBatch, key_names: tuple[str, ...], bound: tuple[object, ...], *, inclusive: bool
) -> int:
    """The number of leading rows of a sorted batch whose keys are less than (or equal to) ``bound``.

    A binary search on the first key column; where rows tie with the bound on a column, the search narrows to
    those rows and goes on with the next column.
    """
    low, high = 0, batch.num_rows
    last = len(key_names) - 1
    for position, name in enumerate(key_names):
        column = batch.column(name)
        if low or high < len(column):
            column = column.slice(low, high - low)
        needle = pa.scalar(bound[position], type=column.type)
        if position == last:
            return low + int(pc.search_sorted(column, needle, side="right" if inclusive else "left").as_py())
        after = low + int(pc.search_sorted(column, needle, side="right").as_py())
        start = low + int(pc.search_sorted(column, needle, side="left").as_py())
        if start == after:
            return start
        low, high = start, after
    raise AssertionError("unreachable")


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
    """One input stream: what is left of its current batch and, with a thread pool, the batch read ahead."""

    def __init__(
        self, batches: Iterator[pa.RecordBatch], schema_check: _SchemaCheck, reader: ThreadPoolExecutor | None
    ) -> None:
        self._batches = batches
        self._schema_check = schema_check
        self._reader = reader
        self._ahead: Future[pa.RecordBatch | None] | None = None
        self._exhausted = False
        self.batch: pa.RecordBatch | None = None

    def start(self) -> None:
        if self._reader is not None:
            self._ahead = self._reader.submit(self._read)
        self.batch = self._fetch()

    @property
    def current(self) -> pa.RecordBatch:
        """The current batch, which must exist."""
        batch = self.batch
        assert batch is not None
        return batch

    @property
    def rows(self) -> int:
        """The number of rows left in the current batch."""
        return 0 if self.batch is None else self.batch.num_rows

    def key_at(self, row: int, key_names: tuple[str, ...]) -> tuple[object, ...]:
        batch = self.current
        return tuple(batch.column(name)[row].as_py() for name in key_names)

    def ends_at(self, key: tuple[object, ...], key_names: tuple[str, ...]) -> bool:
        """Tells whether the current batch's last row has this key."""
        return self.key_at(self.rows - 1, key_names) == key

    def consume(self, rows: int) -> None:
        """Drops the first ``rows`` rows of the current batch, fetching the next batch when none are left."""
        batch = self.current
        if rows < batch.num_rows:
            if rows:
                self.batch = batch.slice(rows)
            return
        self.batch = self._fetch()

    def close(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None and not ahead.cancel():
            ahead.exception()
        close = getattr(self._batches, "close", None)
        if callable(close):
            close()

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
                return self._schema_check.check(batch)
        self._exhausted = True
        return None


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
        if self.order is not None:
            data = data.take(pa.array(self.order))
        if isinstance(data, pa.Table):
            (data,) = data.combine_chunks().to_batches()
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

    def push(self, pieces: list[pa.RecordBatch]) -> _Job | None:
        """Adds the slices cut in one round, each sorted, all sorting after every row pushed before."""
        rows = sum(piece.num_rows for piece in pieces)
        if not rows:
            return None
        if not self._rows and len(pieces) == 1 and rows >= self._minimum:
            return _Job(table=pieces[0], order=None, batch_rows=self._batch_rows)
        order = self._order(pieces, rows)
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

    def _order(self, pieces: list[pa.RecordBatch], rows: int) -> np.ndarray:
        if len(pieces) == 1:
            return np.arange(rows, dtype=np.int64)
        first = self._key_names[0]
        bounds = (
            min(piece.column(first)[0].as_py() for piece in pieces),
            max(piece.column(first)[-1].as_py() for piece in pieces),
        )
        table = pa.Table.from_batches(pieces)
        return self._orderer.order([table.column(name) for name in self._key_names], first_column_bounds=bounds)
