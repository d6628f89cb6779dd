"""Withdrawing a local table's Iceberg view: giving a published table an iterator, an age-off
filter or aggregations takes its view out of the catalog and makes its metadata unreadable in the same step, releases
its holds so the garbage collector can collect, and says so; a publish of a table with rules withdraws whatever view
is left instead of failing for ever; a reinitialisation never leaves the view listing deleted files."""

from __future__ import annotations

import logging
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
from sleeper.iceberg.catalog import load_catalog
from sleeper.iceberg.entry import handle_publish_iceberg
from sleeper.iceberg.exceptions import RulesRefusedError, WithdrawalError
from sleeper.iceberg.publisher import publish_table
from sleeper.io.filesystem import filesystem_path
from sleeper.io.parquet import SortedFileWriter
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(Field("timestamp", PrimitiveType.LONG), Field("visibility", PrimitiveType.STRING)),
)
VIEW = "sleeper_test.rows"
DAY = timedelta(days=1)
NOW_MS = int(datetime.now(tz=UTC).timestamp() * 1000)
DAY_MS = 86_400_000

RULES: dict[str, dict[str, str]] = {
    "security": {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.SecurityFilteringIterator",
        "sleeper.table.iterator.config": "visibility,A",
    },
    "age-off": {"sleeper.table.filters": f"ageOff(timestamp,{DAY_MS})"},
    "aggregation": {"sleeper.table.aggregations": "max(timestamp),min(visibility)"},
    "user-iterator": {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.FixedAgeOffIterator",
        "sleeper.table.iterator.config": f"timestamp,{NOW_MS - DAY_MS}",
    },
}


def _rows(start: int, stop: int) -> pa.Table:
    """Half the keys older than a day, and half labelled beyond the authorisation ``A``."""
    keys = list(range(start, stop))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array([NOW_MS - (10 * DAY_MS if k % 2 else 3_600_000) for k in keys], pa.int64()),
            "visibility": ["B" if k % 4 < 2 else "A" for k in keys],
        }
    )


def _published(tmp_path: Path) -> tuple[LocalInstance, Table[LocalInstance], str]:
    """A table of two files naming a view, published; returns the published ``metadata.json``."""
    instance = LocalInstance.create(tmp_path / "instance")
    values = {"sleeper.table.iceberg.name": VIEW, "sleeper.table.gc.commit.async": "false"}
    table = instance.create_table("rows", SCHEMA, properties=values)
    table.ingest(_rows(0, 100))
    table.ingest(_rows(100, 200))
    result = publish_table(instance, table)
    assert result.rows == 200 and Path(filesystem_path(result.metadata_location)).exists()
    return instance, table, result.metadata_location


def _compact_all(table: Table[LocalInstance]) -> None:
    """Replaces every file on the root with one file of all their rows, as a compaction does."""
    store = table.state_store
    store.refresh()
    inputs = tuple(sorted(f.filename for f in store.files() if f.references))
    rows = table.query(regions=[Region.whole(SCHEMA)])
    output = f"{table.data_prefix}/data/partition_root/job-all.parquet"
    with SortedFileWriter(output, SCHEMA) as writer:
        writer.write(rows)
    store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="job-all", partition_id="root", filenames=inputs),))
    )
    reference = FileReference(filename=output, partition_id="root", number_of_rows=rows.num_rows)
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id="job-all", input_files=inputs, new_reference=reference),)
        )
    )


def _holds(table: Table[LocalInstance]) -> list[Path]:
    return list(Path(filesystem_path(table.data_prefix), "iceberg", "holds").glob("*.json.gz"))


def _iceberg_files(table: Table[LocalInstance]) -> list[Path]:
    return [p for p in Path(filesystem_path(table.data_prefix), "iceberg").rglob("*") if p.is_file()]


def _catalog_has_view(instance: LocalInstance) -> bool:
    return bool(load_catalog(instance.data_root, None).table_exists(VIEW))


def _save_bypassing_the_guard(instance: LocalInstance, table: Table[LocalInstance], values: dict[str, str]) -> None:
    """Saves properties as an older version did, with no withdrawal: a table with rules and a view."""
    saved = dict(table.properties.items())
    saved.update(values)
    instance._properties_store.save_table(table.table_id, saved)


@pytest.mark.parametrize("rule", list(RULES))
def should_withdraw_the_view_and_release_its_holds_when_the_table_is_given_rules(
    tmp_path: Path, rule: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a published table whose two files a compaction replaced (the view's snapshot still lists them)
    instance, table, metadata = _published(tmp_path)
    inputs = sorted(f.filename for f in table.state_store.files())
    _compact_all(table)
    assert sorted(collect_garbage(table, now=datetime.now(tz=UTC) + DAY).held) == inputs

    # When the table is given the rule
    with caplog.at_level(logging.WARNING, logger="sleeper.iceberg.withdrawal"):
        updated = instance.update_table_properties("rows", RULES[rule])

    # Then the rule is saved, the view is gone from the catalog, its metadata is unreadable, and it says so
    assert all(updated.properties.get(k) == v for k, v in RULES[rule].items())
    assert not _catalog_has_view(instance)
    assert not Path(filesystem_path(metadata)).exists()
    assert _iceberg_files(table) == [] and _holds(table) == []
    assert any(f"{VIEW} dropped" in r.getMessage() and "withdrawn" in r.getMessage() for r in caplog.records)

    # And the collector deletes the files the view held
    collected = collect_garbage(table, now=datetime.now(tz=UTC) + DAY)
    assert sorted(collected.deleted) == inputs and collected.held == ()

    # And a publish is refused, with nothing left to withdraw, and never makes a view
    with pytest.raises(RulesRefusedError, match="cannot be published") as refused:
        publish_table(instance, updated)
    assert not refused.value.withdrawal.withdrew_anything
    assert not _catalog_has_view(instance)


def should_withdraw_a_view_left_behind_on_a_scheduled_publish_instead_of_failing_for_ever(tmp_path: Path) -> None:
    from sleeper.core import operations
    from sleeper.runtime.local.handlers import default_handlers
    from sleeper.runtime.local.runner import LocalRunner

    # Given a published table given an age-off filter without the view being withdrawn
    instance, table, metadata = _published(tmp_path)
    _save_bypassing_the_guard(instance, table, RULES["age-off"])

    # When the local schedule publishes every table, twice
    runner = LocalRunner(instance, default_handlers())
    first = runner.run_round(force=True)
    second = runner.run_round(force=True)

    # Then neither round fails, and the view is withdrawn: out of the catalog, unreadable, its holds released
    for summary in (first, second):
        assert summary.processed.get(operations.ICEBERG_PUBLISH_Q) == 1
        assert summary.failed.get(operations.ICEBERG_PUBLISH_Q) is None
    assert not _catalog_has_view(instance)
    assert not Path(filesystem_path(metadata)).exists()
    assert _holds(table) == []


def should_report_the_withdrawal_from_the_scheduled_entry_and_the_explicit_publish(tmp_path: Path) -> None:
    # Given a published table given an iterator without the view being withdrawn
    instance, table, _ = _published(tmp_path)
    _save_bypassing_the_guard(instance, table, RULES["user-iterator"])

    # When it is published explicitly, then the publish is refused and says the view was withdrawn
    with pytest.raises(RulesRefusedError, match=f"its view was withdrawn \\({VIEW} dropped, 1 holds released\\)"):
        publish_table(instance, instance.table("rows"))
    assert not _catalog_has_view(instance)

    # And a scheduled publish then has nothing to withdraw and does not fail
    assert handle_publish_iceberg(instance, table.table_id) == ""


def should_withdraw_the_view_when_rules_are_saved_while_a_publish_runs(tmp_path: Path) -> None:
    # Given a published table with new rows, and a catalog that saves a security filter (as a racing edit that
    # withdrew before the publish recreated the view) once this publish has read the table's properties
    instance, table, _ = _published(tmp_path)
    table.ingest(_rows(200, 300))
    catalog = load_catalog(instance.data_root, None)

    class Racing:
        def __getattr__(self, name: str) -> object:
            return getattr(catalog, name)

        def load_table(self, identifier: object) -> object:
            _save_bypassing_the_guard(instance, table, RULES["security"])
            return catalog.load_table(identifier)

    # When it publishes with the properties it read before the save
    with pytest.raises(RulesRefusedError, match="rules changed during the publish"):
        publish_table(instance, table, catalog=Racing())  # type: ignore[arg-type]

    # Then it committed nothing and withdrew the view
    assert not _catalog_has_view(instance)
    assert _holds(table) == []


def should_say_on_the_command_line_that_the_view_is_withdrawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleeper.cli.main import run

    instance, _, _ = _published(tmp_path)
    args = ["--instance", str(tmp_path / "instance"), "table", "properties", "rows"]
    assert run([*args, "--set", f"sleeper.table.filters=ageOff(timestamp,{DAY_MS})"]) == 0
    captured = capsys.readouterr()
    assert f"Iceberg view {VIEW}: withdrawn" in captured.err and "sleeper.table.filters" in captured.err
    assert "withdrawn" not in captured.out
    assert not _catalog_has_view(instance)


def should_save_nothing_when_the_view_cannot_be_withdrawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sleeper.iceberg.catalog

    # Given a published table whose catalog cannot be reached
    instance, table, metadata = _published(tmp_path)

    def unreachable(*args: object) -> object:
        raise ConnectionError("the catalog is unreachable")

    monkeypatch.setattr(sleeper.iceberg.catalog, "load_catalog", unreachable)

    # When it is given a security filter, then that is refused, naming why, and nothing is saved or withdrawn
    with pytest.raises(WithdrawalError, match="could not withdraw its Iceberg view.*unreachable"):
        instance.update_table_properties("rows", RULES["security"])
    monkeypatch.undo()
    assert not instance.table("rows").properties.is_set("sleeper.table.iterator.class.name")
    assert _catalog_has_view(instance) and Path(filesystem_path(metadata)).exists()


def should_never_list_a_deleted_file_after_a_reinitialisation(tmp_path: Path) -> None:
    # Given a published table
    instance, table, metadata = _published(tmp_path)
    files = sorted(f.filename for f in table.state_store.files())

    # When it is reinitialised
    LocalApi(instance).reinitialise_table("rows", None)

    # Then its files are gone, and the view (published again) lists none of them and reads no rows
    assert not any(Path(filesystem_path(f)).exists() for f in files)
    view = load_catalog(instance.data_root, None).load_table(VIEW)
    listed = [t.file.file_path for t in view.scan().plan_files()]
    assert listed == [] and view.scan().to_arrow().num_rows == 0
    assert not Path(filesystem_path(metadata)).exists()

    # And after a new ingest a publish shows exactly the table's rows again
    table.ingest(_rows(500, 600))
    publish_table(instance, instance.table("rows"))
    expected = instance.table("rows").query(regions=[Region.whole(SCHEMA)]).sort_by("key")
    assert load_catalog(instance.data_root, None).load_table(VIEW).scan().to_arrow().sort_by("key").equals(expected)
