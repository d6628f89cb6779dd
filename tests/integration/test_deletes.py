"""Row deletes by filter on a local instance: ``Table.delete`` hides the matching rows committed before it (never
later ones) from a direct and a queued scan at once, time travel before it still sees them, the table's rules apply
after the delete, compaction and ``Table.purge`` remove the rows physically (after which no delete is left on a
referenced file), and a delete with no or a bad filter is refused with nothing committed; ``Table.overwrite`` replaces
every row at once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper
from sleeper.core.filter import FilterError
from sleeper.core.schema import Field, PrimitiveType, Schema

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("name", PrimitiveType.STRING), Field("count", PrimitiveType.LONG)],
)


def _rows(keys: range | list[int], name: str = "n") -> pa.Table:
    return pa.table(
        {
            "key": pa.array(list(keys), pa.int64()),
            "name": [f"{name}{k % 5}" for k in keys],
            "count": pa.array([1] * len(keys), pa.int64()),
        }
    )


@pytest.fixture
def table(tmp_path: Path) -> sleeper.Table:  # type: ignore[type-arg]
    instance = sleeper.create_instance(tmp_path / "instance")
    created = instance.create_table("t", SCHEMA, split_points=[100])
    created.ingest(_rows(range(150)))
    created.ingest(_rows(range(50, 200)))
    return created


def _keys(table: pa.Table) -> list[int]:
    return sorted(table["key"].to_pylist())


def _expected(inputs: list[pa.Table], mask_filter: pc.Expression | None) -> list[int]:
    rows = pa.concat_tables(inputs)
    if mask_filter is not None:
        rows = rows.filter(~pc.coalesce(mask_filter, pa.scalar(False)))
    return sorted(rows["key"].to_pylist())


def should_hide_the_matching_rows_committed_before_and_never_later_ones(table: sleeper.Table) -> None:  # type: ignore[type-arg]
    # Given rows ingested, then a delete by key range and value
    number = table.delete("key < 60 or name = 'n3'")
    later = _rows(range(10), name="n")
    table.ingest(later)
    # Then the earlier matching rows are gone, the later ones (matching too) are there
    deleted = (pc.field("key") < 60) | (pc.field("name") == "n3")
    expected = sorted(_expected([_rows(range(150)), _rows(range(50, 200))], deleted) + list(range(10)))
    assert _keys(table.scan().to_arrow()) == expected
    # And a filtered scan, a key lookup and time travel agree
    assert _keys(table.scan(filter="key < 12").to_arrow()) == list(range(10))
    assert table.scan(as_of=number - 1).count() == 300
    assert table.scan(as_of=number).count() == len(expected) - 10


def should_delete_stored_rows_before_the_tables_aggregation(tmp_path: Path) -> None:
    instance = sleeper.create_instance(tmp_path / "instance")
    aggregating = instance.create_table(
        "agg", SCHEMA, properties={"sleeper.table.aggregations": "max(name),sum(count)"}
    )
    aggregating.ingest(_rows(range(10)))
    aggregating.ingest(_rows(range(10)))
    aggregating.delete("key = 3")
    aggregating.ingest(_rows(range(3, 4)))
    rows = aggregating.scan().to_arrow().to_pydict()
    by_key = dict(zip(rows["key"], rows["count"], strict=True))
    assert by_key[3] == 1 and by_key[4] == 2 and len(by_key) == 10


def should_remove_deleted_rows_by_compaction_and_purge(table: sleeper.Table) -> None:  # type: ignore[type-arg]
    table.delete("key >= 90 and key < 110")
    before = _keys(table.scan().to_arrow())
    result = table.purge()
    assert result.done and result.jobs
    assert all(left.files_with_rows == 0 for left in result.left)
    # The rows read are the same, and the files the reads plan hold no deleted row
    assert _keys(table.scan().to_arrow()) == before
    store = table.state_store
    store.refresh()
    listed = set().union(*(d.files for d in store.pending_deletes()))
    assert not [f for f in table.files() if f.references and f.filename in listed]
    # A second purge has nothing to do
    assert table.purge().jobs == ()


def should_hide_deleted_rows_from_a_queued_query_before_and_after_purge(table: sleeper.Table) -> None:  # type: ignore[type-arg]
    table.delete("key = 5 or key = 120")
    expected = _keys(table.scan().to_arrow())
    assert 5 not in expected and 120 not in expected and len(expected) == 297
    assert _keys(table.scan(via_queue=True).to_arrow()) == expected
    table.purge()
    assert _keys(table.scan(via_queue=True).to_arrow()) == expected


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (None, "table truncate"),
        ("  ", "table truncate"),
        ("agee > 3", "no column 'agee'"),
        ("key > 'x'", "compare it with an integer"),
    ],
)
def should_refuse_a_delete_without_a_good_filter(table: sleeper.Table, where: str | None, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(FilterError, match=message):
        table.delete(where)  # type: ignore[arg-type]
    assert table.state_store.pending_deletes() == ()
    assert table.scan().count() == 300


def should_withdraw_the_iceberg_view_and_refuse_it_until_purged(tmp_path: Path) -> None:
    from pyiceberg.exceptions import NoSuchTableError

    from sleeper.iceberg import IcebergPublishError
    from sleeper.iceberg.catalog import load_catalog

    # Given a table published as an Iceberg view
    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.iceberg.name": "del.t"})
    table.ingest(_rows(range(100)))
    instance.publish_iceberg("t")
    catalog = load_catalog(instance.runtime.data_root, None)
    assert catalog.load_table("del.t").scan().to_arrow().num_rows == 100
    # When rows are deleted, the view is gone before the delete is acknowledged, and it cannot be published again
    table.delete("key < 30")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("del.t")
    with pytest.raises(IcebergPublishError, match="pending row deletes"):
        instance.publish_iceberg("t")
    # Until a purge removes the rows from the files
    table.purge()
    instance.publish_iceberg("t")
    assert _keys(catalog.load_table("del.t").scan().to_arrow()) == list(range(30, 100))


def should_overwrite_every_row_at_once_for_concurrent_readers(table: sleeper.Table) -> None:  # type: ignore[type-arg]
    import threading

    old = _keys(table.scan().to_arrow())
    new_rows = _rows(range(1000, 1100))
    seen: list[list[int]] = []
    stop = threading.Event()

    def read() -> None:
        reader = sleeper.connect(table.instance.directory).table("t")
        while not stop.is_set():
            seen.append(_keys(reader.scan().to_arrow()))

    thread = threading.Thread(target=read)
    thread.start()
    try:
        number = table.overwrite(new_rows)
        for _ in range(3):
            seen.append(_keys(table.scan().to_arrow()))
    finally:
        stop.set()
        thread.join()
    # Every read saw all the old rows or all the new ones, never a mix and never none
    assert _keys(table.scan().to_arrow()) == list(range(1000, 1100))
    assert all(keys in (old, list(range(1000, 1100))) for keys in seen)
    # Time travel before the overwrite still reads the old rows; history names it
    assert _keys(table.scan(as_of=number - 1).to_arrow()) == old
    assert table.history().column("type").to_pylist()[-1] == "OVERWRITE_FILES"


def should_republish_the_iceberg_view_with_the_overwritten_rows(tmp_path: Path) -> None:
    from sleeper.iceberg.catalog import load_catalog

    instance = sleeper.create_instance(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.iceberg.name": "over.t"})
    table.ingest(_rows(range(100)))
    instance.publish_iceberg("t")
    table.overwrite(_rows(range(500, 520)))
    catalog = load_catalog(instance.runtime.data_root, None)
    assert _keys(catalog.load_table("over.t").scan().to_arrow()) == list(range(500, 520))


def should_purge_only_the_files_in_a_deletes_set(table: sleeper.Table) -> None:  # type: ignore[type-arg]
    # Given two files on both leaves (split at 100), a delete listing both, and a file ingested after it on both leaves
    number = table.delete("key < 60")
    table.ingest(_rows([*range(10), *range(300, 310)], name="late"))
    store = table.state_store
    store.refresh()
    (delete,) = store.pending_deletes()
    before = {(r.filename, r.partition_id) for r in table.file_references()}
    later = {(name, partition) for name, partition in before if name not in delete.files}
    assert len(delete.files) == 2 and len(later) == 2
    # When the table is purged
    result = table.purge()
    # Then one job per leaf compacted the deleted files' references, and the later file's references are the same
    after = {(r.filename, r.partition_id) for r in table.file_references()}
    assert before - after == before - later
    assert len(after - before) == len(result.jobs) == 2
    assert later <= after
    assert result.done
    assert [(d.number, d.files_with_rows) for d in result.left] == [(number, 0)]
    # And the reads return the reference rows, and a second purge has nothing to do
    expected = _expected([_rows(range(150)), _rows(range(50, 200))], pc.field("key") < 60)
    expected = sorted([*expected, *range(10), *range(300, 310)])
    assert _keys(table.scan().to_arrow()) == expected
    assert _keys(table.scan(via_queue=True).to_arrow()) == expected
    assert table.purge().jobs == ()
