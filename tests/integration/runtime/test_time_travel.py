"""Time travel on a local instance: every past state read back against a model, through compaction, splitting and
garbage collection, and the retention the garbage collector and upkeep respect."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.cli.main import run
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.log import LogType
from sleeper.gc.collector import collect_garbage
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.history import StateNotReadableError
from sleeper.statestore.upkeep import create_snapshot, delete_old_transactions

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


def _batch(start: int, rows: int) -> pa.Table:
    keys = list(range(start, start + rows))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


def _rows(table: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True))


def _table(tmp_path: Path, **properties: str) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table(
        "t",
        SCHEMA,
        properties={
            "sleeper.table.statestore.commit.async.enabled": "false",
            "sleeper.table.partition.splitting.threshold": "100",
            **properties,
        },
    )
    return instance, table


def _ingest_compact_split(instance: LocalInstance) -> dict[int, list[tuple[int, str]]]:
    """Ingests three batches, compacts them into one file and splits root; returns the model: the rows present
    after each files transaction."""
    admin = LocalApi(instance)
    model: dict[int, list[tuple[int, str]]] = {}
    present: list[tuple[int, str]] = []
    for i in range(3):
        batch = _batch(i * 1000, 60)
        instance.table("t").ingest(batch)
        present = sorted(present + _rows(batch))
        model[instance.table("t").state_store.last_transaction_numbers()[LogType.FILES]] = present
    admin.compact_now("t", compact_all=True)
    admin.split_now("t")
    head = instance.table("t").state_store.last_transaction_numbers()[LogType.FILES]
    numbers = sorted(model)
    return {n: model[max(k for k in numbers if k <= n)] for n in range(numbers[0], head + 1)}


def should_return_exactly_the_rows_present_as_of_each_transaction(tmp_path: Path) -> None:
    # Given a table given three batches, compacted into one file and split
    instance, _ = _table(tmp_path, **{"sleeper.table.statestore.classname": "S3TransactionLogStateStore"})
    model = _ingest_compact_split(instance)
    table = instance.table("t")
    assert len(table.leaf_partitions()) == 2
    assert len({r.filename for r in table.file_references()}) == 1
    # When each past state is scanned, by number and by the time of its transaction
    history = table.history()
    files_log = history.filter(pa.compute.equal(history.column("log"), "files"))
    times = dict(
        zip(files_log.column("transaction_number").to_pylist(), files_log.column("time").to_pylist(), strict=True)
    )
    # Then each returns exactly the rows the model holds then, and a range within it as a lookup would
    for number, expected in model.items():
        assert _rows(table.scan(as_of=number).to_arrow()) == expected, number
        assert (
            _rows(table.scan(as_of=times[number]).to_arrow())
            == model[max(n for n in model if times[n] == times[number])]
        )
        ranged = table.scan(as_of=number, ranges={"key": (1000, 1030)}).to_arrow()
        assert _rows(ranged) == [r for r in expected if 1000 <= r[0] < 1030]
    # And the history lists every transaction: three ingests of 60 rows, the compaction replacing 180 rows
    types = files_log.column("type").to_pylist()
    assert types[:3] == ["ADD_FILES"] * 3
    assert files_log.column("rows_added").to_pylist()[:3] == [60, 60, 60]
    replace = types.index("REPLACE_FILE_REFERENCES")
    assert files_log.column("rows_removed")[replace].as_py() == 180
    assert files_log.column("files_removed")[replace].as_py() == 3
    assert "SPLIT_PARTITION" in history.column("type").to_pylist()
    assert all(files_log.column("readable").to_pylist())


def should_refuse_a_state_whose_files_were_garbage_collected_naming_the_oldest_readable(tmp_path: Path) -> None:
    # Given a table ingested, compacted and split, keeping past states readable for 60 minutes
    instance, _ = _table(tmp_path, **{"sleeper.table.time.travel.retention.minutes": "60"})
    model = _ingest_compact_split(instance)
    table = instance.table("t")
    compaction = next(
        n
        for n, t in zip(
            table.history().column("transaction_number").to_pylist(),
            table.history().column("type").to_pylist(),
            strict=True,
        )
        if t == "REPLACE_FILE_REFERENCES"
    )
    now = datetime.now(tz=UTC)
    # When the garbage collector runs past its 20 minute delay but within the retention
    kept = collect_garbage(table, now=now + timedelta(minutes=30))
    # Then it deletes nothing, and the first state is still readable
    assert kept.deleted == ()
    assert _rows(instance.table("t").scan(as_of=1).to_arrow()) == model[1]
    # When it runs past the retention
    collected = collect_garbage(instance.table("t"), now=now + timedelta(minutes=61))
    assert len(collected.deleted) == 3
    # Then the states before the compaction are refused, naming the compaction as the oldest readable
    table = instance.table("t")
    for number in range(1, compaction):
        with pytest.raises(StateNotReadableError, match=f"oldest readable transaction is {compaction} ") as e:
            table.scan(as_of=number)
        assert e.value.oldest_readable == compaction
    # And from the compaction on, every state still returns the model's rows
    for number in range(compaction, max(model) + 1):
        assert _rows(table.scan(as_of=number).to_arrow()) == model[number]


def should_refuse_a_state_the_garbage_collector_may_delete_without_a_retention(tmp_path: Path) -> None:
    # Given a table with no retention whose compaction inputs lost their references
    instance, _ = _table(tmp_path, **{"sleeper.table.gc.delay.minutes": "20"})
    _ingest_compact_split(instance)
    table = instance.table("t")
    # When / Then the old states are readable now, while the garbage collector may not delete their files
    assert table.scan(as_of=1).count() == 60
    # And an unknown transaction, and a time before the table's first, are refused with the reason
    with pytest.raises(StateNotReadableError, match="has no files transaction 99"):
        table.scan(as_of=99)
    with pytest.raises(StateNotReadableError, match="no readable state at 2001"):
        table.scan(as_of="2001-01-01T00:00:00Z")


def should_keep_the_log_and_snapshot_the_retention_needs(tmp_path: Path) -> None:
    # Given a table with a 60 minute retention, a snapshot after its first ingests, and no transactions kept behind
    instance, _ = _table(
        tmp_path,
        **{
            "sleeper.table.time.travel.retention.minutes": "60",
            "sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot": "1",
        },
    )
    model = _ingest_compact_split(instance)
    store = instance.table("t").state_store
    first = create_snapshot(store).created
    now = datetime.now(tz=UTC)
    # When upkeep runs 30 minutes later (within the retention), and then 2 hours later
    within = delete_old_transactions(store, now=now + timedelta(minutes=30))
    # Then nothing is deleted while the snapshot is younger than the retention, then all but one behind it
    assert within.entries_deleted == {}
    after = delete_old_transactions(store, now=now + timedelta(hours=2))
    assert after.deleted_up_to[LogType.FILES] == max(model) - 1
    # And the latest state is still readable from its snapshot, the earlier ones refused
    table = instance.table("t")
    assert _rows(table.scan(as_of=max(model)).to_arrow()) == model[max(model)]
    with pytest.raises(StateNotReadableError, match=f"oldest readable transaction is {max(model)}"):
        table.scan(as_of=1)
    assert [s.log_type for s in first] == [LogType.FILES, LogType.PARTITIONS]


def should_query_as_of_and_report_history_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a table on a local instance ingested three times, compacted and split
    instance, _ = _table(tmp_path)
    model = _ingest_compact_split(instance)
    monkeypatch.setenv("SLEEPER_INSTANCE", str(instance.directory))
    capsys.readouterr()
    # When the history is reported and the first state is queried as JSON lines
    assert run(["report", "history", "t", "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert run(["query", "t", "--as-of", "1", "--format", "ndjson"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    # Then the history lists the ingests, and the query returns the first batch only
    assert [h["type"] for h in history if h["log"] == "files"][:3] == ["ADD_FILES"] * 3
    assert sorted((r["key"], r["value"]) for r in rows) == model[1]
    # And an unreadable state and a bad value are one-line errors naming what to do
    assert run(["query", "t", "--as-of", "99"]) == 1
    assert "has no files transaction 99" in capsys.readouterr().err
    assert run(["query", "t", "--as-of", "yesterday"]) == 1
    assert "ISO 8601" in capsys.readouterr().err
