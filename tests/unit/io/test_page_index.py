"""Reading partly covered row groups page by page (sleeper.io.page_index) and the Thrift codec under it."""

from __future__ import annotations

import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sleeper.core.schema import Field, KeyValue, ListType, MapType, PrimitiveType, Schema
from sleeper.io import parquet_reader
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.exceptions import DataFileError
from sleeper.io.filesystem import local_filesystem
from sleeper.io.page_index import FooterIndex, footer_bytes
from sleeper.io.parquet import KeyBounds, ParquetSettings, SortedFileReader, read_sorted
from sleeper.io.thrift_compact import (
    BINARY,
    BOOL,
    I32,
    I64,
    LIST,
    STRUCT,
    Struct,
    decode_struct,
    encode_struct,
)
from tests.unit.io.parquet_fixtures import (
    KEY_TYPES,
    key_schema,
    next_key,
    recording_filesystem,
    rows_table,
    sorted_rows,
)


def _write_paged(
    fs: pafs.FileSystem,
    path: str,
    schema: Schema,
    table: pa.Table,
    *,
    row_group_rows: int = 250,
    settings: ParquetSettings | None = None,
) -> None:
    """Writes a sorted file whose column chunks have many small pages (a page every few rows)."""
    options = (settings or ParquetSettings()).writer_options(schema)
    options["data_page_size"] = 1  # a page for every write batch, whatever the encoding
    with fs.open_output_stream(path) as sink, pq.ParquetWriter(sink, table.schema, write_batch_size=7, **options) as w:
        w.write_table(table, row_group_size=row_group_rows)


def _pages_per_chunk(fs: pafs.FileSystem, path: str) -> int:
    with fs.open_input_file(path) as f:
        metadata = pq.ParquetFile(f).metadata
        index = FooterIndex(footer_bytes(metadata) or b"")
        index.load(0, lambda offset, length: f.read_at(length, offset))
        locations = index.locations(0, 0)
    assert locations is not None
    return len(locations.first_rows)


def _read(fs: pafs.FileSystem, path: str, schema: Schema, regions: Any) -> list[dict[str, Any]]:
    batches = list(read_sorted(path, schema, regions=regions, filesystem=fs, batch_size=40))
    assert all(b.num_rows > 0 for b in batches)
    return pa.Table.from_batches(batches).to_pylist() if batches else []


# ---------------------------------------------------------------------------------------------------------------
# The compact protocol
# ---------------------------------------------------------------------------------------------------------------


def _eager(value: Any) -> Any:
    """A decoded value with every struct's kept bytes dropped, so encoding it writes every field afresh."""
    if isinstance(value, Struct):
        return Struct({k: (t, _eager(v)) for k, (t, v) in value.fields.items()})
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
        return (value[0], [_eager(v) for v in value[1]])
    return value


def should_write_back_a_footer_byte_for_byte_whether_copied_or_encoded_afresh() -> None:
    # Given
    fs, _ = recording_filesystem()
    schema = key_schema(PrimitiveType.STRING)
    _write_paged(fs, "f.parquet", schema, rows_table(schema, sorted_rows(schema, 600, seed=1)))
    with fs.open_input_file("f.parquet") as f:
        raw = footer_bytes(pq.ParquetFile(f).metadata)
    assert raw is not None

    # When
    decoded, end = decode_struct(raw)

    # Then
    assert end == len(raw)
    assert encode_struct(decoded) == raw
    assert encode_struct(_eager(decoded)) == raw


def should_encode_every_kind_of_field_so_it_decodes_to_the_same_values() -> None:
    # Given
    nested = Struct({1: (I32, -5), 2: (BINARY, b"x" * 300)})
    value = Struct(
        {
            1: (I32, -(2**31)),
            2: (I64, 2**62 + 3),
            3: (BOOL, True),
            4: (BOOL, False),
            5: (LIST, (BOOL, [True, False, True])),
            6: (LIST, (I64, list(range(-10, 30)))),
            7: (STRUCT, nested),
            40: (LIST, (STRUCT, [nested, Struct({})])),
            41: (BINARY, b""),
        }
    )

    # When
    decoded, _ = decode_struct(encode_struct(value))

    # Then
    assert _eager(decoded).fields.keys() == value.fields.keys()
    for field_id, (kind, item) in value.fields.items():
        got_kind, got = decoded.fields[field_id]
        assert got_kind == kind
        if kind == STRUCT:
            assert got.fields == item.fields
        elif kind == LIST and item[0] == STRUCT:
            assert [s.fields for s in got[1]] == [s.fields for s in item[1]]
        else:
            assert got == item


# ---------------------------------------------------------------------------------------------------------------
# Reading page by page
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
@pytest.mark.parametrize(
    "settings",
    [
        ParquetSettings(),
        ParquetSettings(writer_version="v1"),
        ParquetSettings(dictionary_row_keys=True, dictionary_values=True),
    ],
    ids=["v2", "v1", "dictionary"],
)
def should_read_exactly_the_rows_of_any_range_from_many_small_pages(
    key_type: PrimitiveType, settings: ParquetSettings
) -> None:
    # Given
    fs, _ = recording_filesystem()
    schema = key_schema(key_type)
    rows = sorted_rows(schema, 1200, seed=3)
    _write_paged(fs, "f.parquet", schema, rows_table(schema, rows), settings=settings)
    assert _pages_per_chunk(fs, "f.parquet") > 5
    keys = sorted({r["key"] for r in rows})
    rng = random.Random(4)

    for _ in range(25):
        # When: a point, and a range between two keys
        point = rng.choice(keys)
        low, high = sorted(rng.sample(keys, 2))
        points = _read(fs, "f.parquet", schema, [[KeyBounds("key", point, next_key(point))]])
        ranged = _read(fs, "f.parquet", schema, [[KeyBounds("key", low, high)]])
        either = _read(fs, "f.parquet", schema, [[KeyBounds("key", low, high)], [KeyBounds("key", point, None)]])

        # Then
        assert points == [r for r in rows if r["key"] == point]
        assert ranged == [r for r in rows if low <= r["key"] < high]
        assert either == [r for r in rows if low <= r["key"] < high or point <= r["key"]]


def should_read_rows_bounded_on_a_second_row_key_with_or_without_the_first() -> None:
    # Given
    fs, _ = recording_filesystem()
    schema = key_schema(PrimitiveType.LONG, second_key=PrimitiveType.STRING)
    rows = sorted_rows(schema, 1000, seed=5)
    _write_paged(fs, "f.parquet", schema, rows_table(schema, rows))
    rng = random.Random(6)

    for _ in range(10):
        low, high = sorted(rng.sample([r["key"] for r in rows], 2))
        second = rng.choice([r["key2"] for r in rows])

        # When
        both = _read(fs, "f.parquet", schema, [[KeyBounds("key", low, high), KeyBounds("key2", second, None)]])
        second_only = _read(fs, "f.parquet", schema, [[KeyBounds("key2", "", second)]])

        # Then
        assert both == [r for r in rows if low <= r["key"] < high and r["key2"] >= second]
        assert second_only == [r for r in rows if r["key2"] < second]


def should_read_list_and_map_fields_page_by_page() -> None:
    # Given
    fs, _ = recording_filesystem()
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)],
        values=[
            Field("tags", ListType(PrimitiveType.STRING)),
            Field("counts", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
        ],
    )
    rng = random.Random(7)
    rows = [
        {
            "key": i // 3,
            "tags": [f"t{rng.randint(0, 9)}" for _ in range(rng.randint(0, 4))],
            "counts": [(f"c{j}", rng.randint(0, 99)) for j in range(rng.randint(0, 3))],
        }
        for i in range(1500)
    ]
    _write_paged(fs, "f.parquet", schema, pa.Table.from_pylist(rows, schema=arrow_schema(schema)))

    for _ in range(20):
        low = rng.randint(0, 499)
        high = low + rng.randint(1, 40)

        # When
        actual = _read(fs, "f.parquet", schema, [[KeyBounds("key", low, high)]])

        # Then
        assert actual == [r for r in rows if low <= r["key"] < high]


def should_decode_only_the_pages_that_can_hold_a_looked_up_key() -> None:
    # Given: one row group of 3000 rows in many pages
    fs, log = recording_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(schema, 3000, seed=8)
    _write_paged(fs, "f.parquet", schema, rows_table(schema, rows), row_group_rows=3000)
    target = rows[1700]["key"]
    with SortedFileReader("f.parquet", schema, filesystem=fs) as reader:
        metadata = reader.parquet_metadata
        chunk_bytes = sum(metadata.row_group(0).column(j).total_compressed_size for j in range(metadata.num_columns))
        data_end = max(
            metadata.row_group(0).column(j).data_page_offset + metadata.row_group(0).column(j).total_compressed_size
            for j in range(metadata.num_columns)
        )
        plan = reader.plan([[KeyBounds("key", target, target + 1)]])
        log.clear()

        # When
        actual = pa.Table.from_batches(list(reader.read_plan(plan))).to_pylist()

    # Then: the rows are exact, and under a tenth of the row group's data pages were read
    assert actual == [r for r in rows if r["key"] == target]
    data_read = sum(length for offset, length in log.reads["f.parquet"] if offset < data_end)
    assert 0 < data_read < chunk_bytes / 10


def should_read_a_file_without_a_page_index_a_row_group_at_a_time() -> None:
    # Given
    fs, log = recording_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(schema, 800, seed=9)
    _write_paged(fs, "f.parquet", schema, rows_table(schema, rows), settings=ParquetSettings(page_index=False))
    target = rows[400]["key"]

    # When
    actual = _read(fs, "f.parquet", schema, [[KeyBounds("key", target, target + 1)]])

    # Then
    assert actual == [r for r in rows if r["key"] == target]


# ---------------------------------------------------------------------------------------------------------------
# Footers kept between reads
# ---------------------------------------------------------------------------------------------------------------


def should_keep_a_local_files_footer_until_the_file_changes(tmp_path: Path) -> None:
    # Given: a file read once, then its footer's magic bytes overwritten with its size and time kept
    schema = key_schema(PrimitiveType.LONG)
    path = tmp_path / "f.parquet"
    rows = sorted_rows(schema, 300, seed=10)
    _write_paged(pafs.LocalFileSystem(), str(path), schema, rows_table(schema, rows))
    assert _read(local_filesystem(), str(path), schema, None) == rows
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[-4:] = b"XXXX"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    # When / Then: the kept footer is used, so the file still reads
    assert _read(local_filesystem(), str(path), schema, None) == rows

    # When / Then: once the file is seen to have changed, it is opened afresh (and found corrupt)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(DataFileError):
        _read(local_filesystem(), str(path), schema, None)


def should_share_one_page_index_between_threads_reading_a_kept_footer_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a file whose footer is kept, and page indexes slow to make (so threads reading at once overlap there)
    schema = key_schema(PrimitiveType.LONG)
    path = str(tmp_path / "f.parquet")
    rows = sorted_rows(schema, 1200, seed=11)
    _write_paged(pafs.LocalFileSystem(), path, schema, rows_table(schema, rows))
    assert _read(local_filesystem(), path, schema, None) == rows  # keeps the footer (a whole read needs no index)
    made: list[FooterIndex] = []

    class SlowIndex(FooterIndex):
        def __init__(self, footer: bytes) -> None:
            threading.Event().wait(0.05)
            super().__init__(footer)
            made.append(self)

    monkeypatch.setattr(parquet_reader, "FooterIndex", SlowIndex)
    keys = sorted({r["key"] for r in rows})
    step = len(keys) // 9
    ranges = [(keys[n * step], keys[n * step + step // 3]) for n in range(8)]
    start = threading.Barrier(len(ranges))

    def read(low: KeyValue, high: KeyValue) -> list[dict[str, Any]]:
        start.wait()
        return _read(local_filesystem(), path, schema, [[KeyBounds("key", low, high)]])

    # When: eight threads read ranges of it at once
    with ThreadPoolExecutor(len(ranges)) as pool:
        results = list(pool.map(lambda r: read(*r), ranges))

    # Then: each read its rows through the one page index made (the row groups loaded into it by any thread)
    assert results == [[r for r in rows if low <= r["key"] < high] for low, high in ranges]
    assert len(made) == 1
