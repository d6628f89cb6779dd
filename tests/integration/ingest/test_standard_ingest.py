"""Standard ingest into a local table: rows in, sorted files per leaf out, committed once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import cast
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.core.partition import partitions_from_split_points, split_partition
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.ingest import ONE_FILE_PER_LEAF, ONE_REFERENCE_PER_LEAF, IngestLimits, IngestResult, ingest_batches
from sleeper.io.exceptions import SchemaMismatchError
from sleeper.io.parquet import read_sorted
from sleeper.io.sort import is_sorted
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.store import StateStore
from tests.integration.racing_store import SplitRightAfterCommit

pytestmark = pytest.mark.integration

ROWS = 3000


def _keys(key_type: PrimitiveType, rng: np.random.Generator, n: int) -> pa.Array:
    numbers = rng.integers(0, 1000, n)
    if key_type is PrimitiveType.INT:
        return pa.array(numbers, type=pa.int32())
    if key_type is PrimitiveType.LONG:
        return pa.array(numbers * 1_000_000_007, type=pa.int64())
    if key_type is PrimitiveType.STRING:
        return pa.array([f"k{x:04d}-é" for x in numbers], type=pa.string())
    return pa.array([bytes([x % 256, 255 - x % 7, x // 256]) for x in numbers], type=pa.binary())


SPLIT_POINTS: dict[PrimitiveType, list[KeyValue]] = {
    PrimitiveType.INT: [100, 400, 750],
    PrimitiveType.LONG: [100 * 1_000_000_007, 400 * 1_000_000_007, 750 * 1_000_000_007],
    PrimitiveType.STRING: ["k0100", "k0400", "k0750"],
    PrimitiveType.BYTE_ARRAY: [b"\x40", b"\x80", b"\xc0\x00"],
}


def _schema(key_type: PrimitiveType) -> Schema:
    return Schema.of(
        row_keys=[Field("key", key_type)],
        sort_keys=[Field("sort", PrimitiveType.LONG)],
        values=[Field("value", PrimitiveType.STRING), Field("count", PrimitiveType.LONG)],
    )


def _rows(key_type: PrimitiveType, seed: int = 7, n: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": _keys(key_type, rng, n),
            "sort": pa.array(rng.integers(-5, 5, n), type=pa.int64()),
            "value": pa.array([f"v{i}" for i in range(n)]),
            "count": pa.array(rng.integers(0, 100, n), type=pa.int64()),
        }
    )


def _read_file(table: Table[LocalInstance], filename: str) -> pa.Table:
    return pa.Table.from_batches(list(read_sorted(filename, table.schema)), schema=None)


def _all_rows(table: Table[LocalInstance]) -> pa.Table:
    files = sorted({r.filename for r in table.file_references()})
    return pa.concat_tables([_read_file(table, f) for f in files])


def _multiset(rows: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row.values()) for row in rows.to_pylist())


def _expected_leaf_counts(table: Table[LocalInstance], rows: pa.Table) -> dict[str, int]:
    tree = table.state_store.partition_tree()
    return dict(Counter(tree.leaf_for_key([k]).id for k in rows.column("key").to_pylist()))


def _ingest(table: Table[LocalInstance], rows: pa.Table, **kwargs: object) -> IngestResult:
    return ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        rows.to_batches(max_chunksize=500),
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("key_type", list(PrimitiveType))
@pytest.mark.parametrize("strategy", [ONE_REFERENCE_PER_LEAF, ONE_FILE_PER_LEAF])
def should_write_every_row_once_sorted_with_exact_references_per_leaf(
    tmp_path: Path, key_type: PrimitiveType, strategy: str
) -> None:
    # Given
    instance = sleeper.connect(tmp_path / "instance", create=True)
    table = instance.create_table(
        "t",
        _schema(key_type),
        split_points=SPLIT_POINTS[key_type],
        properties={"sleeper.table.ingest.file.writing.strategy": strategy},
    )
    rows = _rows(key_type)

    # When
    result = _ingest(table, rows)

    # Then
    references = table.file_references()
    written = _all_rows(table)
    assert _multiset(written) == _multiset(rows)
    assert result.rows_read == result.rows_written == rows.num_rows
    for filename in {r.filename for r in references}:
        assert is_sorted(_read_file(table, filename), table.schema.key_names)
    per_leaf = Counter[str]()
    for reference in references:
        per_leaf[reference.partition_id] += reference.number_of_rows
        assert not reference.count_approximate
    assert dict(per_leaf) == _expected_leaf_counts(table, rows)
    assert {r.filename for r in result.references} == {f.location for f in result.files}


def should_write_one_file_in_root_folder_referenced_from_each_leaf_hit(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table(
        "t", _schema(PrimitiveType.LONG), split_points=[10, 20, 30]
    )
    rows = pa.table(
        {
            "key": pa.array([25, 5, 15, 7], type=pa.int64()),
            "sort": pa.array([0, 0, 0, 0], type=pa.int64()),
            "value": ["a", "b", "c", "d"],
            "count": pa.array([1, 2, 3, 4], type=pa.int64()),
        }
    )

    # When
    result = _ingest(table, rows)

    # Then
    tree = table.state_store.partition_tree()
    references = table.file_references()
    assert len(result.files) == 1
    assert f"/data/partition_{tree.root.id}/" in result.files[0].location
    assert {(r.partition_id, r.number_of_rows) for r in references} == {
        (tree.leaf_for_key([5]).id, 2),
        (tree.leaf_for_key([15]).id, 1),
        (tree.leaf_for_key([25]).id, 1),
    }
    assert not any(r.only_contains_data_for_this_partition for r in references)


def should_mark_a_single_leaf_reference_as_only_holding_its_partition(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG), split_points=[10, 20])
    rows = _rows(PrimitiveType.LONG).filter(pa.compute.less(pa.compute.field("key"), 10))

    # When
    _ingest(table, rows)

    # Then
    references = table.file_references()
    assert len(references) == 1
    assert references[0].only_contains_data_for_this_partition
    assert references[0].number_of_rows == rows.num_rows


def should_write_one_file_per_leaf_in_the_leaf_folders(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table(
        "t",
        _schema(PrimitiveType.INT),
        split_points=SPLIT_POINTS[PrimitiveType.INT],
        properties={"sleeper.table.ingest.file.writing.strategy": ONE_FILE_PER_LEAF},
    )

    # When
    result = _ingest(table, _rows(PrimitiveType.INT))

    # Then
    references = table.file_references()
    assert len(result.files) == len(references) == 4
    for reference in references:
        assert f"/data/partition_{reference.partition_id}/" in reference.filename
        assert reference.only_contains_data_for_this_partition
        leaf_rows = _read_file(table, reference.filename)
        assert leaf_rows.num_rows == reference.number_of_rows


@pytest.mark.parametrize("strategy", [ONE_REFERENCE_PER_LEAF, ONE_FILE_PER_LEAF])
def should_spill_sorted_runs_and_merge_them_when_the_buffer_is_small(tmp_path: Path, strategy: str) -> None:
    # Given
    table = sleeper.connect(tmp_path / "instance", create=True).create_table(
        "t",
        _schema(PrimitiveType.STRING),
        split_points=SPLIT_POINTS[PrimitiveType.STRING],
        properties={"sleeper.table.ingest.file.writing.strategy": strategy},
    )
    rows = _rows(PrimitiveType.STRING, n=10_000)

    # When
    limits = IngestLimits(batch_buffer_bytes=20_000, max_local_store_bytes=1 << 30, max_rows_per_local_write=100)
    result = _ingest(table, rows, limits=limits, local_dir=tmp_path / "local")

    # Then
    assert result.runs_spilled > 5
    assert _multiset(_all_rows(table)) == _multiset(rows)
    for filename in {r.filename for r in table.file_references()}:
        assert is_sorted(_read_file(table, filename), table.schema.key_names)
    assert list((tmp_path / "local").iterdir()) == []


def should_add_rows_of_a_job_only_once(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG), split_points=[500])
    rows = _rows(PrimitiveType.LONG)
    first = _ingest(table, rows, job_id="job-1")

    # When
    second = _ingest(table, rows, job_id="job-1")

    # Then
    assert not first.already_added
    assert second.already_added
    assert second.files == ()
    assert sum(r.number_of_rows for r in table.file_references()) == rows.num_rows
    data_files = list((tmp_path / "data").rglob("*.parquet"))
    assert len(data_files) == len(first.files)


def should_reject_a_batch_with_a_wrong_column_type_naming_it_and_write_nothing(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG), split_points=[500])
    good = _rows(PrimitiveType.LONG, n=10)
    bad = good.set_column(3, "count", pa.array(["x"] * 10))

    # When / Then
    with pytest.raises(SchemaMismatchError, match="'count'"):
        ingest_batches(
            table.schema,
            table.properties,
            table.state_store,
            table.data_prefix,
            [*good.to_batches(), *bad.to_batches()],
        )
    assert table.file_references() == []
    assert list((tmp_path / "data").rglob("*.parquet")) == []


def should_reject_a_batch_missing_a_key_column(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG))
    rows = _rows(PrimitiveType.LONG, n=10).drop_columns(["sort"])

    # When / Then
    with pytest.raises(SchemaMismatchError, match="'sort'"):
        _ingest(table, rows)
    assert table.file_references() == []


def should_write_nothing_for_no_rows(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG))

    # When
    result = _ingest(table, _rows(PrimitiveType.LONG, n=0))

    # Then
    assert (result.rows_read, result.files) == (0, ())
    assert table.file_references() == []


def should_apply_the_table_aggregations(tmp_path: Path) -> None:
    # Given
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING)],
        values=[Field("count", PrimitiveType.LONG)],
    )
    table = sleeper.connect(tmp_path, create=True).create_table(
        "t", schema, split_points=["m"], properties={"sleeper.table.aggregations": "sum(count)"}
    )
    keys = ["a", "z", "a", "n", "z", "a"]
    rows = pa.table({"key": keys, "count": pa.array([1, 2, 3, 4, 5, 6], type=pa.int64())})

    # When
    result = _ingest(table, rows)

    # Then
    written = _all_rows(table).sort_by("key")
    expected = rows.group_by("key").aggregate([("count", "sum")]).rename_columns(["key", "count"])
    assert written.to_pylist() == expected.select(["key", "count"]).sort_by("key").to_pylist()
    assert (result.rows_read, result.rows_written) == (6, 3)


def should_cut_rows_by_leaf_when_a_split_is_on_the_second_row_key(tmp_path: Path) -> None:
    # Given
    schema = Schema.of(
        row_keys=[Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.STRING)],
        values=[Field("v", PrimitiveType.LONG)],
    )
    table = sleeper.connect(tmp_path, create=True).create_table("t", schema)
    first = partitions_from_split_points(schema, [50])
    root = next(p for p in first if p.parent_id is None)
    left, right = (p for p in first if p.parent_id is not None)
    new_left, left_low, left_high = split_partition(schema, left, 1, "m")
    new_right, right_low, right_high = split_partition(schema, right, 1, "f")
    table.state_store.initialise([root, new_left, left_low, left_high, new_right, right_low, right_high])
    rng = np.random.default_rng(3)
    n = 2000
    rows = pa.table(
        {
            "a": pa.array(rng.integers(0, 100, n), type=pa.int64()),
            "b": pa.array([chr(ord("a") + int(x)) for x in rng.integers(0, 26, n)]),
            "v": pa.array(np.arange(n), type=pa.int64()),
        }
    )

    # When
    for strategy in (ONE_REFERENCE_PER_LEAF, ONE_FILE_PER_LEAF):
        table = table.set_properties({"sleeper.table.ingest.file.writing.strategy": strategy})
        table.state_store.clear_files()
        _ingest(table, rows)

        # Then
        tree = table.state_store.partition_tree()
        expected = Counter(
            tree.leaf_for_key(k).id for k in zip(rows["a"].to_pylist(), rows["b"].to_pylist(), strict=True)
        )
        per_leaf = Counter[str]()
        for reference in table.file_references():
            per_leaf[reference.partition_id] += reference.number_of_rows
        assert dict(per_leaf) == dict(expected)
        assert _multiset(_all_rows(table)) == _multiset(rows)


class _StoreMissingAnEarlierRun:
    """A state store that does not see that a job was added, as when another run commits it during this one."""

    def __init__(self, store: StateStore) -> None:
        self._store = store

    def job_already_added(self, job_id: str, inputs_hash: str | None) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def should_delete_its_files_when_another_run_of_the_job_committed_first(tmp_path: Path) -> None:
    # Given
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG), split_points=[500])
    rows = _rows(PrimitiveType.LONG)
    first = _ingest(table, rows, job_id="job-1")
    racing = cast(StateStore, _StoreMissingAnEarlierRun(table.state_store))

    # When
    second = ingest_batches(
        table.schema, table.properties, racing, table.data_prefix, rows.to_batches(), job_id="job-1"
    )

    # Then
    assert second.already_added
    assert sum(r.number_of_rows for r in table.file_references()) == rows.num_rows
    data_files = {p.as_uri() for p in (tmp_path / "data").rglob("*.parquet")}
    assert data_files == {f.location for f in first.files}


def should_keep_its_committed_files_when_their_references_move_right_after_the_commit(tmp_path: Path) -> None:
    # Given a table of one partition, and a split of it whose pre-split lands right after the ingest's commit
    table = sleeper.connect(tmp_path, create=True).create_table("t", _schema(PrimitiveType.LONG))
    racing = SplitRightAfterCommit(
        table.state_store, sleeper.connect(tmp_path).table("t").state_store, split_point=500 * 1_000_000_007
    )
    rows = _rows(PrimitiveType.LONG)

    # When an ingest carrying a job id commits its one file
    result = ingest_batches(
        table.schema,
        table.properties,
        cast(StateStore, racing),
        table.data_prefix,
        rows.to_batches(),
        job_id="job-1",
    )

    # Then its reference moved to the new leaves, yet the ingest knew its commit landed and kept its file
    assert racing.split_done
    assert not result.already_added
    assert [Path(urlparse(f.location).path).exists() for f in result.files] == [True]
    assert _multiset(table.query()) == _multiset(rows)
