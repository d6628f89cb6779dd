"""Upserts on a local instance (``sleeper.table.upsert``): with a sort key the row with the greatest sort key of each
row key is what every read returns, across ingests, compaction and a split; without one the last committed row,
written by ``Table.upsert`` (and ``Table.ingest``) in commits that hide the older rows of their keys. Each is checked
against a pyarrow reference (last written per key); the setting's refusals are checked too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import sleeper
from sleeper.api.upserts import UpsertNotEnabledError, keys_filter, last_per_key
from sleeper.core.exceptions import PropertyError, SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.ingest.exceptions import UpsertRequiredError
from sleeper.ingest.inputs import ingest_rows

pytestmark = pytest.mark.integration

NO_SORT = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("name", PrimitiveType.STRING), Field("count", PrimitiveType.LONG)],
)
SORTED = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("version", PrimitiveType.LONG)],
    values=[Field("name", PrimitiveType.STRING)],
)
UPSERT = {"sleeper.table.upsert": "true"}


def _rows(keys: list[int], name: str) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "name": [f"{name}{k}" for k in keys],
            "count": pa.array(range(len(keys)), pa.int64()),
        }
    )


def _versioned(keys: list[int], versions: list[int]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "version": pa.array(versions, pa.int64()),
            "name": [f"v{v}" for v in versions],
        }
    )


def _by_key(rows: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def _reference_last_committed(batches: list[pa.Table]) -> list[tuple[object, ...]]:
    return _by_key(last_per_key(pa.concat_tables(batches), ["key"]))


def _reference_greatest_sort_key(batches: list[pa.Table]) -> list[tuple[object, ...]]:
    rows = pa.concat_tables(batches).sort_by([("key", "ascending"), ("version", "ascending")])
    return _by_key(last_per_key(rows, ["key"]))


def _split(instance: sleeper.Instance, table: sleeper.Table) -> None:  # type: ignore[type-arg]
    leaves = len(table.leaf_partitions())
    table.set_properties({"sleeper.table.partition.splitting.threshold": "2"})
    instance.split_now(table.name)
    assert len(table.leaf_partitions()) > leaves


def _every_door(table: sleeper.Table) -> list[list[tuple[object, ...]]]:  # type: ignore[type-arg]
    return [
        _by_key(table.scan().to_arrow()),
        _by_key(table.scan(via_queue=True).to_arrow()),
        _by_key(table.scan(ranges={"key": (None, None)}).to_arrow()),
    ]


def should_keep_the_row_with_the_greatest_sort_key_across_ingest_compaction_and_a_split(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SORTED, properties=UPSERT)
    batches = [
        _versioned([1, 2, 3, 4, 5], [1, 1, 1, 1, 1]),
        _versioned([2, 3, 3, 6], [5, 0, 7, 1]),  # 3@0 is older than 3@1: stays hidden
        _versioned([1, 4], [9, 2]),
    ]
    table.ingest(batches[0])
    table.ingest(batches[1])
    table.upsert(batches[2])  # with a sort key, upsert is an ingest
    expected = _reference_greatest_sort_key(batches)
    assert all(rows == expected for rows in _every_door(table))
    assert table.scan(filter="name = 'v1'").count() == 2  # keys 5 and 6; older v1 rows of 1..4 stay hidden

    instance.compact_now(table.name, compact_all=True)
    assert all(rows == expected for rows in _every_door(table))

    _split(instance, table)
    table.ingest(_versioned([3], [8]))
    expected = _reference_greatest_sort_key([*batches, _versioned([3], [8])])
    assert all(rows == expected for rows in _every_door(table))


def should_drop_the_rows_with_lesser_sort_keys_by_compaction(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SORTED, properties=UPSERT)
    table.ingest(_versioned([1, 2], [1, 1]))
    table.ingest(_versioned([1, 2], [2, 0]))

    instance.compact_now(table.name, compact_all=True)

    assert sum(r.number_of_rows for r in table.file_references()) == 2


def should_keep_the_last_committed_row_without_a_sort_key(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", NO_SORT, split_points=[50], properties=UPSERT)
    batches = [_rows(list(range(100)), "a"), _rows([5, 60, 5, 120], "b"), _rows([60, 7, 99], "c")]
    table.ingest(batches[0])  # Table.ingest upserts on such a table
    numbers = table.upsert(batches[1])
    table.upsert(batches[2])
    expected = _reference_last_committed(batches)
    assert all(rows == expected for rows in _every_door(table))
    assert table.scan(as_of=numbers[0] - 1).count() == 100  # time travel before the upsert: the old rows
    assert table.scan(filter="name = 'a5'").count() == 0  # a query filter cannot show a hidden older row

    instance.compact_now(table.name, compact_all=True)
    assert all(rows == expected for rows in _every_door(table))
    _split(instance, table)
    batches.append(_rows([20, 21], "d"))
    table.upsert(batches[-1])
    expected = _reference_last_committed(batches)
    assert all(rows == expected for rows in _every_door(table))
    instance.compact_now(table.name, compact_all=True)
    assert _by_key(table.scan().to_arrow()) == expected
    assert sum(r.number_of_rows for r in table.file_references()) == len(expected)


def should_commit_many_keys_in_several_atomic_upserts(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", NO_SORT, properties=UPSERT)
    table.ingest(_rows(list(range(5000)), "a"))
    twice = _rows(list(range(0, 5000, 2)) * 2, "b")  # the second of each key wins (its count is 2,500 more)
    numbers = table.upsert(twice)
    assert len(numbers) == 2  # 2,500 keys, 2,000 a commit
    expected = _reference_last_committed([_rows(list(range(5000)), "a"), twice])
    assert _by_key(table.scan().to_arrow()) == expected


def should_refuse_upsert_on_a_table_without_the_setting(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", NO_SORT)

    with pytest.raises(UpsertNotEnabledError, match="set sleeper.table.upsert=true"):
        table.upsert(_rows([1], "a"))
    assert table.scan().count() == 0


def should_refuse_an_ingest_path_that_cannot_upsert(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", NO_SORT, properties=UPSERT)

    with pytest.raises(UpsertRequiredError, match="Table.upsert"):
        ingest_rows(table, _rows([1], "a"))  # what an ingest job runs
    with pytest.raises(SleeperError, match="wait=False"):
        table.ingest(_rows([1], "a"), wait=False)
    assert table.scan().count() == 0


def should_refuse_upsert_with_aggregations_or_an_iterator(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    with pytest.raises((PropertyError, SleeperError), match="sleeper.table.upsert cannot be set with"):
        instance.create_table(
            "agg", NO_SORT, properties={**UPSERT, "sleeper.table.aggregations": "max(name),sum(count)"}
        )
    table = instance.create_table("t", NO_SORT, properties=UPSERT)
    with pytest.raises((PropertyError, SleeperError), match="sleeper.table.upsert cannot be set with"):
        table.set_properties({"sleeper.table.iterator.class.name": "sleeper.core.iterator.AgeOffIterator"})


def should_match_several_row_key_fields_in_the_key_filter() -> None:
    schema = Schema.of(
        row_keys=[Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.STRING)],
        values=[Field("v", PrimitiveType.LONG)],
    )
    rows = pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "it's"], "v": pa.array([0, 0], pa.int64())})

    assert str(keys_filter(rows, schema)) == "(a = 1 and b = 'x') or (a = 2 and b = 'it''s')"


def should_keep_the_greatest_sort_key_of_one_upsert_whatever_the_order_in_the_data(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SORTED, properties=UPSERT)

    table.upsert(_versioned([0, 0, 1], [2, 1, 5]))

    assert _by_key(table.scan().to_arrow()) == [(0, 2, "v2"), (1, 5, "v5")]
