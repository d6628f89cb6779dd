from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.core.exceptions import KeyTypeError, SchemaError
from sleeper.core.schema import Field, KeyValue, ListType, PrimitiveType, Schema, ValueType
from sleeper.io.exceptions import DataFileError, MissingFileError, SchemaMismatchError
from sleeper.io.filesystem import write_bytes
from sleeper.io.parquet import (
    KeyBounds,
    ParquetSettings,
    SortedFileReader,
    SortedFileWriter,
    read_file_metadata,
    read_sorted,
)
from tests.unit.io.parquet_fixtures import (
    KEY_TYPES,
    key_schema,
    next_key,
    recording_filesystem,
    rows_table,
    sorted_rows,
)


def _canonical(name: str, low: KeyValue, low_inclusive: bool, high: KeyValue | None, high_inclusive: bool) -> KeyBounds:
    return KeyBounds(
        name,
        low if low_inclusive else next_key(low),
        None if high is None else next_key(high) if high_inclusive else high,
    )


def _in_range(value: Any, low: Any, low_inclusive: bool, high: Any, high_inclusive: bool) -> bool:
    above = low < value or (low_inclusive and value == low)
    below = high is None or value < high or (high_inclusive and value == high)
    return above and below


def _write(fs: pafs.FileSystem, path: str, schema: Schema, rows: list[dict[str, Any]], row_group_rows: int) -> None:
    with SortedFileWriter(
        path, schema, filesystem=fs, settings=ParquetSettings(row_group_rows=row_group_rows), sketches=False
    ) as writer:
        writer.write(rows_table(schema, rows))


def _read(fs: pafs.FileSystem, path: str, schema: Schema, regions: Any, **kwargs: Any) -> list[dict[str, Any]]:
    batches = list(read_sorted(path, schema, regions=regions, filesystem=fs, **kwargs))
    assert all(b.num_rows > 0 for b in batches)
    return pa.Table.from_batches(batches, schema=batches[0].schema).to_pylist() if batches else []


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
@pytest.mark.parametrize("low_inclusive", [True, False], ids=["min-incl", "min-excl"])
@pytest.mark.parametrize("high_inclusive", [True, False], ids=["max-incl", "max-excl"])
def should_read_exactly_the_rows_in_a_range(key_type: PrimitiveType, low_inclusive: bool, high_inclusive: bool) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(key_type)
    rows = sorted_rows(schema, 400, seed=11)
    _write(fs, "f.parquet", schema, rows, row_group_rows=32)
    keys = sorted({r["key"] for r in rows})
    rng = random.Random(12)

    for _ in range(15):
        low, high = sorted(rng.sample(keys, 2))
        bounds = _canonical("key", low, low_inclusive, high, high_inclusive)

        # When
        actual = _read(fs, "f.parquet", schema, [[bounds]])

        # Then
        expected = [r for r in rows if _in_range(r["key"], low, low_inclusive, high, high_inclusive)]
        assert actual == expected, (low, high)
        assert expected, "the range should hold rows"


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
def should_read_unbounded_and_single_value_ranges(key_type: PrimitiveType) -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(key_type)
    rows = sorted_rows(schema, 300, seed=13)
    _write(fs, "f.parquet", schema, rows, row_group_rows=50)
    middle = rows[150]["key"]

    # When
    everything = _read(fs, "f.parquet", schema, [[KeyBounds("key", key_type.minimum)]])
    from_middle = _read(fs, "f.parquet", schema, [[KeyBounds("key", middle)]])
    only_middle = _read(fs, "f.parquet", schema, [[KeyBounds("key", middle, next_key(middle))]])

    # Then
    assert everything == rows
    assert from_middle == [r for r in rows if r["key"] >= middle]
    assert only_middle == [r for r in rows if r["key"] == middle]


def should_read_rows_in_any_of_several_regions_once_each_in_file_order() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(schema, 500, seed=14)
    _write(fs, "f.parquet", schema, rows, row_group_rows=64)
    regions = [[KeyBounds("key", 10, 20)], [KeyBounds("key", -30, -5)], [KeyBounds("key", 15, 25)]]

    # When
    actual = _read(fs, "f.parquet", schema, regions)

    # Then
    assert actual == [r for r in rows if 10 <= r["key"] < 25 or -30 <= r["key"] < -5]


def should_filter_on_every_row_key_field() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.STRING, second_key=PrimitiveType.INT)
    rows = sorted_rows(schema, 600, seed=15)
    _write(fs, "f.parquet", schema, rows, row_group_rows=100)

    # When
    second_only = _read(fs, "f.parquet", schema, [[KeyBounds("key2", -10, 10)]])
    both = _read(fs, "f.parquet", schema, [[KeyBounds("key", "a", "b"), KeyBounds("key2", 0)]])
    repeated_field = _read(fs, "f.parquet", schema, [[KeyBounds("key2", -10, 10), KeyBounds("key2", 0, 20)]])

    # Then
    assert second_only == [r for r in rows if -10 <= r["key2"] < 10]
    assert both == [r for r in rows if "a" <= r["key"] < "b" and r["key2"] >= 0]
    assert repeated_field == [r for r in rows if 0 <= r["key2"] < 10]
    assert both and second_only and repeated_field


def should_read_nothing_for_no_regions_or_empty_ranges() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.INT)
    _write(fs, "f.parquet", schema, sorted_rows(schema, 100, seed=16), row_group_rows=10)

    # When / Then
    assert _read(fs, "f.parquet", schema, []) == []
    assert _read(fs, "f.parquet", schema, [[KeyBounds("key", 5, 5)]]) == []
    assert _read(fs, "f.parquet", schema, [[KeyBounds("key", 7, 3)]]) == []
    assert _read(fs, "f.parquet", schema, [[KeyBounds("key", 2**31)]]) == []
    assert _read(fs, "f.parquet", schema, [[KeyBounds("key", -(2**40), -(2**31))]]) == []


def should_treat_int_bounds_beyond_the_type_range_as_unbounded() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.INT)
    rows = sorted_rows(schema, 200, seed=17)
    _write(fs, "f.parquet", schema, rows, row_group_rows=64)
    assert rows[-1]["key"] == 2**31 - 1

    # When
    actual = _read(fs, "f.parquet", schema, [[KeyBounds("key", -(2**40), 2**31)]])

    # Then
    assert actual == rows


def should_return_requested_columns_only_in_requested_order() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(schema, 300, seed=18)
    _write(fs, "f.parquet", schema, rows, row_group_rows=64)

    # When
    actual = _read(fs, "f.parquet", schema, [[KeyBounds("key", 0, 10)]], columns=["value", "sort"])

    # Then
    assert actual == [{"value": r["value"], "sort": r["sort"]} for r in rows if 0 <= r["key"] < 10]


def should_plan_only_the_row_groups_whose_statistics_overlap() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
    with SortedFileWriter("f.parquet", schema, filesystem=fs, settings=ParquetSettings(row_group_rows=100)) as w:
        w.write(pa.table({"key": pa.array(range(1000), type=pa.int64())}))

    with SortedFileReader("f.parquet", schema, filesystem=fs) as reader:
        # When
        point = reader.plan([[KeyBounds("key", 345, 346)]])
        span = reader.plan([[KeyBounds("key", 250, 450)]])
        two = reader.plan([[KeyBounds("key", 50, 60)], [KeyBounds("key", 900)]])
        everything = reader.plan()

    # Then
    assert (point.row_groups, point.filtered_row_groups, point.rows) == ((3,), (3,), 100)
    assert (span.row_groups, span.filtered_row_groups) == ((2, 3, 4), (2, 4))
    assert (two.row_groups, two.filtered_row_groups) == ((0, 9), (0,))
    assert (everything.row_groups, everything.filtered_row_groups) == (tuple(range(10)), ())
    assert point.total_row_groups == 10


def _chunk_ranges(metadata: pq.FileMetaData) -> dict[int, list[tuple[int, int]]]:
    """The byte ranges [start, end) of each row group's column chunks."""
    out: dict[int, list[tuple[int, int]]] = {}
    for i in range(metadata.num_row_groups):
        for j in range(metadata.num_columns):
            chunk = metadata.row_group(i).column(j)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            out.setdefault(i, []).append((start, start + chunk.total_compressed_size))
    return out


def should_read_no_bytes_of_row_groups_outside_the_range() -> None:
    # Given
    fs, log = recording_filesystem()
    schema = key_schema(PrimitiveType.STRING)
    rows = sorted_rows(schema, 5000, seed=19)
    _write(fs, "f.parquet", schema, rows, row_group_rows=500)
    target = rows[1700]["key"]

    with SortedFileReader("f.parquet", schema, filesystem=fs) as reader:
        chunks = _chunk_ranges(reader.parquet_metadata)
        plan = reader.plan([[KeyBounds("key", target, next_key(target))]])
        log.clear()

        # When
        actual = pa.Table.from_batches(list(reader.read_plan(plan))).to_pylist()

    # Then
    touched = {
        group
        for offset, length in log.reads["f.parquet"]
        for group, ranges in chunks.items()
        if any(offset < end and start < offset + length for start, end in ranges)
    }
    assert touched == set(plan.row_groups) == {3}
    assert actual == [r for r in rows if r["key"] == target]


def should_open_without_reading_the_footer_when_it_is_given() -> None:
    # Given
    fs, log = recording_filesystem()
    schema = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(schema, 300, seed=20)
    _write(fs, "f.parquet", schema, rows, row_group_rows=100)
    with SortedFileReader("f.parquet", schema, filesystem=fs) as reader:
        footer = reader.parquet_metadata
    log.clear()

    # When
    with SortedFileReader("f.parquet", schema, filesystem=fs, metadata=footer) as reader:
        plan = reader.plan([[KeyBounds("key", 0, 1)]])

    # Then
    assert log.reads == {}
    assert plan.total_row_groups == 3


def should_read_row_group_statistics_of_every_row_key() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.BYTE_ARRAY, second_key=PrimitiveType.LONG)
    rows = sorted_rows(schema, 250, seed=21)
    _write(fs, "f.parquet", schema, rows, row_group_rows=100)

    # When
    metadata = read_file_metadata("f.parquet", schema, filesystem=fs)

    # Then
    assert (metadata.rows, metadata.row_group_count) == (250, 3)
    assert [g.rows for g in metadata.row_groups] == [100, 100, 50]
    for group, start in zip(metadata.row_groups, (0, 100, 200), strict=True):
        part = rows[start : start + group.rows]
        assert group.min == {"key": part[0]["key"], "key2": min(r["key2"] for r in part)}
        assert group.max == {"key": part[-1]["key"], "key2": max(r["key2"] for r in part)}
        assert group.compressed_bytes > 0


def should_reject_bounds_on_other_fields_or_of_the_wrong_type() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.INT)
    _write(fs, "f.parquet", schema, sorted_rows(schema, 10, seed=22), row_group_rows=10)

    with SortedFileReader("f.parquet", schema, filesystem=fs) as reader:
        # When / Then
        with pytest.raises(SchemaError, match="sort"):
            reader.plan([[KeyBounds("sort", 1)]])
        with pytest.raises(KeyTypeError, match="key"):
            reader.plan([[KeyBounds("key", "1")]])
        with pytest.raises(KeyTypeError, match="key"):
            reader.plan([[KeyBounds("key", True)]])


def should_raise_typed_errors_for_missing_corrupt_and_mismatched_files() -> None:
    # Given
    fs = in_memory_filesystem()
    schema = key_schema(PrimitiveType.STRING)
    write_bytes(fs, "not-parquet.parquet", b"hello, this is not a parquet file at all")
    _write(
        fs, "long-keys.parquet", key_schema(PrimitiveType.LONG), sorted_rows(key_schema(PrimitiveType.LONG), 5, 1), 5
    )

    # When / Then
    with pytest.raises(MissingFileError):
        SortedFileReader("missing.parquet", schema, filesystem=fs)
    with pytest.raises(DataFileError, match="not-parquet"):
        SortedFileReader("not-parquet.parquet", schema, filesystem=fs)
    with pytest.raises(SchemaMismatchError, match="'key'"):
        SortedFileReader("long-keys.parquet", schema, filesystem=fs)
    with pytest.raises(SchemaMismatchError, match="'nothing'"):
        list(read_sorted("long-keys.parquet", key_schema(PrimitiveType.LONG), columns=["nothing"], filesystem=fs))


def _with_added(schema: Schema, *added: Field) -> Schema:
    return Schema(schema.row_key_fields, schema.sort_key_fields, schema.value_fields + added)


def should_read_a_nullable_value_column_the_file_lacks_as_nulls_in_row_group_and_page_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a file written before two nullable value columns were added to its schema
    fs = in_memory_filesystem()
    written = key_schema(PrimitiveType.LONG)
    rows = sorted_rows(written, 3000, seed=23)
    with SortedFileWriter(
        "f.parquet", written, filesystem=fs, settings=ParquetSettings(page_size=256), sketches=False
    ) as writer:
        writer.write(rows_table(written, rows))
    schema = _with_added(
        written, Field("score", ValueType.DOUBLE, nullable=True), Field("tags", ListType(PrimitiveType.STRING), True)
    )
    page_reads: list[int] = []
    read_pages = SortedFileReader._read_pages

    def counted(self: SortedFileReader, *args: Any) -> Any:
        page_reads.append(1)
        return read_pages(self, *args)

    monkeypatch.setattr(SortedFileReader, "_read_pages", counted)
    target = rows[1700]["key"]

    # When
    whole = _read(fs, "f.parquet", schema, None)
    point = _read(fs, "f.parquet", schema, [[KeyBounds("key", target, target + 1)]])
    only_added = _read(fs, "f.parquet", schema, [[KeyBounds("key", target, target + 1)]], columns=["tags"])
    batch = next(read_sorted("f.parquet", schema, filesystem=fs))

    # Then
    assert whole == [{**r, "score": None, "tags": None} for r in rows]
    assert page_reads, "the point lookup reads pages"
    assert point == [{**r, "score": None, "tags": None} for r in rows if r["key"] == target]
    assert only_added == [{"tags": None} for r in rows if r["key"] == target]
    assert batch.schema.field("score").type == pa.float64() and batch.schema.field("score").nullable
    assert batch.schema.field("tags").type == pa.list_(pa.field("element", pa.string(), nullable=False))


def should_refuse_a_missing_column_that_is_not_a_nullable_value_field() -> None:
    # Given
    fs = in_memory_filesystem()
    written = key_schema(PrimitiveType.LONG)
    _write(fs, "f.parquet", written, sorted_rows(written, 5, seed=24), row_group_rows=5)
    required = _with_added(written, Field("count", PrimitiveType.LONG))

    # When / Then
    with pytest.raises(SchemaMismatchError, match="'count'"):
        list(read_sorted("f.parquet", required, filesystem=fs))
