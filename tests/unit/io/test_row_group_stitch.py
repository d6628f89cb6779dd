"""Row groups encoded in parallel and stitched into one file (sleeper.io.row_group_stitch): the same bytes as
pyarrow's own writer, for every column type, with and without the page index and dictionaries, and through
SortedFileWriter."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.exceptions import UnsupportedSettingError, WriterClosedError
from sleeper.io.filesystem import open_input
from sleeper.io.page_index import FooterIndex, footer_bytes
from sleeper.io.parquet import ParquetSettings, SortedFileWriter
from sleeper.io.row_group_stitch import StitchedParquetWriter
from tests.unit.io.test_parquet_writer import ALL_TYPES_SCHEMA, _all_types_table

LONG_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
)


def _long_table(rows: int) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(0, 3 * rows, 3), pa.int64()),
            "value": pa.array([(i * 7919) % 1000 for i in range(rows)], pa.int64()),
            "payload": [f"payload-{i % 37}-{i}" for i in range(rows)],
        }
    )


def _single_writer(table: pa.Table, options: dict[str, Any], group_rows: list[int]) -> bytes:
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        start = 0
        for rows in group_rows:
            writer.write_table(table.slice(start, rows), row_group_size=max(1, rows))
            start += rows
    return bytes(sink.getvalue().to_pybytes())


def _stitched(table: pa.Table, options: dict[str, Any], group_rows: list[int], threads: int) -> bytes:
    sink = pa.BufferOutputStream()
    writer = StitchedParquetWriter(sink, table.schema, options, threads)
    start = 0
    for rows in group_rows:
        writer.write_table(table.slice(start, rows))
        start += rows
    writer.close()
    return bytes(sink.getvalue().to_pybytes())


def _options(schema: Schema, **changes: Any) -> dict[str, Any]:
    options = {**ParquetSettings(row_group_rows=1000).writer_options(schema), **changes}
    if options.get("use_dictionary"):  # pyarrow takes no column encodings beside a dictionary
        options.pop("column_encoding", None)
    return options


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("sleeper-defaults", {}),
        ("no-page-index", {"write_page_index": False}),
        ("dictionary", {"use_dictionary": ["payload"]}),
        ("snappy-v1-pages", {"compression": "snappy", "compression_level": None, "data_page_version": "1.0"}),
        ("small-pages", {"data_page_size": 512}),
    ],
)
def should_write_the_bytes_pyarrows_writer_writes(threads: int, name: str, changes: dict[str, Any]) -> None:
    # Given rows cut into row groups of different sizes, and a writer's options
    table = _long_table(5000)
    groups = [1000, 1000, 1, 1999, 999, 1]
    options = _options(LONG_SCHEMA, **changes)
    # When the row groups are encoded in parallel and stitched
    stitched = _stitched(table, options, groups, threads)
    # Then the file is byte for byte what pyarrow writes with one writer
    assert stitched == _single_writer(table, options, groups), name


def should_write_the_same_bytes_for_every_column_type() -> None:
    table = _all_types_table(900).cast(arrow_schema(ALL_TYPES_SCHEMA))
    options = _options(ALL_TYPES_SCHEMA, use_dictionary=["key2", "map.key_value.key"])
    groups = [300, 1, 299, 300]
    assert _stitched(table, options, groups, 3) == _single_writer(table, options, groups)


def should_write_a_file_of_no_row_groups_as_pyarrow_does() -> None:
    table = _long_table(0)
    options = _options(LONG_SCHEMA)
    assert _stitched(table, options, [], 2) == _single_writer(table, options, [])


def should_give_a_page_index_that_finds_each_row_groups_pages() -> None:
    # Given a stitched file of several row groups
    table = _long_table(3000)
    data = _stitched(table, _options(LONG_SCHEMA, data_page_size=1, write_batch_size=100), [1000, 1000, 1000], 2)
    metadata = pq.read_metadata(pa.BufferReader(data))
    footer = footer_bytes(metadata)
    assert footer is not None
    index = FooterIndex(footer)
    # When each row group's page index is read from where the footer points
    for group in range(3):
        index.load(group, lambda offset, length: data[offset : offset + length])
        locations = index.locations(group, 0)
        # Then its pages start inside its own column chunk, one after another
        assert locations is not None and len(locations.offsets) > 1
        chunk = metadata.row_group(group).column(0)
        assert locations.offsets[0] == chunk.data_page_offset
        assert locations.ends[-1] == chunk.data_page_offset + chunk.total_compressed_size
    assert pq.read_table(pa.BufferReader(data)).equals(table)


def should_refuse_options_it_cannot_move_the_offsets_of() -> None:
    # Given options writing bloom filters, whose offsets the stitcher does not move
    table = _long_table(100)
    options = _options(LONG_SCHEMA, bloom_filter_options={"key": {"ndv": 100, "fpp": 0.01}})
    sink = pa.BufferOutputStream()
    writer = StitchedParquetWriter(sink, table.schema, options, 1)
    # When a row group is written, or the file closed, Then it is refused
    with pytest.raises(UnsupportedSettingError, match="bloom"):
        writer.write_table(table)
        writer.close()


def should_refuse_writes_once_closed() -> None:
    writer = StitchedParquetWriter(pa.BufferOutputStream(), _long_table(1).schema, _options(LONG_SCHEMA), 1)
    writer.close()
    with pytest.raises(WriterClosedError):
        writer.write_table(_long_table(1))


def should_write_the_same_file_through_sorted_file_writer_with_a_writer_thread_or_without() -> None:
    # Given the same batches written with and without background encoding
    fs = in_memory_filesystem()
    table = _long_table(10_000)
    settings = ParquetSettings(row_group_rows=1500)
    for path, threaded in (("serial.parquet", False), ("threaded.parquet", True)):
        with SortedFileWriter(path, LONG_SCHEMA, filesystem=fs, settings=settings, writer_thread=threaded) as writer:
            for batch in table.to_batches(max_chunksize=700):
                writer.write(batch)
        assert writer.result.row_groups == 7
    # Then the files are the same bytes
    with open_input(fs, "serial.parquet") as serial, open_input(fs, "threaded.parquet") as threaded_file:
        assert serial.read() == threaded_file.read()
