"""Which column types of an input file read as the table's types (sleeper.io.input_files.reads_as)."""

from __future__ import annotations

import pyarrow as pa

from sleeper.io.input_files import reads_as, schema_problems


def should_accept_any_integer_for_an_integer_field_only_where_each_value_is_checked_as_read() -> None:
    # Ingest conforms every batch with a safe cast, so a wider integer column is accepted (values checked as read)
    assert reads_as(pa.int64(), pa.int32(), values_checked=True)
    assert reads_as(pa.uint64(), pa.int64(), values_checked=True)
    assert reads_as(pa.list_(pa.int64()), pa.list_(pa.int32()), values_checked=True)
    # Bulk import's Spark cast would wrap a value that does not fit: only lossless types there
    assert not reads_as(pa.int64(), pa.int32())
    assert reads_as(pa.int16(), pa.int32())
    # Never a type of another kind
    assert not reads_as(pa.string(), pa.int32(), values_checked=True)
    assert not reads_as(pa.float64(), pa.int64(), values_checked=True)
    assert schema_problems("f", pa.schema([("k", pa.int64())]), pa.schema([("k", pa.int32())])) == [
        "File f column 'k' has type int64, which cannot be read as int32"
    ]
