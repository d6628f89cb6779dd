from __future__ import annotations

import inspect
import random
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleeper.core.exceptions import SchemaError
from sleeper.io.merge import merge_sorted
from sleeper.io.sort import NotSortedError

KEY_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "large_string": pa.large_string(),
}


@dataclass(frozen=True)
class Case:
    """Sorted streams as lists of batches; every row carries its stream and its position in the stream."""

    streams: list[list[pa.RecordBatch]]
    keys: list[str]


def _stream(
    rows: list[tuple[Any, ...]], keys: list[str], types: list[pa.DataType], stream: int, cuts: list[int]
) -> list[pa.RecordBatch]:
    """Sorts rows by key (stably) and cuts them into batches at the given positions (repeats make empty batches)."""
    rows = sorted(rows)
    columns: dict[str, pa.Array] = {
        name: pa.array([r[i] for r in rows], kind) for i, (name, kind) in enumerate(zip(keys, types, strict=True))
    }
    columns["stream"] = pa.array([stream] * len(rows), pa.int32())
    columns["position"] = pa.array(range(len(rows)), pa.int64())
    columns["payload"] = pa.array([f"s{stream}-{i}" for i in range(len(rows))], pa.string())
    table = pa.table(columns)
    edges = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    return [
        table.slice(a, b - a).combine_chunks().to_batches()[0] if b > a else _empty(table)
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]


def _empty(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=table.schema)


def _expected(case: Case) -> list[tuple[int, int]]:
    """The reference: every row of every stream in stream order, stably sorted by key with Python's comparison."""
    rows: list[tuple[tuple[Any, ...], tuple[int, int]]] = []
    for batches in case.streams:
        for batch in batches:
            keys = [batch.column(name).to_pylist() for name in case.keys]
            ids = zip(batch.column("stream").to_pylist(), batch.column("position").to_pylist(), strict=True)
            rows.extend(zip(zip(*keys, strict=True), ids, strict=True) if keys else [])
    return [ident for _, ident in sorted(rows, key=lambda row: row[0])]


def _identities(batches: Sequence[pa.RecordBatch]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for batch in batches:
        out.extend(zip(batch.column("stream").to_pylist(), batch.column("position").to_pylist(), strict=True))
    return out


def _merge(case: Case, **options: Any) -> list[pa.RecordBatch]:
    return list(merge_sorted([iter(batches) for batches in case.streams], case.keys, **options))


def _random_case(rng: random.Random, streams: int, rows: int, kinds: list[str], *, distinct: int, batch: int) -> Case:
    keys = [f"key{i}" for i in range(len(kinds))]
    types = [KEY_TYPES[k] for k in kinds]
    pools = [_values(rng, kind, distinct) for kind in kinds]
    out = []
    for s in range(streams):
        n = rng.randrange(rows + 1)
        data = [tuple(rng.choice(pool) for pool in pools) for _ in range(n)]
        cuts = [rng.randrange(n + 1) for _ in range(max(1, n // batch))]
        out.append(_stream(data, keys, types, s, cuts))
    return Case(streams=out, keys=keys)


def _values(rng: random.Random, kind: str, distinct: int) -> list[Any]:
    if kind.startswith("int"):
        bits = 31 if kind == "int32" else 63
        return [rng.randrange(-(2**bits), 2**bits) for _ in range(distinct)]
    if kind == "binary":
        return [bytes(rng.randrange(256) for _ in range(rng.randrange(12))) for _ in range(distinct)]
    letters = "aé😀\x00z\u07ff"
    return ["".join(rng.choice(letters) for _ in range(rng.randrange(12))) for _ in range(distinct)]


@pytest.mark.parametrize(
    "kinds",
    [
        ["int64"],
        ["int32"],
        ["string"],
        ["binary"],
        ["large_string"],
        ["string", "int64"],
        ["int32", "binary", "string"],
    ],
)
@pytest.mark.parametrize("distinct", [3, 1000])
def should_merge_sorted_streams_into_one_sorted_stable_stream(kinds: list[str], distinct: int) -> None:
    # Given sorted streams of random keys, with few or many distinct values, cut into batches of random sizes
    case = _random_case(random.Random(f"{kinds}-{distinct}"), 7, 700, kinds, distinct=distinct, batch=60)
    # When merged
    merged = _merge(case, batch_rows=128)
    # Then every row comes out once, by key, rows with equal keys in stream order then in their order in the stream
    assert _identities(merged) == _expected(case)


def should_put_equal_keys_of_earlier_streams_first() -> None:
    # Given three streams holding the same keys
    rows = [("k",), ("k",), ("m",)]
    streams = [_stream(rows, ["key"], [pa.string()], s, [1]) for s in range(3)]
    # When merged
    merged = _merge(Case(streams=streams, keys=["key"]))
    # Then equal keys come out stream by stream
    assert _identities(merged) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (0, 2), (1, 2), (2, 2)]


def should_merge_runs_of_equal_keys_cut_across_batches() -> None:
    # Given streams whose long runs of equal keys span several batches
    rng = random.Random(4)
    streams = []
    for s in range(4):
        rows = [(key,) for key in ("a", "b", "c") for _ in range(rng.randrange(50, 150))]
        streams.append(_stream(rows, ["key"], [pa.string()], s, [rng.randrange(len(rows)) for _ in range(12)]))
    case = Case(streams=streams, keys=["key"])
    # When merged
    merged = _merge(case, batch_rows=40)
    # Then the runs are merged in stream order
    assert _identities(merged) == _expected(case)


def should_merge_many_inputs() -> None:
    # Given 50 sorted streams
    case = _random_case(random.Random(50), 50, 200, ["int64"], distinct=500, batch=30)
    # When merged
    merged = _merge(case, batch_rows=256)
    # Then the result is the sorted union
    assert _identities(merged) == _expected(case)


def should_handle_empty_streams_and_empty_batches() -> None:
    # Given an empty stream, a stream of empty batches and a stream with an empty batch between rows
    schema_source = _stream([("b",), ("d",)], ["key"], [pa.string()], 2, [1, 1, 1])
    empty = _empty(pa.Table.from_batches(schema_source))
    streams = [[], [empty, empty], schema_source]
    # When merged
    merged = _merge(Case(streams=streams, keys=["key"]))
    # Then the rows of the non-empty stream come out, and no batch is empty
    assert _identities(merged) == [(2, 0), (2, 1)]
    assert all(batch.num_rows for batch in merged)


@pytest.mark.parametrize("streams", [0, 3])
def should_yield_nothing_without_rows(streams: int) -> None:
    # Given no streams, or only empty ones
    # When merged
    merged = list(merge_sorted([iter([]) for _ in range(streams)], ["key"]))
    # Then there are no batches
    assert merged == []


def should_pass_a_single_stream_through_without_copying() -> None:
    # Given one stream of batches of the output size
    batches = _stream([(i,) for i in range(300)], ["key"], [pa.int64()], 0, [100, 200])
    # When merged alone
    merged = list(merge_sorted([iter(batches)], ["key"], batch_rows=100))
    # Then the same buffers come out
    assert [b.column("payload").buffers()[2].address for b in merged] == [
        b.column("payload").buffers()[2].address for b in batches
    ]
    assert pa.Table.from_batches(merged).equals(pa.Table.from_batches(batches))


def should_cut_output_batches_to_size() -> None:
    # Given streams whose batches are much bigger and much smaller than the output size
    rng = random.Random(8)
    big = _stream([(rng.randrange(10**6),) for _ in range(2000)], ["key"], [pa.int64()], 0, [1500])
    small = _stream([(rng.randrange(10**6),) for _ in range(300)], ["key"], [pa.int64()], 1, list(range(0, 300, 7)))
    case = Case(streams=[big, small], keys=["key"])
    # When merged into batches of at most 200 rows
    merged = _merge(case, batch_rows=200)
    # Then every batch has 100 to 200 rows except the last, and nothing is lost
    sizes = [b.num_rows for b in merged]
    assert all(100 <= size <= 200 for size in sizes[:-1])
    assert 0 < sizes[-1] <= 200
    assert _identities(merged) == _expected(case)


@pytest.mark.parametrize(("prefetch_threads", "pipeline"), [(2, False), (0, True), (3, True)])
def should_give_the_same_result_with_threads(prefetch_threads: int, pipeline: bool) -> None:
    # Given sorted streams
    case = _random_case(random.Random(12), 6, 2000, ["string"], distinct=300, batch=100)
    # When merged with read-ahead and/or a background take
    merged = _merge(case, batch_rows=500, prefetch_threads=prefetch_threads, pipeline=pipeline)
    # Then the result is the same as without threads
    assert _identities(merged) == _expected(case)


class _Counted:
    """A stream that records how many rows the merge has pulled from it."""

    def __init__(self, batches: list[pa.RecordBatch], counter: list[int]) -> None:
        self._batches = batches
        self._counter = counter

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for batch in self._batches:
            self._counter[0] += batch.num_rows
            yield batch


@pytest.mark.parametrize(("prefetch_threads", "pipeline"), [(0, False), (2, True)])
def should_hold_a_bounded_number_of_rows_however_long_the_streams(prefetch_threads: int, pipeline: bool) -> None:
    # Given 5 streams of 400 batches of 50 rows each, counting the rows the merge pulls
    inputs, batch, batch_rows = 5, 50, 64
    rng = random.Random(21)
    pulled = [0]
    streams = []
    for s in range(inputs):
        keys = sorted(rng.randrange(10**9) for _ in range(400 * batch))
        table = pa.table({"key": keys, "stream": [s] * len(keys)})
        streams.append(_Counted(table.to_batches(max_chunksize=batch), pulled))
    # When merged, tracking rows pulled from the inputs but not yet yielded
    emitted = most_held = 0
    for out in merge_sorted(
        streams, ["key"], batch_rows=batch_rows, prefetch_threads=prefetch_threads, pipeline=pipeline
    ):
        most_held = max(most_held, pulled[0] - emitted)
        emitted += out.num_rows
    # Then everything came out, and at no point did the merge hold more than a few batches per input
    readahead = 1 if prefetch_threads else 0
    rounds_held = 2 if pipeline else 1
    bound = inputs * batch * (1 + readahead + rounds_held) + 2 * batch_rows
    assert emitted == inputs * 400 * batch
    assert most_held <= bound < emitted / 10


def should_close_input_generators_when_closed_early() -> None:
    # Given two generator streams that record being closed
    closed = []

    def stream(tag: int) -> Generator[pa.RecordBatch, None, None]:
        try:
            for start in range(0, 1000, 10):
                yield pa.record_batch({"key": pa.array(range(start, start + 10), pa.int64())})
        finally:
            closed.append(tag)

    inputs = [stream(0), stream(1)]
    merged = merge_sorted(inputs, ["key"], batch_rows=10, prefetch_threads=1)
    # When the consumer stops after the first batch (while still holding the inputs)
    next(merged)
    merged.close()
    # Then both inputs are closed
    assert sorted(closed) == [0, 1]
    assert all(inspect.getgeneratorstate(gen) == inspect.GEN_CLOSED for gen in inputs)


@pytest.mark.parametrize("prefetch_threads", [0, 2])
def should_pass_on_an_input_failure(prefetch_threads: int) -> None:
    # Given a stream that fails after its first batch
    def failing() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch({"key": pa.array([1, 2], pa.int64())})
        raise OSError("disk gone")

    good = [pa.record_batch({"key": pa.array([0, 5], pa.int64())})]
    # When merged
    # Then the failure reaches the consumer
    with pytest.raises(OSError, match="disk gone"):
        list(merge_sorted([iter(good), failing()], ["key"], prefetch_threads=prefetch_threads))


def should_reject_streams_with_different_columns() -> None:
    # Given two streams whose value columns differ in type
    first = [pa.record_batch({"key": pa.array([1], pa.int64()), "v": pa.array(["x"])})]
    second = [pa.record_batch({"key": pa.array([2], pa.int64()), "v": pa.array([1.5])})]
    # When merged
    # Then it is a schema error
    with pytest.raises(SchemaError, match="differ"):
        list(merge_sorted([iter(first), iter(second)], ["key"]))


def should_accept_streams_differing_only_in_metadata_or_nullability() -> None:
    # Given two streams with the same columns, one with schema metadata and a non-nullable field
    schema = pa.schema([pa.field("key", pa.int64(), nullable=False)], metadata={b"origin": b"file"})
    first = [pa.record_batch([pa.array([1, 3], pa.int64())], schema=schema)]
    second = [pa.record_batch({"key": pa.array([2], pa.int64())})]
    # When merged
    merged = list(merge_sorted([iter(first), iter(second)], ["key"]))
    # Then the rows merge under the first stream's schema
    assert pa.Table.from_batches(merged).column("key").to_pylist() == [1, 2, 3]
    assert all(batch.schema.equals(schema, check_metadata=True) for batch in merged)


def should_reject_a_missing_key_column_or_bad_sizes() -> None:
    # Given a stream without the key column
    streams = [iter([pa.record_batch({"other": [1]})])]
    # When merged
    # Then it is a schema error; and sizes out of range are value errors
    with pytest.raises(SchemaError, match="missing"):
        list(merge_sorted(streams, ["key"]))
    with pytest.raises(ValueError, match="batch_rows"):
        merge_sorted([], ["key"], batch_rows=0)
    with pytest.raises(ValueError, match="prefetch_threads"):
        merge_sorted([], ["key"], prefetch_threads=-1)
    with pytest.raises(SchemaError, match="key column"):
        merge_sorted([], [])


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Case, int]:
    kinds = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=3))
    keys = [f"key{i}" for i in range(len(kinds))]
    types = [KEY_TYPES[k] for k in kinds]
    pools: list[st.SearchStrategy[Any]] = []
    for kind in kinds:
        if kind.startswith("int"):
            bits = 31 if kind == "int32" else 63
            pools.append(st.integers(-(2**bits), 2**bits - 1) | st.integers(-2, 2))
        elif kind == "binary":
            pools.append(st.binary(max_size=10) | st.sampled_from([b"", b"\x80", b"\x7f", b"\xff\x00"]))
        else:
            pools.append(st.text(alphabet=st.sampled_from("ab\x00é😀"), max_size=10) | st.sampled_from(["", "a"]))
    row = st.tuples(*pools)
    streams = []
    for s in range(draw(st.integers(0, 5))):
        rows = draw(st.lists(row, max_size=40))
        cuts = draw(st.lists(st.integers(0, 40), max_size=6))
        streams.append(_stream(rows, keys, types, s, cuts))
    return Case(streams=streams, keys=keys), draw(st.integers(1, 30))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_cases())
def should_equal_a_stable_sort_of_all_streams(drawn: tuple[Case, int]) -> None:
    # Given any sorted streams of rows with one to three key columns, cut into batches anyhow
    case, batch_rows = drawn
    # When merged
    merged = _merge(case, batch_rows=batch_rows, check_inputs=True)
    # Then the inputs pass the checks, and the rows come out as a stable sort of all streams in stream order would
    # give them, in batches of size
    assert _identities(merged) == _expected(case)
    assert all(0 < batch.num_rows <= batch_rows for batch in merged)


@pytest.mark.parametrize("prefetch_threads", [0, 1])
def should_reject_unsorted_inputs_when_checking(prefetch_threads: int) -> None:
    # Given a stream sorted within its batches but not across them, and a stream unsorted within a batch
    across = [pa.record_batch({"key": pa.array([1, 5], pa.int64())}), pa.record_batch({"key": pa.array([4, 9])})]
    within = [pa.record_batch({"key": pa.array([3, 2], pa.int64())})]
    good = [pa.record_batch({"key": pa.array([0, 10], pa.int64())})]
    # When merged with checks
    # Then each is reported with its stream
    with pytest.raises(NotSortedError, match="stream 1 is not sorted: a batch starts at"):
        list(merge_sorted([iter(good), iter(across)], ["key"], check_inputs=True, prefetch_threads=prefetch_threads))
    with pytest.raises(NotSortedError, match="a batch of stream 0 is not sorted"):
        list(merge_sorted([iter(within), iter(good)], ["key"], check_inputs=True, prefetch_threads=prefetch_threads))
    assert len(pa.Table.from_batches(merge_sorted([iter(across)], ["key"]))) == 4
