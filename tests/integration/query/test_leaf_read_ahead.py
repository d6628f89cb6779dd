"""A query reads its next sub-query's files ahead while the current one is merged: the rows and their order are
those of the sub-queries run one after another, closing the stream early closes every file opened (the next
sub-query's too) and leaves no read running, and an error reading the next sub-query is raised when it is reached,
after the rows before it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import sleeper
from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.parquet_reader import SortedFileReader
from sleeper.io.read_pool import read_pool
from sleeper.query import executor
from sleeper.query.executor import execute, table_query_of

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(Field("value", PrimitiveType.LONG), Field("name", PrimitiveType.STRING)),
)
ROWS = 30_000
SPLITS = [10_000, 20_000]


def _rows(keys: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "value": pa.array(keys % 97, pa.int64()),
            "name": pa.array([f"n{k % 1000:04d}" for k in keys]),
        }
    )


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """Three leaves, each with its own files of many row groups from two ingests (so each sub-query merges)."""
    table = sleeper.create_instance(tmp_path / "instance").create_table(
        "t",
        SCHEMA,
        split_points=SPLITS,
        properties={
            "sleeper.table.parquet.rowgroup.rows.max": "1000",
            "sleeper.table.ingest.file.writing.strategy": "one_file_per_leaf",
        },
    )
    keys = np.arange(ROWS)
    table.ingest(_rows(keys[keys % 3 != 0]))
    table.ingest(_rows(keys[keys % 3 == 0]))
    return table


class _OpenFiles:
    """Counts the readers opened and closed while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []
        original_init, original_close = SortedFileReader.__init__, SortedFileReader.close
        files = self

        def init(reader: SortedFileReader, location: str, *args: Any, **kwargs: Any) -> None:
            original_init(reader, location, *args, **kwargs)
            files.opened.append(location)

        def close(reader: SortedFileReader) -> None:
            files.closed.append(reader._location)
            original_close(reader)

        monkeypatch.setattr(SortedFileReader, "__init__", init)
        monkeypatch.setattr(SortedFileReader, "close", close)


@pytest.mark.parametrize("text", [None, "value < 10", "name >= 'n0500' and key >= 5000"])
def should_return_the_rows_of_every_leaf_in_key_order(table: Any, text: str | None) -> None:
    # Given the rows the table holds, filtered as the query is, in key order
    expected = _rows(np.arange(ROWS))
    if text == "value < 10":
        expected = expected.filter(pa.compute.less(expected["value"], 10))
    elif text is not None:
        expected = expected.filter(
            pa.compute.and_(
                pa.compute.greater_equal(expected["name"], "n0500"), pa.compute.greater_equal(expected["key"], 5000)
            )
        )
    # When the table is scanned in small batches (each sub-query's next one read ahead)
    query = table_query_of(table, row_filter=text)
    result = execute(query, table, batch_rows=700).read_all()
    # Then every row comes once, in key order
    assert result.equals(expected.cast(result.schema))


def should_close_every_file_and_leave_no_read_running_when_closed_early(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _OpenFiles(monkeypatch)
    # Given a scan of the table's three leaves, from which one batch is taken (the next leaf's files opened ahead)
    stream = execute(table_query_of(table), table, batch_rows=500)
    first = stream.read_next_batch()
    assert first["key"][0].as_py() == 0
    assert len(set(files.opened)) > 2
    # When the stream is closed and let go (pyarrow lets go of the batches' generator with the reader)
    stream.close()
    del stream
    gc.collect()
    # Then every file opened is closed, and the reading pool has nothing of the scan left to run
    assert set(files.closed) == set(files.opened)
    assert read_pool().submit(lambda: 42).result(timeout=10) == 42


def should_raise_an_error_of_the_next_leaf_when_it_is_reached(table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table whose second leaf's files fail to decode (a read on the reading threads raises)
    second = {r.filename for r in table.file_references() if _in_second(table, r.partition_id)}
    assert len(second) == 2
    original = SortedFileReader._read_group

    def failing(reader: SortedFileReader, *args: Any, **kwargs: Any) -> Any:
        if reader._location in second:
            raise OSError("cannot decode")
        return original(reader, *args, **kwargs)

    monkeypatch.setattr(SortedFileReader, "_read_group", failing)
    files = _OpenFiles(monkeypatch)
    # When the table is scanned
    stream = execute(table_query_of(table), table, batch_rows=500)
    keys: list[int] = []
    with pytest.raises((OSError, SleeperError), match="cannot decode"):
        for batch in stream:
            keys.extend(batch["key"].to_pylist())
    # Then the first leaf's rows came, in order, before the error, and every file opened is closed
    assert keys == list(range(SPLITS[0]))
    del stream
    gc.collect()
    assert set(files.closed) == set(files.opened)


def _in_second(table: Any, partition_id: str) -> bool:
    leaf = next((p for p in table.leaf_partitions() if p.id == partition_id), None)
    return leaf is not None and leaf.region.ranges["key"].min == SPLITS[0]


def should_read_the_next_leaf_ahead_at_background_priority(table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the leaves' sub-queries opened by a scan, recorded with whether they read ahead in the background
    opened: list[bool] = []
    original = executor._open_leaf

    def recording(*args: Any, background: bool = False, **kwargs: Any) -> Any:
        opened.append(background)
        return original(*args, background=background, **kwargs)

    monkeypatch.setattr(executor, "_open_leaf", recording)
    # When the table is scanned
    assert execute(table_query_of(table), table).read_all().num_rows == ROWS
    # Then the first leaf is opened in the foreground, each later one ahead of its turn, in the background
    assert opened == [False, True, True]
