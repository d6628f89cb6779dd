"""Sleeper's key order over Arrow data: sorting, checking and comparing rows by row keys then sort keys.

Rows are ordered by the key columns in the order given (a table's row keys, then its sort keys), each ascending:
integers numerically, strings by their UTF-8 bytes and byte arrays by unsigned bytes. That is the order of
pyarrow's own sort, of Parquet statistics and of Sleeper's default (DataFusion) engine, and for the Python values of
a key (:data:`sleeper.core.schema.Key`) it is the order of the built-in tuple comparison.

Sorting is vectorised and stable. Instead of comparing whole strings, :func:`sort_indices` packs the leading key
columns into one unsigned 64-bit code per row: an integer column takes as many bits as its range needs, a string or
binary column whose values have at most 7 bytes after the prefix they all share takes those bytes and the length,
and a longer one takes what bits are left of the 8 bytes after that prefix (which ends the code). Codes never order
two rows against their keys, so sorting the codes orders the rows, and only rows whose codes tie without being
exact are sorted again by pyarrow on their remaining key columns. Rows that are a few sorted runs one after another
(a merge round) are ordered by numpy's stable argsort of the codes, a timsort, which finds the runs and merges them
in close to linear time. Other rows: where the codes leave room, each row's index goes in their low bits and one
unstable numpy sort of those words gives the stable order (codes too wide lose their lowest bits first, which only
makes more of them tie), about twice as fast as the stable argsort on rows in no order; otherwise the stable argsort
orders the codes. On random string keys this is several times faster than pyarrow's sort.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import SchemaError, SleeperError
from sleeper.io.memory import tune_memory_once

__all__ = [
    "KeyOrderer",
    "NotSortedError",
    "check_key_columns",
    "check_sorted",
    "is_sorted",
    "key_at",
    "sort_batch",
    "sort_indices",
    "sort_table",
]

ArrowData: TypeAlias = pa.Table | pa.RecordBatch
_Data = TypeVar("_Data", pa.Table, pa.RecordBatch)
KeyColumn: TypeAlias = pa.Array | pa.ChunkedArray

_TOP_BIT = np.uint64(1 << 63)
_ALL_BITS = np.uint64((1 << 64) - 1)
# _KEEP_BYTES[n] keeps the n leading bytes of a big-endian 64-bit word and clears the rest.
_KEEP_BYTES = np.array([((1 << (8 * n)) - 1) << (64 - 8 * n) for n in range(9)], dtype=np.uint64)
# A round whose tied rows exceed this fraction switches a KeyOrderer to pyarrow's sort for a while.
_TIE_FRACTION_FOR_FALLBACK = 0.5
_FALLBACK_ROUNDS = 16
# Rows concatenated from at most this many sorted runs are ordered by a stable sort, which merges the runs (64k
# rows here: 0.3 ms from 2 runs, 1.2 ms from 16, 2.4 ms from 256, against 2.5-4 ms for the packed sort, which is
# faster from about 1,000 runs, as on unsorted rows).
_MAX_MERGED_RUNS = 256
# Chunks shorter than this on average are concatenated before their strings are coded.
_SMALL_CHUNK_ROWS = 65536
# Codes are packed with row indices for one unstable sort only if at least this many of their bits are kept.
_MIN_PACKED_CODE_BITS = 32


class NotSortedError(SleeperError):
    """Data that had to be sorted by its key columns was not."""


def check_key_columns(schema: pa.Schema, key_names: Sequence[str]) -> None:
    """Checks that a schema has every key column, each at most once.

    Args:
        schema: The Arrow schema of the data.
        key_names: The key columns, row keys then sort keys.

    Raises:
        SchemaError: If there are no key columns, or one is missing or repeated in the schema or in ``key_names``.
    """
    if not key_names:
        raise SchemaError("at least one key column is needed to order rows")
    if len(set(key_names)) != len(key_names):
        raise SchemaError(f"key columns repeat: {list(key_names)}")
    for name in key_names:
        found = schema.get_all_field_indices(name)
        if len(found) != 1:
            problem = "is missing from" if not found else "appears more than once in"
            raise SchemaError(f"key column {name!r} {problem} the data's schema {schema.names}")


def sort_indices(data: ArrowData, key_names: Sequence[str]) -> pa.Array:
    """Computes the row order that sorts data by its key columns.

    The sort is stable: rows with equal keys keep their order.

    Args:
        data: A table or record batch.
        key_names: The key columns, row keys then sort keys.

    Returns:
        An integer array of row indices, to pass to ``take``.

    Raises:
        SchemaError: If a key column is missing.
    """
    check_key_columns(data.schema, key_names)
    columns = [data.column(name) for name in key_names]
    return pa.array(KeyOrderer().order(columns))


def sort_table(data: _Data, key_names: Sequence[str]) -> _Data:
    """Sorts a table or record batch by its key columns (stable).

    Args:
        data: The table or batch to sort.
        key_names: The key columns, row keys then sort keys.

    Returns:
        A table (or batch) with the same rows in key order.

    Raises:
        SchemaError: If a key column is missing.
    """
    if data.num_rows < 2:
        check_key_columns(data.schema, key_names)
        return data
    return data.take(sort_indices(data, key_names))


sort_batch = sort_table
"""Sorts a record batch by its key columns (stable); the same function as :func:`sort_table`."""


def is_sorted(data: ArrowData, key_names: Sequence[str]) -> bool:
    """Tells whether the rows of data are in key order (equal keys allowed), with vectorised comparisons.

    Args:
        data: A table or record batch.
        key_names: The key columns, row keys then sort keys.

    Returns:
        True if every row's key is less than or equal to the next row's key.

    Raises:
        SchemaError: If a key column is missing.
    """
    return _first_out_of_order(data, key_names) is None


def check_sorted(data: ArrowData, key_names: Sequence[str], *, what: str = "data") -> None:
    """Checks that the rows of data are in key order (equal keys allowed).

    Args:
        data: A table or record batch.
        key_names: The key columns, row keys then sort keys.
        what: Names the data in the error message.

    Raises:
        NotSortedError: If a row's key is greater than the next row's, naming the first such pair.
        SchemaError: If a key column is missing.
    """
    row = _first_out_of_order(data, key_names)
    if row is not None:
        raise NotSortedError(
            f"{what} is not sorted by {list(key_names)}: row {row} has key {key_at(data, key_names, row)!r}, "
            f"row {row + 1} has {key_at(data, key_names, row + 1)!r}"
        )


def _first_out_of_order(data: ArrowData, key_names: Sequence[str]) -> int | None:
    """The first row whose key is greater than the next row's key, if any."""
    check_key_columns(data.schema, key_names)
    n = data.num_rows
    if n < 2:
        return None
    in_order: pa.Array | pa.ChunkedArray | None = None
    for name in reversed(key_names):
        column = data.column(name)
        before, after = column.slice(0, n - 1), column.slice(1)
        if in_order is None:
            in_order = pc.less_equal(before, after)
        else:
            in_order = pc.or_(pc.less(before, after), pc.and_(pc.equal(before, after), in_order))
    assert in_order is not None
    if pc.all(in_order).as_py():
        return None
    return int(pc.index(in_order, False).as_py())


def key_at(data: ArrowData, key_names: Sequence[str], row: int) -> tuple[object, ...]:
    """Reads the key of one row as Python values.

    Python compares these tuples in the same order as :func:`sort_indices` sorts rows.

    Args:
        data: A table or record batch.
        key_names: The key columns, row keys then sort keys.
        row: The row index; negative counts from the end.

    Returns:
        The values of the key columns at that row.
    """
    return tuple(data.column(name)[row].as_py() for name in key_names)


@dataclass(slots=True)
class KeyOrderer:
    """Computes stable key orders of rows, remembering across calls whether its coding pays off.

    One instance serves one stream of similar data, such as the rounds of a merge: when the codes of most rows tie
    (many equal keys, or strings that agree beyond their first 8 distinguishing bytes), it sorts with pyarrow for the
    next rounds, then tries codes again.
    """

    _fallback_rounds: int = field(default=0, init=False)

    def order(
        self,
        columns: Sequence[KeyColumn],
        *,
        first_column_bounds: tuple[object, object] | None = None,
        sorted_runs: int | None = None,
    ) -> np.ndarray:
        """Computes the stable order of rows by key columns.

        Args:
            columns: The key columns in key order, all of the same length.
            first_column_bounds: The smallest and largest value of the first column if the caller knows them (a
                merge does, from the ends of its sorted runs); otherwise they are computed when needed.
            sorted_runs: If the rows are that many runs, each sorted by the keys, one after another (a merge round):
                up to :data:`_MAX_MERGED_RUNS` runs, their codes are ordered by numpy's stable sort, a timsort, which
                finds the runs and merges them (several times faster than the packed sort on such rows).

        Returns:
            The indices of the rows in key order, as an int64 numpy array.
        """
        n = len(columns[0])
        if n < 2:
            return np.arange(n, dtype=np.int64)
        tune_memory_once()
        if self._fallback_rounds > 0:
            self._fallback_rounds -= 1
            return _arrow_order(columns)
        merged_runs = sorted_runs is not None and sorted_runs <= _MAX_MERGED_RUNS
        if merged_runs and len(columns) == 1 and pa.types.is_integer(columns[0].type) and not columns[0].null_count:
            # One integer key column: its values order as they are, so the timsort merges them without codes.
            return np.argsort(_integers(columns[0]), kind="stable")
        coded = _encode(columns, first_column_bounds)
        if coded is None:
            return _arrow_order(columns)
        codes, widths, exact_columns = coded
        if sorted_runs is not None and sorted_runs <= _MAX_MERGED_RUNS:
            # Codes never contradict the key order, so each run's codes are sorted too: timsort merges them.
            order = np.argsort(codes, kind="stable")
        else:
            order, codes, exact_columns = _order_codes(codes, widths, exact_columns)
        if exact_columns == len(columns):
            return order
        tied = _resolve_ties(order, codes, columns[exact_columns:])
        if tied > n * _TIE_FRACTION_FOR_FALLBACK:
            self._fallback_rounds = _FALLBACK_ROUNDS
        return order


def _order_codes(codes: np.ndarray, widths: list[int], exact_columns: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The stable order of rows by their codes, the codes it compared and how many leading columns those encode exactly.

    When the codes leave room, each row's index goes in the low bits below its code and one unstable (SIMD) sort of
    those words orders the rows, about twice as fast as numpy's stable argsort (a timsort). Codes too wide for that
    lose their lowest bits first, if at least :data:`_MIN_PACKED_CODE_BITS` are left: equal codes then tie more often
    and the columns the lost bits came from are no longer exact, so the rows they tie are sorted again by the caller.
    Otherwise the codes are ordered by a stable argsort.
    """
    n = len(codes)
    index_bits = max(1, (n - 1).bit_length())
    used_bits = sum(widths)
    drop = max(0, used_bits + index_bits - 64)
    if used_bits - drop < _MIN_PACKED_CODE_BITS and drop:
        return np.argsort(codes, kind="stable"), codes, exact_columns
    if drop:
        codes = codes >> np.uint64(drop)
        # A column stays exact only if none of its bits were dropped: the bits below it are at least ``drop``.
        below = used_bits
        still_exact = 0
        for width in widths[:exact_columns]:
            below -= width
            if below < drop:
                break
            still_exact += 1
        exact_columns = still_exact
    packed = codes << np.uint64(index_bits) if index_bits < 64 else codes.copy()
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= np.uint64((1 << index_bits) - 1)
    return packed.view(np.int64), codes, exact_columns


def _arrow_order(columns: Sequence[KeyColumn]) -> np.ndarray:
    names = [str(i) for i in range(len(columns))]
    table = pa.table(dict(zip(names, columns, strict=True)))
    indices = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in names])
    return np.asarray(indices.to_numpy(), dtype=np.int64)


def _encode(
    columns: Sequence[KeyColumn], first_column_bounds: tuple[object, object] | None
) -> tuple[np.ndarray, list[int], int] | None:
    """Packs the leading key columns into one uint64 code per row whose order never contradicts the key order.

    Returns:
        The codes, the bits each coded column takes (first column in the highest bits, the codes' value below
        ``2 ** sum(widths)``) and how many leading columns they encode exactly (equal codes then mean equal values
        there), or None if the first column cannot be coded.
    """
    codes: np.ndarray | None = None
    used_bits = 0
    widths: list[int] = []
    exact_columns = 0
    for position, column in enumerate(columns):
        if column.null_count:
            break
        kind = column.type
        if pa.types.is_integer(kind):
            values = _as_ordered_uint64(column)
            low, high = int(values.min()), int(values.max())
            width = (high - low).bit_length()
            if used_bits + width > 64:
                break
            part = values - np.uint64(low) if low else values
            codes = part if codes is None else (codes << np.uint64(width)) | part
            used_bits += width
            widths.append(width)
            exact_columns += 1
            continue
        if _is_variable_binary(kind):
            free_bits = 64 - used_bits
            if free_bits < 8:
                break
            bounds = first_column_bounds if position == 0 else None
            part, width, exact = _string_codes(column, _shared_prefix_length(column, bounds), free_bits)
            codes = part if codes is None else (codes << np.uint64(width)) | part
            used_bits += width
            widths.append(width)
            if exact:
                exact_columns += 1
                continue
        break
    if codes is None:
        return None
    return codes, widths, exact_columns


def _is_variable_binary(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
    )


def _integers(column: KeyColumn) -> np.ndarray:
    """An integer column without nulls as one numpy array (its chunks concatenated)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [chunk.to_numpy(zero_copy_only=False) for chunk in chunks if len(chunk)]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _as_ordered_uint64(column: KeyColumn) -> np.ndarray:
    """Maps integers to uint64 so that unsigned comparison keeps their order."""
    values = _integers(column)
    if values.dtype.kind == "u":
        return values.astype(np.uint64, copy=False)
    return values.astype(np.int64, copy=False).view(np.uint64) ^ _TOP_BIT


def _as_bytes(value: object) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes):
        return value
    raise TypeError(f"expected str or bytes, got {type(value).__name__}")


def _shared_prefix_length(column: KeyColumn, bounds: tuple[object, object] | None) -> int:
    """The number of leading bytes every value of the column shares: those of its smallest and largest values."""
    if bounds is None:
        extremes = pc.min_max(column)
        bounds = (extremes["min"].as_py(), extremes["max"].as_py())
    low, high = _as_bytes(bounds[0]), _as_bytes(bounds[1])
    return len(os.path.commonprefix([low, high]))


def _string_codes(column: KeyColumn, skip: int, free_bits: int) -> tuple[np.ndarray, int, bool]:
    """Codes for a string or binary column whose values all start with the same ``skip`` bytes.

    If every value has at most 7 more bytes and the free bits allow, the code is exact: those bytes zero padded,
    then the value's length (a value sorts before its extensions, even by zero bytes). Otherwise it is the leading
    ``free_bits`` bits of the 8 bytes after the first ``skip``, zero padded, and equal codes need a closer look.

    Returns:
        The codes, the bits they use and whether they are exact.
    """
    if isinstance(column, pa.ChunkedArray):
        chunks = [chunk for chunk in column.chunks if len(chunk)]
        # Many small chunks (the slices of a merge round) cost less copied together than coded one by one.
        if len(chunks) > 1 and len(column) < _SMALL_CHUNK_ROWS * len(chunks):
            chunks = [pa.concat_arrays(chunks)]
    else:
        chunks = [column]
    parts = [_prefix_codes_of_array(chunk, skip) for chunk in chunks]
    codes = parts[0][0] if len(parts) == 1 else np.concatenate([codes for codes, _ in parts])
    lengths = parts[0][1] if len(parts) == 1 else np.concatenate([lengths for _, lengths in parts])
    longest = int(lengths.max())
    if longest < 8:
        length_bits = longest.bit_length()
        width = 8 * longest + length_bits
        if width <= free_bits:
            if longest:
                codes >>= np.uint64(64 - 8 * longest)
                codes <<= np.uint64(length_bits)
                codes |= lengths.astype(np.uint64)
            else:
                codes[:] = 0
            return codes, width, True
    if free_bits < 64:
        codes >>= np.uint64(64 - free_bits)
    return codes, free_bits, False


def _prefix_codes_of_array(array: pa.Array, skip: int) -> tuple[np.ndarray, np.ndarray]:
    """The 8 bytes after the first ``skip`` bytes of each value as big-endian numbers, zero padded, and the number of
    bytes each value has after the first ``skip``."""
    n = len(array)
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offset_type = np.dtype(np.int64 if large else np.int32)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type, count=n + 1, offset=array.offset * offset_type.itemsize)
    first, end = int(offsets[0]), int(offsets[-1])
    # Copy the values' bytes into a buffer of whole 8-byte words with a zero word after them, convert the words to
    # native order, and read each value's 8 bytes from the two words that hold them. In-place operations keep the
    # number of temporary arrays small.
    size = end - first
    padded = np.empty((size // 8 + 2) * 8, dtype=np.uint8)
    padded[size:] = 0
    if size:
        padded[:size] = np.frombuffer(buffers[2], dtype=np.uint8, count=size, offset=first)
    words = padded.view(">u8").astype(np.uint64)
    starts = offsets[:-1].astype(np.int64)
    starts -= first - skip
    word_index = starts >> 3
    shift = starts.view(np.uint64)
    shift &= np.uint64(7)
    shift <<= np.uint64(3)
    codes: np.ndarray = words[word_index]
    codes <<= shift
    word_index += 1
    low = words[word_index]
    # low >> (64 - shift) as (low >> 1) >> (63 - shift), which is also right when shift is 0.
    low >>= np.uint64(1)
    np.subtract(np.uint64(63), shift, out=shift)
    low >>= shift
    codes |= low
    remaining = np.diff(offsets).astype(np.int64, copy=False)
    if skip:
        remaining -= skip
    if n and int(remaining.min()) < 8:
        codes &= _KEEP_BYTES[np.clip(remaining, 0, 8)]
    return codes, remaining


def _resolve_ties(order: np.ndarray, codes: np.ndarray, rest: Sequence[KeyColumn]) -> int:
    """Sorts, in place in ``order``, each run of rows with equal codes by the key columns the codes did not settle.

    Returns:
        The number of rows in such runs.
    """
    ordered_codes = codes[order]
    same_as_next = ordered_codes[1:] == ordered_codes[:-1]
    if not same_as_next.any():
        return 0
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] = same_as_next
    tied[:-1] |= same_as_next
    positions = np.flatnonzero(tied)
    group = np.concatenate(([0], np.cumsum(~same_as_next)))[positions]
    rows = order[positions]
    row_indices = pa.array(rows)
    names = ["group"] + [str(i) for i in range(len(rest))]
    table = pa.table([pa.array(group)] + [pc.take(column, row_indices) for column in rest], names=names)
    within = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in names]).to_numpy()
    order[positions] = rows[within]
    return len(positions)
