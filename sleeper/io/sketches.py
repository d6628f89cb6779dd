"""Quantile sketches of the row keys of data files, used to find split points of partitions.

Every data file has a sidecar ``.sketches`` file holding one DataSketches classic quantiles items sketch (k=1024) per
row key field, in schema order. The file format is Sleeper's: for each row key field, a 4-byte big-endian length
followed by the serialized sketch. Items are serialized as Java's serdes do (``ArrayOfLongsSerDe``: 8-byte
little-endian; ``ArrayOfStringsSerDe``: 4-byte little-endian length then UTF-8; byte arrays as strings), and int keys
are widened to long, so Sleeper's Java and Rust code read these files and this module reads theirs.

**Every row, without a loop over rows.** Sleeper updates each file's sketch with every row. Updating a sketch once per
row from Python costs about as much as writing the file, so :class:`SketchBuilder` builds the same sketch from the
algorithm's structure instead. A classic quantiles sketch keeps a base buffer of up to ``2k`` items; when it fills,
the buffer is sorted and every other item, from a random offset, becomes a level-0 block of ``k`` items of weight 2,
carried upwards like a binary counter (two blocks of a level merge, sorted, and zip into one of the next level). For
a column given in sorted order (a file's first row key) a block is a set of row numbers and the merge of two
neighbouring blocks is their concatenation, so numpy computes the row numbers each level holds, and only the values of
rows still held are taken from each batch. For a later row key, in no particular order within the file, the same
steps run on the values (a sort of ``2k`` values per full buffer and per carry). The parts are then written in the
library's serial form and read back as a sketch. The result has the distribution of Sleeper's: ``n`` is the number of
rows, so sketches of files of any sizes merge with the right weights; the minimum and maximum are exact; and a file of
fewer than ``2k`` rows is held exactly.

**Split points as Sleeper picks them.** Sleeper reads quantiles through DataSketches 3.3.0 (the version Spark ships),
whose ``getQuantile(rank)`` returns the item at position ``floor(rank * n)`` of the sorted stream (0-based), and the
minimum and maximum for ranks 0 and 1; :meth:`Sketches.median` follows that rule, which is this library's
``get_quantile(rank, inclusive=False)``.

Keys compare as Python values: ``int`` numerically, ``str`` by code point (the same order as UTF-8 bytes) and
``bytes`` as unsigned bytes, the order of Sleeper's default engine.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs

from sleeper.core import KeyValue, PrimitiveType, Schema, SleeperError
from sleeper.io.filesystem import read_bytes, write_bytes

__all__ = [
    "SKETCH_K",
    "UNION_MAX_K",
    "BytesSerDe",
    "LongsSerDe",
    "SketchBuilder",
    "Sketches",
    "SketchesError",
    "StringsSerDe",
    "serde_for",
    "sketches_path",
]

SKETCH_K = 1024
"""The k of every sketch, as in Sleeper."""

UNION_MAX_K = 16384
"""The largest k of a merged sketch, as Sleeper's ``ItemsUnion``; merging sketches of k=1024 keeps k=1024."""

QuantilesSketch = Any
"""A ``datasketches.quantiles_items_sketch`` (the library has no type hints)."""


class SketchesError(SleeperError):
    """A sketches file cannot be read, or sketches do not match the schema."""


class LongsSerDe(datasketches.PyObjectSerDe):  # type: ignore[misc]
    """Java's ``ArrayOfLongsSerDe`` item format: a signed 64-bit little-endian integer."""

    def get_size(self, item: int) -> int:
        return 8

    def to_bytes(self, item: int) -> bytes:
        return struct.pack("<q", item)

    def from_bytes(self, data: bytes, offset: int) -> tuple[int, int]:
        return struct.unpack_from("<q", data, offset)[0], 8


class StringsSerDe(datasketches.PyObjectSerDe):  # type: ignore[misc]
    """Java's ``ArrayOfStringsSerDe`` item format: a 4-byte little-endian byte length, then the UTF-8 bytes."""

    def get_size(self, item: str) -> int:
        return 4 + len(item.encode("utf-8"))

    def to_bytes(self, item: str) -> bytes:
        encoded = item.encode("utf-8")
        return struct.pack("<i", len(encoded)) + encoded

    def from_bytes(self, data: bytes, offset: int) -> tuple[str, int]:
        (length,) = struct.unpack_from("<i", data, offset)
        _check_length(length, offset, data)
        return bytes(data[offset + 4 : offset + 4 + length]).decode("utf-8"), 4 + length


class BytesSerDe(datasketches.PyObjectSerDe):  # type: ignore[misc]
    """Sleeper's byte array item format (as strings): a 4-byte little-endian length, then the bytes."""

    def get_size(self, item: bytes) -> int:
        return 4 + len(item)

    def to_bytes(self, item: bytes) -> bytes:
        return struct.pack("<i", len(item)) + item

    def from_bytes(self, data: bytes, offset: int) -> tuple[bytes, int]:
        (length,) = struct.unpack_from("<i", data, offset)
        _check_length(length, offset, data)
        return bytes(data[offset + 4 : offset + 4 + length]), 4 + length


def _check_length(length: int, offset: int, data: bytes) -> None:
    if length < 0 or offset + 4 + length > len(data):
        raise SketchesError(f"sketch item length {length} at offset {offset} runs past the end of the data")


_SERDES: dict[PrimitiveType, type[datasketches.PyObjectSerDe]] = {
    PrimitiveType.INT: LongsSerDe,
    PrimitiveType.LONG: LongsSerDe,
    PrimitiveType.STRING: StringsSerDe,
    PrimitiveType.BYTE_ARRAY: BytesSerDe,
}


def serde_for(key_type: PrimitiveType) -> datasketches.PyObjectSerDe:
    """The item serde of sketches of a key type (ints are widened to longs).

    A new serde each time: the library reports serde objects still alive when the interpreter exits as leaks.
    """
    return _SERDES[key_type]()


def sketches_path(data_path: str) -> str:
    """The path of a data file's sketches: the file's extension replaced by ``.sketches`` (added if it has none).

    ``s3a://bucket/t/data/partition_root/x.parquet`` gives ``s3a://bucket/t/data/partition_root/x.sketches``.
    """
    slash = data_path.rfind("/")
    dot = data_path.rfind(".")
    if dot > slash + 1:
        return data_path[:dot] + ".sketches"
    return data_path + ".sketches"


class Sketches:
    """One quantiles sketch per row key field of a table.

    Args:
        schema: The table schema.
        sketches: A ``datasketches.quantiles_items_sketch`` per row key field name.

    Raises:
        SketchesError: If the sketches are not exactly one per row key field.
    """

    __slots__ = ("_schema", "_sketches")

    def __init__(self, schema: Schema, sketches: Mapping[str, QuantilesSketch]) -> None:
        if set(sketches) != set(schema.row_key_names):
            raise SketchesError(
                f"sketches are for fields {sorted(sketches)}, the schema's row keys are {list(schema.row_key_names)}"
            )
        self._schema = schema
        self._sketches = {name: sketches[name] for name in schema.row_key_names}

    @classmethod
    def empty(cls, schema: Schema, *, k: int = SKETCH_K) -> Sketches:
        """Empty sketches of every row key field."""
        return cls(schema, {name: datasketches.quantiles_items_sketch(k) for name in schema.row_key_names})

    @classmethod
    def from_sorted_batches(
        cls,
        schema: Schema,
        batches: Iterable[pa.RecordBatch | pa.Table],
        *,
        seed: int | None = None,
    ) -> Sketches:
        """Sketches of every row of data sorted by its row keys (see :class:`SketchBuilder`).

        Args:
            schema: The table schema.
            batches: The data in sorted order; each must hold the row key columns.
            seed: Seeds the sketches' random zips (tests); random if omitted.
        """
        builder = SketchBuilder(schema, seed=seed)
        for batch in batches:
            builder.add(batch)
        return builder.finish()

    @property
    def schema(self) -> Schema:
        """The table schema."""
        return self._schema

    def sketch(self, field: str) -> QuantilesSketch:
        """The ``datasketches.quantiles_items_sketch`` of a row key field.

        Raises:
            SketchesError: If the field is not a row key.
        """
        try:
            return self._sketches[field]
        except KeyError:
            raise SketchesError(f"no sketch for {field!r}: the row keys are {list(self._sketches)}") from None

    def count(self, field: str) -> int:
        """The number of values the field's sketch was updated with: the rows sketched."""
        return int(self.sketch(field).n)

    def is_empty(self) -> bool:
        """Whether no value was ever added."""
        return all(s.is_empty() for s in self._sketches.values())

    def min(self, field: str) -> KeyValue | None:
        """The smallest value of the field, or None if the sketch is empty."""
        s = self.sketch(field)
        return None if s.is_empty() else self._value(field, s.get_min_value())

    def max(self, field: str) -> KeyValue | None:
        """The largest value of the field, or None if the sketch is empty."""
        s = self.sketch(field)
        return None if s.is_empty() else self._value(field, s.get_max_value())

    def quantile(self, field: str, rank: float, *, inclusive: bool = False) -> KeyValue | None:
        """The approximate value at a normalized rank.

        By default as Sleeper reads it (DataSketches 3.3.0's ``getQuantile``): the item at position
        ``floor(rank * n)`` of the sorted stream, 0-based; the minimum for rank 0 and the maximum for rank 1.

        Args:
            field: A row key field.
            rank: The rank, from 0 to 1.
            inclusive: Whether the rank includes the weight of the value returned (newer libraries'
                ``QuantileSearchCriteria.INCLUSIVE``) rather than Sleeper's rule.

        Returns:
            The value, or None if the sketch is empty.

        Raises:
            ValueError: If the rank is not within [0, 1].
        """
        if not 0.0 <= rank <= 1.0:
            raise ValueError(f"rank must be within [0, 1], got {rank}")
        s = self.sketch(field)
        return None if s.is_empty() else self._value(field, self._quantile(s, rank, inclusive))

    def quantiles(self, field: str, ranks: Sequence[float], *, inclusive: bool = False) -> list[KeyValue]:
        """The approximate values at several normalized ranks (empty if the sketch is empty), as :meth:`quantile`."""
        s = self.sketch(field)
        if s.is_empty():
            return []
        for rank in ranks:
            if not 0.0 <= rank <= 1.0:
                raise ValueError(f"rank must be within [0, 1], got {rank}")
        return [self._value(field, self._quantile(s, rank, inclusive)) for rank in ranks]

    @staticmethod
    def _quantile(sketch: QuantilesSketch, rank: float, inclusive: bool) -> Any:
        if not inclusive and rank == 0.0:
            return sketch.get_min_value()
        if not inclusive and rank == 1.0:
            return sketch.get_max_value()
        return sketch.get_quantile(rank, inclusive)

    def median(self, field: str) -> KeyValue | None:
        """The approximate median of the field as Sleeper's splitter reads it (``getQuantile(0.5)`` of DataSketches
        3.3.0: the item at position ``floor(n / 2)``), or None if the sketch is empty."""
        return self.quantile(field, 0.5)

    def rank(self, field: str, value: KeyValue, *, inclusive: bool = False) -> float:
        """The approximate normalized rank of a value: the fraction of values less than it (or equal, if inclusive).

        Returns NaN if the sketch is empty.
        """
        return float(self.sketch(field).get_rank(value, inclusive))

    def _value(self, field: str, value: Any) -> KeyValue:
        if isinstance(value, int | str | bytes):
            return value
        raise SketchesError(f"sketch of {field!r} holds a {type(value).__name__}, not a key value")

    def to_bytes(self) -> bytes:
        """The sketches file content: for each row key field, a 4-byte big-endian length and the sketch."""
        parts: list[bytes] = []
        for f in self._schema.row_key_fields:
            data = bytes(self._sketches[f.name].serialize(serde_for(f.primitive_type)))
            parts.append(struct.pack(">i", len(data)))
            parts.append(data)
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, schema: Schema, data: bytes) -> Sketches:
        """Reads the content of a sketches file.

        Raises:
            SketchesError: If the data is truncated, corrupt, or holds more or fewer sketches than row keys.
        """
        sketches: dict[str, QuantilesSketch] = {}
        offset = 0
        for f in schema.row_key_fields:
            if offset + 4 > len(data):
                raise SketchesError(f"sketches data ends before the sketch of {f.name!r}")
            (length,) = struct.unpack_from(">i", data, offset)
            offset += 4
            if length < 0 or offset + length > len(data):
                raise SketchesError(f"sketch of {f.name!r} has length {length}, past the end of the data")
            try:
                sketches[f.name] = datasketches.quantiles_items_sketch.deserialize(
                    bytes(data[offset : offset + length]), serde_for(f.primitive_type)
                )
            except (RuntimeError, ValueError, IndexError, struct.error, UnicodeDecodeError) as e:
                raise SketchesError(f"sketch of {f.name!r} cannot be read: {e}") from None
            offset += length
        if offset != len(data):
            raise SketchesError(f"sketches data has {len(data) - offset} bytes after the last row key's sketch")
        return cls(schema, sketches)

    def write(self, filesystem: pafs.FileSystem, path: str) -> None:
        """Writes the sketches file (replacing any file at the path)."""
        write_bytes(filesystem, path, self.to_bytes())

    @classmethod
    def read(cls, filesystem: pafs.FileSystem, path: str, schema: Schema) -> Sketches:
        """Reads a sketches file.

        Raises:
            MissingFileError: If there is no file at the path.
            SketchesError: If the file cannot be read as sketches of the schema's row keys.
        """
        try:
            return cls.from_bytes(schema, read_bytes(filesystem, path))
        except SketchesError as e:
            raise SketchesError(f"{path}: {e}") from None

    @classmethod
    def merge(cls, sketches: Iterable[Sketches], *, schema: Schema | None = None) -> Sketches:
        """The union of sketches of the same table (such as those of every file in a partition).

        The inputs are not changed. As Sleeper's ``ItemsUnion`` with maxK 16384 does, the union starts as a copy of
        the first non-empty sketch, so it has the k of the inputs (1024); with no non-empty input it is an empty
        sketch of k 16384.

        Args:
            sketches: The sketches to merge.
            schema: The table schema; needed only when there may be no sketches (the result is then empty).

        Raises:
            SketchesError: If there are no sketches and no schema, or the sketches are of different row keys.
        """
        items = list(sketches)
        if schema is None:
            if not items:
                raise SketchesError("cannot merge no sketches without a schema")
            schema = items[0].schema
        for item in items:
            if item.schema.row_key_names != schema.row_key_names:
                raise SketchesError(
                    f"cannot merge sketches of row keys {list(item.schema.row_key_names)} "
                    f"with {list(schema.row_key_names)}"
                )
        unions: dict[str, QuantilesSketch] = {}
        for name in schema.row_key_names:
            union: QuantilesSketch = None
            for item in items:
                sketch = item.sketch(name)
                if sketch.is_empty():
                    continue
                if union is None:  # as ItemsUnion: the first sketch is copied, keeping its k (at most the max k)
                    union = copy.copy(sketch) if sketch.k <= UNION_MAX_K else _downsampled(sketch)
                else:
                    union.merge(sketch)
            unions[name] = union if union is not None else datasketches.quantiles_items_sketch(UNION_MAX_K)
        return cls(schema, unions)

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}: n={s.n}" for name, s in self._sketches.items())
        return f"Sketches({counts})"


def _downsampled(sketch: QuantilesSketch) -> QuantilesSketch:
    union = datasketches.quantiles_items_sketch(UNION_MAX_K)
    union.merge(sketch)
    return union


class SketchBuilder:
    """Builds the sketches of a data file from its rows in sorted order, as Sleeper's sketch of every row would be.

    The result is the sketch that updating a classic quantiles sketch with each row in turn gives (the
    :mod:`module notes <sleeper.io.sketches>` explain how it is built without a per-row loop): ``n`` is the number of
    rows, the minimum and maximum are exact, a file of fewer than ``2k`` rows is held exactly, and a larger one holds
    the same number of items at each level, chosen with the same random zips.

    Feed it the batches of a file in order with :meth:`add`, then call :meth:`finish` once.

    Args:
        schema: The table schema.
        k: The sketches' k.
        seed: Seeds the random zips (tests); random if omitted.
    """

    def __init__(self, schema: Schema, *, k: int = SKETCH_K, seed: int | None = None) -> None:
        if k < 2 or k & (k - 1):
            raise ValueError(f"sketch k must be a power of two of at least 2, got {k}")
        self._schema = schema
        zips = _Zips(np.random.default_rng(seed))
        self._columns: list[_SortedColumn | _AnyColumn] = [
            _SortedColumn(k, zips) if i == 0 else _AnyColumn(k, zips) for i in range(len(schema.row_key_fields))
        ]
        self._rows = 0
        self._finished = False

    @property
    def rows(self) -> int:
        """The number of rows added so far."""
        return self._rows

    def add(self, data: pa.RecordBatch | pa.Table) -> None:
        """Adds the next rows in sorted order; only the row key columns are used.

        Raises:
            SketchesError: If the builder has finished.
            KeyError: If a row key column is missing.
        """
        if self._finished:
            raise SketchesError("cannot add rows to sketches that have been finished")
        if data.num_rows == 0:
            return
        for f, column in zip(self._schema.row_key_fields, self._columns, strict=True):
            values = data.column(f.name)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            column.add(values)
        self._rows += data.num_rows

    def finish(self) -> Sketches:
        """The sketches of all rows added. Can be called once.

        Raises:
            SketchesError: If called twice.
        """
        if self._finished:
            raise SketchesError("sketches have already been finished")
        self._finished = True
        return Sketches(
            self._schema,
            {
                f.name: column.sketch(f.primitive_type)
                for f, column in zip(self._schema.row_key_fields, self._columns, strict=True)
            },
        )


_PREAMBLE = struct.Struct("<BBBBHHQ")
_SERIAL_VERSION = 3
_QUANTILES_FAMILY = 8
_COMPACT_ORDERED = 0x08 | 0x10


def _serialized(
    key_type: PrimitiveType, k: int, n: int, low: object, high: object, base: list[object], levels: list[list[object]]
) -> QuantilesSketch:
    """A classic quantiles items sketch from its parts, in the library's compact serial form (serial version 3, as
    Java's ``ItemsSketch`` and C++'s ``quantiles_sketch`` write it): preamble, ``n``, minimum, maximum, the base
    buffer's items, then ``k`` items of each level whose bit of ``n / 2k`` is set, lowest level first."""
    serde = serde_for(key_type)
    parts = [_PREAMBLE.pack(2, _SERIAL_VERSION, _QUANTILES_FAMILY, _COMPACT_ORDERED, k, 0, n)]
    items = [low, high, *sorted(base)]  # type: ignore[type-var]
    for level in levels:
        items.extend(sorted(level))  # type: ignore[type-var]
    parts.extend(serde.to_bytes(item) for item in items)
    return datasketches.quantiles_items_sketch.deserialize(b"".join(parts), serde)


def _carry_up(levels: list[Any], block: Any, merge: Callable[[Any, Any], Any]) -> None:
    """Adds a full block to level 0 of a quantiles sketch's levels and carries it up as a binary counter does:
    while the level is taken, ``merge(held, block)`` zips the two into one block for the next level."""
    level = 0
    while True:
        if level == len(levels):
            levels.append(None)
        held = levels[level]
        if held is None:
            levels[level] = block
            return
        block = merge(held, block)
        levels[level] = None
        level += 1


class _Zips:
    """The random offsets of the zips (0 or 1), drawn in bulk."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._bits: list[int] = []

    def next(self) -> int:
        if not self._bits:
            self._bits = self._rng.integers(0, 2, 4096, dtype=np.int8).tolist()
        return self._bits.pop()

    def many(self, count: int) -> np.ndarray:
        return self._rng.integers(0, 2, count, dtype=np.int64)


class _SortedColumn:
    """The sketch of a column whose values come in sorted order (a file's first row key), built in row numbers.

    A full base buffer of ``2k`` sorted rows zips to every other row from a random offset, and a carry merges two
    levels of sorted neighbouring ranges, which is their concatenation: so each level holds row numbers that numpy
    computes, and only the values of rows still held are taken from each batch (and dropped once no level holds them).
    """

    def __init__(self, k: int, zips: _Zips) -> None:
        self._k = k
        self._zips = zips
        self._n = 0
        self._levels: list[np.ndarray | None] = []
        self._kept_rows: list[np.ndarray] = []
        self._kept_values: list[pa.Array] = []
        self._kept = 0
        self._low: object = None
        self._high: object = None

    def add(self, values: pa.Array) -> None:
        start, count, k = self._n, len(values), self._k
        two_k = 2 * k
        if start == 0:
            self._low = values[0].as_py()
        self._high = values[count - 1].as_py()
        first, last = start // two_k, (start + count) // two_k
        if last > first:
            blocks = np.arange(first, last, dtype=np.int64)[:, None] * two_k
            zipped = blocks + self._zips.many(last - first)[:, None] + 2 * np.arange(k, dtype=np.int64)[None, :]
            for block in zipped:
                self._carry(block)
        self._n = start + count
        held = self._held_rows()
        mine = held[(held >= start) & (held < self._n)]
        if len(mine):
            self._kept_rows.append(mine)
            self._kept_values.append(values.take(pa.array(mine - start)))
            self._kept += len(mine)
        if self._kept > 4 * len(held) + 4 * two_k:
            self._prune(held)

    def _carry(self, block: np.ndarray) -> None:
        _carry_up(self._levels, block, lambda held, new: np.concatenate((held, new))[self._zips.next() :: 2])

    def _held_rows(self) -> np.ndarray:
        base_start = self._n - self._n % (2 * self._k)
        parts = [level for level in self._levels if level is not None]
        parts.append(np.arange(base_start, self._n, dtype=np.int64))
        return np.sort(np.concatenate(parts))

    def _prune(self, held: np.ndarray) -> None:
        rows = np.concatenate(self._kept_rows)
        values = pa.concat_arrays(self._kept_values)
        keep = np.isin(rows, held, assume_unique=True)
        self._kept_rows = [rows[keep]]
        self._kept_values = [values.filter(pa.array(keep))]
        self._kept = int(keep.sum())

    def sketch(self, key_type: PrimitiveType) -> QuantilesSketch:
        if self._n == 0:
            return datasketches.quantiles_items_sketch(self._k)
        rows = np.concatenate(self._kept_rows)
        values = pa.concat_arrays(self._kept_values)

        def lookup(wanted: np.ndarray) -> list[object]:  # the kept rows are in row order
            found: list[object] = values.take(pa.array(np.searchsorted(rows, wanted))).to_pylist()
            return found

        base_start = self._n - self._n % (2 * self._k)
        base = lookup(np.arange(base_start, self._n, dtype=np.int64))
        levels = [lookup(level) for level in self._levels if level is not None]
        return _serialized(key_type, self._k, self._n, self._low, self._high, base, levels)


class _AnyColumn:
    """The sketch of a column whose values come in any order (a later row key), built on the values: each full base
    buffer is sorted and zipped, and a carry merges two levels by sorting their values. Integer columns run in numpy
    (the full buffers of a batch sorted at once); strings and byte arrays in pyarrow, a sort per buffer and carry."""

    def __init__(self, k: int, zips: _Zips) -> None:
        self._k = k
        self._zips = zips
        self._n = 0
        self._levels: list[Any] = []
        self._base: list[Any] = []
        self._base_rows = 0
        self._low: object = None
        self._high: object = None

    def add(self, values: pa.Array) -> None:
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        self._low = low if self._low is None or low < self._low else self._low
        self._high = high if self._high is None or high > self._high else self._high
        data: Any = values.to_numpy() if pa.types.is_integer(values.type) else values
        two_k = 2 * self._k
        if self._base_rows:
            fill = min(two_k - self._base_rows, len(data))
            self._base.append(data[:fill])
            self._base_rows += fill
            data = data[fill:]
            if self._base_rows < two_k:
                self._n += len(values)
                return
            full = self._concat(self._base)
            self._base, self._base_rows = [], 0
            self._carry(self._zip(full))
        blocks = len(data) // two_k
        if blocks and isinstance(data, np.ndarray):
            grid = np.sort(data[: blocks * two_k].reshape(blocks, two_k), axis=1)
            picks = self._zips.many(blocks)[:, None] + 2 * np.arange(self._k, dtype=np.int64)[None, :]
            for block in np.take_along_axis(grid, picks, axis=1):
                self._carry(block)
        else:
            for b in range(blocks):
                self._carry(self._zip(data[b * two_k : (b + 1) * two_k]))
        rest = data[blocks * two_k :]
        if len(rest):
            self._base.append(rest)
            self._base_rows = len(rest)
        self._n += len(values)

    @staticmethod
    def _concat(parts: list[Any]) -> Any:
        return np.concatenate(parts) if isinstance(parts[0], np.ndarray) else pa.concat_arrays(parts)

    def _zip(self, values: Any) -> Any:
        if isinstance(values, np.ndarray):
            return np.sort(values)[self._zips.next() :: 2]
        order = pc.sort_indices(values).to_numpy()
        return values.take(pa.array(order[self._zips.next() :: 2]))

    def _carry(self, block: Any) -> None:
        _carry_up(self._levels, block, lambda held, new: self._zip(self._concat([held, new])))

    def sketch(self, key_type: PrimitiveType) -> QuantilesSketch:
        if self._n == 0:
            return datasketches.quantiles_items_sketch(self._k)

        def items(part: Any) -> list[object]:
            listed: list[object] = part.tolist() if isinstance(part, np.ndarray) else part.to_pylist()
            return listed

        base = items(self._concat(self._base)) if self._base else []
        levels = [items(level) for level in self._levels if level is not None]
        return _serialized(key_type, self._k, self._n, self._low, self._high, base, levels)
