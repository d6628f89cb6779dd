"""The DataFusion compaction engine against the pyarrow one, on local files (skipped without ``datafusion``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.compaction.datafusion_engine import datafusion_plan
from sleeper.compaction.execution import ExecutionSettings, partition_bounds, run_compaction
from sleeper.core.schema import PrimitiveType
from sleeper.io.data_engine import ENGINE_ARROW, ENGINE_DATAFUSION, resolve_engine
from sleeper.io.parquet import read_sorted
from tests.unit.compaction.execution_fixtures import FakeTable, new_table
from tests.unit.io.parquet_fixtures import key_schema, rows_table, sorted_rows

pytest.importorskip("datafusion")

pytestmark = pytest.mark.integration


def _local_table(tmp_path: Path, key_type: PrimitiveType, second_key: PrimitiveType | None = None) -> FakeTable:
    from pyarrow import fs as pafs

    schema = key_schema(key_type, second_key=second_key)
    split = {
        PrimitiveType.INT: 0,
        PrimitiveType.LONG: 0,
        PrimitiveType.STRING: "b",
        PrimitiveType.BYTE_ARRAY: b"\x41",
    }[key_type]
    table = new_table(
        schema,
        split_points=[split],
        properties={"sleeper.table.aggregations": ""},
        filesystem=pafs.LocalFileSystem(),
    )
    table.prefix = str(tmp_path)
    return table


def _read(location: str, table: FakeTable) -> list[dict[str, object]]:
    rows = [row for batch in read_sorted(location, table.schema) for row in batch.to_pylist()]
    return rows


@pytest.mark.parametrize(
    ("key_type", "second_key"),
    [
        (PrimitiveType.INT, None),
        (PrimitiveType.LONG, PrimitiveType.STRING),
        (PrimitiveType.STRING, None),
        (PrimitiveType.BYTE_ARRAY, PrimitiveType.INT),
    ],
)
def should_write_the_same_rows_as_the_arrow_engine(
    tmp_path: Path, key_type: PrimitiveType, second_key: PrimitiveType | None
) -> None:
    # Given files on the root shared between the two leaves
    table = _local_table(tmp_path, key_type, second_key)
    schema = table.schema
    left, right = table.leaf(0), table.leaf(1)
    files = [
        table.add_file(rows_table(schema, sorted_rows(schema, 300, seed)), partitions=[left.id, right.id])
        for seed in range(4)
    ]

    for leaf in (left, right):
        arrow_job = table.job(files, leaf.id, job_id=f"arrow-{leaf.id}")
        # a second job over the same references cannot be assigned; run it unassigned (execution does not check)
        fusion_job = table.job(files, leaf.id, job_id=f"fusion-{leaf.id}", assign=False)

        # When
        by_arrow = run_compaction(arrow_job, table, engine="ARROW", settings=ExecutionSettings(batch_rows=50))
        by_fusion = run_compaction(fusion_job, table, engine="DATAFUSION", settings=ExecutionSettings(batch_rows=50))

        # Then the same rows in key order (rows with equal keys may come in another order)
        assert (by_arrow.engine, by_fusion.engine) == (ENGINE_ARROW, ENGINE_DATAFUSION)
        assert by_fusion.rows_read == by_arrow.rows_read == by_fusion.rows_written
        arrow_rows = _read(arrow_job.output_file, table)
        fusion_rows = _read(fusion_job.output_file, table)
        keys = [*schema.row_key_names, *schema.sort_key_names]
        assert [[r[k] for k in keys] for r in fusion_rows] == [[r[k] for k in keys] for r in arrow_rows]
        assert sorted(map(repr, fusion_rows)) == sorted(map(repr, arrow_rows))
        assert by_fusion.output.sketches_location is not None


def should_plan_a_sort_preserving_merge_without_a_sort(tmp_path: Path) -> None:
    # Given
    table = _local_table(tmp_path, PrimitiveType.LONG)
    files = [table.add_file(rows_table(table.schema, sorted_rows(table.schema, 100, seed))) for seed in range(3)]

    # When
    frame = datafusion_plan(files, table.schema, partition_bounds(table.leaf(1).region), batch_rows=1000)

    # Then
    plan = frame.execution_plan().display_indent()
    assert "SortPreservingMergeExec" in plan
    assert "SortExec:" not in plan


def should_use_datafusion_for_the_default_engine_when_installed() -> None:
    # Given
    table = new_table(key_schema(PrimitiveType.LONG), properties={"sleeper.table.data.engine": "DATAFUSION"})

    # When / Then
    assert resolve_engine(table.properties) == ENGINE_DATAFUSION


def should_keep_the_aggregations_with_the_datafusion_engine(tmp_path: Path) -> None:
    # Given
    from sleeper.core.schema import Field, Schema

    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("count", PrimitiveType.LONG)])
    from pyarrow import fs as pafs

    table = new_table(
        schema, properties={"sleeper.table.aggregations": "sum(count)"}, filesystem=pafs.LocalFileSystem()
    )
    table.prefix = str(tmp_path)
    rng = random.Random(1)
    inputs = []
    for _ in range(3):
        keys = sorted(rng.randrange(50) for _ in range(200))
        inputs.append(
            table.add_file(pa.table({"key": pa.array(keys, pa.int64()), "count": pa.array([1] * 200, pa.int64())}))
        )
    job = table.job(inputs)

    # When
    result = run_compaction(job, table, engine="DATAFUSION", settings=ExecutionSettings(batch_rows=64))

    # Then
    out = _read(job.output_file, table)
    assert sum(r["count"] for r in out) == 600  # type: ignore[misc]
    assert [r["key"] for r in out] == sorted({r["key"] for r in out})
    assert result.rows_read == 600


@pytest.mark.parametrize(
    ("iterator", "config", "keep"),
    [
        ("sleeper.iterators.examples.FixedAgeOffIterator", "time,500", lambda r: r["time"] >= 500),
        ("sleeper.iterators.examples.SecurityFilteringIterator", "vis,a", lambda r: r["vis"] in (None, "", "a")),
    ],
    ids=["age-off", "security"],
)
def should_write_the_same_rows_as_the_arrow_engine_with_a_table_iterator(
    tmp_path: Path, iterator: str, config: str, keep: Callable[[dict[str, Any]], bool]
) -> None:
    from pyarrow import fs as pafs

    from sleeper.core.schema import Field, Schema

    # Given files with repeated keys on the root shared between two leaves, and jobs carrying a table iterator
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)],
        values=[Field("time", PrimitiveType.LONG), Field("vis", PrimitiveType.STRING, nullable=True)],
    )
    table = new_table(
        schema,
        split_points=[0],
        properties={"sleeper.table.aggregations": "", "sleeper.table.iterator.class.name": iterator},
        filesystem=pafs.LocalFileSystem(),
    )
    table.prefix = str(tmp_path)
    left, right = table.leaf(0), table.leaf(1)
    rng = random.Random(16)
    inputs = []
    for _ in range(4):
        keys = sorted(rng.randrange(-100, 100) for _ in range(300))
        rows = {
            "key": pa.array(keys, pa.int64()),
            "time": pa.array([rng.randrange(1000) for _ in keys], pa.int64()),
            "vis": pa.array([rng.choice([None, "", "a", "b"]) for _ in keys], pa.string()),
        }
        inputs.append(table.add_file(pa.table(rows), partitions=[left.id, right.id]))
    every_row: list[dict[str, Any]] = [r for path in inputs for r in _read(path, table)]

    for leaf in (left, right):
        carried: dict[str, Any] = {"iterator_class_name": iterator, "iterator_config": config}
        arrow_job = table.job(inputs, leaf.id, job_id=f"arrow-{leaf.id}", **carried)
        fusion_job = table.job(inputs, leaf.id, job_id=f"fusion-{leaf.id}", assign=False, **carried)

        # When each engine compacts the leaf
        by_arrow = run_compaction(arrow_job, table, engine="ARROW", settings=ExecutionSettings(batch_rows=64))
        by_fusion = run_compaction(fusion_job, table, engine="DATAFUSION", settings=ExecutionSettings(batch_rows=64))

        # Then DataFusion merged (it did not fall back to Arrow), and both wrote exactly the rows the iterator keeps
        # (as a pyarrow reference filter keeps them), in key order
        assert (by_arrow.engine, by_fusion.engine) == (ENGINE_ARROW, ENGINE_DATAFUSION)
        assert by_fusion.rows_read == by_arrow.rows_read
        arrow_rows: list[dict[str, Any]] = _read(arrow_job.output_file, table)
        fusion_rows: list[dict[str, Any]] = _read(fusion_job.output_file, table)
        expected = [r for r in every_row if leaf.region.contains(schema, (r["key"],)) and keep(r)]
        assert 0 < by_fusion.rows_written == by_arrow.rows_written == len(expected) < by_arrow.rows_read
        assert [r["key"] for r in fusion_rows] == [r["key"] for r in arrow_rows] == sorted(r["key"] for r in expected)
        assert sorted(map(repr, fusion_rows)) == sorted(map(repr, arrow_rows)) == sorted(map(repr, expected))
