from __future__ import annotations

import struct
from collections.abc import Sequence

import datasketches
import numpy as np
import pyarrow as pa
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.io.exceptions import MissingFileError
from sleeper.io.sketches import (
    SKETCH_K,
    BytesSerDe,
    LongsSerDe,
    SketchBuilder,
    Sketches,
    SketchesError,
    StringsSerDe,
    sketches_path,
)

KEY_VALUES: dict[PrimitiveType, list[KeyValue]] = {
    PrimitiveType.INT: [-(2**31), -5, 0, 7, 2**31 - 1],
    PrimitiveType.LONG: [-(2**63), -5, 0, 7, 2**63 - 1],
    PrimitiveType.STRING: ["", "a", "é", "\uffef", "\U0001f600"],
    PrimitiveType.BYTE_ARRAY: [b"", b"\x00", b"\x7f", b"\x80", b"\xff\xff"],
}

_ARROW = {
    PrimitiveType.INT: pa.int32(),
    PrimitiveType.LONG: pa.int64(),
    PrimitiveType.STRING: pa.string(),
    PrimitiveType.BYTE_ARRAY: pa.binary(),
}


def _schema(*key_types: PrimitiveType) -> Schema:
    return Schema.of(row_keys=[Field(f"key{i}", t) for i, t in enumerate(key_types)])


def _batch(schema: Schema, columns: Sequence[Sequence[KeyValue]]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            f.name: pa.array(values, type=_ARROW[f.primitive_type])
            for f, values in zip(schema.row_key_fields, columns, strict=True)
        }
    )


def _string_keys(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzé"))
    return sorted("".join(rng.choice(letters, size=12)) for _ in range(count))


def _sorted_ascii_keys(count: int, seed: int) -> np.ndarray:
    """Sorted random 12-letter keys as a numpy bytes array (ASCII, so byte order is string order)."""
    codes = np.random.default_rng(seed).integers(ord("a"), ord("z") + 1, size=(count, 12), dtype=np.uint8)
    return np.sort(codes.view("S12").ravel())


def should_serialize_items_as_javas_serdes() -> None:
    # When / Then
    assert LongsSerDe().to_bytes(-2) == b"\xfe\xff\xff\xff\xff\xff\xff\xff"
    assert StringsSerDe().to_bytes("é") == b"\x02\x00\x00\x00\xc3\xa9"
    assert StringsSerDe().get_size("é") == 6
    assert BytesSerDe().to_bytes(b"\x80\x00") == b"\x02\x00\x00\x00\x80\x00"
    assert StringsSerDe().from_bytes(b"xx\x02\x00\x00\x00\xc3\xa9", 2) == ("é", 6)
    assert BytesSerDe().from_bytes(b"\x01\x00\x00\x00\xff", 0) == (b"\xff", 5)
    assert LongsSerDe().from_bytes(struct.pack("<q", 2**63 - 1), 0) == (2**63 - 1, 8)


def should_lay_out_the_file_as_sleeper_one_length_prefixed_sketch_per_row_key() -> None:
    # Given
    schema = _schema(PrimitiveType.STRING, PrimitiveType.INT)
    sketches = Sketches.from_sorted_batches(schema, [_batch(schema, [["a", "b", "c"], [3, 1, 2]])])

    # When
    data = sketches.to_bytes()

    # Then
    (first_length,) = struct.unpack_from(">i", data, 0)
    (second_length,) = struct.unpack_from(">i", data, 4 + first_length)
    assert 4 + first_length + 4 + second_length == len(data)
    first = data[4 : 4 + first_length]
    # classic quantiles preamble: 2 preamble longs, serial version 3, family 8, k, n; then min and max items
    assert (first[0], first[1], first[2]) == (2, 3, 8)
    assert struct.unpack_from("<H", first, 4)[0] == SKETCH_K
    assert struct.unpack_from("<q", first, 8)[0] == 3
    assert first[16:26] == StringsSerDe().to_bytes("a") + StringsSerDe().to_bytes("c")
    second = data[8 + first_length :]
    assert second[16:32] == LongsSerDe().to_bytes(1) + LongsSerDe().to_bytes(3)


@pytest.mark.parametrize("key_type", list(KEY_VALUES), ids=lambda t: t.value)
def should_round_trip_sketches_of_every_key_type(key_type: PrimitiveType) -> None:
    # Given
    schema = _schema(key_type)
    values = sorted(KEY_VALUES[key_type])
    sketches = Sketches.from_sorted_batches(schema, [_batch(schema, [values])])
    fs = in_memory_filesystem()

    # When
    sketches.write(fs, "data/f.sketches")
    read = Sketches.read(fs, "data/f.sketches", schema)

    # Then
    assert (read.min("key0"), read.max("key0")) == (values[0], values[-1])
    assert read.quantiles("key0", [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]) == [*values, values[-1]]
    assert read.quantiles("key0", [0.2, 0.4, 0.6, 0.8], inclusive=True) == values[:4]
    assert read.count("key0") == len(values)
    assert read.to_bytes() == sketches.to_bytes()


def should_hold_every_row_of_a_file_of_fewer_than_2k_rows_across_batches() -> None:
    # Given a file of 2k - 1 rows in uneven batches, and its own sketch updated with each row
    schema = _schema(PrimitiveType.LONG)
    builder = SketchBuilder(schema)
    rows = 2 * SKETCH_K - 1
    for start, end in [(0, 3), (3, 1000), (1000, 1000), (1000, rows)]:
        builder.add(_batch(schema, [list(range(start, end))]))
    # When it finishes
    sketches = builder.finish()
    # Then it holds every row, exactly as the library's own sketch of every row
    assert builder.rows == sketches.count("key0") == rows
    assert sorted(value for value, _ in sketches.sketch("key0")) == list(range(rows))
    assert (sketches.min("key0"), sketches.max("key0"), sketches.median("key0")) == (0, rows - 1, rows // 2)


@pytest.mark.parametrize("rows", [2 * SKETCH_K, 2 * SKETCH_K + 1, 7 * 2 * SKETCH_K + 5, 100_003])
@pytest.mark.parametrize("key_types", [(PrimitiveType.LONG, PrimitiveType.INT), (PrimitiveType.STRING,)], ids=str)
def should_hold_what_the_librarys_sketch_of_every_row_holds(rows: int, key_types: tuple[PrimitiveType, ...]) -> None:
    # Given sorted rows (the second key in no order), sketched by the builder and by the library row by row
    schema = _schema(*key_types)
    rng = np.random.default_rng(rows)
    firsts = np.sort(rng.integers(0, 10**9, rows))
    first: list[KeyValue] = [f"{x:010d}" for x in firsts] if key_types[0] is PrimitiveType.STRING else firsts.tolist()
    columns: list[list[KeyValue]] = [first]
    if len(key_types) > 1:
        columns.append(rng.integers(-(2**31), 2**31, rows).tolist())
    built = Sketches.from_sorted_batches(schema, [_batch(schema, columns).slice(i, 4096) for i in range(0, rows, 4096)])
    # Then each key's sketch has the library's shape for n rows: the same n, items retained, exact min and max
    for name, values in zip(schema.row_key_names, columns, strict=True):
        own = datasketches.quantiles_items_sketch(SKETCH_K)
        for value in values:
            own.update(value)
        sketch = built.sketch(name)
        assert (sketch.n, sketch.num_retained) == (own.n, own.num_retained)
        assert (built.min(name), built.max(name)) == (min(values), max(values))  # type: ignore[type-var]
        # And every item it holds is one of the rows, its median within the sketch's error of the true median
        held = [value for value, _ in sketch]
        assert set(held) <= set(values)
        median_rank = sorted(values).index(built.median(name)) / rows  # type: ignore[arg-type]
        assert abs(median_rank - 0.5) <= 0.01


def should_read_the_median_as_sleepers_datasketches_does() -> None:
    # Given exact sketches of an even and an odd number of rows
    schema = _schema(PrimitiveType.LONG)
    even = Sketches.from_sorted_batches(schema, [_batch(schema, [[10, 20, 30, 40]])])
    odd = Sketches.from_sorted_batches(schema, [_batch(schema, [[10, 20, 30, 40, 50]])])
    # When / Then the median is the item at position floor(n / 2) (DataSketches 3.3.0's getQuantile(0.5)), not the
    # newer inclusive rule's item at rank ceil(n / 2)
    assert even.median("key0") == 30
    assert even.quantile("key0", 0.5, inclusive=True) == 20
    assert odd.median("key0") == 30
    assert (even.quantile("key0", 0.0), even.quantile("key0", 1.0)) == (10, 40)


def should_count_every_row() -> None:
    # Given
    schema = _schema(PrimitiveType.STRING)
    keys = _string_keys(5050, seed=1)

    # When
    sketches = Sketches.from_sorted_batches(schema, [_batch(schema, [keys])])

    # Then
    assert sketches.count("key0") == 5050
    assert (sketches.min("key0"), sketches.max("key0")) == (keys[0], keys[-1])


def should_refuse_rows_after_finishing() -> None:
    # Given
    schema = _schema(PrimitiveType.LONG)
    builder = SketchBuilder(schema)
    builder.finish()

    # When / Then
    with pytest.raises(SketchesError):
        builder.add(_batch(schema, [[1]]))
    with pytest.raises(SketchesError):
        builder.finish()
    with pytest.raises(ValueError, match="power of two"):
        SketchBuilder(schema, k=1000)


def should_estimate_the_median_of_a_million_sorted_string_keys_within_one_percent_rank() -> None:
    # Given
    schema = _schema(PrimitiveType.STRING)
    keys = _sorted_ascii_keys(1_000_000, seed=2)
    batches = pa.table({"key0": pa.array(keys).cast(pa.string())}).to_batches(max_chunksize=65536)
    ranks = [i / 10 for i in range(1, 10)]

    # When
    sketches = Sketches.from_sorted_batches(schema, batches)
    median = sketches.median("key0")
    deciles = sketches.quantiles("key0", ranks)

    # Then
    assert isinstance(median, str)
    assert abs(np.searchsorted(keys, median.encode()) / len(keys) - 0.5) <= 0.01
    for rank, value in zip(ranks, deciles, strict=True):
        assert isinstance(value, str)
        assert abs(np.searchsorted(keys, value.encode()) / len(keys) - rank) <= 0.01
    assert sketches.count("key0") == 1_000_000


def should_merge_sketches_of_several_files() -> None:
    # Given
    schema = _schema(PrimitiveType.LONG, PrimitiveType.STRING)
    low = Sketches.from_sorted_batches(schema, [_batch(schema, [list(range(30_000)), ["a"] * 30_000])])
    high = Sketches.from_sorted_batches(schema, [_batch(schema, [list(range(30_000, 40_000)), ["b"] * 10_000])])

    # When
    merged = Sketches.merge([low, high])

    # Then
    assert merged.count("key0") == low.count("key0") + high.count("key0")
    assert (merged.min("key0"), merged.max("key0")) == (0, 39_999)
    median = merged.median("key0")
    assert isinstance(median, int)
    assert abs(median - 20_000) <= 400
    assert merged.median("key1") == "a"
    assert merged.sketch("key0").k == SKETCH_K
    assert low.count("key0") == 30_000


def should_merge_nothing_into_empty_sketches_given_a_schema() -> None:
    # Given
    schema = _schema(PrimitiveType.BYTE_ARRAY)

    # When
    merged = Sketches.merge([], schema=schema)

    # Then
    assert merged.is_empty()
    assert (merged.median("key0"), merged.min("key0"), merged.max("key0")) == (None, None, None)
    assert merged.quantiles("key0", [0.5]) == []
    with pytest.raises(SketchesError):
        Sketches.merge([])


def should_keep_exact_values_and_the_inputs_k_when_merging_small_sketches() -> None:
    # Given
    schema = _schema(PrimitiveType.LONG)
    parts = [Sketches.from_sorted_batches(schema, [_batch(schema, [list(range(i, 800, 4))])]) for i in range(4)]

    # When
    merged = Sketches.merge([Sketches.empty(schema), *parts])

    # Then
    assert merged.sketch("key0").k == SKETCH_K
    assert merged.count("key0") == 800
    assert merged.quantiles("key0", [0.0, 0.25, 0.5, 1.0]) == [0, 200, 400, 799]
    assert [p.count("key0") for p in parts] == [200] * 4


def should_reject_corrupt_or_mismatched_sketches_files() -> None:
    # Given
    schema = _schema(PrimitiveType.STRING, PrimitiveType.LONG)
    data = Sketches.from_sorted_batches(schema, [_batch(schema, [["a", "b"], [1, 2]])]).to_bytes()
    fs = in_memory_filesystem()

    # When / Then
    with pytest.raises(SketchesError, match="ends before"):
        Sketches.from_bytes(schema, data[: len(data) // 2 - 10][:3])
    with pytest.raises(SketchesError):
        Sketches.from_bytes(schema, data[:-3])
    with pytest.raises(SketchesError, match="after the last"):
        Sketches.from_bytes(schema, data + b"\x00")
    with pytest.raises(SketchesError):
        Sketches.from_bytes(_schema(PrimitiveType.STRING), data)
    with pytest.raises(MissingFileError):
        Sketches.read(fs, "missing.sketches", schema)
    with pytest.raises(SketchesError, match="no sketch"):
        Sketches.from_bytes(schema, data).median("value")


def should_place_sketches_next_to_the_data_file() -> None:
    # When / Then
    assert (
        sketches_path("s3a://bucket/t/data/partition_root/x.parquet") == "s3a://bucket/t/data/partition_root/x.sketches"
    )
    assert sketches_path("/d.ir/file") == "/d.ir/file.sketches"
    assert sketches_path("/dir/.hidden") == "/dir/.hidden.sketches"
