"""Running compaction jobs: merged output, region limits, iterators, row groups, sketches and bounded memory."""

from __future__ import annotations

import random
from contextlib import ExitStack

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleeper.compaction.exceptions import CompactionInputError
from sleeper.compaction.execution import ExecutionSettings, compaction_batches, run_compaction
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io import data_engine
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.data_engine import DEFAULT_ENGINE, ENGINE_ARROW, ENGINE_DATAFUSION, resolve_engine
from sleeper.io.datafusion import datafusion_can_read
from sleeper.io.exceptions import DataEngineError, EngineUnavailableError
from sleeper.io.parquet import ParquetSettings
from sleeper.io.sketches import Sketches, sketches_path
from sleeper.io.sort import sort_table
from sleeper.iterators.exceptions import IteratorLoadError
from tests.unit.compaction.execution_fixtures import new_table
from tests.unit.io.parquet_fixtures import key_schema, rows_table, sorted_rows

KEY_TYPES = [PrimitiveType.INT, PrimitiveType.LONG, PrimitiveType.STRING, PrimitiveType.BYTE_ARRAY]

LONG_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("count", PrimitiveType.LONG), Field("time", PrimitiveType.LONG)],
)


def _long_rows(keys: list[int], *, count: int = 1, time: int = 0) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "count": pa.array([count] * len(keys), pa.int64()),
            "time": pa.array([time] * len(keys), pa.int64()),
        }
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key_type=st.sampled_from(KEY_TYPES),
    second_key=st.none() | st.sampled_from(KEY_TYPES),
    sizes=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=5),
    batch_rows=st.sampled_from([7, 64, 1000]),
    seed=st.integers(0, 2**16),
)
def should_write_the_sorted_concatenation_of_the_inputs(
    key_type: PrimitiveType, second_key: PrimitiveType | None, sizes: list[int], batch_rows: int, seed: int
) -> None:
    # Given
    schema = key_schema(key_type, second_key=second_key)
    table = new_table(schema)
    inputs = [rows_table(schema, sorted_rows(schema, n, seed + i)) for i, n in enumerate(sizes)]
    files = [table.add_file(rows) for rows in inputs]
    job = table.job(files)

    # When
    result = run_compaction(job, table, settings=ExecutionSettings(batch_rows=batch_rows), filesystem=table.filesystem)

    # Then
    expected = sort_table(pa.concat_tables(inputs), schema.key_names).cast(arrow_schema(schema))
    assert table.read(job.output_file).equals(expected)
    assert (result.rows_read, result.rows_written, result.output.rows) == (sum(sizes),) * 3
    assert result.engine == ENGINE_ARROW


def should_read_only_the_region_of_the_partition_from_files_shared_with_its_sibling() -> None:
    # Given a file on the root referenced by both children of a split at 50
    table = new_table(LONG_SCHEMA, split_points=[50])
    left, right = table.leaf(0), table.leaf(1)
    shared = table.add_file(_long_rows(list(range(0, 100, 3))), partitions=[left.id, right.id])
    own = table.add_file(_long_rows([10, 60, 99]), partitions=[right.id])
    job = table.job([shared, own], right.id)

    # When
    result = run_compaction(job, table, filesystem=table.filesystem)

    # Then only the rows at or above the split point are written
    keys = table.read(job.output_file).column("key").to_pylist()
    assert keys == sorted([k for k in range(0, 100, 3) if k >= 50] + [60, 99])
    assert result.rows_read == len(keys)


def should_limit_rows_to_a_region_on_a_string_key() -> None:
    # Given
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("v", PrimitiveType.LONG)])
    table = new_table(schema, split_points=["m"])
    words = ["", "a", "l", "lzz", "m", "m\x00", "ma", "z", "é"]
    rows = pa.table({"key": words, "v": pa.array(range(len(words)), pa.int64())})
    left, right = table.leaf(0), table.leaf(1)
    shared = table.add_file(rows, partitions=[left.id, right.id])

    # When
    run_compaction(table.job([shared], left.id, job_id="left"), table, filesystem=table.filesystem)
    run_compaction(table.job([shared], right.id, job_id="right"), table, filesystem=table.filesystem)

    # Then the two outputs split the rows at "m" (strings compare by code point)
    out_left = table.read(f"data/{table.table_id}/data/partition_{left.id}/left.parquet").column("key").to_pylist()
    out_right = table.read(f"data/{table.table_id}/data/partition_{right.id}/right.parquet").column("key").to_pylist()
    assert out_left == ["", "a", "l", "lzz"]
    assert out_right == ["m", "m\x00", "ma", "z", "é"]


def should_apply_the_table_aggregations_and_filters() -> None:
    # Given rows with equal keys in different files, some older than the age-off limit
    now = 1_000_000
    table = new_table(
        LONG_SCHEMA,
        properties={"sleeper.table.aggregations": "sum(count),max(time)", "sleeper.table.filters": "ageOff(time,1000)"},
    )
    first = table.add_file(_long_rows([1, 2, 3], count=1, time=now - 10))
    second = table.add_file(_long_rows([2, 3, 4], count=5, time=now - 5))
    old = table.add_file(_long_rows([1, 5], count=100, time=now - 5000))
    job = table.job([first, second, old])

    # When
    result = run_compaction(job, table, now_ms=now, filesystem=table.filesystem)

    # Then
    out = table.read(job.output_file)
    assert out.column("key").to_pylist() == [1, 2, 3, 4]
    assert out.column("count").to_pylist() == [1, 6, 6, 5]
    assert out.column("time").to_pylist() == [now - 10, now - 5, now - 5, now - 5]
    assert (result.rows_read, result.rows_written) == (8, 4)


def should_apply_the_iterators_the_job_carries_rather_than_the_table_ones() -> None:
    # Given a job created when the table aggregated counts
    table = new_table(LONG_SCHEMA)
    files = [table.add_file(_long_rows([7, 7, 8], count=2)), table.add_file(_long_rows([7], count=3))]
    job = table.job(files, aggregation_config="sum(count),min(time)")

    # When
    run_compaction(job, table, filesystem=table.filesystem)

    # Then
    out = table.read(job.output_file)
    assert list(zip(out.column("key").to_pylist(), out.column("count").to_pylist(), strict=True)) == [(7, 7), (8, 2)]


def should_fail_before_writing_when_the_job_iterator_cannot_be_loaded() -> None:
    # Given a job naming an iterator that is not installed
    table = new_table(LONG_SCHEMA)
    job = table.job([table.add_file(_long_rows([1]))], iterator_class_name="com.example.MyIterator")

    # When / Then it fails naming the class, and nothing is written
    with pytest.raises(IteratorLoadError, match="'com.example.MyIterator': cannot import module 'com.example'"):
        run_compaction(job, table, filesystem=table.filesystem)
    assert not table.exists(job.output_file)


def should_apply_the_job_iterator_after_the_filters() -> None:
    # Given a job whose iterator keeps rows whose count is at least 5
    table = new_table(LONG_SCHEMA)
    job = table.job(
        [table.add_file(_long_rows([1, 3], count=1)), table.add_file(_long_rows([2, 4], count=7))],
        iterator_class_name="sleeper.example.iterator.FixedAgeOffIterator",
        iterator_config="count,5",
    )
    # When it runs
    result = run_compaction(job, table, filesystem=table.filesystem)
    # Then the output holds the rows the iterator kept, in key order
    out = table.read(job.output_file)
    assert out.column("key").to_pylist() == [2, 4]
    assert (result.rows_read, result.rows_written) == (4, 2)


def should_write_row_groups_of_exactly_the_table_row_count() -> None:
    # Given
    table = new_table(LONG_SCHEMA, properties={"sleeper.table.parquet.rowgroup.rows.max": "1000"})
    files = [table.add_file(_long_rows(list(range(i, 3500, 3)))) for i in range(3)]
    job = table.job(files)

    # When
    run_compaction(job, table, settings=ExecutionSettings(batch_rows=333), filesystem=table.filesystem)

    # Then
    with table.filesystem.open_input_file(job.output_file) as f:
        metadata = pq.ParquetFile(f).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes == [1000, 1000, 1000, 500]


def should_write_the_sketches_of_the_output_keys() -> None:
    # Given
    table = new_table(LONG_SCHEMA, split_points=[1000])
    left = table.leaf(0)
    files = [table.add_file(_long_rows(list(range(i, 2000, 2))), partitions=[left.id]) for i in range(2)]
    job = table.job(files, left.id)

    # When
    result = run_compaction(job, table, filesystem=table.filesystem)

    # Then
    assert result.output.sketches_location == sketches_path(job.output_file)
    sketches = Sketches.read(table.filesystem, sketches_path(job.output_file), LONG_SCHEMA)
    assert (sketches.min("key"), sketches.max("key")) == (0, 999)
    assert sketches.median("key") == pytest.approx(500, abs=20)


def should_write_an_empty_output_when_no_input_row_is_in_the_region() -> None:
    # Given
    table = new_table(LONG_SCHEMA, split_points=[100])
    left, right = table.leaf(0), table.leaf(1)
    shared = table.add_file(_long_rows([1, 2, 3]), partitions=[left.id, right.id])
    job = table.job([shared], right.id)

    # When
    result = run_compaction(job, table, filesystem=table.filesystem)

    # Then a valid file with no rows exists, so a commit never references a missing file
    assert result.rows_written == 0
    assert table.exists(job.output_file)
    assert table.read(job.output_file).num_rows == 0


def should_fail_when_the_partition_does_not_exist() -> None:
    # Given
    table = new_table(LONG_SCHEMA, split_points=[5])
    job = table.job([table.add_file(_long_rows([1]), partitions=[table.leaf(0).id])], table.leaf(0).id)
    other = new_table(LONG_SCHEMA)

    # When / Then
    with pytest.raises(CompactionInputError, match="does not exist"):
        run_compaction(job, other, filesystem=table.filesystem)


def should_delete_the_partial_output_when_an_input_is_missing() -> None:
    # Given
    table = new_table(LONG_SCHEMA)
    present = table.add_file(_long_rows([1, 2]))
    missing = table.add_file(_long_rows([3]))
    table.filesystem.delete_file(missing)
    job = table.job([present, missing])

    # When / Then
    with pytest.raises(FileNotFoundError):
        run_compaction(job, table, filesystem=table.filesystem)
    assert not table.exists(job.output_file)


def _merged_batch_rows_and_peak_bytes(rows_per_file: int, files: int, batch_rows: int) -> tuple[int, int, int]:
    table = new_table(LONG_SCHEMA)
    rng = random.Random(rows_per_file)
    names = []
    for _ in range(files):
        keys = sorted(rng.randrange(10**9) for _ in range(rows_per_file))
        names.append(table.write_file(_long_rows(keys), settings=ParquetSettings(row_group_rows=500)).location)
    largest = total = peak = 0
    with ExitStack() as stack:
        for batch in compaction_batches(
            names,
            LONG_SCHEMA,
            None,
            settings=ExecutionSettings(batch_rows=batch_rows),
            filesystem=table.filesystem,
            stack=stack,
        ):
            largest = max(largest, batch.num_rows)
            total += batch.num_rows
            peak = max(peak, pa.total_allocated_bytes())
    return largest, total, peak


def should_hold_memory_that_depends_on_inputs_and_batch_size_but_not_on_rows() -> None:
    # Given the same number of inputs, 20 times the rows
    small = _merged_batch_rows_and_peak_bytes(rows_per_file=1_000, files=6, batch_rows=256)
    large = _merged_batch_rows_and_peak_bytes(rows_per_file=20_000, files=6, batch_rows=256)

    # Then batches stay within the batch size and Arrow memory does not grow with the rows
    assert small[1] == 6_000 and large[1] == 120_000
    assert small[0] <= 256 and large[0] <= 256
    large_input_bytes = 120_000 * 3 * 8
    assert large[2] - small[2] < large_input_bytes // 10


def should_choose_the_arrow_engine_for_arrow_and_java() -> None:
    # Given
    table = new_table(LONG_SCHEMA, properties={"sleeper.table.data.engine": "java"})

    # When / Then
    assert resolve_engine(table.properties) == ENGINE_ARROW
    assert resolve_engine(table.properties, "arrow") == ENGINE_ARROW
    with pytest.raises(DataEngineError, match="unknown data engine"):
        resolve_engine(table.properties, "spark")


def should_merge_with_arrow_when_datafusion_cannot_read_the_files() -> None:
    # Given a table asking for DataFusion, with files it cannot reach (an in-memory filesystem, or another store)
    table = new_table(LONG_SCHEMA, properties={"sleeper.table.data.engine": "DATAFUSION"})
    job = table.job([table.add_file(_long_rows([2, 1])), table.add_file(_long_rows([3]))])

    # When
    result = run_compaction(job, table, filesystem=table.filesystem)

    # Then
    assert result.engine == ENGINE_ARROW
    assert table.read(job.output_file).column("key").to_pylist() == [1, 2, 3]
    assert datafusion_can_read(["s3a://bucket/table/data/file.parquet", "/local/file.parquet"])
    assert not datafusion_can_read(["gs://bucket/x.parquet"])
    assert datafusion_can_read(["file:///local/file.parquet", "/local/other.parquet"])


def should_use_the_arrow_engine_unless_the_table_or_instance_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given DataFusion installed, and table properties leaving the data engine at its default or naming one
    monkeypatch.setattr(data_engine, "datafusion_available", lambda: True)
    default = TableProperties(InstanceProperties(), {})
    on_table = TableProperties(InstanceProperties(), {"sleeper.table.data.engine": "datafusion"})
    on_instance = TableProperties(InstanceProperties({"sleeper.default.table.data.engine": "DATAFUSION"}), {})

    # When / Then
    assert resolve_engine(default) == DEFAULT_ENGINE == ENGINE_ARROW
    assert resolve_engine(on_table) == ENGINE_DATAFUSION
    assert resolve_engine(on_instance) == ENGINE_DATAFUSION


def should_refuse_datafusion_naming_the_extra_when_it_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table asking for DataFusion, without the datafusion package
    monkeypatch.setattr(data_engine, "datafusion_available", lambda: False)
    on_table = TableProperties(InstanceProperties(), {"sleeper.table.data.engine": "DATAFUSION"})

    # When / Then: the compaction is refused, naming the extra to install (never merged by another engine silently)
    with pytest.raises(EngineUnavailableError, match=r"pip install 'sleeper-lsm\[datafusion\]'"):
        resolve_engine(on_table)
    assert resolve_engine(TableProperties(InstanceProperties(), {})) == ENGINE_ARROW
