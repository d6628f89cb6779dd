"""Publishing a local table as an Iceberg view: pyiceberg's own scan and DuckDB's ``iceberg_scan``
of the view equal a full Sleeper query (count and checksum), through compactions that leave files partly referenced,
and the garbage collector never deletes a file the view still lists."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.gc import collect_garbage
from sleeper.iceberg import NotPublishableError, PublishAbandonedError, ViewOwnershipError
from sleeper.iceberg.catalog import load_catalog
from sleeper.iceberg.publisher import PublishResult, publish_table
from sleeper.io.filesystem import filesystem_path
from sleeper.io.key_ranges import KeyBounds
from sleeper.io.parquet import SortedFileWriter
from sleeper.io.parquet_reader import read_sorted
from sleeper.runtime.local.instance import LocalInstance
from tests.integration.iceberg.fingerprints import duckdb_fingerprint, fingerprint

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
VIEW = "sleeper_test.rows"
DAY = timedelta(days=1)


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _table(tmp_path: Path, split_points: list[int] | None = None, **properties: str) -> tuple[LocalInstance, Table]:
    instance = LocalInstance.create(tmp_path / "instance")
    values = {"sleeper.table.iceberg.name": VIEW, "sleeper.table.gc.commit.async": "false", **properties}
    table = instance.create_table("rows", SCHEMA, split_points=split_points or [], properties=values)
    return instance, table


def _sleeper_rows(table: Table) -> pa.Table:
    return table.query(regions=[Region.whole(SCHEMA)])


def _view_rows(instance: LocalInstance) -> pa.Table:
    return load_catalog(instance.data_root, None).load_table(VIEW).scan().to_arrow()


def _assert_view_equals_table(instance: LocalInstance, table: Table, result: PublishResult) -> None:
    expected = fingerprint(_sleeper_rows(table))
    assert expected[0] > 0
    assert fingerprint(_view_rows(instance)) == expected
    assert result.rows == expected[0]
    duck = duckdb_fingerprint(result.metadata_location)
    if isinstance(duck, str):
        pytest.skip(f"pyiceberg's scan equals Sleeper's query; DuckDB not checked: {duck}")
    assert duck == expected


def _compact_leaf(table: Table, filename: str, partition_id: str, job_id: str) -> str:
    """Replaces a file's reference on one leaf with a file of its rows there, as a compaction of that leaf does."""
    store = table.state_store
    store.refresh()
    region = store.partition_tree().get(partition_id).region
    bounds = [KeyBounds(name, r.canonical_min, r.canonical_max) for name, r in region.ranges.items()]
    rows = pa.Table.from_batches(list(read_sorted(filename, SCHEMA, regions=[bounds])), schema=None)
    output = f"{table.data_prefix}/data/partition_{partition_id}/{job_id}.parquet"
    with SortedFileWriter(output, SCHEMA) as writer:
        writer.write(rows)
    store.commit(
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id=job_id, partition_id=partition_id, filenames=(filename,)),)
        )
    )
    reference = FileReference(filename=output, partition_id=partition_id, number_of_rows=rows.num_rows)
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id=job_id, input_files=(filename,), new_reference=reference),)
        )
    )
    return output


def _compact_all(table: Table, job_id: str) -> str:
    """Replaces every file on the root with one file of all their rows."""
    store = table.state_store
    store.refresh()
    inputs = tuple(sorted(f.filename for f in store.files() if f.references))
    rows = _sleeper_rows(table)
    output = f"{table.data_prefix}/data/partition_root/{job_id}.parquet"
    with SortedFileWriter(output, SCHEMA) as writer:
        writer.write(rows)
    store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=inputs),))
    )
    reference = FileReference(filename=output, partition_id="root", number_of_rows=rows.num_rows)
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id=job_id, input_files=inputs, new_reference=reference),)
        )
    )
    return output


def _exists(location: str) -> bool:
    return Path(filesystem_path(location)).exists()


def should_publish_a_view_whose_scans_equal_a_full_sleeper_query(tmp_path: Path) -> None:
    # Given a table over three leaves with rows from two ingests (each file referenced from every leaf it spans)
    instance, table = _table(tmp_path, split_points=[300, 600])
    table.ingest(_rows(0, 500))
    table.ingest(_rows(400, 900))

    # When it is published
    result = publish_table(instance, table)

    # Then the view lists the two files whole, and its scans equal the table's rows
    assert result.changed and result.files == 2 and result.trimmed_files == 0
    _assert_view_equals_table(instance, table, result)


def should_trim_a_file_a_compaction_left_partly_referenced_and_drop_files_that_left_the_table(
    tmp_path: Path,
) -> None:
    # Given a file over two leaves, published
    instance, table = _table(tmp_path, split_points=[500])
    table.ingest(_rows(0, 1000))
    first = publish_table(instance, table)
    (original,) = [f.filename for f in table.state_store.files()]
    left = table.state_store.partition_tree().leaf_for_key([0])

    # When a compaction of the left leaf replaces the file's reference there, and the table is published again
    compacted = _compact_leaf(table, original, left.id, "job-left")
    second = publish_table(instance, table)

    # Then the view lists the compaction's output and a trimmed copy of the right half of the original: no row twice
    assert second.changed and second.files == 2 and second.trimmed_files == 1
    assert second.added == 2 and second.removed == 1
    _assert_view_equals_table(instance, table, second)
    view_files = {t.file.file_path for t in load_catalog(instance.data_root, None).load_table(VIEW).scan().plan_files()}
    assert compacted in view_files and original not in view_files
    assert first.snapshot_id != second.snapshot_id


def should_make_no_snapshot_when_nothing_changed(tmp_path: Path) -> None:
    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 10))
    first = publish_table(instance, table)
    again = publish_table(instance, table)
    assert first.changed and not again.changed
    assert again.snapshot_id == first.snapshot_id


def should_never_let_the_collector_delete_a_file_the_current_snapshot_lists(tmp_path: Path) -> None:
    # Given a table of two files, published, then compacted into one
    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 100))
    table.ingest(_rows(100, 200))
    published = publish_table(instance, table)
    inputs = sorted(f.filename for f in table.state_store.files())
    output = _compact_all(table, "job-all")

    # When the collector runs a day later (long past the GC delay) before the view is republished
    held = collect_garbage(table, now=datetime.now(tz=UTC) + DAY)

    # Then it keeps both inputs, which the current snapshot lists, and the view still reads them
    assert sorted(held.held) == inputs and held.deleted == ()
    assert all(_exists(f) for f in inputs)
    _assert_view_equals_table(instance, table, published)

    # When the view is republished (the compaction's output replaces the inputs) and the collector runs again
    republished = publish_table(instance, table)
    still_held = collect_garbage(table, now=datetime.now(tz=UTC) + DAY)

    # Then the superseded snapshot keeps its files for the GC delay (a reader may have planned on it just before)
    assert republished.changed and republished.files == 1
    assert sorted(still_held.held) == inputs and still_held.deleted == ()

    # When a publish runs once the old snapshot has been superseded for longer than the delay
    later = publish_table(instance, table, clock=lambda: datetime.now(tz=UTC) + DAY)
    collected = collect_garbage(table, now=datetime.now(tz=UTC) + DAY)

    # Then the old snapshot is expired, its hold released, and the collector deletes the inputs
    assert not later.changed and later.retention.expired_snapshots == 1 and later.retention.released_holds == 1
    assert sorted(collected.deleted) == inputs
    assert not any(_exists(f) for f in inputs) and _exists(output)
    _assert_view_equals_table(instance, table, later)


def should_abandon_a_publish_that_could_not_hold_its_files_within_half_the_gc_delay(tmp_path: Path) -> None:
    # Given a clock that jumps 11 minutes (over half the 20 minute GC delay) between reading the state and the hold
    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 10))
    times = iter([datetime.now(tz=UTC), datetime.now(tz=UTC) + timedelta(minutes=11)])

    # When it is published, then it gives up, leaving no hold and no view
    with pytest.raises(PublishAbandonedError, match="half the GC delay"):
        publish_table(instance, table, clock=lambda: next(times))
    assert not list((tmp_path / "instance" / "data" / table.table_id / "iceberg").rglob("*.json.gz"))
    assert not load_catalog(instance.data_root, None).table_exists(VIEW)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sleeper.table.iterator.class.name", "sleeper.core.iterator.AgeOffIterator"),
        ("sleeper.table.aggregations", "sum(value)"),
        ("sleeper.table.filters", "ageOff(key,1000)"),
    ],
)
def should_refuse_a_table_whose_rows_are_changed_when_read(tmp_path: Path, name: str, value: str) -> None:
    instance = LocalInstance.create(tmp_path / "instance")
    schema = Schema(
        row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),)
    )
    properties = {"sleeper.table.iceberg.name": VIEW, name: value}
    if name == "sleeper.table.iterator.class.name":
        properties["sleeper.table.iterator.config"] = "key,1000"
    table = instance.create_table("processed", schema, properties=properties)
    with pytest.raises(NotPublishableError, match=name):
        publish_table(instance, table)
    assert not load_catalog(instance.data_root, None).table_exists(VIEW)


def should_refuse_a_table_naming_no_view(tmp_path: Path) -> None:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("plain", SCHEMA)
    with pytest.raises(NotPublishableError, match="sleeper.table.iceberg.name"):
        publish_table(instance, table)


def should_never_overwrite_an_iceberg_table_that_is_not_this_tables_view(tmp_path: Path) -> None:
    # Given a table published as the view, and a second table naming the same Iceberg table
    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 10))
    publish_table(instance, table)
    other = instance.create_table("other", SCHEMA, properties={"sleeper.table.iceberg.name": VIEW})
    other.ingest(_rows(50, 60))

    # When the second is published, then it is refused, and the view still shows the first table
    with pytest.raises(ViewOwnershipError, match=f"Sleeper table id {table.table_id}"):
        publish_table(instance, other)
    assert fingerprint(_view_rows(instance)) == fingerprint(_sleeper_rows(table))


def should_publish_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sleeper.cli.main import run

    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 25))
    assert run(["--instance", str(tmp_path / "instance"), "table", "publish-iceberg", "rows", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["icebergTable"] == VIEW and printed["rows"] == 25 and printed["changed"] is True
    assert run(["--instance", str(tmp_path / "instance"), "table", "publish-iceberg", "rows"]) == 0
    assert "Unchanged: rows as Iceberg table sleeper_test.rows" in capsys.readouterr().out
    instance.create_table("plain", SCHEMA)
    assert run(["--instance", str(tmp_path / "instance"), "table", "publish-iceberg", "plain"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: table plain names no Iceberg table") and "Traceback" not in error


def should_publish_on_the_local_instances_schedule(tmp_path: Path) -> None:
    from sleeper.core import operations
    from sleeper.runtime.local.handlers import default_handlers
    from sleeper.runtime.local.runner import LocalRunner

    # Given a table naming a view and one naming none
    instance, table = _table(tmp_path, split_points=[50])
    table.ingest(_rows(0, 100))
    instance.create_table("plain", SCHEMA).ingest(_rows(0, 5))

    # When the local runner's schedules all fire and it runs one round
    summary = LocalRunner(instance, default_handlers()).run_round(force=True)

    # Then the publishing queue was drained for both tables, and the view equals the table
    assert summary.processed.get(operations.ICEBERG_PUBLISH_Q) == 2
    assert summary.failed.get(operations.ICEBERG_PUBLISH_Q) is None
    assert fingerprint(_view_rows(instance)) == fingerprint(_sleeper_rows(table))


def should_publish_every_sleeper_type(tmp_path: Path) -> None:
    from sleeper.core.schema import ListType, MapType

    # Given a table with byte array and int row keys, a string sort key, a list, a map and a nullable value
    instance = LocalInstance.create(tmp_path / "instance")
    schema = Schema(
        row_key_fields=(Field("k", PrimitiveType.BYTE_ARRAY), Field("k2", PrimitiveType.INT)),
        sort_key_fields=(Field("s", PrimitiveType.STRING),),
        value_fields=(
            Field("l", ListType(PrimitiveType.LONG)),
            Field("m", MapType(PrimitiveType.STRING, PrimitiveType.INT)),
            Field("n", PrimitiveType.STRING, nullable=True),
        ),
    )
    table = instance.create_table("typed", schema, split_points=[b"m"], properties={"sleeper.table.iceberg.name": VIEW})
    table.ingest(
        [
            {"k": bytes([i]), "k2": i, "s": f"s{i}", "l": [i, i + 1], "m": {"a": i}, "n": None if i % 2 else "x"}
            for i in range(200)
        ]
    )

    # When it is published, then pyiceberg reads back exactly the table's rows
    publish_table(instance, table)

    def ordered(rows: pa.Table) -> list[dict[str, object]]:
        return sorted(rows.to_pylist(), key=lambda r: (r["k"], r["k2"]))

    assert ordered(_view_rows(instance)) == ordered(table.query(regions=[Region.whole(schema)]))


def should_abandon_the_publish_that_loses_a_race_and_release_its_hold(tmp_path: Path) -> None:
    # Given a published table, and a catalog that lets another publish commit after this one has read the view
    instance, table = _table(tmp_path)
    table.ingest(_rows(0, 10))
    publish_table(instance, table)
    table.ingest(_rows(10, 20))
    catalog = load_catalog(instance.data_root, None)

    class Racing:
        def __getattr__(self, name: str) -> object:
            return getattr(catalog, name)

        def load_table(self, identifier: object) -> object:
            stale = catalog.load_table(identifier)
            publish_table(instance, table)  # the other publish wins
            return stale

    # When this publish commits on the view it read, then it is refused and leaves no hold of its own
    holds = tmp_path / "instance" / "data" / table.table_id / "iceberg" / "holds"
    with pytest.raises(PublishAbandonedError, match="another publish"):
        publish_table(instance, table, catalog=Racing())  # type: ignore[arg-type]
    assert len(list(holds.glob("*.json.gz"))) == 2  # the first publish's and the winner's
    # And the view shows the winner's snapshot, equal to the table
    assert fingerprint(_view_rows(instance)) == fingerprint(_sleeper_rows(table))
