"""The Arrow IPC snapshot format and where snapshot files are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.statestore import InMemorySnapshotMetadataStore
from sleeper.core.partition import Partition
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.core.statestore.state import FilesState, PartitionsState
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.exceptions import SnapshotFormatError
from sleeper.statestore.ports import SnapshotConflictError, SnapshotMetadata
from sleeper.statestore.snapshots import (
    FILES_SCHEMA,
    METADATA_ADDED_JOB_INPUTS,
    PARTITIONS_SCHEMA,
    SnapshotStore,
    filesystem_path,
    read_files_snapshot,
    read_partitions_snapshot,
    write_files_snapshot,
    write_partitions_snapshot,
)
from tests.unit.core.statestore.builders import PartitionsBuilder

T1 = datetime(2024, 3, 26, 9, 43, 1, 123000, tzinfo=UTC)
T2 = T1 + timedelta(minutes=1)


def _files_state() -> FilesState:
    def ref(name: str, pid: str, rows: int, job: str | None = None, *, split: bool = False) -> FileReference:
        return FileReference(
            filename=name,
            partition_id=pid,
            number_of_rows=rows,
            job_id=job,
            count_approximate=split,
            only_contains_data_for_this_partition=not split,
            last_update_time=T2 if job else T1,
        )

    files = [
        AllReferencesToAFile(filename="a", references={"root": ref("a", "root", 100)}, last_update_time=T1),
        AllReferencesToAFile(
            filename="b",
            references={"L": ref("b", "L", 50, split=True), "R": ref("b", "R", 50, "job-1", split=True)},
            last_update_time=T2,
        ),
        AllReferencesToAFile(filename="gc-ready", references={}, last_update_time=T1),
        AllReferencesToAFile(filename="big", references={"root": ref("big", "root", 2**63 + 5)}, last_update_time=T1),
    ]
    return FilesState.of(files, added_job_ids=["ingest-1", "ingest-2"], added_job_inputs={"ingest-2": "c0ffee"})


def _write_files(state: FilesState, number: int = 7, batch_size: int = 1000) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    write_files_snapshot(sink, state, transaction_number=number, batch_size=batch_size)
    return sink.getvalue()


def _write_partitions(partitions: list[Partition], number: int = 3, batch_size: int = 1000) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    write_partitions_snapshot(sink, partitions, transaction_number=number, batch_size=batch_size)
    return sink.getvalue()


def should_round_trip_a_files_state() -> None:
    # Given files with several, one and no references, job ids, large row counts and added ingest jobs
    state = _files_state()
    # When written and read back
    loaded = read_files_snapshot(_write_files(state, number=7))
    # Then the state and its transaction number are the same
    assert loaded.state == state
    assert loaded.transaction_number == 7
    assert loaded.state.added_job_ids == {"ingest-1", "ingest-2"}
    assert loaded.state.added_job_inputs == {"ingest-2": "c0ffee"}


def should_read_added_jobs_without_input_hashes_from_an_older_snapshot() -> None:
    # Given a files snapshot holding the added job ids alone, as written before input hashes were kept
    table = pa.ipc.open_stream(_write_files(_files_state())).read_all()
    metadata = dict(table.schema.metadata)
    del metadata[METADATA_ADDED_JOB_INPUTS]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema.with_metadata(metadata)) as writer:
        writer.write_table(table.replace_schema_metadata(metadata))
    # When it is read
    loaded = read_files_snapshot(sink.getvalue())
    # Then its jobs are added with no input hash: done whatever their input
    assert loaded.state.added_job_ids == {"ingest-1", "ingest-2"}
    assert loaded.state.added_job_inputs == {}
    assert loaded.state.job_already_added("ingest-2", "another-hash")


def should_write_files_in_sleepers_arrow_schema() -> None:
    # When a files snapshot is written
    schema = pa.ipc.open_stream(_write_files(_files_state())).schema
    # Then its columns are Sleeper's, with the types and nullability of StateStoreFilesArrowFormat
    assert schema.remove_metadata().equals(FILES_SCHEMA)
    reference_type = schema.field("partitionReferences").type.value_type
    assert [(f.name, str(f.type), f.nullable) for f in reference_type] == [
        ("partitionId", "string", False),
        ("updateTime", "timestamp[ms]", False),
        ("jobId", "string", True),
        ("numberOfRows", "uint64", False),
        ("countApproximate", "bool", False),
        ("onlyContainsDataForThisPartition", "bool", False),
    ]
    assert [(f.name, str(f.type)) for f in schema][:2] == [("filename", "string"), ("updateTime", "timestamp[ms]")]


def should_batch_about_a_thousand_references_never_splitting_a_file() -> None:
    # Given 2,500 files with one reference each, then one file with 1,500 references
    files = [
        AllReferencesToAFile(
            filename=f"f{i}",
            references={"root": FileReference(filename=f"f{i}", partition_id="root", number_of_rows=1)},
            last_update_time=T1,
        )
        for i in range(2500)
    ]
    wide = {f"p{j}": FileReference(filename="wide", partition_id=f"p{j}", number_of_rows=1) for j in range(1500)}
    files.append(AllReferencesToAFile(filename="wide", references=wide, last_update_time=T1))
    # When written with the default batch size
    reader = pa.ipc.open_stream(_write_files(FilesState.of(files)))
    batches = list(reader)
    # Then batches hold 1,000 references, and the wide file fits whole in the last batch
    assert [b.num_rows for b in batches] == [1000, 1000, 501]
    assert [sum(max(1, len(v)) for v in b.column("partitionReferences").to_pylist()) for b in batches] == [
        1000,
        1000,
        2000,
    ]


def should_round_trip_an_empty_files_state() -> None:
    # When an empty state is written and read
    loaded = read_files_snapshot(_write_files(FilesState()))
    # Then it is empty
    assert loaded.state == FilesState()


SCHEMAS: dict[str, tuple[Schema, list[KeyValue]]] = {
    "long": (Schema.of(row_keys=[Field("key", PrimitiveType.LONG)]), [10, 20]),
    "int": (Schema.of(row_keys=[Field("key", PrimitiveType.INT)]), [-5, 7]),
    "string": (Schema.of(row_keys=[Field("key", PrimitiveType.STRING)]), ["g", "p"]),
    "bytes": (Schema.of(row_keys=[Field("key", PrimitiveType.BYTE_ARRAY)]), [b"\x01", b"\x80"]),
    "two-keys": (
        Schema.of(row_keys=[Field("key", PrimitiveType.STRING), Field("n", PrimitiveType.INT)]),
        ["g", "p"],
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def should_round_trip_partitions_of_every_key_type(name: str) -> None:
    # Given a tree split twice
    schema, (low, high) = SCHEMAS[name]
    partitions = PartitionsBuilder(schema).split("root", "L", "R", low).split("R", "RL", "RR", high).partitions()
    # When written (two partitions per batch) and read back
    loaded = read_partitions_snapshot(_write_partitions(partitions, number=3, batch_size=2))
    # Then every partition is the same
    assert loaded.state == PartitionsState.of(partitions)
    assert loaded.transaction_number == 3
    loaded.state.tree(schema).validate()


def should_write_partitions_in_sleepers_arrow_schema() -> None:
    # Given a root split into two leaves
    schema, _ = SCHEMAS["long"]
    partitions = PartitionsBuilder(schema).split("root", "L", "R", 10).partitions()
    # When written
    table = pa.ipc.open_stream(_write_partitions(partitions)).read_all()
    # Then the columns are Sleeper's; leaves have no dimension; ranges hold the typed value, max unbounded as null
    assert table.schema.remove_metadata().equals(PARTITIONS_SCHEMA)
    rows = {row["id"]: row for row in table.to_pylist()}
    assert rows["root"]["dimension"] == 0 and rows["L"]["dimension"] is None
    assert rows["root"]["childIds"] == ["L", "R"] and rows["root"]["parentId"] is None
    assert rows["R"]["region"] == [
        {
            "fieldName": "key",
            "fieldType": "LongType",
            "min": {"string": None, "long": 10, "int": None, "bytes": None},
            "max": {"string": None, "long": None, "int": None, "bytes": None},
        }
    ]


def should_write_ranges_in_canonical_form() -> None:
    # Given a partition whose range has an exclusive minimum and an inclusive maximum
    schema, _ = SCHEMAS["long"]
    field = schema.row_key_fields[0]
    odd = Partition(
        id="p",
        parent_id=None,
        region=Region({"key": Range(field=field, min=4, min_inclusive=False, max=9, max_inclusive=True)}),
    )
    # When written and read
    loaded = read_partitions_snapshot(_write_partitions([odd])).state.get("p")
    # Then the range is [5, 10)
    assert loaded is not None
    assert loaded.region.ranges["key"] == Range(field=field, min=5, max=10)


def should_read_a_snapshot_without_our_metadata_as_javas() -> None:
    # Given a files snapshot whose schema metadata was stripped (as Sleeper's Java writer leaves it)
    table = pa.ipc.open_stream(_write_files(_files_state())).read_all()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema.remove_metadata()) as writer:
        writer.write_table(table.replace_schema_metadata(None))
    # When it is read
    loaded = read_files_snapshot(sink.getvalue())
    # Then the files are read, with no transaction number and no added jobs
    assert loaded.transaction_number is None
    assert sorted(f.filename for f in loaded.state.files()) == ["a", "b", "big", "gc-ready"]
    assert loaded.state.added_job_ids == frozenset()


def should_refuse_to_read_the_wrong_kind_of_snapshot() -> None:
    # Given a partitions snapshot and some bytes that are not Arrow
    schema, _ = SCHEMAS["long"]
    partitions = _write_partitions(PartitionsBuilder(schema).partitions())
    # When / Then
    with pytest.raises(SnapshotFormatError, match="expected a files snapshot"):
        read_files_snapshot(partitions)
    with pytest.raises(SnapshotFormatError, match="not a readable Arrow IPC stream"):
        read_partitions_snapshot(b"not arrow")


def should_remove_the_scheme_from_recorded_paths() -> None:
    # When / Then
    assert (
        filesystem_path("s3a://bucket/t/statestore/snapshots/1-u-files.arrow")
        == "bucket/t/statestore/snapshots/1-u-files.arrow"
    )
    assert filesystem_path("file:///data/t/x.arrow") == "/data/t/x.arrow"
    assert filesystem_path("/data/t/x.arrow") == "/data/t/x.arrow"


# --- SnapshotStore -----------------------------------------------------------------------------------------------


def _snapshot_store(ids: list[str] | None = None) -> SnapshotStore:
    supplied = iter(ids or [f"id{i}" for i in range(100)])
    return SnapshotStore(
        table_id="t",
        metadata=InMemorySnapshotMetadataStore(),
        filesystem=in_memory_filesystem(),
        base_path="bucket/t",
        uri_scheme="s3a://",
        id_supplier=lambda: next(supplied),
    )


def should_save_each_snapshot_to_a_unique_file_and_record_it_as_the_latest() -> None:
    # Given a snapshot store
    store = _snapshot_store(["first", "second"])
    # When two files snapshots are saved
    store.save_files(_files_state(), 5, T1)
    saved = store.save_files(FilesState(), 9, T2)
    # Then each has its own path, recorded with the scheme, and the later is the latest
    assert [s.path for s in store.snapshots(LogType.FILES)] == [
        "s3a://bucket/t/statestore/snapshots/5-first-files.arrow",
        "s3a://bucket/t/statestore/snapshots/9-second-files.arrow",
    ]
    assert store.latest(LogType.FILES) == saved
    assert store.load_files(saved) == FilesState()


def should_delete_only_its_own_file_when_a_snapshot_loses_the_race() -> None:
    # Given a live snapshot at transaction 9
    store = _snapshot_store(["live", "stale", "same"])
    live = store.save_files(_files_state(), 9, T1)
    # When a stale creator saves at 8, and another at 9
    for number in (8, 9):
        with pytest.raises(SnapshotConflictError):
            store.save_files(FilesState(), number, T2)
    # Then their files are gone, the live one is still the latest and still loads
    files = store.filesystem.get_file_info(pa.fs.FileSelector(store.directory))
    assert [f.base_name for f in files] == ["9-live-files.arrow"]
    assert store.latest(LogType.FILES) == live
    assert store.load_files(live) == _files_state()


def should_refuse_to_delete_the_latest_snapshot() -> None:
    # Given two partitions snapshots
    store = _snapshot_store()
    schema, _ = SCHEMAS["long"]
    state = PartitionsState.of(PartitionsBuilder(schema).partitions())
    old = store.save_partitions(state, 1, T1)
    latest = store.save_partitions(state, 2, T2)
    # When the old one is deleted, and the latest
    store.delete(old)
    with pytest.raises(SnapshotConflictError):
        store.delete(latest)
    # Then only the latest remains, file and record
    assert store.snapshots(LogType.PARTITIONS) == [latest]
    files = store.filesystem.get_file_info(pa.fs.FileSelector(store.directory))
    assert [f.path for f in files] == [latest.path.removeprefix("s3a://")]


def should_refuse_a_snapshot_file_holding_another_transaction_number() -> None:
    # Given a record pointing at a file written for another transaction
    store = _snapshot_store()
    saved = store.save_files(FilesState(), 4, T1)
    wrong = SnapshotMetadata(log_type=LogType.FILES, path=saved.path, transaction_number=5, update_time=T1)
    # When / Then
    with pytest.raises(SnapshotFormatError, match="holds transaction 4"):
        store.load_files(wrong)
