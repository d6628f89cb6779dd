"""Data files on the local disk, through plain paths and ``file://`` URIs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.parquet import KeyBounds, SortedFileWriter, read_sorted
from sleeper.io.sketches import Sketches

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


def should_create_directories_and_write_data_and_sketches_files(tmp_path: Path) -> None:
    # Given
    path = tmp_path / "table" / "data" / "partition_root" / "file.parquet"
    table = pa.table({"key": pa.array(range(1000), type=pa.int64()), "value": [f"v{i}" for i in range(1000)]})

    # When
    with SortedFileWriter(f"file://{path}", SCHEMA, writer_thread=True) as writer:
        writer.write(table)
    rows = pa.Table.from_batches(list(read_sorted(str(path), SCHEMA, regions=[[KeyBounds("key", 990)]])))
    sketches = Sketches.from_bytes(SCHEMA, path.with_suffix(".sketches").read_bytes())

    # Then
    assert writer.result.size_bytes == path.stat().st_size
    assert rows.to_pylist() == table.slice(990).to_pylist()
    assert (sketches.min("key"), sketches.max("key")) == (0, 999)
