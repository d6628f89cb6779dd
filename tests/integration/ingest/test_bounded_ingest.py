"""Standard ingest within Sleeper's memory and local disk settings: a job larger than the local store succeeds, its
sorted runs never take more local disk than ``sleeper.ingest.arrow.max.local.store.bytes``, and every limit is read
from the properties."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core.partition import split_partition
from sleeper.core.properties import instance_ingest as ip
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.ingest import IngestConfigError, IngestLimits, IngestResult, ingest_batches, local_store
from sleeper.ingest import standard as standard_ingest
from sleeper.io.parquet import read_sorted
from sleeper.io.sort import is_sorted
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("sort", PrimitiveType.LONG)],
    values=[Field("payload", PrimitiveType.STRING)],
)


def _rows(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": pa.array([f"k{x:06d}" for x in rng.integers(0, 1_000_000, n)]),
            "sort": pa.array(rng.integers(0, 10, n), type=pa.int64()),
            "payload": pa.array([f"payload-{i:08d}" for i in range(n)]),
        }
    )


def _table(tmp_path: Path, **properties: str) -> Table[LocalInstance]:
    instance = LocalInstance.create(tmp_path / "instance")
    return instance.create_table("t", SCHEMA, split_points=["k250000", "k500000", "k750000"], properties=properties)


def _ingest(table: Table[LocalInstance], rows: pa.Table, local_dir: Path, limits: IngestLimits | None) -> IngestResult:
    return ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        rows.to_batches(max_chunksize=1000),
        job_id="job-1",
        local_dir=local_dir,
        limits=limits,
    )


def _table_rows(table: Table[LocalInstance]) -> Counter[tuple[object, ...]]:
    out = Counter[tuple[object, ...]]()
    for filename in {r.filename for r in table.file_references()}:
        data = pa.Table.from_batches(list(read_sorted(filename, table.schema)))
        assert is_sorted(data, table.schema.key_names)
        out.update(tuple(row.values()) for row in data.to_pylist())
    return out


def _multiset(rows: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row.values()) for row in rows.to_pylist())


def _add_files_count(table: Table[LocalInstance]) -> int:
    log = table.state_store.backend.transaction_log(table.table_id, LogType.FILES)
    return sum(1 for e in log.read_transactions_after(0) if e.transaction_type is TransactionType.ADD_FILES)


def _directory_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def _measure_local_disk(monkeypatch: pytest.MonkeyPatch, local_dir: Path) -> list[int]:
    """Records the bytes under the local directory after every sorted run written and before every write to the
    table (the moments the local store is largest)."""
    seen: list[int] = []
    spill = local_store.LocalStore._spill
    write_all = local_store.LocalStore._write_all_to_table

    def measured_spill(self: local_store.LocalStore) -> None:
        spill(self)
        seen.append(_directory_bytes(local_dir))

    def measured_write(self: local_store.LocalStore) -> None:
        seen.append(_directory_bytes(local_dir))
        write_all(self)

    monkeypatch.setattr(local_store.LocalStore, "_spill", measured_spill)
    monkeypatch.setattr(local_store.LocalStore, "_write_all_to_table", measured_write)
    return seen


@pytest.mark.parametrize("strategy", ["one_reference_per_leaf", "one_file_per_leaf"])
def should_ingest_more_than_the_local_store_holds_keeping_its_runs_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    # Given an input of about 2.4 MB of Arrow data and a local store of 400 kB filled in runs of at most 100 kB,
    # set through the instance's properties
    table = _table(tmp_path, **{"sleeper.table.ingest.file.writing.strategy": strategy})
    instance = table.instance
    budget = 400_000
    instance.properties.set(ip.ARROW_INGEST_BATCH_BUFFER_BYTES, "100000")
    instance.properties.set(ip.ARROW_INGEST_MAX_LOCAL_STORE_BYTES, str(budget))
    instance.properties.set(ip.ARROW_INGEST_MAX_SINGLE_WRITE_TO_FILE_ROWS, "500")
    rows = _rows(60_000)
    assert rows.nbytes > 5 * budget
    local_dir = tmp_path / "local"
    seen = _measure_local_disk(monkeypatch, local_dir)

    # When it is ingested
    result = _ingest(instance.table("t"), rows, local_dir, limits=None)

    # Then every row is in the table once, in sorted files
    assert _table_rows(table) == _multiset(rows)
    assert result.rows_read == result.rows_written == rows.num_rows
    # And the local runs were written to the table several times, never holding more than the budget on disk
    assert result.table_writes >= 5
    assert result.runs_spilled >= 2 * result.table_writes
    assert len(seen) > 10
    assert max(seen) <= budget
    assert 0 < result.peak_local_bytes <= budget
    assert list(local_dir.iterdir()) == []
    # And the job's files were committed together, in one ADD_FILES
    assert _add_files_count(table) == 1
    assert len({r.filename for r in table.file_references()}) == len(result.files) >= result.table_writes


def should_write_straight_to_the_table_when_a_run_would_not_fit_the_local_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a local store smaller than one batch of rows in memory
    table = _table(tmp_path)
    limits = IngestLimits(batch_buffer_bytes=200_000, max_local_store_bytes=100_000, max_rows_per_local_write=1000)
    rows = _rows(20_000)
    local_dir = tmp_path / "local"
    seen = _measure_local_disk(monkeypatch, local_dir)
    # When it is ingested
    result = _ingest(table, rows, local_dir, limits)
    # Then nothing was written to local disk: each batch in memory went to the table
    assert result.runs_spilled == 0 and result.peak_local_bytes == 0
    assert result.table_writes >= 4
    assert set(seen) == {0}
    assert _table_rows(table) == _multiset(rows)


def should_sort_in_memory_no_more_rows_than_the_working_buffer_allows(tmp_path: Path) -> None:
    # Given a batch buffer of 10 MB but a working buffer for sorting 3,000 rows at a time
    table = _table(tmp_path)
    working = 3_000 * local_store.SORT_BYTES_PER_ROW + 10 * 40
    limits = IngestLimits(batch_buffer_bytes=10_000_000, working_buffer_bytes=working, max_rows_per_local_write=10)
    rows = _rows(30_000)
    # When it is ingested
    result = _ingest(table, rows, tmp_path / "local", limits)
    # Then the rows were sorted in runs of at most 3,000 rows: at least ten of them
    assert result.runs_spilled + result.table_writes >= 10
    assert _table_rows(table) == _multiset(rows)


def should_hold_rows_and_local_rows_by_count_for_the_arraylist_row_batch_type(tmp_path: Path) -> None:
    # Given the arraylist row batch type: 1,000 rows in memory and 5,000 rows held locally
    table = _table(tmp_path, **{"sleeper.table.ingest.row.batch.type": "arraylist"})
    instance = table.instance
    instance.properties.set(ip.MAX_IN_MEMORY_BATCH_SIZE, "1000")
    instance.properties.set(ip.MAX_ROWS_TO_WRITE_LOCALLY, "5000")
    rows = _rows(20_000)
    # When it is ingested
    result = _ingest(instance.table("t"), rows, tmp_path / "local", limits=None)
    # Then memory was released every 1,000 rows, and the table written every 5,000 (four local runs, then the rows in
    # memory with them), as Sleeper's arraylist batch does
    assert result.table_writes == 4
    assert result.runs_spilled == 16
    assert _table_rows(table) == _multiset(rows)


def should_read_every_limit_from_the_properties(tmp_path: Path) -> None:
    # Given each setting with a value of its own
    table = _table(tmp_path, **{"sleeper.table.ingest.row.batch.type": "ARRAYLIST"})
    properties = table.instance.properties
    for prop, value in (
        (ip.ARROW_INGEST_BATCH_BUFFER_BYTES, "1001"),
        (ip.ARROW_INGEST_WORKING_BUFFER_BYTES, "1002"),
        (ip.ARROW_INGEST_MAX_LOCAL_STORE_BYTES, "1003"),
        (ip.ARROW_INGEST_MAX_SINGLE_WRITE_TO_FILE_ROWS, "1004"),
        (ip.MAX_IN_MEMORY_BATCH_SIZE, "1005"),
        (ip.MAX_ROWS_TO_WRITE_LOCALLY, "1006"),
        (ip.INGEST_PARTITION_REFRESH_PERIOD_IN_SECONDS, "1007"),
    ):
        properties.set(prop, value)
    # When the limits are read
    limits = IngestLimits.from_properties(table.instance.table("t").properties)
    # Then each comes from its property
    assert limits == IngestLimits(
        row_batch_type="arraylist",
        batch_buffer_bytes=1001,
        working_buffer_bytes=1002,
        max_local_store_bytes=1003,
        max_rows_per_local_write=1004,
        max_rows_in_memory=1005,
        max_local_rows=1006,
        partition_refresh_seconds=1007.0,
    )


def should_refuse_rows_larger_than_the_memory_allows(tmp_path: Path) -> None:
    # Given buffers too small for one row
    table = _table(tmp_path)
    limits = IngestLimits(batch_buffer_bytes=10, working_buffer_bytes=100)
    # When rows are ingested, then the error names the settings to raise
    with pytest.raises(IngestConfigError, match="sleeper.ingest.arrow.batch.buffer.bytes"):
        _ingest(table, _rows(10), tmp_path / "local", limits)
    assert table.file_references() == []


@pytest.mark.parametrize("refresh_seconds, expect_new_leaves", [(1e-9, True), (3600.0, False)])
def should_read_the_partitions_again_once_the_refresh_period_has_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh_seconds: float, expect_new_leaves: bool
) -> None:
    # Given an ingest that writes to the table twice, and a partition split between the two writes
    table = _table(tmp_path)
    limits = IngestLimits(
        batch_buffer_bytes=100_000,
        max_local_store_bytes=1,
        max_rows_per_local_write=1000,
        partition_refresh_seconds=refresh_seconds,
    )
    write = standard_ingest._TableWriter.write
    calls: list[int] = []

    def split_after_first_write(self: standard_ingest._TableWriter, streams: list[object]) -> None:
        write(self, streams)  # type: ignore[arg-type]
        calls.append(1)
        if len(calls) == 1:
            _split_first_leaf(table)

    monkeypatch.setattr(standard_ingest._TableWriter, "write", split_after_first_write)
    leaves_before = {p.id for p in table.leaf_partitions()}
    # When it runs
    result = _ingest(table, _rows(10_000), tmp_path / "local", limits)
    # Then the later writes use the new leaves only if the refresh period had passed
    assert result.table_writes >= 2
    new_leaves = {p.id for p in table.leaf_partitions()} - leaves_before
    referenced = {r.partition_id for r in table.file_references()}
    assert len(new_leaves) == 2
    assert bool(referenced & new_leaves) is expect_new_leaves


def _split_first_leaf(table: Table[LocalInstance]) -> None:
    leaf = table.leaf_partitions()[0]
    parent, left, right = split_partition(table.schema, leaf, 0, "k100000")
    table.state_store.commit(SplitPartitionTransaction(parent=parent, new_children=(left, right)))
