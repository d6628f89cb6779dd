"""Queries over a local table's data files, checked against the same filters computed with pyarrow compute."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.core.exceptions import RangeError, SleeperError
from sleeper.core.query import Query, QuerySerDe, QueryValidationError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.parquet import ParquetSettings, SortedFileWriter
from sleeper.query import execute, plan_query, table_query
from sleeper.query.exceptions import QueryExecutionError
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(
    row_key_fields=(KEY,),
    value_fields=(Field("count", PrimitiveType.LONG), Field("name", PrimitiveType.STRING)),
)
A = Field("a", PrimitiveType.STRING)
B = Field("b", PrimitiveType.LONG)
MULTI = Schema(row_key_fields=(A, B), value_fields=(Field("count", PrimitiveType.LONG),))
SPLITS = [100, 200]
SETTINGS = ParquetSettings(row_group_rows=16)


def _write(table: Table[LocalInstance], partition_id: str, name: str, data: pa.Table) -> str:
    location = f"{table.data_prefix}/data/partition_{partition_id}/{name}.parquet"
    ordered = data.sort_by([(k, "ascending") for k in table.schema.key_names])
    with SortedFileWriter(location, table.schema, settings=SETTINGS, sketches=False) as writer:
        writer.write(ordered)
    return location


def _rows(rng: np.random.Generator, keys: np.ndarray, tag: str) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "count": pa.array(rng.integers(0, 1000, len(keys)), pa.int64()),
            "name": pa.array([f"{tag}-{i}" for i in range(len(keys))], pa.string()),
        }
    )


def _single_key_table(
    tmp_path: Path, properties: dict[str, str] | None = None
) -> tuple[Table[LocalInstance], pa.Table]:
    """A table split at 100 and 200 with files on the root, on each leaf, and one file referenced on two leaves."""
    table = sleeper.connect(tmp_path, create=True).create_table("t", SCHEMA, split_points=SPLITS, properties=properties)
    tree = table.state_store.partition_tree()
    low, middle, high = tree.leaves
    rng = np.random.default_rng(7)
    root_data = _rows(rng, rng.integers(-50, 350, 300), "root")
    shared_data = _rows(rng, rng.integers(100, 300, 120), "shared")
    leaf_data = [
        _rows(rng, rng.integers(-100, 100, 80), "low"),
        _rows(rng, rng.integers(100, 200, 80), "middle"),
        _rows(rng, rng.integers(200, 400, 80), "high"),
    ]
    references = []
    location = _write(table, tree.root.id, "root", root_data)
    references.append(_ref(location, tree.root.id, 300, whole=False))
    location = _write(table, middle.id, "shared", shared_data)
    for leaf in (middle, high):
        references.append(_ref(location, leaf.id, 60, whole=False))
    for leaf, data in zip((low, middle, high), leaf_data, strict=True):
        location = _write(table, leaf.id, leaf.id, data)
        references.append(_ref(location, leaf.id, data.num_rows))
    table.state_store.add_files(references)
    return table, pa.concat_tables([root_data, shared_data, *leaf_data])


def _ref(location: str, partition_id: str, rows: int, *, whole: bool = True) -> FileReference:
    return FileReference(
        filename=location,
        partition_id=partition_id,
        number_of_rows=rows,
        count_approximate=not whole,
        only_contains_data_for_this_partition=whole,
    )


def _canonical(data: pa.Table) -> dict[str, list[object]]:
    """The rows in a fixed order, whatever their order and the fields' nullability."""
    result: dict[str, list[object]] = data.sort_by([(name, "ascending") for name in data.column_names]).to_pydict()
    return result


def _assert_key_order(result: pa.Table, key_names: tuple[str, ...]) -> None:
    keys = result.select(list(key_names))
    assert keys.to_pydict() == keys.sort_by([(k, "ascending") for k in key_names]).to_pydict()


def _range_mask(column: pa.ChunkedArray, low: int, high: int | None, low_inc: bool, high_inc: bool) -> pa.Array:
    mask = pc.greater_equal(column, low) if low_inc else pc.greater(column, low)
    if high is not None:
        mask = pc.and_(mask, pc.less_equal(column, high) if high_inc else pc.less(column, high))
    return mask


def should_return_every_row_exactly_once_in_a_full_scan(tmp_path: Path) -> None:
    # Given a split table with files on the root, on leaves, and one shared by two leaves
    table, data = _single_key_table(tmp_path)
    # When every row is queried
    result = table_query(table)
    # Then every written row comes back once, in key order
    assert result.num_rows == data.num_rows
    assert _canonical(result) == _canonical(data)
    _assert_key_order(result, SCHEMA.key_names)


def should_return_rows_of_exact_keys(tmp_path: Path) -> None:
    # Given the split table and keys on split points, in each file, and absent
    table, data = _single_key_table(tmp_path)
    present = pc.unique(data["key"]).to_pylist()
    keys = sorted({100, 200, 99, 199, 0, -1000, 10_000, *present[::17]})
    for key in keys:
        # When one key is looked up
        result = table_query(table, keys=[[key]])
        # Then exactly the rows with that key come back
        expected = data.filter(pc.equal(data["key"], key))
        assert _canonical(result) == _canonical(expected), key
    # When several keys (one repeated) are looked up at once
    result = table_query(table, keys=[{"key": k} for k in [*keys, keys[0]]])
    # Then each row with one of the keys comes back once
    expected = data.filter(pc.is_in(data["key"], pa.array(keys, pa.int64())))
    assert _canonical(result) == _canonical(expected)


@pytest.mark.parametrize(("low_inc", "high_inc"), list(itertools.product([True, False], repeat=2)))
def should_return_rows_in_ranges_with_each_inclusiveness(tmp_path: Path, low_inc: bool, high_inc: bool) -> None:
    # Given the split table
    table, data = _single_key_table(tmp_path)
    present = sorted(pc.unique(data["key"]).to_pylist())
    bounds: list[tuple[int, int | None]] = [
        (100, 200),
        (99, 201),
        (present[3], present[40]),
        (present[10], present[10]),
        (-1000, None),
        (150, None),
        (250, 120),
    ]
    for low, high in bounds:
        # When a range is queried (one with min above max is refused: it is not a range)
        if high is not None and high < low:
            with pytest.raises(RangeError):
                Range(field=KEY, min=low, min_inclusive=low_inc, max=high, max_inclusive=high_inc)
            continue
        region = Region.of([Range(field=KEY, min=low, min_inclusive=low_inc, max=high, max_inclusive=high_inc)])
        result = table_query(table, regions=[region])
        # Then exactly the rows in it come back, in key order
        expected = data.filter(_range_mask(data["key"], low, high, low_inc, high_inc))
        assert _canonical(result) == _canonical(expected), (low, high)
        _assert_key_order(result, SCHEMA.key_names)


def should_return_rows_in_overlapping_regions_once(tmp_path: Path) -> None:
    # Given the split table
    table, data = _single_key_table(tmp_path)
    # When overlapping regions across leaves are queried
    regions = [Region.of([Range(field=KEY, min=50, max=150)]), Region.of([Range(field=KEY, min=120, max=250)])]
    result = table_query(table, regions=regions)
    # Then each row in either comes back once
    expected = data.filter(_range_mask(data["key"], 50, 250, True, False))
    assert _canonical(result) == _canonical(expected)


def should_return_only_requested_value_fields(tmp_path: Path) -> None:
    # Given the split table
    table, data = _single_key_table(tmp_path)
    # When one value field is requested
    region = Region.of([Range(field=KEY, min=90, max=210)])
    result = table_query(table, regions=[region], requested_value_fields=["name"])
    # Then the key and that field come back
    assert result.column_names == ["key", "name"]
    expected = data.filter(_range_mask(data["key"], 90, 210, True, False)).select(["key", "name"])
    assert _canonical(result) == _canonical(expected)
    # When no value field is requested
    # Then only the key comes back
    assert table_query(table, regions=[region], requested_value_fields=[]).column_names == ["key"]
    # When an unknown field is requested
    # Then the query fails
    with pytest.raises(QueryExecutionError):
        table_query(table, regions=[region], requested_value_fields=["nope"])


def should_aggregate_at_query_time(tmp_path: Path) -> None:
    # Given the split table with sum(count), min(name) aggregation
    table, data = _single_key_table(tmp_path, properties={"sleeper.table.aggregations": "sum(count),min(name)"})
    # When a range across leaves is queried, asking only for count
    region = Region.of([Range(field=KEY, min=80, max=260)])
    result = table_query(table, regions=[region], requested_value_fields=["count"])
    # Then each key comes back once with its counts summed over every file
    selected = data.filter(_range_mask(data["key"], 80, 260, True, False))
    expected = selected.group_by("key").aggregate([("count", "sum")]).rename_columns(["key", "count"])
    assert result.column_names == ["key", "count"]
    assert result.num_rows == len(set(selected["key"].to_pylist()))
    assert _canonical(result) == _canonical(expected.select(["key", "count"]))
    assert result["key"].to_pylist() == sorted(result["key"].to_pylist())


def should_apply_age_off_filter_at_query_time(tmp_path: Path) -> None:
    # Given the split table whose count field is aged off after 500 ms, queried at time 1000
    table, data = _single_key_table(tmp_path, properties={"sleeper.table.filters": "ageOff(count,500)"})
    # When every row is queried
    result = table_query(table, now_ms=1000)
    # Then only rows with 1000 - count < 500 come back
    expected = data.filter(pc.greater(data["count"], 500))
    assert 0 < expected.num_rows < data.num_rows
    assert _canonical(result) == _canonical(expected)


def _multi_key_table(tmp_path: Path) -> tuple[Table[LocalInstance], pa.Table]:
    table = sleeper.connect(tmp_path, create=True).create_table("m", MULTI, split_points=["g", "p"])
    rng = np.random.default_rng(11)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    pieces = []
    references = []
    tree = table.state_store.partition_tree()
    for i, partition in enumerate([tree.root.id, *(p.id for p in tree.leaves)]):
        size = 150
        data = pa.table(
            {
                "a": pa.array([str(x) for x in rng.choice(letters, size)], pa.string()),
                "b": pa.array(rng.integers(0, 40, size), pa.int64()),
                "count": pa.array(rng.integers(0, 100, size), pa.int64()),
            }
        )
        if partition != tree.root.id:
            leaf = tree.get(partition)
            pairs = zip(data["a"].to_pylist(), data["b"].to_pylist(), strict=True)
            keep = [leaf.region.contains(MULTI, (a, b)) for a, b in pairs]
            data = data.filter(pa.array(keep))
        location = _write(table, partition, f"f{i}", data)
        references.append(_ref(location, partition, data.num_rows, whole=partition != tree.root.id))
        pieces.append(data)
    table.state_store.add_files(references)
    return table, pa.concat_tables(pieces)


def should_query_multi_field_row_keys(tmp_path: Path) -> None:
    # Given a table keyed on (a, b), split on a, with files on the root and every leaf
    table, data = _multi_key_table(tmp_path)
    # When a region on both fields is queried
    region = Region.of(
        [Range(field=A, min="c", max="q", max_inclusive=True), Range(field=B, min=10, min_inclusive=False, max=20)]
    )
    result = table_query(table, regions=[region])
    # Then exactly the rows in it come back, sorted by (a, b)
    mask = pc.and_(
        pc.and_(pc.greater_equal(data["a"], "c"), pc.less_equal(data["a"], "q")),
        pc.and_(pc.greater(data["b"], 10), pc.less(data["b"], 20)),
    )
    expected = data.filter(mask)
    assert expected.num_rows > 0
    assert _canonical(result) == _canonical(expected)
    _assert_key_order(result, MULTI.key_names)
    # When a region on only the second field is queried
    result = table_query(table, regions=[Region.of([Range(field=B, min=5, max=7, max_inclusive=True)])])
    # Then every leaf is searched
    expected = data.filter(pc.and_(pc.greater_equal(data["b"], 5), pc.less_equal(data["b"], 7)))
    assert _canonical(result) == _canonical(expected)
    # When exact keys are looked up
    keys = list(zip(data["a"].to_pylist()[::25], data["b"].to_pylist()[::25], strict=True)) + [("zz", 1)]
    result = table_query(table, keys=keys)
    # Then the rows with those keys come back
    wanted = {f"{a}\x00{b}" for a, b in keys}
    joined = pc.binary_join_element_wise(data["a"], pc.cast(data["b"], pa.string()), "\x00")
    expected = data.filter(pc.is_in(joined, pa.array(sorted(wanted))))
    assert _canonical(result) == _canonical(expected)


def should_run_a_query_read_from_json(tmp_path: Path) -> None:
    # Given the split table and a query in the Python client's JSON form
    table, data = _single_key_table(tmp_path)
    serde = QuerySerDe.for_schema(SCHEMA)
    text = json.dumps(
        {
            "queryId": "q1",
            "tableName": "t",
            "type": "Query",
            "regions": [{"key": {"min": 150, "max": 300, "maxInclusive": True}, "stringsBase64Encoded": False}],
            "requestedValueFields": ["count"],
        }
    )
    query = serde.query_from_json(text)
    # When it is run
    result = execute(query, table).read_all()
    # Then it returns the rows in the region with the requested field
    expected = data.filter(_range_mask(data["key"], 150, 300, True, True)).select(["key", "count"])
    assert _canonical(result) == _canonical(expected)
    # And its sub-queries survive the leaf query JSON
    plans = plan_query(query, table.state_store.partition_tree(), table.file_references(), table_id=table.table_id)
    assert [serde.leaf_query_from_json(serde.to_json(p)) for p in plans] == plans


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"requestedValueFields": ["nope"]}, "$.requestedValueFields[0]"),
        ({"regions": [{"other": {"min": 1}}]}, "$.regions[0]"),
        ({"regions": [{"key": {"min": "x"}}]}, "$.regions[0].key.min"),
        ({"regions": [{"key": {"min": 5, "max": 1}}]}, "$.regions[0].key"),
        ({"type": "Nope"}, "$.type"),
    ],
)
def should_reject_invalid_queries(change: dict[str, object], path: str) -> None:
    # Given a query JSON with one invalid part
    body: dict[str, object] = {"queryId": "q1", "tableName": "t", "type": "Query", "regions": [{"key": {"min": 1}}]}
    body.update(change)
    # When it is read
    with pytest.raises(QueryValidationError) as caught:
        QuerySerDe.for_schema(SCHEMA).query_from_json(json.dumps(body))
    # Then it is rejected naming the query and the bad part
    assert caught.value.query_id == "q1"
    assert caught.value.path is not None and caught.value.path.startswith(path)
    assert isinstance(caught.value, SleeperError)


def should_return_nothing_from_an_empty_table(tmp_path: Path) -> None:
    # Given a split table with no files
    table = sleeper.connect(tmp_path, create=True).create_table("e", SCHEMA, split_points=SPLITS)
    # When it is queried
    query = Query(query_id="q", table_name="e", regions=(Region.whole(SCHEMA),))
    result = execute(query, table).read_all()
    # Then no rows come back, with the table's columns
    assert result.num_rows == 0
    assert result.column_names == list(SCHEMA.field_names)
