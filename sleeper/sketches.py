"""Quantile sketches of the row keys of data files, used to find split points of partitions (spec 1.6).

Every data file has a sidecar ``.sketches`` file holding one DataSketches classic quantiles items sketch (k=1024) per
row key field, in schema order. The file format is Sleeper's: for each row key field, a 4-byte big-endian length
followed by the serialized sketch. Items are serialized as Java's serdes do (``ArrayOfLongsSerDe``: 8-byte
little-endian; ``ArrayOfStringsSerDe``: 4-byte little-endian length then UTF-8; byte arrays as strings), and int keys
are widened to long, so Sleeper's Java and Rust code read these files and this module reads theirs.

**Sampling.** Updating a sketch once per row from Python costs about as much as writing the file, so sketches of
sorted data are built from a systematic sample: every :data:`SAMPLE_STRIDE`-th row (rows 0, stride, 2*stride, ...),
plus the last row so that the sketch's minimum and maximum are exact. A sketch's ``n`` is therefore the number of
sampled rows, not the number of rows in the file. Because every sample stands for ``stride`` rows, sketches merge
without bias only if all of them use the same stride: keep the default. The last row adds at most one sample per file.
A file of at most :data:`SMALL_FILE_ROWS` rows is sketched from every row instead: a stride sample of it would hold
one or two items, whose median is the minimum, so a partition made of such files could never be split. This weighs a
small file's keys up to ``stride`` times more than a large file's in a merged sketch, which moves a split point but
never makes it invalid. On sorted data the stride sample is as accurate as sketching every row (measured worst-decile
rank error under 0.03% on 10M keys).

Keys compare as Python values: ``int`` numerically, ``str`` by code point (the same order as UTF-8 bytes) and
``bytes`` as unsigned bytes, the order of Sleeper's default engine.
"""

from __future__ import annotations

import copy
import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import KeyValue, PrimitiveType, Schema
from sleeper.io.filesystem import read_bytes, write_bytes

__all__ = [
    "SAMPLE_STRIDE",
    "SKETCH_K",
    "SMALL_FILE_ROWS",
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

SAMPLE_STRIDE = 100
"""Every how many rows of sorted data a sketch is updated. The same for every sketch, so that merges are unbiased."""

SMALL_FILE_ROWS = 2 * SAMPLE_STRIDE
"""Files of at most this many rows (twice the stride) are sketched from every row (see the module notes)."""

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
        stride: int = SAMPLE_STRIDE,
    ) -> Sketches:
        """Sketches of sorted data, from every ``stride``-th row and the last row (see the module notes).

        Args:
            schema: The table schema.
            batches: The data in sorted order; each must hold the row key columns.
            stride: The sampling stride; keep the default so the sketches merge with others.
        """
        builder = SketchBuilder(schema, stride=stride)
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
        """The number of values the field's sketch was updated with (the sample count, see the module notes)."""
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

    def quantile(self, field: str, rank: float, *, inclusive: bool = True) -> KeyValue | None:
        """The approximate value at a normalized rank.

        Args:
            field: A row key field.
            rank: The rank, from 0 to 1.
            inclusive: Whether the rank includes the weight of the value returned, as the Java library's default
                (``QuantileSearchCriteria.INCLUSIVE``); the Python library's own default is exclusive.

        Returns:
            The value, or None if the sketch is empty.

        Raises:
            ValueError: If the rank is not within [0, 1].
        """
        if not 0.0 <= rank <= 1.0:
            raise ValueError(f"rank must be within [0, 1], got {rank}")
        s = self.sketch(field)
        return None if s.is_empty() else self._value(field, s.get_quantile(rank, inclusive))

    def quantiles(self, field: str, ranks: Sequence[float], *, inclusive: bool = True) -> list[KeyValue]:
        """The approximate values at several normalized ranks (empty if the sketch is empty)."""
        s = self.sketch(field)
        if s.is_empty():
            return []
        return [self._value(field, v) for v in s.get_quantiles(list(ranks), inclusive)]

    def median(self, field: str) -> KeyValue | None:
        """The approximate median of the field, or None if the sketch is empty."""
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
    """Builds sketches incrementally from sorted data, sampling every ``stride``-th row and the last row.

    A file of at most twice the stride rows is sketched from every row instead (see the module notes).

    Feed it the batches of a file in order with :meth:`add`, then call :meth:`finish` once. Only the sampled values
    are converted to Python objects.

    Args:
        schema: The table schema.
        stride: The sampling stride; keep the default (:data:`SAMPLE_STRIDE`) so the sketches merge with others.
        k: The sketches' k.

    Raises:
        ValueError: If the stride is not positive.
    """

    def __init__(self, schema: Schema, *, stride: int = SAMPLE_STRIDE, k: int = SKETCH_K) -> None:
        if stride < 1:
            raise ValueError(f"sketch sampling stride must be positive, got {stride}")
        self._schema = schema
        self._names = schema.row_key_names
        self._stride = stride
        self._k = k
        self._small = 2 * stride
        self._sketches = {name: datasketches.quantiles_items_sketch(k) for name in self._names}
        self._head: list[list[object]] = [[] for _ in self._names]
        self._rows = 0
        self._last: tuple[object, ...] | None = None
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
        n = data.num_rows
        if n == 0:
            return
        first = -self._rows % self._stride
        columns = [data.column(name) for name in self._names]
        if self._rows < self._small:
            head = min(n, self._small - self._rows)
            for values, column in zip(self._head, columns, strict=True):
                values.extend(column.slice(0, head).to_pylist())
        if first < n:
            indices = pa.array(np.arange(first, n, self._stride, dtype=np.int64))
            for name, column in zip(self._names, columns, strict=True):
                deque(map(self._sketches[name].update, column.take(indices).to_pylist()), maxlen=0)
        self._rows += n
        last_sampled = (self._rows - 1) % self._stride == 0
        self._last = None if last_sampled else tuple(column[n - 1].as_py() for column in columns)

    def finish(self) -> Sketches:
        """The sketches of all rows added, including the last row. Can be called once.

        Raises:
            SketchesError: If called twice.
        """
        if self._finished:
            raise SketchesError("sketches have already been finished")
        self._finished = True
        if self._rows <= self._small:
            every_row = {}
            for name, values in zip(self._names, self._head, strict=True):
                sketch = datasketches.quantiles_items_sketch(self._k)
                deque(map(sketch.update, values), maxlen=0)
                every_row[name] = sketch
            return Sketches(self._schema, every_row)
        if self._last is not None:
            for name, value in zip(self._names, self._last, strict=True):
                self._sketches[name].update(value)
        return Sketches(self._schema, self._sketches)
