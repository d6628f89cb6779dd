"""Publishing a table as an Iceberg view on the emulated AWS instance: the Glue Data Catalog and S3
on moto. The publishing schedule's trigger and publisher run as Lambda runs them (the pump); pyiceberg's scan through
Glue and DuckDB's ``iceberg_scan`` over S3 equal a full Sleeper query, and the garbage collector's Lambda keeps a file
the current snapshot lists until the view has moved on for longer than the GC delay."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.iceberg.catalog import load_catalog
from sleeper.iceberg.publisher import publish_table
from sleeper.io.filesystem import exists, list_files
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.direct_commits import compact_one_file_long_ago
from tests.integration.iceberg.fingerprints import duckdb_fingerprint, fingerprint

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)


@pytest.fixture(scope="module")
def emulated() -> Iterator[EmulatedAwsInstance]:
    with EmulatedAwsInstance(f"local-{uuid.uuid4().hex[:10]}", port=0) as instance:
        with pytest.MonkeyPatch.context() as env:
            for name, value in instance.environment().items():
                env.setenv(name, value)
            yield instance


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _table(
    emulated: EmulatedAwsInstance, view: str, *batches: tuple[int, int], **properties: str
) -> Table[AwsInstance]:
    """A table over two leaves split at 300, with a direct ingest of each batch of keys."""
    instance = emulated.instance()
    values = {"sleeper.table.iceberg.name": view, **properties}
    table = instance.create_table(f"rows-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[300], properties=values)
    for start, stop in batches:
        table.ingest(_rows(start, stop), direct=True)
    return table


def _view_rows(emulated: EmulatedAwsInstance, view: str) -> pa.Table:
    instance = emulated.instance()
    return load_catalog(instance.data_root, instance.filesystem_options).load_table(view).scan().to_arrow()


def _sleeper_rows(table: Table[AwsInstance]) -> pa.Table:
    return table.query(regions=[Region.whole(SCHEMA)])


def _duckdb(emulated: EmulatedAwsInstance, metadata_location: str) -> tuple[int, int] | str:
    s3 = emulated.instance().filesystem_options.s3
    return duckdb_fingerprint(
        metadata_location,
        {
            "key": s3.access_key or "",
            "secret": s3.secret_key or "",
            "region": s3.region or "",
            "endpoint": urlparse(emulated.endpoint).netloc,
        },
    )


def _pump(emulated: EmulatedAwsInstance, tmp_path: Path) -> Pump:
    return emulated.pump(task_log_dir=str(tmp_path))


def should_publish_on_schedule_to_glue_and_read_back_the_tables_rows(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table naming a view, and another naming none
    view = f"sleeper_{uuid.uuid4().hex[:8]}.rows"
    table = _table(emulated, view, (0, 500), (250, 600))
    emulated.instance().create_table(f"plain-{uuid.uuid4().hex[:8]}", SCHEMA)
    pump = _pump(emulated, tmp_path)

    # When the publishing schedule fires and the pump delivers its messages to the publisher function
    assert pump.fire(operations.ICEBERG_PUBLISH_TRIGGER)
    done = pump.run_until_idle(timeout_seconds=180)

    # Then each table was handled, the view is in Glue, and pyiceberg's scan through Glue equals Sleeper's query
    assert done.failed == {}
    assert done.delivered.get(operations.ICEBERG_PUBLISH, 0) >= 2
    expected = fingerprint(_sleeper_rows(table))
    assert expected[0] == 600 + 250
    assert fingerprint(_view_rows(emulated, view)) == expected

    # And DuckDB's iceberg_scan over S3 equals it too
    instance = emulated.instance()
    metadata = load_catalog(instance.data_root, instance.filesystem_options).load_table(view).metadata_location
    assert metadata.startswith("s3://")
    duck = _duckdb(emulated, metadata)
    if isinstance(duck, str):
        pytest.skip(f"pyiceberg's scan through Glue equals Sleeper's query; DuckDB not checked: {duck}")
    assert duck == expected


def should_keep_a_file_the_view_lists_from_the_collector_until_the_view_has_moved_on(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a published table (two files in one leaf) one of whose files a compaction replaced a day ago
    view = f"sleeper_{uuid.uuid4().hex[:8]}.rows"
    table = _table(emulated, view, (0, 100), (100, 200), **{"sleeper.table.gc.commit.async": "false"})
    instance = emulated.instance()
    publish_table(instance, table)
    old, new = compact_one_file_long_ago(instance, table)
    pump = _pump(emulated, tmp_path)

    # When the garbage collection schedule fires
    assert pump.fire(operations.GARBAGE_COLLECTOR_TRIGGER)
    assert pump.run_until_idle(timeout_seconds=120).failed == {}

    # Then the replaced file survives: the current snapshot lists it, and the view still reads the table's rows
    fs = instance.filesystem
    assert exists(fs, old.removeprefix("s3a://"))
    assert fingerprint(_view_rows(emulated, view)) == fingerprint(_sleeper_rows(table))

    # When the view is republished, then again once the old snapshot is older than the GC delay, and GC runs
    publish_table(instance, table)
    later = publish_table(instance, table, clock=lambda: datetime.now(tz=UTC) + timedelta(days=1))
    assert later.retention.expired_snapshots == 1
    assert pump.fire(operations.GARBAGE_COLLECTOR_TRIGGER)
    assert pump.run_until_idle(timeout_seconds=120).failed == {}

    # Then the file is collected, and the view (listing the compaction's output) still equals the table
    assert not exists(fs, old.removeprefix("s3a://"))
    assert exists(fs, new.removeprefix("s3a://"))
    assert fingerprint(_view_rows(emulated, view)) == fingerprint(_sleeper_rows(table))


def _view_exists(emulated: EmulatedAwsInstance, view: str) -> bool:
    instance = emulated.instance()
    return bool(load_catalog(instance.data_root, instance.filesystem_options).table_exists(view))


def _iceberg_files(instance: AwsInstance, table: Table[AwsInstance]) -> list[str]:
    return [str(i.path) for i in list_files(instance.filesystem, f"{table.data_prefix.removeprefix('s3a://')}/iceberg")]


def should_withdraw_the_glue_view_and_let_the_collector_delete_its_files_when_the_table_gets_a_filter(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a published table (two files in one leaf) one of whose files a compaction replaced a day ago
    view = f"sleeper_{uuid.uuid4().hex[:8]}.rows"
    table = _table(emulated, view, (0, 100), (100, 200), **{"sleeper.table.gc.commit.async": "false"})
    instance = emulated.instance()
    metadata = publish_table(instance, table).metadata_location
    old, new = compact_one_file_long_ago(instance, table)

    # When the table is given an age-off filter
    updated = instance.update_table_properties(table.name, {"sleeper.table.filters": "ageOff(key,1000)"})

    # Then the filter is saved, the view is gone from Glue, its metadata is unreadable, and its holds are released
    assert updated.properties.get("sleeper.table.filters") == "ageOff(key,1000)"
    assert not _view_exists(emulated, view)
    assert not exists(instance.filesystem, metadata.removeprefix("s3://"))
    assert _iceberg_files(instance, table) == []

    # And the collector's Lambda deletes the replaced file the view held
    pump = _pump(emulated, tmp_path)
    assert pump.fire(operations.GARBAGE_COLLECTOR_TRIGGER)
    assert pump.run_until_idle(timeout_seconds=120).failed == {}
    assert not exists(instance.filesystem, old.removeprefix("s3a://"))
    assert exists(instance.filesystem, new.removeprefix("s3a://"))


def should_withdraw_a_view_left_behind_on_the_schedule_instead_of_failing_for_ever(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a published table given a security iterator without the view being withdrawn (as an older version saved)
    view = f"sleeper_{uuid.uuid4().hex[:8]}.rows"
    table = _table(emulated, view, (0, 100))
    instance = emulated.instance()
    publish_table(instance, table)
    saved = dict(table.properties.items())
    saved["sleeper.table.iterator.class.name"] = "sleeper.iterators.examples.SecurityFilteringIterator"
    saved["sleeper.table.iterator.config"] = "value,A"
    instance.properties_store.save_table(table.table_id, saved)

    # When the publishing schedule fires twice and the pump delivers its messages to the publisher function
    pump = _pump(emulated, tmp_path)
    for _ in range(2):
        assert pump.fire(operations.ICEBERG_PUBLISH_TRIGGER)
        assert pump.run_until_idle(timeout_seconds=180).failed == {}

    # Then the view is withdrawn from Glue with its holds, and no message failed
    assert not _view_exists(emulated, view)
    assert _iceberg_files(instance, table) == []


def should_never_list_a_deleted_file_after_a_reinitialisation_on_aws(emulated: EmulatedAwsInstance) -> None:
    from sleeper.runtime.aws.api import AwsApi

    # Given a published table
    view = f"sleeper_{uuid.uuid4().hex[:8]}.rows"
    table = _table(emulated, view, (0, 100), (250, 400))
    instance = emulated.instance()
    publish_table(instance, table)
    files = [f.filename for f in table.files()]

    # When it is reinitialised through the admin port
    AwsApi(instance).reinitialise_table(table.name, None)

    # Then its files are gone, and the view in Glue (published again) lists none of them and reads no rows
    assert not any(exists(instance.filesystem, f.removeprefix("s3a://")) for f in files)
    loaded = load_catalog(instance.data_root, instance.filesystem_options).load_table(view)
    assert [t.file.file_path for t in loaded.scan().plan_files()] == []
    assert loaded.scan().to_arrow().num_rows == 0
