"""Garbage collection and the orphan sweeper on a local table's files."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.gc import collect_garbage, run_garbage_collection, sweep_orphans
from sleeper.ingest.standard import ingest_batches
from sleeper.io.filesystem import filesystem_path
from sleeper.io.parquet import SortedFileWriter
from sleeper.io.sketches import sketches_path
from sleeper.query.executor import table_query
from sleeper.runtime.local.instance import LocalInstance
from tests.reliability_report import Reliability

pytestmark = pytest.mark.integration

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),))
HOUR = timedelta(hours=1)


def _table(tmp_path: Path) -> tuple[LocalInstance, Table[LocalInstance]]:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.gc.commit.async": "false"})
    return instance, table


def _ingest(table: Table[LocalInstance], keys: np.ndarray) -> str:
    batch = pa.record_batch({"key": pa.array(keys, pa.int64()), "value": pa.array(keys * 2, pa.int64())})
    result = ingest_batches(table.schema, table.properties, table.state_store, table.data_prefix, [batch])
    return result.files[0].location


def _compact(table: Table[LocalInstance], inputs: list[str], job_id: str) -> str:
    """Merges the inputs into one file and commits it in their place, as a compaction job would."""
    data = pa.concat_tables([pq.read_table(filesystem_path(f)) for f in inputs]).sort_by("key")
    output = f"{table.data_prefix}/data/partition_root/{job_id}.parquet"
    with SortedFileWriter(output, table.schema) as writer:
        writer.write(data)
    store = table.state_store
    store.commit(
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id=job_id, partition_id="root", filenames=tuple(inputs)),)
        )
    )
    new_reference = FileReference(filename=output, partition_id="root", number_of_rows=data.num_rows)
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id=job_id, input_files=tuple(inputs), new_reference=new_reference),)
        )
    )
    return output


def _exists(location: str) -> bool:
    return Path(filesystem_path(location)).exists()


def _age(path: str, age: timedelta) -> None:
    moment = (datetime.now(tz=UTC) - age).timestamp()
    os.utime(path, (moment, moment))


def should_delete_compacted_inputs_and_sidecars_after_the_delay_and_still_return_every_row(tmp_path: Path) -> None:
    # Given two ingested files compacted into one
    instance, table = _table(tmp_path)
    a, b = _ingest(table, np.arange(0, 500)), _ingest(table, np.arange(500, 1000))
    output = _compact(table, [a, b], "job-1")

    # When the collector runs before and after the table's 20 minute delay
    early = run_garbage_collection(instance, table.table_id, now=datetime.now(tz=UTC) + timedelta(minutes=19))
    late = run_garbage_collection(instance, table.table_id, now=datetime.now(tz=UTC) + timedelta(minutes=21))

    # Then
    assert early.deleted == ()
    assert set(late.deleted) == {a, b}
    for gone in (a, b):
        assert not _exists(gone)
        assert not _exists(sketches_path(gone))
    assert _exists(output)
    assert _exists(sketches_path(output))
    assert {f.filename for f in table.state_store.files()} == {output}
    assert sorted(table_query(table).column("key").to_pylist()) == list(range(1000))


def should_sweep_only_untracked_data_files_older_than_the_minimum_age(tmp_path: Path, reliability: Reliability) -> None:
    # Given a tracked file, a compacted-away file awaiting GC, an in-flight compaction output, and untracked files
    _, table = _table(tmp_path)
    kept = _ingest(table, np.arange(0, 100))
    compacted_away = _ingest(table, np.arange(100, 200))
    _compact(table, [compacted_away], "done-job")
    waiting = _ingest(table, np.arange(200, 300))
    table.state_store.commit(
        AssignJobIdsTransaction(
            requests=(AssignJobIdRequest(job_id="running-job", partition_id="root", filenames=(waiting,)),)
        )
    )
    data_dir = Path(filesystem_path(table.data_prefix)) / "data" / "partition_root"
    old_orphan = data_dir / "old-orphan.parquet"
    old_sidecar = data_dir / "old-orphan.sketches"
    young_orphan = data_dir / "young-orphan.parquet"
    in_flight = data_dir / "running-job.parquet"
    other_file = data_dir / "notes.txt"
    for path in (old_orphan, old_sidecar, young_orphan, in_flight, other_file):
        path.write_bytes(b"x")
    for path in data_dir.iterdir():
        if path != young_orphan:
            _age(str(path), 2 * HOUR)

    # When
    dry = sweep_orphans(table, min_age=HOUR, dry_run=True)
    after_dry_run = {p.name for p in data_dir.iterdir()}
    result = sweep_orphans(table, min_age=HOUR)

    # Then
    tracked_files = [kept, compacted_away, waiting]
    must_stay = [*tracked_files, *(sketches_path(f) for f in tracked_files)]
    reliability.record(
        "D5",
        case="orphan sweeper against tracked files, a file awaiting GC, an in-flight compaction output, young orphans",
        swept=len(result.deleted),
        deleted_referenced=sum(not _exists(f) for f in must_stay),
        deleted_in_flight=int(not in_flight.exists()),
        deleted_young=int(not young_orphan.exists()),
        orphans_left_after_sweep=sum(p.exists() for p in (old_orphan, old_sidecar)),
        referenced_files_deleted=sum(not _exists(f) for f in tracked_files),
        rows_lost=max(0, 300 - len(table_query(table).column("key"))),
    )
    assert set(dry.deleted) == {str(old_orphan), str(old_sidecar)}
    assert {old_orphan.name, old_sidecar.name} <= after_dry_run
    assert set(result.deleted) == {str(old_orphan), str(old_sidecar)}
    assert result.young == (str(young_orphan),)
    assert result.in_flight == (str(in_flight),)
    remaining = {p.name for p in data_dir.iterdir()}
    assert {"young-orphan.parquet", "running-job.parquet", "notes.txt"} <= remaining
    for tracked in (kept, compacted_away, waiting):
        assert _exists(tracked)
        assert _exists(sketches_path(tracked))
    assert sorted(table_query(table).column("key").to_pylist()) == list(range(300))


def should_leave_the_state_store_files_outside_the_data_directory_alone(tmp_path: Path) -> None:
    # Given an old untracked file outside data/ (where snapshots live)
    _, table = _table(tmp_path)
    _ingest(table, np.arange(0, 10))
    outside = Path(filesystem_path(table.data_prefix)) / "statestore" / "snapshots" / "1-files.arrow"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_bytes(b"x")
    _age(str(outside), 48 * HOUR)

    # When
    result = sweep_orphans(table, min_age=HOUR)

    # Then
    assert result.deleted == ()
    assert outside.exists()


def should_collect_nothing_referenced_when_run_far_in_the_future(tmp_path: Path) -> None:
    # Given
    _, table = _table(tmp_path)
    files = [_ingest(table, np.arange(i * 10, i * 10 + 10)) for i in range(3)]

    # When
    result = collect_garbage(table, now=datetime.now(tz=UTC) + timedelta(days=3650))

    # Then
    assert result.deleted == ()
    assert all(_exists(f) for f in files)


def should_sweep_only_transaction_bodies_no_log_entry_names_older_than_their_minimum_age(
    tmp_path: Path, reliability: Reliability
) -> None:
    # Given a table whose 700 split points made its partitions' transaction too large for a log entry (its body is
    # stored beside the log), and bodies no entry names: one old, one young, and a file that is not a body
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=list(range(0, 7000, 10)))
    body_dir = Path(filesystem_path(table.data_prefix)) / "statestore" / "transactions"
    [named] = list(body_dir.iterdir())
    unused_old, unused_young, not_a_body = (body_dir / n for n in ("old-unused.json", "young-unused.json", "notes.txt"))
    for path in (unused_old, unused_young, not_a_body):
        path.write_text("{}")
    for path in (named, unused_old, not_a_body):
        _age(str(path), 48 * HOUR)

    # When the sweeper runs with a body minimum age of a day, first as a dry run
    dry = sweep_orphans(table, min_age=HOUR, body_min_age=24 * HOUR, dry_run=True)
    after_dry_run = {p.name for p in body_dir.iterdir()}
    result = sweep_orphans(table, min_age=HOUR, body_min_age=24 * HOUR)

    # Then only the old body no entry names is deleted, and the table still reads its partitions from the named one
    prefix = f"{table.table_id}/statestore/transactions/"
    reliability.record(
        "C7",
        case="unused transaction bodies swept after their minimum age (local)",
        unused_bodies_swept=len(result.bodies_deleted),
        unused_bodies_kept_young=len(result.bodies_young),
        named_bodies_deleted=int(not named.exists()),
    )
    assert dry.bodies_deleted == (prefix + unused_old.name,)
    assert unused_old.name in after_dry_run
    assert result.bodies_deleted == (prefix + unused_old.name,)
    assert result.bodies_young == (prefix + unused_young.name,)
    assert {p.name for p in body_dir.iterdir()} == {named.name, unused_young.name, not_a_body.name}
    fresh = LocalInstance(tmp_path / "instance").table("t")
    assert len(fresh.leaf_partitions()) == 701
