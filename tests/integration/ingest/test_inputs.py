"""Rows given as dicts, tables, record batches or Parquet paths become the same batches for standard ingest."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.ingest.exceptions import IngestError
from sleeper.ingest.inputs import as_batches
from sleeper.runtime.local.instance import LocalInstance

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])
ROWS = [{"key": "b", "value": 2}, {"key": "a", "value": 1}]


def _rows(batches: list[pa.RecordBatch]) -> list[dict[str, object]]:
    return pa.Table.from_batches(batches).select(["key", "value"]).to_pylist()


@pytest.mark.parametrize("form", ["dicts", "table", "batch", "batches", "file", "directory", "paths"])
def should_read_every_accepted_form_as_the_same_rows(form: str, tmp_path: Path) -> None:
    # Given the same rows in one of the accepted forms
    table = pa.table({"key": ["b", "a"], "value": pa.array([2, 1], pa.int64())})
    pq.write_table(table, tmp_path / "rows.parquet")
    data: object = {
        "dicts": ROWS,
        "table": table,
        "batch": table.to_batches()[0],
        "batches": iter(table.to_batches()),
        "file": tmp_path / "rows.parquet",
        "directory": str(tmp_path),
        "paths": [str(tmp_path / "rows.parquet")],
    }[form]
    # When they are read as batches
    batches = list(as_batches(data, SCHEMA))  # type: ignore[arg-type]
    # Then they hold the rows as given
    assert _rows(batches) == ROWS


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (42, "cannot ingest a int"),
        ([{"key": "a", "value": "x"}], "rows do not suit the table schema"),
        (["/no/such/file.parquet"], "No files found at /no/such/file.parquet"),
        ([pa.table({"key": ["a"]})], "expected record batches, got Table"),
    ],
)
def should_name_what_is_wrong_with_bad_input(data: object, message: str) -> None:
    # Given input of no accepted form
    # When it is read
    # Then the error says what is wrong
    with pytest.raises(IngestError, match=message):
        list(as_batches(data, SCHEMA))  # type: ignore[arg-type]


def should_ingest_dicts_into_a_local_table_and_query_them(tmp_path: Path) -> None:
    # Given a local table with a split point
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=["m"])
    # When dicts are ingested through the table
    result = table.ingest([{"key": k, "value": i} for i, k in enumerate(["z", "a", "q", "c"])])
    # Then they are written and every row comes back in key order
    assert result.rows_written == 4
    assert table.query().column("key").to_pylist() == ["a", "c", "q", "z"]
    assert table.query(keys=[["q"]]).column("value").to_pylist() == [2]
