"""The executor side of the Spark job without Spark: sort a partition's rows (spilling sorted runs), write per leaf."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_import.spark_job import BUCKET_COLUMN, LEAF_COLUMN, _WriteLeafFiles
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.filesystem import local_filesystem
from sleeper.io.parquet import ParquetSettings
from sleeper.io.sketches import Sketches, sketches_path

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("time", PrimitiveType.INT)],
    values=[Field("value", PrimitiveType.STRING)],
)


@pytest.mark.parametrize("buffer_bytes", [1 << 30, 20_000], ids=["in-memory", "spilling"])
def should_write_one_sorted_file_with_sketches_per_leaf_of_a_partition(tmp_path: Path, buffer_bytes: int) -> None:
    # Given unsorted rows of two leaves (keys below 500 in leaf 3, the rest in leaf 4) in batches of 1000
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 1000, 10_000)
    rows = pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "time": pa.array(rng.integers(0, 5, 10_000), pa.int32()),
            "value": pa.array([f"v{i}" for i in range(10_000)]),
            LEAF_COLUMN: pa.array(np.where(keys < 500, 3, 4), pa.int32()),
            BUCKET_COLUMN: pa.array(np.zeros(10_000), pa.int32()),
        }
    )
    writer = _WriteLeafFiles(
        schema=SCHEMA,
        leaf_ids=["l0", "l1", "l2", "l3", "l4"],
        data_prefix=str(tmp_path),
        settings=ParquetSettings(),
        options=None,
        sort_buffer_bytes=buffer_bytes,
    )

    # When
    written = pa.Table.from_batches(list(writer(iter(rows.to_batches(1000)))))

    # Then
    assert written.column("leaf").to_pylist() == [3, 4]
    for leaf, filename, count in zip(
        *(written.column(c).to_pylist() for c in ("leaf", "filename", "rows")), strict=True
    ):
        assert filename.startswith(f"{tmp_path}/data/partition_l{leaf}/")
        data = pq.read_table(filename)
        expected = rows.filter(pc.equal(rows.column(LEAF_COLUMN), leaf)).select(["key", "time", "value"])
        expected = expected.take(pc.sort_indices(expected, [("key", "ascending"), ("time", "ascending")]))
        assert count == data.num_rows == expected.num_rows
        assert data.column("key").equals(expected.column("key"))
        assert data.column("time").equals(expected.column("time"))
        assert sorted(data.column("value").to_pylist()) == sorted(expected.column("value").to_pylist())
        sketches = Sketches.read(local_filesystem(), sketches_path(filename), SCHEMA)
        assert sketches.min("key") == expected.column("key")[0].as_py()


def should_pass_each_leaf_through_the_table_aggregations_and_iterator(tmp_path: Path) -> None:
    # Given rows of two leaves with repeated keys, a leaf whose rows the iterator drops entirely, and a table that
    # sums values and keeps only keys of at least 100 (an iterator)
    from sleeper.iterators.config import ProcessingConfig
    from sleeper.iterators.plugin import IteratorSpec

    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("count", PrimitiveType.LONG)])
    keys = [5, 120, 120, 700, 700, 700, 50, 50]
    leaves = [1, 2, 2, 2, 2, 2, 1, 1]
    rows = pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "count": pa.array([1] * len(keys), pa.int64()),
            LEAF_COLUMN: pa.array(leaves, pa.int32()),
            BUCKET_COLUMN: pa.array([0] * len(keys), pa.int32()),
        }
    )
    writer = _WriteLeafFiles(
        schema=schema,
        leaf_ids=["l0", "l1", "l2"],
        data_prefix=str(tmp_path),
        settings=ParquetSettings(),
        options=None,
        processing=ProcessingConfig.parse(None, "sum(count)", schema),
        iterator=IteratorSpec("sleeper.example.iterator.FixedAgeOffIterator", "key,100"),
    )
    # When the partition is written
    written = pa.Table.from_batches(list(writer(iter(rows.to_batches(3)))))
    # Then the leaf left with no rows has no file, and the other holds the aggregated, filtered rows
    assert written.column("leaf").to_pylist() == [2]
    data = pq.read_table(written.column("filename")[0].as_py())
    assert data.to_pylist() == [{"key": 120, "count": 2}, {"key": 700, "count": 3}]
    assert list((tmp_path / "data").iterdir()) == [tmp_path / "data" / "partition_l2"]
