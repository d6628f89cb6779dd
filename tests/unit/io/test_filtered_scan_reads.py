"""A filtered scan (row groups read ahead on the reading pool, rows filtered by compute kernels, statistics kept per
file) returns exactly the rows, in key order, that pyarrow and DuckDB select from the same files, over leaves that
each merge a file of their own with a file on the root."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

import sleeper
from sleeper.core.filter import parse_filter
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.parquet import ParquetSettings, SortedFileWriter
from sleeper.io.row_filter import to_expression

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(
        Field("ts", PrimitiveType.LONG),
        Field("value", PrimitiveType.LONG, True),
        Field("name", PrimitiveType.STRING, True),
    ),
)
ROWS = 20_000
SPLITS = [250_000, 500_000, 750_000]

FILTERS = [
    "ts >= 95000",
    "value < 1000",
    "value < 1000 and name like 'a%'",
    "key < 10000",
    "key >= 240000 and key < 260000 and value is not null",
    "value is null or ts < 500",
    "name in ('aa', 'zz') or value between 5000 and 5200",
    "not (value >= 100)",
    "name like '%q%' and ts > 50000",
    "ts < 0",
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("scan")
    created = sleeper.connect(directory, create=True).create_table("t", SCHEMA, split_points=SPLITS)
    rng = np.random.default_rng(7)
    keys = np.sort(rng.choice(1_000_000, ROWS, replace=False))
    values = rng.integers(0, 100_000, ROWS)
    names = np.array(["".join(c) for c in rng.choice(list("aqz"), (ROWS, 2))])
    data = pa.table(
        {
            "key": keys,
            "ts": keys // 10 + rng.integers(0, 100, ROWS),
            "value": pa.array(values, mask=rng.random(ROWS) < 0.05),
            "name": pa.array(names, mask=rng.random(ROWS) < 0.05),
        }
    )
    tree = created.state_store.partition_tree()
    on_root = rng.random(ROWS) < 0.2
    settings = ParquetSettings(row_group_rows=700, page_size=2048)
    references = []

    def write(partition_id: str, name: str, rows: pa.Table, whole: bool) -> None:
        location = f"{created.data_prefix}/data/partition_{partition_id}/{name}.parquet"
        with SortedFileWriter(location, SCHEMA, settings=settings, sketches=False) as writer:
            writer.write(rows)
        references.append(
            FileReference(
                filename=location,
                partition_id=partition_id,
                number_of_rows=rows.num_rows,
                only_contains_data_for_this_partition=whole,
            )
        )

    write(tree.root.id, "root", data.filter(pa.array(on_root)), False)
    rest = data.filter(pa.array(~on_root))
    bounds = [0, *SPLITS, None]
    for i, leaf in enumerate(tree.leaves):
        mask = pc.greater_equal(rest["key"], bounds[i])
        if bounds[i + 1] is not None:
            mask = pc.and_(mask, pc.less(rest["key"], bounds[i + 1]))
        write(leaf.id, f"leaf{i}", rest.filter(mask), True)
    created.state_store.add_files(references)
    return created


def _paths(table: Any) -> list[str]:
    return sorted({ref.filename.removeprefix("file://") for ref in table.file_references()})


@pytest.mark.parametrize("text", FILTERS)
def should_return_the_rows_pyarrow_and_duckdb_select_in_key_order(table: Any, text: str) -> None:
    # When the table is scanned with a filter
    scanned = table.scan(filter=text).to_arrow()
    # Then the rows are those DuckDB selects from the same files, in key order (keys are unique)
    duckdb = pytest.importorskip("duckdb")
    files = ", ".join(f"'{p}'" for p in _paths(table))
    expected = duckdb.sql(f"select key, ts, value, name from read_parquet([{files}]) where {text} order by key").arrow()
    if isinstance(expected, pa.RecordBatchReader):
        expected = expected.read_all()
    assert scanned.to_pylist() == expected.to_pylist()
    # And those a pyarrow dataset scan selects, sorted by key
    dataset = ds.dataset(_paths(table), format="parquet")
    by_pyarrow = dataset.to_table(filter=to_expression(parse_filter(text, SCHEMA), SCHEMA)).sort_by("key")
    assert scanned.to_pylist() == by_pyarrow.to_pylist()
    assert scanned.num_rows > 0 or text == "ts < 0"


def should_return_the_first_rows_and_the_columns_asked_for(table: Any) -> None:
    # When a filtered scan is limited, and projected to columns the filter does not name
    everything = table.scan(filter="value < 20000").to_arrow()
    limited = table.scan(filter="value < 20000", limit=1234).to_arrow()
    projected = table.scan(filter="value < 20000", columns=["name", "key"]).to_arrow()
    # Then the limit gives the first rows in key order, and the columns are those asked for
    assert limited.to_pylist() == everything.slice(0, 1234).to_pylist()
    assert projected.column_names == ["name", "key"]
    assert projected.to_pylist() == everything.select(["name", "key"]).to_pylist()
    assert table.scan(filter="value < 20000").count() == everything.num_rows
