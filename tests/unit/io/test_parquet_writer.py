from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.memory.filesystem import InMemoryFileSystemHandler, in_memory_filesystem
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.properties import table as tp
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema, ValueType
from sleeper.io.exceptions import SchemaMismatchError, UnsupportedSettingError, WriterClosedError
from sleeper.io.filesystem import exists
from sleeper.io.parquet import ParquetSettings, SortedFileWriter, read_sorted
from sleeper.io.sketches import Sketches
from tests.unit.io.parquet_fixtures import KEY_TYPES, key_schema, rows_table, sorted_rows

ALL_TYPES_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING), Field("key2", PrimitiveType.BYTE_ARRAY)],
    sort_keys=[Field("sort", PrimitiveType.INT)],
    values=[
        Field("long", PrimitiveType.LONG),
        Field("maybe_long", PrimitiveType.LONG, nullable=True),
        Field("list", ListType(PrimitiveType.STRING)),
        Field("maybe_list", ListType(PrimitiveType.INT), nullable=True),
        Field("map", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
        Field("maybe_map", MapType(PrimitiveType.BYTE_ARRAY, PrimitiveType.INT), nullable=True),
    ],
)


def _all_types_table(rows: int) -> pa.Table:
    return pa.table(
        {
            "key": [f"k{i:05d}" for i in range(rows)],
            "key2": [bytes([i % 256]) for i in range(rows)],
            "sort": pa.array(range(rows), type=pa.int32()),
            "long": pa.array(range(rows), type=pa.int64()),
            "maybe_long": pa.array([None if i % 3 == 0 else i for i in range(rows)], type=pa.int64()),
            "list": pa.array([[f"e{i}"] * (i % 3) for i in range(rows)], type=pa.list_(pa.string())),
            "maybe_list": pa.array([None if i % 4 == 0 else [i, i] for i in range(rows)], type=pa.list_(pa.int32())),
            "map": pa.array([[("a", i)] for i in range(rows)], type=pa.map_(pa.string(), pa.int64())),
            "maybe_map": pa.array(
                [None if i % 2 else [(b"\xff", i)] for i in range(rows)], type=pa.map_(pa.binary(), pa.int32())
            ),
        }
    )


def _write(fs: pafs.FileSystem, path: str, schema: Schema, data: list[pa.RecordBatch], **kwargs: Any) -> Any:
    with SortedFileWriter(path, schema, filesystem=fs, **kwargs) as writer:
        for batch in data:
            writer.write(batch)
    return writer.result


def _row_group_rows(fs: pafs.FileSystem, path: str) -> list[int]:
    with fs.open_input_file(path) as f:
        metadata = pq.ParquetFile(f).metadata
        return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
def should_write_sorted_rows_of_each_key_type_and_read_them_back(key_type: PrimitiveType) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(key_type)
    expected = rows_table(schema, sorted_rows(schema, 300, seed=1))

    # When
    written = _write(
        fs, "data/f.parquet", schema, expected.to_batches(max_chunksize=37), settings=ParquetSettings(row_group_rows=64)
    )
    actual = pa.Table.from_batches(list(read_sorted("data/f.parquet", schema, filesystem=fs)))

    # Then
    assert actual.to_pylist() == expected.to_pylist()
    assert (written.rows, written.row_groups) == (300, 5)
    assert written.size_bytes == fs.get_file_info("data/f.parquet").size


def should_write_list_and_map_values_and_nullable_values() -> None:
    # Given
    fs = in_memory_filesystem()
    expected = _all_types_table(500)

    # When
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, expected.to_batches(max_chunksize=128))
    actual = pa.Table.from_batches(list(read_sorted("f.parquet", ALL_TYPES_SCHEMA, filesystem=fs)))

    # Then
    assert actual.to_pylist() == expected.to_pylist()


def should_write_required_and_optional_columns_in_schema_order() -> None:
    # Given
    fs = in_memory_filesystem()
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(10).to_batches())

    # When
    with fs.open_input_file("f.parquet") as f:
        parquet_schema = str(pq.ParquetFile(f).schema)

    # Then
    top_level = [line.strip() for line in parquet_schema.splitlines() if line.startswith("  ") and line[2] not in " }"]
    assert top_level == [
        "required binary field_id=-1 key (String);",
        "required binary field_id=-1 key2;",
        "required int32 field_id=-1 sort;",
        "required int64 field_id=-1 long;",
        "optional int64 field_id=-1 maybe_long;",
        "required group field_id=-1 list (List) {",
        "optional group field_id=-1 maybe_list (List) {",
        "required group field_id=-1 map (Map) {",
        "optional group field_id=-1 maybe_map (Map) {",
    ]
    assert "required binary field_id=-1 element (String);" in parquet_schema
    assert "required binary field_id=-1 key (String);" in parquet_schema.split("map (Map)")[1]
    assert "required int32 field_id=-1 value;" in parquet_schema.split("maybe_map (Map)")[1]


def should_store_no_arrow_schema_metadata() -> None:
    # Given
    fs = in_memory_filesystem()
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(10).to_batches())

    # When
    with fs.open_input_file("f.parquet") as f:
        metadata = pq.ParquetFile(f).metadata.metadata

    # Then
    assert not metadata or b"ARROW:schema" not in metadata


@pytest.mark.parametrize("writer_thread", [False, True], ids=["serial", "writer-thread"])
def should_write_row_groups_of_exactly_the_row_limit_whatever_the_batch_sizes(writer_thread: bool) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    table = rows_table(schema, sorted_rows(schema, 1000, seed=2))
    sizes = [1, 7, 333, 0, 50, 128, 127, 1, 353]
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    whole = table.combine_chunks().to_batches()[0]
    batches = [whole.slice(offset, size) for offset, size in zip(offsets, sizes, strict=True)]
    assert sum(b.num_rows for b in batches) == 1000

    # When
    written = _write(
        fs, "f.parquet", schema, batches, settings=ParquetSettings(row_group_rows=128), writer_thread=writer_thread
    )

    # Then
    assert _row_group_rows(fs, "f.parquet") == [128] * 7 + [104]
    assert written.row_groups == 8
    actual = pa.Table.from_batches(list(read_sorted("f.parquet", schema, filesystem=fs)))
    assert actual.to_pylist() == table.to_pylist()


def should_write_many_tiny_batches_into_full_row_groups() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.STRING)
    table = rows_table(schema, sorted_rows(schema, 700, seed=3))

    # When
    _write(fs, "f.parquet", schema, table.to_batches(max_chunksize=1), settings=ParquetSettings(row_group_rows=300))

    # Then
    assert _row_group_rows(fs, "f.parquet") == [300, 300, 100]


def should_close_row_groups_early_when_their_data_reaches_the_byte_limit() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    table = rows_table(schema, sorted_rows(schema, 1000, seed=4))
    limit = table.nbytes // 4

    # When
    _write(
        fs,
        "f.parquet",
        schema,
        table.to_batches(max_chunksize=100),
        settings=ParquetSettings(row_group_rows=1000, row_group_bytes=limit),
    )

    # Then
    groups = _row_group_rows(fs, "f.parquet")
    assert sum(groups) == 1000
    assert 4 <= len(groups) <= 6
    assert max(groups) < 1000


def should_compress_with_zstd_without_dictionaries_and_with_page_index_by_default() -> None:
    # Given
    fs = in_memory_filesystem()
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(200).to_batches())

    # When
    with fs.open_input_file("f.parquet") as f:
        metadata = pq.ParquetFile(f).metadata
    chunks = [metadata.row_group(0).column(j) for j in range(metadata.num_columns)]

    # Then
    assert {c.compression for c in chunks} == {"ZSTD"}
    assert [c.path_in_schema for c in chunks if c.has_dictionary_page] == []
    assert all(not any("DICTIONARY" in e for e in c.encodings) for c in chunks)
    assert all(c.has_column_index and c.has_offset_index for c in chunks)
    assert all(c.statistics is not None and c.statistics.has_min_max for c in chunks[:4])


def should_dictionary_encode_only_the_enabled_field_groups() -> None:
    # Given
    fs = in_memory_filesystem()
    settings = ParquetSettings(dictionary_values=True, compression="snappy")

    # When
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(200).to_batches(), settings=settings)
    with fs.open_input_file("f.parquet") as f:
        metadata = pq.ParquetFile(f).metadata
    chunks = [metadata.row_group(0).column(j) for j in range(metadata.num_columns)]

    # Then
    assert {c.compression for c in chunks} == {"SNAPPY"}
    assert [c.path_in_schema for c in chunks if c.has_dictionary_page] == [
        "long",
        "maybe_long",
        "list.list.element",
        "maybe_list.list.element",
        "map.key_value.key",
        "map.key_value.value",
        "maybe_map.key_value.key",
        "maybe_map.key_value.value",
    ]


def should_give_pyarrow_writer_options_from_settings() -> None:
    # Given
    settings = ParquetSettings(writer_version="v1", page_size=4096, dictionary_row_keys=True)

    # When
    options = settings.writer_options(ALL_TYPES_SCHEMA)
    defaults = ParquetSettings().writer_options(ALL_TYPES_SCHEMA)

    # Then
    assert options["data_page_version"] == "1.0"
    assert options["data_page_size"] == 4096
    assert options["use_dictionary"] == ["key", "key2"]
    assert (defaults["compression"], defaults["compression_level"]) == ("zstd", 1)
    assert defaults["data_page_version"] == "2.0"
    assert defaults["use_dictionary"] == []


def should_read_settings_from_table_properties() -> None:
    # Given
    properties = TableProperties(InstanceProperties())
    properties.set(tp.PARQUET_ROW_GROUP_SIZE_ROWS, 5000)
    properties.set(tp.COMPRESSION_CODEC, "gzip")
    properties.set(tp.DICTIONARY_ENCODING_FOR_SORT_KEY_FIELDS, True)
    properties.set(tp.PARQUET_WRITER_VERSION, "v1")

    # When
    settings = ParquetSettings.from_table_properties(properties)

    # Then
    assert settings == ParquetSettings(
        row_group_rows=5000, compression="gzip", dictionary_sort_keys=True, writer_version="v1"
    )


def should_default_settings_to_sleeper_table_defaults() -> None:
    # When
    settings = ParquetSettings.from_table_properties(TableProperties(InstanceProperties()))

    # Then
    assert settings == ParquetSettings()
    assert (settings.row_group_rows, settings.page_size, settings.compression) == (100_000, 131072, "zstd")


@pytest.mark.parametrize("kwargs", [{"compression": "lzo"}, {"compression": "zip"}, {"row_group_rows": 0}])
def should_reject_settings_pyarrow_cannot_honour(kwargs: dict[str, Any]) -> None:
    # When / Then
    with pytest.raises(UnsupportedSettingError):
        ParquetSettings(**kwargs)


def should_write_sketches_file_next_to_data_file() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.STRING, second_key=PrimitiveType.INT)
    rows = sorted_rows(schema, 1234, seed=5)

    # When
    written = _write(fs, "t/data/partition_root/f.parquet", schema, rows_table(schema, rows).to_batches())
    read = Sketches.read(fs, "t/data/partition_root/f.sketches", schema)

    # Then
    assert written.sketches_location == "t/data/partition_root/f.sketches"
    assert read.to_bytes() == written.sketches.to_bytes()
    assert read.count("key") == 1234
    assert (read.min("key"), read.max("key")) == (rows[0]["key"], rows[-1]["key"])
    assert read.count("key2") == read.count("key")


def should_write_no_sketches_when_disabled() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)

    # When
    written = _write(
        fs, "f.parquet", schema, rows_table(schema, sorted_rows(schema, 10, seed=6)).to_batches(), sketches=False
    )

    # Then
    assert (written.sketches, written.sketches_location) == (None, None)
    assert not exists(fs, "f.sketches")


def should_write_a_readable_empty_file() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.STRING)

    # When
    written = _write(fs, "f.parquet", schema, [])

    # Then
    assert (written.rows, written.row_groups) == (0, 0)
    assert list(read_sorted("f.parquet", schema, filesystem=fs)) == []
    assert Sketches.read(fs, "f.sketches", schema).is_empty()


def should_accept_equivalent_arrow_types_and_drop_extra_columns() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.INT)
    batch = pa.record_batch(
        {
            "extra": [1.5, 2.5],
            "value": pa.array(["x", None], type=pa.large_string()),
            "sort": pa.array([1, 2], type=pa.int32()),
            "key": pa.array([3, 4], type=pa.int64()),
        }
    )

    # When
    _write(fs, "f.parquet", schema, [batch])
    actual = pa.Table.from_batches(list(read_sorted("f.parquet", schema, filesystem=fs)))

    # Then
    assert actual.to_pylist() == [{"key": 3, "sort": 1, "value": "x"}, {"key": 4, "sort": 2, "value": None}]
    assert actual.schema.field("key").type == pa.int32()


@pytest.mark.parametrize(
    ("column", "array"),
    [
        ("key", pa.array([1, None], type=pa.int32())),
        ("key", pa.array(["a", "b"])),
        ("sort", pa.array([2**40, 1], type=pa.int64()).cast(pa.int64())),
    ],
    ids=["null-in-required", "wrong-type", "overflow"],
)
def should_reject_data_not_matching_schema_and_delete_file(column: str, array: pa.Array) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.INT)], sort_keys=[Field("sort", PrimitiveType.INT)])
    columns = {"key": pa.array([1, 2], type=pa.int32()), "sort": pa.array([1, 2], type=pa.int32())}
    columns[column] = array

    # When / Then
    with pytest.raises(SchemaMismatchError, match=column), SortedFileWriter("f.parquet", schema, filesystem=fs) as w:
        w.write(pa.record_batch(columns))
    assert not exists(fs, "f.parquet")


@pytest.mark.parametrize(
    ("field_type", "array"),
    [
        (ListType(PrimitiveType.LONG), pa.array([[1, None]], type=pa.list_(pa.int64()))),
        (
            MapType(PrimitiveType.STRING, PrimitiveType.LONG),
            pa.array([[("a", None)]], type=pa.map_(pa.string(), pa.int64())),
        ),
    ],
    ids=["list", "map"],
)
def should_reject_null_elements_of_lists_and_maps(field_type: ListType | MapType, array: pa.Array) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.INT)], values=[Field("v", field_type, nullable=True)])

    # When / Then
    with pytest.raises(SchemaMismatchError, match="'v'"), SortedFileWriter("f.parquet", schema, filesystem=fs) as w:
        w.write(pa.record_batch({"key": pa.array([1], type=pa.int32()), "v": array}))


def should_delete_data_and_sketches_when_the_writing_block_fails() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    table = rows_table(schema, sorted_rows(schema, 500, seed=7))

    # When
    with (
        pytest.raises(RuntimeError, match="producer failed"),
        SortedFileWriter("f.parquet", schema, filesystem=fs, settings=ParquetSettings(row_group_rows=100)) as w,
    ):
        w.write(table)
        raise RuntimeError("producer failed")

    # Then
    assert not exists(fs, "f.parquet")
    assert not exists(fs, "f.sketches")


class _FailingSink(io.RawIOBase):
    """An output that fails once more than a limit of bytes have been written."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._written += len(data)
        if self._written > self._limit:
            raise OSError("disk full")
        return len(data)


class _FailingWritesHandler(InMemoryFileSystemHandler):
    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        if path.endswith(".parquet"):
            return pa.PythonFile(_FailingSink(10_000), mode="w")
        return super().open_output_stream(path, metadata)


@pytest.mark.parametrize("writer_thread", [False, True], ids=["serial", "writer-thread"])
def should_raise_write_failures_from_the_writer(writer_thread: bool) -> None:
    # Given
    fs = pafs.PyFileSystem(_FailingWritesHandler())
    schema = key_schema(PrimitiveType.STRING)
    table = rows_table(schema, sorted_rows(schema, 5000, seed=8))
    writer = SortedFileWriter(
        "f.parquet",
        schema,
        filesystem=fs,
        writer_thread=writer_thread,
        settings=ParquetSettings(row_group_rows=500, compression="uncompressed"),
    )

    # When / Then
    with pytest.raises(OSError, match="disk full"):
        for batch in table.to_batches(max_chunksize=100):
            writer.write(batch)
        writer.close()
    assert not exists(fs, "f.sketches")
    with pytest.raises(WriterClosedError):
        writer.write(table)


def should_rewrite_batches_read_from_a_data_file() -> None:
    # Given
    fs = in_memory_filesystem()
    expected = _all_types_table(300)
    _write(fs, "in.parquet", ALL_TYPES_SCHEMA, expected.to_batches())

    # When
    _write(fs, "out.parquet", ALL_TYPES_SCHEMA, list(read_sorted("in.parquet", ALL_TYPES_SCHEMA, filesystem=fs)))

    # Then
    actual = pa.Table.from_batches(list(read_sorted("out.parquet", ALL_TYPES_SCHEMA, filesystem=fs)))
    assert actual.to_pylist() == expected.to_pylist()


def _data_encodings(fs: pafs.FileSystem, path: str) -> dict[str, set[str]]:
    with fs.open_input_file(path) as f:
        metadata = pq.ParquetFile(f).metadata
    chunks = [metadata.row_group(0).column(j) for j in range(metadata.num_columns)]
    # RLE also encodes the levels of every column; a boolean column's values are RLE and nothing else
    return {c.path_in_schema: set(c.encodings) - {"RLE"} or {"RLE"} for c in chunks}


@pytest.mark.parametrize(
    ("settings", "integers", "bytes_"),
    [
        (ParquetSettings(), "DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY"),
        (ParquetSettings(writer_version="v1"), "PLAIN", "PLAIN"),
    ],
    ids=["v2", "v1"],
)
def should_encode_columns_as_sleepers_writers_do_for_the_writer_version(
    settings: ParquetSettings, integers: str, bytes_: str
) -> None:
    # Given a file of every key and collection type written with a writer version and no dictionaries
    fs = in_memory_filesystem()
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(200).to_batches(), settings=settings)

    # When its column chunks are read
    encodings = _data_encodings(fs, "f.parquet")

    # Then integers and byte arrays, nested ones too, take the encoding parquet-mr and parquet-rs fall back to
    assert encodings == {
        "key": {bytes_},
        "key2": {bytes_},
        "sort": {integers},
        "long": {integers},
        "maybe_long": {integers},
        "list.list.element": {bytes_},
        "maybe_list.list.element": {integers},
        "map.key_value.key": {bytes_},
        "map.key_value.value": {integers},
        "maybe_map.key_value.key": {bytes_},
        "maybe_map.key_value.value": {integers},
    }
    actual = pa.Table.from_batches(list(read_sorted("f.parquet", ALL_TYPES_SCHEMA, filesystem=fs)))
    assert actual.equals(_all_types_table(200).cast(actual.schema))


def should_encode_booleans_as_runs_and_floating_point_plainly_for_writer_version_2() -> None:
    # Given value types beside an integer key
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)],
        values=[Field("b", ValueType.BOOLEAN), Field("d", ValueType.DOUBLE), Field("day", ValueType.DATE)],
    )
    table = pa.table(
        {
            "key": pa.array(range(100), pa.int64()),
            "b": [i % 3 == 0 for i in range(100)],
            "d": [i / 7 for i in range(100)],
            "day": pa.array(range(100), pa.date32()),
        }
    )
    fs = in_memory_filesystem()
    _write(fs, "f.parquet", schema, table.to_batches())
    # Then
    assert _data_encodings(fs, "f.parquet") == {
        "key": {"DELTA_BINARY_PACKED"},
        "b": {"RLE"},
        "d": {"PLAIN"},
        "day": {"DELTA_BINARY_PACKED"},
    }


def should_leave_every_column_plain_beside_a_dictionary() -> None:
    # Given dictionaries on the row keys, which pyarrow cannot combine with chosen encodings
    fs = in_memory_filesystem()
    settings = ParquetSettings(dictionary_row_keys=True)
    _write(fs, "f.parquet", ALL_TYPES_SCHEMA, _all_types_table(200).to_batches(), settings=settings)
    # Then the row keys have dictionaries and the other columns are plain
    encodings = _data_encodings(fs, "f.parquet")
    assert {path for path, found in encodings.items() if any("DICTIONARY" in e for e in found)} == {"key", "key2"}
    assert {path for path, found in encodings.items() if found == {"PLAIN"}} == set(encodings) - {"key", "key2"}
