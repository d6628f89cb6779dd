"""A filter's test of page statistics: a read decodes only the pages of a row group that can hold a matching row
(by the page index), with and without key regions, and the rows that match are all among those read."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.core.filter import parse_filter
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.parquet import KeyBounds, ParquetSettings, SortedFileReader, SortedFileWriter
from sleeper.io.row_filter import filter_batch, page_spans, to_expression

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("ts", PrimitiveType.LONG, True),
        Field("name", PrimitiveType.STRING, True),
        Field("noise", PrimitiveType.LONG),
    ],
)
ROWS = 20_000


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
def reader() -> Any:
    fs = in_memory_filesystem()
    with SortedFileWriter(
        "f.parquet", SCHEMA, filesystem=fs, settings=ParquetSettings(page_size=64), sketches=False
    ) as writer:
        writer.write(_data())
    with SortedFileReader("f.parquet", SCHEMA, filesystem=fs) as opened:
        assert opened.metadata.row_group_count == 1
        yield opened


def _read(
    reader: SortedFileReader, text: str, regions: Any, monkeypatch: pytest.MonkeyPatch, readahead: int = 0
) -> tuple[pa.Table, int]:
    """The rows of the read that pass the filter, and how many rows the read decoded page by page (a row group decoded
    whole counts none)."""
    decoded: list[int] = []
    read_fields = SortedFileReader._read_fields

    def counting(self: SortedFileReader, index: Any, group: int, fields: list[str], start: int, end: int) -> Any:
        decoded.append(end - start)
        return read_fields(self, index, group, fields, start, end)

    monkeypatch.setattr(SortedFileReader, "_read_fields", counting)
    node = parse_filter(text, SCHEMA)
    spans = page_spans(node, {"key", "ts", "name", "noise"}, {"name"})
    plan = reader.plan(regions, page_spans=spans)
    batches = reader.read_plan(plan, columns=list(SCHEMA.field_names), readahead=readahead)
    expression = to_expression(node)
    kept = [filter_batch(b, expression) for b in batches]
    rows = pa.Table.from_batches(kept) if kept else _data().schema.empty_table()
    return rows, sum(decoded)


def _expected(mask: pa.ChunkedArray | pa.Array) -> list[int]:
    return _data().filter(mask)["key"].to_pylist()


@pytest.mark.parametrize(
    ("text", "mask"),
    [
        ("ts >= 199000", lambda d: pc.greater_equal(d["ts"], 199_000)),
        (
            "ts between 50000 and 50500",
            lambda d: pc.and_(pc.greater_equal(d["ts"], 50_000), pc.less_equal(d["ts"], 50_500)),
        ),
        ("name starts with 'n0123'", lambda d: pc.starts_with(d["name"], "n0123")),
        ("name = 'n004321' or ts < 300", lambda d: pc.or_(pc.equal(d["name"], "n004321"), pc.less(d["ts"], 300))),
    ],
    ids=["ts-tail", "ts-between", "name-prefix", "name-or-ts"],
)
def should_decode_only_the_pages_that_can_match(
    reader: SortedFileReader, text: str, mask: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, decoded = _read(reader, text, None, monkeypatch)
    assert rows["key"].to_pylist() == _expected(mask(_data()))
    assert 0 < decoded < ROWS // 5, decoded


def should_decode_the_pages_both_the_key_regions_and_the_filter_allow(
    reader: SortedFileReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    regions = [[KeyBounds("key", 10_000, 15_000)]]
    rows, decoded = _read(reader, "ts >= 149000", regions, monkeypatch)
    assert rows["key"].to_pylist() == [k for k in range(14_900, 15_000) if k % 7]
    _, decoded_by_keys = _read(reader, "ts >= 0 or ts is null", regions, monkeypatch)
    assert 0 < decoded < decoded_by_keys // 3, (decoded, decoded_by_keys)


def should_read_every_page_when_no_page_statistics_can_rule_one_out(
    reader: SortedFileReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, _ = _read(reader, "noise = 3", None, monkeypatch)
    assert rows["key"].to_pylist() == _expected(pc.equal(_data()["noise"], 3))
    rows, _ = _read(reader, "ts is null and key < 100", None, monkeypatch)
    assert rows["key"].to_pylist() == list(range(0, 100, 7))
    rows, decoded = _read(reader, "ts > 999999999", None, monkeypatch)
    assert rows.num_rows == 0 and decoded == 0


def should_decode_a_read_aheads_row_group_whole_only_when_nearly_all_of_it_is_wanted(
    reader: SortedFileReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a read ahead (as a scan's), with a filter whose pages hold about 70% of the row group
    rows, decoded = _read(reader, "ts >= 60000", None, monkeypatch, readahead=1)
    # Then only those pages are decoded: a partly wanted row group is decoded whole only from 90% of it
    assert rows["key"].to_pylist() == _expected(pc.greater_equal(_data()["ts"], 60_000))
    assert 0.6 * ROWS < decoded < 0.8 * ROWS, decoded
    # and a filter wanting about 95% of it has it decoded whole
    rows, decoded = _read(reader, "ts >= 10000", None, monkeypatch, readahead=1)
    assert rows["key"].to_pylist() == _expected(pc.greater_equal(_data()["ts"], 10_000))
    assert decoded == 0
    # and the same holds for key ranges: holding 70% of it, only their pages are decoded
    rows, decoded = _read(reader, "ts >= 0 or ts is null", [[KeyBounds("key", 0, 14_000)]], monkeypatch, readahead=1)
    assert rows["key"].to_pylist() == list(range(14_000))
    assert decoded > 0
    # while holding 95% of it, it is decoded whole
    rows, decoded = _read(reader, "ts >= 0 or ts is null", [[KeyBounds("key", 0, 19_000)]], monkeypatch, readahead=1)
    assert rows["key"].to_pylist() == list(range(19_000))
    assert decoded == 0
