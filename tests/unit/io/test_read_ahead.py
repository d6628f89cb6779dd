"""Reading a file's row groups ahead on the reading pool gives the same rows in the same order as reading them one
after another, for every kind of plan; a read closed early leaves nothing running; a file's row group statistics
are decoded once per kept footer and prune as a test of the footer does."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.filter import may_match, parse_filter
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.parquet import KeyBounds, ParquetSettings, SortedFileReader, SortedFileWriter
from sleeper.io.parquet_reader import read_pool
from sleeper.io.row_filter import column_positions, page_spans, row_group_may_match

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("ts", PrimitiveType.LONG, True),
        Field("name", PrimitiveType.STRING, True),
        Field("noise", PrimitiveType.LONG),
    ],
)
LATER = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[*SCHEMA.value_fields, Field("added", PrimitiveType.STRING, True)],
)
ROWS = 12_000


def _data() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "ts": pa.array([None if i % 7 == 0 else i * 10 for i in range(ROWS)], pa.int64()),
            "name": pa.array([f"n{i:06d}" for i in range(ROWS)]),
            "noise": pa.array([(i * 7919) % 1000 for i in range(ROWS)], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    location = str(tmp_path_factory.mktemp("ahead") / "f.parquet")
    settings = ParquetSettings(row_group_rows=1000, page_size=1024)
    with SortedFileWriter(location, SCHEMA, settings=settings, sketches=False) as writer:
        writer.write(_data())
    return location


PLANS: dict[str, tuple[Any, str | None]] = {
    "whole file": (None, None),
    "regions": ([[KeyBounds("key", 1_500, 4_250)], [KeyBounds("key", 9_990, None)]], None),
    "filter pages": (None, "ts >= 100000 or name starts with 'n0005'"),
    "regions and filter pages": ([[KeyBounds("key", 2_500, 8_000)]], "ts between 30000 and 60000"),
    "most of one row group": ([[KeyBounds("key", 3_100, 3_990)]], None),
    "one whole row group, filtered": ([[KeyBounds("key", 3_000, 4_000)]], "ts >= 39000"),
    "a few rows of one row group": ([[KeyBounds("key", 3_100, 3_140)]], "noise < 500"),
    "nothing": ([[KeyBounds("key", 50_000, None)]], None),
}


def _read(reader: SortedFileReader, name: str, readahead: int, columns: list[str] | None = None) -> pa.Table:
    regions, text = PLANS[name]
    spans = None if text is None else page_spans(parse_filter(text, SCHEMA), {"key", "ts", "name", "noise"}, {"name"})
    plan = reader.plan(regions, page_spans=spans)
    batches = list(reader.read_plan(plan, columns=columns, batch_size=700, readahead=readahead))
    return pa.Table.from_batches(batches) if batches else pa.table({})


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("readahead", [1, 3, 20])
def should_read_the_same_rows_in_the_same_order_ahead(path: str, name: str, readahead: int) -> None:
    # Given a file of 12 row groups, read by a plan one row group after another
    with SortedFileReader(path, SCHEMA) as reader:
        expected = _read(reader, name, 0)
        # When it is read with row groups decoded ahead on the pool
        ahead = _read(reader, name, readahead)
    # Then the rows and their order are the same
    assert ahead.equals(expected)
    assert expected.num_rows > 0 or name == "nothing"


def should_read_a_column_the_file_lacks_as_nulls_ahead(path: str) -> None:
    # Given a schema with a nullable column added after the file was written
    with SortedFileReader(path, LATER) as reader:
        # When a plan is read ahead with that column
        columns = ["key", "added", "ts"]
        expected = _read(reader, "regions and filter pages", 0, columns)
        ahead = _read(reader, "regions and filter pages", 4, columns)
    # Then it reads as nulls, as without reading ahead
    assert ahead.equals(expected)
    assert ahead.column_names == columns and ahead["added"].null_count == ahead.num_rows > 0


def should_stop_reading_when_closed_early_and_keep_the_pool_usable(path: str) -> None:
    # Given a read ahead of a whole file
    with SortedFileReader(path, SCHEMA) as reader:
        batches = reader.read_plan(reader.plan(None), batch_size=500, readahead=4)
        # When one batch is taken and the read is closed
        first = next(batches)
        batches.close()  # type: ignore[attr-defined]
    # Then the batch is the file's first rows, and nothing of the read is left on the pool
    assert first["key"].to_pylist() == list(range(500))
    assert read_pool().submit(lambda: 42).result(timeout=10) == 42
    with SortedFileReader(path, SCHEMA) as reader:
        assert sum(b.num_rows for b in reader.read_plan(reader.plan(None), readahead=2)) == ROWS


def should_decode_each_row_group_read_ahead_on_one_pool_thread(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a read ahead of a whole file, every pyarrow decode recorded with its thread and its use of threads
    calls: list[tuple[str, bool]] = []
    iter_batches = pq.ParquetFile.iter_batches

    def recording(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        calls.append((threading.current_thread().name, kwargs.get("use_threads", True)))
        return iter_batches(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recording)
    with SortedFileReader(path, SCHEMA) as reader:
        rows = sum(b.num_rows for b in reader.read_plan(reader.plan(None), batch_size=700, readahead=4))
        # and the same file read not ahead
        assert sum(b.num_rows for b in reader.read_plan(reader.plan(None), batch_size=700)) == rows == ROWS
    # Then each row group read ahead was decoded on a pool thread, its columns not handed to pyarrow's threads, while
    # the read not ahead decodes its columns in parallel on the caller's thread
    pool = [call for call in calls if call[0] != threading.current_thread().name]
    assert len(pool) == 12 and all(name.startswith("parquet-read") and not threads for name, threads in pool)
    assert calls[-1] == (threading.current_thread().name, True)


def should_refuse_a_negative_readahead(path: str) -> None:
    with SortedFileReader(path, SCHEMA) as reader, pytest.raises(ValueError, match="readahead"):
        reader.read_plan(reader.plan(None), readahead=-1)


@pytest.mark.parametrize("text", ["ts >= 100000", "name < 'n000500' or ts > 115000", "noise = 3", "key > 11500"])
def should_prune_row_groups_by_statistics_decoded_once(path: str, text: str) -> None:
    # Given a file read by two readers in turn (its footer kept between them)
    node = parse_filter(text, SCHEMA)
    columns = {"key", "ts", "name", "noise"}
    with SortedFileReader(path, SCHEMA) as first:
        statistics = first.row_group_statistics(columns)
        metadata = first.parquet_metadata
    with SortedFileReader(path, SCHEMA) as second:
        again = second.row_group_statistics(columns)
    # Then the second reader's statistics are those the first decoded, not decoded again
    assert again is statistics
    # And each row group is kept exactly when the test of the footer keeps it
    positions = column_positions(metadata)
    kept = [g for g in range(metadata.num_row_groups) if may_match(node, statistics[g])]
    assert kept == [
        g for g in range(metadata.num_row_groups) if row_group_may_match(metadata, g, node, columns, positions)
    ]
    assert len(kept) < metadata.num_row_groups or text == "noise = 3"


def should_keep_statistics_per_file(tmp_path: Path) -> None:
    # Given two files of different rows
    paths = []
    for i in range(2):
        location = str(tmp_path / f"f{i}.parquet")
        with SortedFileWriter(location, SCHEMA, sketches=False) as writer:
            writer.write(_data().slice(i * 100, 100))
        paths.append(location)
    # Then each reader gives its own file's statistics
    mins = []
    for location in paths:
        with SortedFileReader(location, SCHEMA) as reader:
            mins.append(reader.row_group_statistics({"key"})[0]["key"].min)
    assert mins == [0, 100]
