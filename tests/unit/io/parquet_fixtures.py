"""Builders of schemas, sorted rows and instrumented in-memory filesystems for the Parquet and sketch tests."""

from __future__ import annotations

import io
import random
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from sleeper.adapters.memory.filesystem import InMemoryFileSystemHandler
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema

STRING_ALPHABET = ["a", "b", "z", "A", "0", "é", "\u00ff", "\u0100", "\uffef", "\U0001f600", "\x00"]
"""Characters whose UTF-8 byte order differs from their UTF-16 order (the emoji) and from signed-byte order."""

BYTE_ALPHABET = [0x00, 0x01, 0x41, 0x7F, 0x80, 0xC3, 0xFF]
"""Bytes on both sides of 0x80, where signed and unsigned byte order disagree."""


KEY_TYPES = [PrimitiveType.INT, PrimitiveType.LONG, PrimitiveType.STRING, PrimitiveType.BYTE_ARRAY]
"""The primitive types a key column may have."""


def next_key(value: KeyValue) -> KeyValue:
    """The smallest value after another, to turn inclusive/exclusive bounds into the canonical form."""
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "\u0000"
    return value + b"\x00"


def random_key(key_type: PrimitiveType, rng: random.Random) -> KeyValue:
    """A random key of a type, drawn from a small domain so that ranges catch duplicates."""
    if key_type is PrimitiveType.INT:
        return int(rng.choice([-(2**31), 2**31 - 1, *range(-50, 50)]))
    if key_type is PrimitiveType.LONG:
        return int(rng.choice([-(2**63), 2**63 - 1, *range(-50, 50)]))
    if key_type is PrimitiveType.STRING:
        return "".join(rng.choice(STRING_ALPHABET) for _ in range(rng.randint(0, 3)))
    return bytes(rng.choice(BYTE_ALPHABET) for _ in range(rng.randint(0, 3)))


def key_schema(key_type: PrimitiveType, *, second_key: PrimitiveType | None = None) -> Schema:
    """A schema with row key ``key`` (and ``key2``), sort key ``sort`` and nullable value ``value``."""
    row_keys = [Field("key", key_type)]
    if second_key is not None:
        row_keys.append(Field("key2", second_key))
    return Schema.of(
        row_keys=row_keys,
        sort_keys=[Field("sort", PrimitiveType.LONG)],
        values=[Field("value", PrimitiveType.STRING, nullable=True)],
    )


_ARROW = {
    PrimitiveType.INT: pa.int32(),
    PrimitiveType.LONG: pa.int64(),
    PrimitiveType.STRING: pa.string(),
    PrimitiveType.BYTE_ARRAY: pa.binary(),
}


def sorted_rows(schema: Schema, rows: int, seed: int) -> list[dict[str, Any]]:
    """Random rows of a :func:`key_schema` schema, sorted by row keys then sort key with Python's ordering."""
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        row: dict[str, Any] = {f.name: random_key(f.primitive_type, rng) for f in schema.row_key_fields}
        row["sort"] = i
        row["value"] = None if i % 5 == 0 else f"v{i}"
        out.append(row)
    out.sort(key=lambda r: (*(r[name] for name in schema.row_key_names), r["sort"]))
    return out


def rows_table(schema: Schema, rows: list[dict[str, Any]]) -> pa.Table:
    """An Arrow table of rows of a :func:`key_schema` schema."""
    columns = {}
    for f in schema.all_fields:
        assert isinstance(f.type, PrimitiveType)
        columns[f.name] = pa.array([r[f.name] for r in rows], type=_ARROW[f.type])
    return pa.table(columns)


@dataclass
class ReadLog:
    """Byte ranges read from files opened for random access, by path."""

    reads: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, path: str, offset: int, length: int) -> None:
        with self.lock:
            self.reads.setdefault(path, []).append((offset, length))

    def clear(self) -> None:
        with self.lock:
            self.reads.clear()


class _RecordingFile(io.BytesIO):
    def __init__(self, data: bytes, path: str, log: ReadLog) -> None:
        super().__init__(data)
        self._path = path
        self._log = log

    def read(self, size: int | None = -1) -> bytes:
        offset = self.tell()
        out = super().read(size)
        if out:
            self._log.record(self._path, offset, len(out))
        return out


class RecordingFileSystemHandler(InMemoryFileSystemHandler):
    """An in-memory filesystem that records the byte ranges read through random access files."""

    def __init__(self, log: ReadLog) -> None:
        super().__init__()
        self.log = log

    def open_input_file(self, path: str) -> pa.NativeFile:
        data = self._read(path)
        return pa.PythonFile(_RecordingFile(data, path.strip("/"), self.log), mode="r")


def recording_filesystem() -> tuple[pafs.FileSystem, ReadLog]:
    """An in-memory filesystem and the log of the byte ranges read from it."""
    log = ReadLog()
    return pafs.PyFileSystem(RecordingFileSystemHandler(log)), log
