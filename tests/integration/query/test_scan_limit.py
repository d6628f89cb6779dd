"""A scan's limit is pushed into the query executor: once the rows are found, no further sub-query reads its files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import sleeper
from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.filesystem import filesystem_path
from sleeper.query.exceptions import QueryExecutionError

pytestmark = pytest.mark.integration

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),))


def should_stop_reading_once_the_limit_is_found(tmp_path: Path) -> None:
    # Given a table of two leaves, whose second leaf's file has gone from disk
    table = sleeper.create_instance(tmp_path / "instance").create_table(
        "t", SCHEMA, split_points=[100], properties={"sleeper.table.ingest.file.writing.strategy": "one_file_per_leaf"}
    )
    table.ingest(pa.table({"key": pa.array(range(200), pa.int64()), "value": pa.array(range(200), pa.int64())}))
    second = next(p.id for p in table.leaf_partitions() if p.region.ranges["key"].min == 100)
    gone = next(r.filename for r in table.file_references() if r.partition_id == second)
    Path(filesystem_path(gone)).unlink()

    # When the first rows are scanned with a limit within the first leaf
    first = table.scan(limit=50).to_arrow()

    # Then they come back without the second leaf's file being read, while a whole scan has to read it
    assert first["key"].to_pylist() == list(range(50))
    with pytest.raises((SleeperError, OSError)):
        table.scan().to_arrow()


def should_refuse_a_negative_limit_and_an_unknown_column(tmp_path: Path) -> None:
    table = sleeper.create_instance(tmp_path / "instance").create_table("t", SCHEMA)
    with pytest.raises(QueryExecutionError, match="limit must be 0 or more"):
        table.scan(limit=-1)
    with pytest.raises(QueryExecutionError, match="no column 'nope'"):
        table.scan(columns=["nope"])
