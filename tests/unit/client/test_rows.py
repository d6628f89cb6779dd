"""Rows given as dicts, as Sleeper's Python client takes them, converted to the table's Arrow schema, and the spool
file of the batch writer."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.client.errors import ClientArgumentError
from sleeper.client.rows import ParquetSpool, parquet_bytes, rows_to_batch
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema
from sleeper.io.arrow_types import arrow_schema

SCHEMA = Schema(
    row_key_fields=(Field("id", PrimitiveType.INT),),
    sort_key_fields=(Field("at", PrimitiveType.LONG),),
    value_fields=(
        Field("name", PrimitiveType.STRING),
        Field("tags", ListType(PrimitiveType.STRING)),
        Field("scores", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
        Field("note", PrimitiveType.STRING, nullable=True),
    ),
)


def _row(i: int) -> dict[str, object]:
    return {"id": i, "at": 10 * i, "name": f"n{i}", "tags": ["a"], "scores": {"x": i}, "note": None}


def should_convert_rows_to_the_tables_column_types() -> None:
    # When rows with Python ints, lists and dicts are converted (fields in any order, a nullable one left out)
    batch = rows_to_batch([{"name": "a", "id": 1, "at": 2, "tags": [], "scores": {}}], SCHEMA, table_name="t")
    # Then the batch has the table's Arrow schema: IntType as int32, maps as maps
    assert batch.schema == arrow_schema(SCHEMA)
    assert batch.schema.field("id").type == pa.int32()
    assert batch.to_pylist() == [{"id": 1, "at": 2, "name": "a", "tags": [], "scores": [], "note": None}]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{**_row(1), "colour": "red", "size": 3}], "does not have: colour, size"),
        ([{k: v for k, v in _row(1).items() if k != "name"}], "'name' is not nullable"),
        ([{**_row(1), "id": 2**40}], "do not suit the schema of table 't'"),
        ([{**_row(1), "at": "late"}], "do not suit the schema"),
        ([_row(1), "row"], "one per row"),
        ("rows", "list of dicts"),
        (pa.table({"id": [1]}), "list of dicts"),
    ],
)
def should_refuse_rows_that_do_not_suit_the_table(rows: object, message: str) -> None:
    with pytest.raises(ClientArgumentError, match=message):
        rows_to_batch(rows, SCHEMA, table_name="t")


def should_convert_no_rows_to_an_empty_batch_of_the_schema() -> None:
    batch = rows_to_batch([], SCHEMA, table_name="t")
    assert batch.num_rows == 0 and batch.schema == arrow_schema(SCHEMA)
    assert pq.read_table(pa.BufferReader(parquet_bytes(batch))).schema.names == list(SCHEMA.field_names)


def should_spool_batches_into_row_groups_of_the_buffer_size() -> None:
    # Given a spool whose row groups hold about one batch of 100 rows
    batch = rows_to_batch([_row(i) for i in range(100)], SCHEMA, table_name="t")
    spool = ParquetSpool(arrow_schema(SCHEMA), row_group_bytes=batch.nbytes)
    try:
        # When three batches are appended
        for _ in range(3):
            spool.append(batch)
        path = spool.close()
        # Then the file holds every row in three row groups
        file = pq.ParquetFile(path)
        assert spool.num_rows == 300 and file.metadata.num_rows == 300 and file.num_row_groups == 3
    finally:
        spool.discard()
    # And discarding deletes it
    assert not __import__("os").path.exists(path)
