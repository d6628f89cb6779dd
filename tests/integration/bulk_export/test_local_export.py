"""Bulk export on a local instance: a 2M-row table of 16 leaves exported to a directory gives one sorted file per
leaf whose rows are a full query's (count and checksum); with a filtering iterator the export equals the filtered
query; a second export of the same ``exportId`` adds no file; every leaf export is tracked."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_export.local import ExportSummary, export_table
from sleeper.bulk_export.model import BulkExportQuery
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.runtime.local.instance import LocalInstance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROWS = 2_000_000
LEAVES = 16
SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.STRING)],
)
NOW_MS = int(time.time() * 1000)
DAY_MS = 86_400_000


def _rows() -> pa.Table:
    rng = np.random.default_rng(18)
    keys = rng.integers(0, 1_000_000_000, ROWS, dtype=np.int64)
    # half the rows are 10 days old, half from the last hour
    ages = np.where(np.arange(ROWS) % 2 == 0, 10 * DAY_MS, rng.integers(0, 3_600_000, ROWS))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array(NOW_MS - ages, pa.int64()),
            "value": pa.array(np.char.add("v", (keys % 1000).astype(str)), pa.string()),
        }
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> LocalInstance:
    """A table of 16 leaves holding 2M rows, ingested in two batches (so each leaf has two files to merge)."""
    local = LocalInstance.create(tmp_path_factory.mktemp("export") / "instance")
    splits = [int(s) for s in np.linspace(0, 1_000_000_000, LEAVES + 1)[1:-1]]
    table = local.create_table("big", SCHEMA, split_points=splits)
    data = _rows()
    table.ingest(data.slice(0, ROWS // 2))
    table.ingest(data.slice(ROWS // 2))
    assert len(table.leaf_partitions()) == LEAVES
    return local


def _checksum(rows: pa.Table) -> tuple[int, int, int]:
    """Row count, sum of keys and sum of timestamps (both wrap-free in Python ints) and a hash of the values."""
    keys = int(pc.sum(rows["key"]).as_py() or 0)
    stamps = int(pc.sum(rows["timestamp"]).as_py() or 0)
    return rows.num_rows, keys, stamps


def _read(summary: ExportSummary) -> list[pa.Table]:
    return [pq.read_table(path) for path in summary.files]


def _is_sorted(rows: pa.Table) -> bool:
    keys = rows["key"].to_numpy()
    stamps = rows["timestamp"].to_numpy()
    same_key = keys[1:] == keys[:-1]
    return bool(np.all(keys[1:] >= keys[:-1]) and np.all(stamps[1:][same_key] >= stamps[:-1][same_key]))


def should_export_every_row_once_in_one_sorted_file_per_leaf(instance: LocalInstance, tmp_path: Path) -> None:
    # Given the table's full query
    table = instance.table("big")
    expected = table.query()
    # When the table is exported to a directory
    summary = export_table(instance, BulkExportQuery(export_id="all-rows", table_name="big"), str(tmp_path))
    # Then there is one file per leaf, under <dir>/<tableId>/<exportId>/, each sorted
    files = sorted(Path(p) for p in summary.files)
    assert len(files) == LEAVES
    assert sorted((tmp_path / table.table_id / "all-rows").glob("*.parquet")) == files
    parts = _read(summary)
    assert all(_is_sorted(part) for part in parts)
    # And together they hold exactly the query's rows: the same count and checksum, and the same rows in order
    exported = pa.concat_tables(parts)
    assert _checksum(exported) == _checksum(expected) and exported.num_rows == ROWS
    assert exported.equals(expected.select(exported.column_names))
    assert summary.rows_written == ROWS
    # And the export and each leaf export are tracked COMPLETED, with the rows written
    tracked = instance.query_tracker.status("all-rows")
    assert tracked is not None and tracked.last_known_state is QueryState.COMPLETED and tracked.row_count == ROWS
    assert len(instance.query_tracker.sub_queries("all-rows")) == LEAVES


def should_export_what_the_query_returns_when_a_filter_drops_rows(instance: LocalInstance, tmp_path: Path) -> None:
    # Given a filtering iterator on the table: rows older than a day are aged off
    table = instance.table("big").set_properties({"sleeper.table.filters": f"ageOff(timestamp,{DAY_MS})"})
    expected = table.query()
    assert 0 < expected.num_rows < ROWS
    # When the table is exported
    summary = export_table(instance, BulkExportQuery(export_id="filtered", table_name="big"), str(tmp_path))
    # Then the export holds exactly the filtered query's rows
    exported = pa.concat_tables(_read(summary))
    assert _checksum(exported) == _checksum(expected)
    assert exported.equals(expected.select(exported.column_names))
    table.set_properties({"sleeper.table.filters": ""})


def should_not_duplicate_files_when_the_same_export_id_is_sent_again(instance: LocalInstance, tmp_path: Path) -> None:
    # Given an export that finished
    query = BulkExportQuery(export_id="twice", table_name="big")
    first = export_table(instance, query, str(tmp_path))
    # When the same export id is sent again
    second = export_table(instance, query, str(tmp_path))
    # Then nothing is exported again and the directory holds the first export's files only
    assert second.already_finished and second.files == ()
    table_id = instance.table("big").table_id
    assert sorted(str(p) for p in (tmp_path / table_id / "twice").glob("*.parquet")) == sorted(first.files)


def should_export_what_the_query_returns_with_the_tables_own_iterator(instance: LocalInstance, tmp_path: Path) -> None:
    # Given the table's iterator (a Python plug-in) keeps only rows younger than a day
    iterator = {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.FixedAgeOffIterator",
        "sleeper.table.iterator.config": f"timestamp,{NOW_MS - DAY_MS}",
    }
    table = instance.table("big").set_properties(iterator)
    expected = table.query()
    assert 0 < expected.num_rows < ROWS
    # When the table is exported
    summary = export_table(instance, BulkExportQuery(export_id="iterated", table_name="big"), str(tmp_path))
    # Then the export holds exactly the query's rows (the export used to skip the table's iterator)
    exported = pa.concat_tables(_read(summary))
    assert _checksum(exported) == _checksum(expected)
    assert exported.equals(expected.select(exported.column_names))
    table.set_properties({"sleeper.table.iterator.class.name": "", "sleeper.table.iterator.config": ""})
