"""Snapshots of a table's state as Arrow IPC streams, and where they are kept.

A snapshot holds the whole state of one log (files or partitions) at a transaction number, so a process can start
from it instead of replaying the log from the beginning. The format is Sleeper's (``StateStoreFilesArrowFormat``,
``StateStorePartitionsArrowFormat``):

- files: ``filename`` utf8, ``updateTime`` timestamp[ms], ``partitionReferences`` list<struct{``partitionId``,
  ``updateTime`` timestamp[ms], ``jobId`` nullable, ``numberOfRows`` uint64, ``countApproximate`` bool,
  ``onlyContainsDataForThisPartition`` bool}>, about ``batch_size`` references per record batch (a file's
  references are never split between batches; a file with none counts as one);
- partitions: ``id``, ``parentId`` nullable, ``childIds`` list<utf8>, ``isLeaf`` bool, ``dimension`` uint32 (null
  for -1), ``region`` list<struct{``fieldName``, ``fieldType`` (``IntType``...), ``min`` struct{``string``,
  ``long``, ``int``, ``bytes``}, ``max`` nullable same}>; ranges are written in canonical [min, max) form, as
  Sleeper's format has no inclusive flags.

Beyond Sleeper, the schema metadata records the snapshot type, its transaction number and, for files, the ids of
the ingest jobs whose files were added (``FilesState.added_job_ids``, which makes ingest idempotent) and, in a second
key, the input files hash of those that recorded one (``FilesState.added_job_inputs``, which refuses a job id reused
for other input files). A snapshot with ids but no hashes (written before hashes were kept) loads its jobs without
one. Java ignores the metadata; a snapshot written by Java has none, and its transaction number comes from the
snapshot record. A third key, written only when the state holds pending row deletes (a table that never deleted rows
keeps exactly the snapshot above), holds them as JSON (``sleeper.core.statestore.deletes``).

Every save writes a new file at a unique path (``<base>/statestore/snapshots/<n>-<uuid>-files.arrow``), so a failed
or losing attempt deletes only its own file and never a live snapshot (reliability hazard C4). The record of the
latest snapshot only moves forwards (``SnapshotMetadataStore.save_snapshot``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs

from sleeper.core import Field, Partition, PrimitiveType, Range, Region, SleeperError, crash_point
from sleeper.core.statestore import AllReferencesToAFile, FilesState, PartitionsState, PendingDelete
from sleeper.core.statestore.transactions import LogType
from sleeper.statestore.arrow_files import ArrowFileEntries
from sleeper.statestore.exceptions import SnapshotFormatError
from sleeper.statestore.ports import SnapshotConflictError, SnapshotMetadata, SnapshotMetadataStore
from sleeper.statestore.snapshot_files import SnapshotFiles

DEFAULT_BATCH_SIZE = 1000
"""Elements per record batch: ``sleeper.table.statestore.transactionlog.files.snapshot.batch.size`` and
``...partitions.snapshot.batch.size`` (default 1000)."""

METADATA_TYPE = b"sleeper.snapshot.type"
METADATA_TRANSACTION_NUMBER = b"sleeper.snapshot.transactionNumber"
METADATA_ADDED_JOB_IDS = b"sleeper.snapshot.addedJobIds"
METADATA_ADDED_JOB_INPUTS = b"sleeper.snapshot.addedJobInputFilesHashes"
METADATA_PENDING_DELETES = b"sleeper.snapshot.pendingDeletes"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

_REFERENCE_TYPE = pa.struct(
    [
        pa.field("partitionId", pa.utf8(), nullable=False),
        pa.field("updateTime", pa.timestamp("ms"), nullable=False),
        pa.field("jobId", pa.utf8(), nullable=True),
        pa.field("numberOfRows", pa.uint64(), nullable=False),
        pa.field("countApproximate", pa.bool_(), nullable=False),
        pa.field("onlyContainsDataForThisPartition", pa.bool_(), nullable=False),
    ]
)
_REFERENCES_TYPE = pa.list_(pa.field("reference", _REFERENCE_TYPE, nullable=False))

FILES_SCHEMA = pa.schema(
    [
        pa.field("filename", pa.utf8(), nullable=False),
        pa.field("updateTime", pa.timestamp("ms"), nullable=False),
        pa.field("partitionReferences", _REFERENCES_TYPE, nullable=False),
    ]
)
"""The Arrow schema of a files snapshot (without its metadata)."""

_KEY_VALUE_TYPE = pa.struct(
    [
        pa.field("string", pa.utf8()),
        pa.field("long", pa.int64()),
        pa.field("int", pa.int32()),
        pa.field("bytes", pa.binary()),
    ]
)
_RANGE_TYPE = pa.struct(
    [
        pa.field("fieldName", pa.utf8(), nullable=False),
        pa.field("fieldType", pa.utf8(), nullable=False),
        pa.field("min", _KEY_VALUE_TYPE, nullable=False),
        pa.field("max", _KEY_VALUE_TYPE, nullable=True),
    ]
)

PARTITIONS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.utf8(), nullable=False),
        pa.field("parentId", pa.utf8(), nullable=True),
        pa.field("childIds", pa.list_(pa.field("childId", pa.utf8(), nullable=False)), nullable=False),
        pa.field("isLeaf", pa.bool_(), nullable=False),
        pa.field("dimension", pa.uint32(), nullable=True),
        pa.field("region", pa.list_(pa.field("range", _RANGE_TYPE, nullable=False)), nullable=False),
    ]
)
"""The Arrow schema of a partitions snapshot (without its metadata)."""

_VALUE_CHILD = {
    PrimitiveType.STRING: "string",
    PrimitiveType.LONG: "long",
    PrimitiveType.INT: "int",
    PrimitiveType.BYTE_ARRAY: "bytes",
}
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesSnapshot:
    """A files state read from a snapshot, with the transaction number its metadata records (None if absent)."""

    state: FilesState
    transaction_number: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsSnapshot:
    """A partitions state read from a snapshot, with the transaction number its metadata records (None if absent)."""

    state: PartitionsState
    transaction_number: int | None


# ---------------------------------------------------------------------------------------------------------------
# Format
# ---------------------------------------------------------------------------------------------------------------


def write_files_snapshot(
    sink: Any, state: FilesState, *, transaction_number: int, batch_size: int = DEFAULT_BATCH_SIZE
) -> None:
    """Writes a files state as an Arrow IPC stream.

    A state loaded from a snapshot writes that snapshot's rows still in it as they are, without making an object of
    each file (:meth:`ArrowFileEntries.to_table`); the files changed since are converted.

    Args:
        sink: Where to write: a path, a ``pyarrow.NativeFile`` or a buffer output stream.
        state: The state.
        transaction_number: The number of the last transaction applied to the state (recorded in the metadata).
        batch_size: About how many references go in each record batch.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    entries = state.entries
    if isinstance(entries, ArrowFileEntries):
        table = entries.to_table(_files_table)
    else:
        table = _files_table(list(state.files()))
    batch = table.combine_chunks().to_batches()
    combined = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=FILES_SCHEMA)
    counts = np.diff(combined.column("partitionReferences").offsets.to_numpy())
    batch_ends: list[int] = []
    elements = 0
    for row, count in enumerate(np.maximum(counts, 1).tolist()):
        elements += count
        if elements >= batch_size:
            batch_ends.append(row + 1)
            elements = 0
    if not batch_ends or batch_ends[-1] != combined.num_rows:
        batch_ends.append(combined.num_rows)
    metadata = {
        METADATA_TYPE: b"FILES",
        METADATA_TRANSACTION_NUMBER: str(transaction_number).encode(),
        METADATA_ADDED_JOB_IDS: json.dumps(sorted(state.added_job_ids)).encode(),
        METADATA_ADDED_JOB_INPUTS: json.dumps(state.added_job_inputs, sort_keys=True).encode(),
    }
    if state.pending_deletes:
        metadata[METADATA_PENDING_DELETES] = json.dumps([d.to_dict() for d in state.pending_deletes]).encode()
    _write_batches(sink, combined, FILES_SCHEMA.with_metadata(metadata), batch_ends)


def _files_table(files: list[AllReferencesToAFile]) -> pa.Table:
    """The snapshot rows of files given as objects."""
    ms_of = _MillisCache()
    filenames: list[str] = []
    file_times: list[int] = []
    offsets: list[int] = [0]
    partition_ids: list[str] = []
    ref_times: list[int] = []
    job_ids: list[str | None] = []
    rows: list[int] = []
    approximate: list[bool] = []
    only_this: list[bool] = []
    for f in files:
        filenames.append(f.filename)
        file_times.append(ms_of(f.last_update_time))
        for r in f.references.values():
            partition_ids.append(r.partition_id)
            ref_times.append(ms_of(r.last_update_time))
            job_ids.append(r.job_id)
            rows.append(r.number_of_rows)
            approximate.append(r.count_approximate)
            only_this.append(r.only_contains_data_for_this_partition)
        offsets.append(len(partition_ids))
    references = pa.StructArray.from_arrays(
        [
            pa.array(partition_ids, pa.utf8()),
            pa.array(ref_times, pa.timestamp("ms")),
            pa.array(job_ids, pa.utf8()),
            pa.array(rows, pa.uint64()),
            pa.array(approximate, pa.bool_()),
            pa.array(only_this, pa.bool_()),
        ],
        fields=list(_REFERENCE_TYPE),
    )
    return pa.Table.from_arrays(
        [
            pa.array(filenames, pa.utf8()),
            pa.array(file_times, pa.timestamp("ms")),
            pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), references, type=_REFERENCES_TYPE),
        ],
        schema=FILES_SCHEMA,
    )


def read_files_snapshot(source: Any) -> FilesSnapshot:
    """Reads a files snapshot written by this module or by Sleeper's Java code.

    The files are kept as the snapshot's columns, each made into objects when first read
    (:mod:`sleeper.statestore.arrow_files`).

    Args:
        source: A path, a ``pyarrow.NativeFile``, a buffer or bytes.

    Raises:
        SnapshotFormatError: If the stream is not a files snapshot.
    """
    table, metadata = _read_table(source, FILES_SCHEMA, "files")
    entries = ArrowFileEntries(SnapshotFiles(_conform_files_table(table)))
    added_raw = metadata.get(METADATA_ADDED_JOB_IDS)
    added: list[str] = []
    if added_raw is not None:
        try:
            parsed = json.loads(added_raw)
        except ValueError:
            raise SnapshotFormatError("files snapshot has invalid added job ids metadata") from None
        if not isinstance(parsed, list) or not all(isinstance(j, str) for j in parsed):
            raise SnapshotFormatError("files snapshot added job ids metadata must be a list of strings")
        added = parsed
    inputs_raw = metadata.get(METADATA_ADDED_JOB_INPUTS)
    inputs: dict[str, str] = {}
    if inputs_raw is not None:
        try:
            parsed_inputs = json.loads(inputs_raw)
        except ValueError:
            raise SnapshotFormatError("files snapshot has invalid added job input files metadata") from None
        if not isinstance(parsed_inputs, dict) or not all(isinstance(h, str) for h in parsed_inputs.values()):
            raise SnapshotFormatError("files snapshot added job input files metadata must map job ids to strings")
        inputs = parsed_inputs
    deletes = _pending_deletes(metadata.get(METADATA_PENDING_DELETES))
    return FilesSnapshot(
        state=FilesState.over(entries, added, inputs, deletes), transaction_number=_metadata_number(metadata)
    )


def _pending_deletes(raw: bytes | None) -> list[PendingDelete]:
    if raw is None:
        return []
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise SnapshotFormatError("files snapshot has invalid pending deletes metadata") from None
    if not isinstance(parsed, list):
        raise SnapshotFormatError("files snapshot pending deletes metadata must be a list")
    try:
        return [PendingDelete.from_dict(d, f"pendingDeletes[{i}]") for i, d in enumerate(parsed)]
    except SleeperError as e:
        raise SnapshotFormatError(f"files snapshot pending deletes metadata: {e}") from None


def _conform_files_table(table: pa.Table) -> pa.Table:
    """A files snapshot's rows with exactly :data:`FILES_SCHEMA` (another writer's list item names, nullability flags
    and field order differ), in one chunk."""
    lists = table.column("partitionReferences").combine_chunks()
    if isinstance(lists, pa.ChunkedArray):
        lists = pa.array([], type=table.schema.field("partitionReferences").type)
    values = lists.flatten()
    offsets = pc.subtract(lists.offsets, lists.offsets[0]) if len(lists) and lists.offsets[0].as_py() else lists.offsets
    references = pa.StructArray.from_arrays(
        [values.field(f.name).cast(f.type) for f in _REFERENCE_TYPE], fields=list(_REFERENCE_TYPE)
    )
    return pa.Table.from_arrays(
        [
            table.column("filename").combine_chunks().cast(pa.utf8()),
            table.column("updateTime").combine_chunks().cast(pa.timestamp("ms")),
            pa.ListArray.from_arrays(offsets, references, type=_REFERENCES_TYPE),
        ],
        schema=FILES_SCHEMA,
    )


def write_partitions_snapshot(
    sink: Any, partitions: Iterable[Partition], *, transaction_number: int, batch_size: int = DEFAULT_BATCH_SIZE
) -> None:
    """Writes partitions as an Arrow IPC stream (regions in canonical [min, max) form).

    Args:
        sink: Where to write: a path, a ``pyarrow.NativeFile`` or a buffer output stream.
        partitions: The partitions.
        transaction_number: The number of the last transaction applied to the state (recorded in the metadata).
        batch_size: How many partitions go in each record batch.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    ids: list[str] = []
    parents: list[str | None] = []
    children: list[list[str]] = []
    leaves: list[bool] = []
    dimensions: list[int | None] = []
    regions: list[list[dict[str, Any]]] = []
    for p in partitions:
        ids.append(p.id)
        parents.append(p.parent_id)
        children.append(list(p.child_ids))
        leaves.append(p.is_leaf)
        dimensions.append(p.dimension if p.dimension >= 0 else None)
        regions.append([_range_to_row(r) for r in p.region.ranges.values()])
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array(ids, pa.utf8()),
            pa.array(parents, pa.utf8()),
            pa.array(children, PARTITIONS_SCHEMA.field("childIds").type),
            pa.array(leaves, pa.bool_()),
            pa.array(dimensions, pa.uint32()),
            pa.array(regions, PARTITIONS_SCHEMA.field("region").type),
        ],
        schema=PARTITIONS_SCHEMA,
    )
    ends = list(range(batch_size, len(ids), batch_size)) + [len(ids)]
    metadata = {METADATA_TYPE: b"PARTITIONS", METADATA_TRANSACTION_NUMBER: str(transaction_number).encode()}
    _write_batches(sink, batch, PARTITIONS_SCHEMA.with_metadata(metadata), ends)


def read_partitions_snapshot(source: Any) -> PartitionsSnapshot:
    """Reads a partitions snapshot written by this module or by Sleeper's Java code.

    Args:
        source: A path, a ``pyarrow.NativeFile``, a buffer or bytes.

    Raises:
        SnapshotFormatError: If the stream is not a partitions snapshot or a value does not fit its type.
    """
    table, metadata = _read_table(source, PARTITIONS_SCHEMA, "partitions")
    partitions: list[Partition] = []
    for row in table.to_pylist():
        try:
            region = Region.of(_range_from_row(item) for item in row["region"])
            dimension = row["dimension"]
            partitions.append(
                Partition(
                    id=row["id"],
                    parent_id=row["parentId"],
                    child_ids=tuple(row["childIds"]),
                    is_leaf=row["isLeaf"],
                    region=region,
                    dimension=-1 if dimension is None else dimension,
                )
            )
        except SnapshotFormatError:
            raise
        except (SleeperError, ValueError, KeyError, TypeError) as e:  # e.g. a value that does not fit its type
            raise SnapshotFormatError(f"partitions snapshot: partition {row.get('id')!r} is invalid: {e}") from None
    return PartitionsSnapshot(state=PartitionsState.of(partitions), transaction_number=_metadata_number(metadata))


def _range_to_row(r: Range) -> dict[str, Any]:
    ptype = r.field.primitive_type
    child = _VALUE_CHILD[ptype]
    high = r.canonical_max
    # As Sleeper's Java writer does, an unbounded max is a struct whose typed value is null.
    return {
        "fieldName": r.field.name,
        "fieldType": ptype.value,
        "min": {child: r.canonical_min},
        "max": {child: high},
    }


def _range_from_row(item: dict[str, Any]) -> Range:
    try:
        ptype = PrimitiveType(item["fieldType"])
    except ValueError:
        raise SnapshotFormatError(f"unrecognised field type {item['fieldType']!r}") from None
    child = _VALUE_CHILD[ptype]
    low_struct, high_struct = item["min"], item["max"]
    low = None if low_struct is None else low_struct[child]
    if low is None:
        raise SnapshotFormatError(f"range on {item['fieldName']!r} has no minimum")
    high = None if high_struct is None else high_struct[child]
    return Range(field=Field(item["fieldName"], ptype), min=low, max=high)


def _write_batches(sink: Any, batch: pa.RecordBatch, schema: pa.Schema, ends: list[int]) -> None:
    with pa.ipc.new_stream(sink, schema) as writer:
        start = 0
        for end in ends:
            if end > start:
                writer.write_batch(batch.slice(start, end - start))
            start = end


def _read_table(source: Any, expected: pa.Schema, kind: str) -> tuple[pa.Table, dict[bytes, bytes]]:
    if isinstance(source, bytes | bytearray | memoryview):
        source = pa.py_buffer(source)
    try:
        reader = pa.ipc.open_stream(source)
        table = reader.read_all()
    except (pa.ArrowInvalid, OSError) as e:
        raise SnapshotFormatError(f"{kind} snapshot is not a readable Arrow IPC stream: {e}") from None
    metadata = dict(table.schema.metadata or {})
    stored_type = metadata.get(METADATA_TYPE)
    if stored_type is not None and stored_type.decode(errors="replace").lower() != kind:
        raise SnapshotFormatError(f"expected a {kind} snapshot, found a {stored_type.decode(errors='replace')} one")
    for f in expected:
        if f.name not in table.schema.names:
            raise SnapshotFormatError(f"{kind} snapshot has no column {f.name!r}")
        actual = table.schema.field(f.name).type
        if not _same_shape(actual, f.type):
            raise SnapshotFormatError(f"{kind} snapshot column {f.name!r} has type {actual}, expected {f.type}")
    return table, metadata


def _same_shape(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality ignoring nullability flags and list item field names, which Arrow writers vary in."""
    if pa.types.is_list(expected):
        return pa.types.is_list(actual) and _same_shape(actual.value_type, expected.value_type)
    if pa.types.is_struct(expected):
        if not pa.types.is_struct(actual):
            return False
        names = {actual.field(i).name: actual.field(i).type for i in range(actual.num_fields)}
        return all(
            expected.field(i).name in names and _same_shape(names[expected.field(i).name], expected.field(i).type)
            for i in range(expected.num_fields)
        )
    if pa.types.is_timestamp(expected):
        return bool(pa.types.is_timestamp(actual) and actual.unit == expected.unit)
    return bool(actual.equals(expected))


def _metadata_number(metadata: dict[bytes, bytes]) -> int | None:
    raw = metadata.get(METADATA_TRANSACTION_NUMBER)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise SnapshotFormatError(f"snapshot has invalid transaction number metadata {raw!r}") from None


class _MillisCache:
    """Epoch milliseconds of datetimes, computed exactly and once per distinct time (references share times)."""

    def __init__(self) -> None:
        self._cache: dict[datetime | None, int] = {}

    def __call__(self, time: datetime | None) -> int:
        ms = self._cache.get(time)
        if ms is None:
            if time is None:
                ms = 0
            else:
                aware = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
                ms = (aware - _EPOCH) // _MS
            self._cache[time] = ms
        return ms


# ---------------------------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------------------------


def filesystem_path(recorded: str) -> str:
    """The filesystem path of a recorded snapshot path: the path with any ``scheme://`` removed.

    ``s3a://bucket/key`` becomes ``bucket/key`` (for ``pyarrow.fs.S3FileSystem``) and ``file:///dir/x`` becomes
    ``/dir/x`` (for ``pyarrow.fs.LocalFileSystem``).
    """
    match = _SCHEME.match(recorded)
    return recorded[match.end() :] if match else recorded


class SnapshotStore:
    """Writes, reads and deletes the snapshot files of one table, and records them in its snapshot metadata store.

    Args:
        table_id: The table.
        metadata: The table's snapshot records.
        filesystem: Where snapshot files are kept.
        base_path: The table's directory on the filesystem (e.g. ``bucket/<table id>`` on S3, or
            ``/instance/data/<table id>``); snapshots go under ``<base_path>/statestore/snapshots/``.
        uri_scheme: Prefix of the paths recorded in the metadata, e.g. ``"s3a://"`` as Sleeper records them, or
            ``"file://"``; None records filesystem paths as they are.
        files_batch_size: ``sleeper.table.statestore.transactionlog.files.snapshot.batch.size`` (1000).
        partitions_batch_size: ``sleeper.table.statestore.transactionlog.partitions.snapshot.batch.size`` (1000).
        id_supplier: Makes the unique part of each snapshot file name (a random UUID by default).
    """

    def __init__(
        self,
        *,
        table_id: str,
        metadata: SnapshotMetadataStore,
        filesystem: pafs.FileSystem,
        base_path: str,
        uri_scheme: str | None = None,
        files_batch_size: int = DEFAULT_BATCH_SIZE,
        partitions_batch_size: int = DEFAULT_BATCH_SIZE,
        id_supplier: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.table_id = table_id
        self.metadata = metadata
        self.filesystem = filesystem
        self.base_path = base_path.rstrip("/")
        self.uri_scheme = uri_scheme
        self._files_batch_size = files_batch_size
        self._partitions_batch_size = partitions_batch_size
        self._id_supplier = id_supplier

    @property
    def directory(self) -> str:
        """The filesystem directory holding the snapshot files."""
        return f"{self.base_path}/statestore/snapshots"

    def latest(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        return self.metadata.latest_snapshot(log_type)

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        return self.metadata.snapshots(log_type)

    def save_files(self, state: FilesState, transaction_number: int, time: datetime) -> SnapshotMetadata:
        """Writes a files snapshot to a new file and records it as the latest.

        Raises:
            SnapshotConflictError: If the latest files snapshot is already at or beyond this number; the new file
                is deleted (it is unique to this attempt).
        """

        def write(sink: Any) -> None:
            write_files_snapshot(sink, state, transaction_number=transaction_number, batch_size=self._files_batch_size)

        return self._save(LogType.FILES, transaction_number, time, write)

    def save_partitions(self, state: PartitionsState, transaction_number: int, time: datetime) -> SnapshotMetadata:
        """Writes a partitions snapshot to a new file and records it as the latest.

        Raises:
            SnapshotConflictError: If the latest partitions snapshot is already at or beyond this number; the new
                file is deleted (it is unique to this attempt).
        """

        def write(sink: Any) -> None:
            write_partitions_snapshot(
                sink, state.partitions(), transaction_number=transaction_number, batch_size=self._partitions_batch_size
            )

        return self._save(LogType.PARTITIONS, transaction_number, time, write)

    def load_files(self, snapshot: SnapshotMetadata) -> FilesState:
        """Reads a files snapshot.

        Raises:
            SnapshotFormatError: If the file is not a files snapshot of that transaction number.
        """
        loaded = read_files_snapshot(self._read(snapshot))
        _check_number(snapshot, loaded.transaction_number)
        return loaded.state

    def load_partitions(self, snapshot: SnapshotMetadata) -> PartitionsState:
        """Reads a partitions snapshot.

        Raises:
            SnapshotFormatError: If the file is not a partitions snapshot of that transaction number.
        """
        loaded = read_partitions_snapshot(self._read(snapshot))
        _check_number(snapshot, loaded.transaction_number)
        return loaded.state

    def delete(self, snapshot: SnapshotMetadata) -> None:
        """Deletes a snapshot's file, then its record (a missing file is not an error).

        Raises:
            SnapshotConflictError: If the snapshot is the latest of its log (its file is then kept).
        """
        latest = self.metadata.latest_snapshot(snapshot.log_type)
        if latest is not None and latest.transaction_number == snapshot.transaction_number:
            raise SnapshotConflictError(
                f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot of table "
                f"{self.table_id}; it cannot be deleted"
            )
        self._delete_file(filesystem_path(snapshot.path))
        self.metadata.delete_snapshot(snapshot)

    def _save(
        self, log_type: LogType, transaction_number: int, time: datetime, write: Callable[[Any], None]
    ) -> SnapshotMetadata:
        path = f"{self.directory}/{transaction_number}-{self._id_supplier()}-{log_type.value}.arrow"
        self.filesystem.create_dir(self.directory, recursive=True)
        with self.filesystem.open_output_stream(path) as sink:
            write(sink)
        crash_point("snapshot.after_upload")
        recorded = f"{self.uri_scheme}{path}" if self.uri_scheme else path
        snapshot = SnapshotMetadata(
            log_type=log_type, path=recorded, transaction_number=transaction_number, update_time=time
        )
        try:
            self.metadata.save_snapshot(snapshot)
        except SnapshotConflictError:
            # The path is unique to this attempt, so no live snapshot can be using it.
            self._delete_file(path)
            raise
        crash_point("snapshot.after_metadata")
        # Any other error leaves the outcome unknown (the record may have been saved), so the file is kept.
        return snapshot

    def _read(self, snapshot: SnapshotMetadata) -> pa.Buffer:
        with self.filesystem.open_input_stream(filesystem_path(snapshot.path)) as source:
            data: pa.Buffer = source.read_buffer()
        return data

    def _delete_file(self, path: str) -> None:
        try:
            self.filesystem.delete_file(path)
        except FileNotFoundError:
            pass


def _check_number(snapshot: SnapshotMetadata, stored: int | None) -> None:
    if stored is not None and stored != snapshot.transaction_number:
        raise SnapshotFormatError(
            f"snapshot file {snapshot.path} holds transaction {stored}, but is recorded as transaction "
            f"{snapshot.transaction_number}"
        )


class FilesSnapshotSource:
    """Loads a table's latest files snapshot for a log head."""

    def __init__(self, store: SnapshotStore) -> None:
        self._store = store

    def load_latest_at_or_after(self, min_transaction_number: int) -> tuple[FilesState, int] | None:
        """The latest files snapshot's state and number, if the latest is at or after a number."""
        latest = self._store.latest(LogType.FILES)
        if latest is None or latest.transaction_number < min_transaction_number:
            return None
        return self._store.load_files(latest), latest.transaction_number


class PartitionsSnapshotSource:
    """Loads a table's latest partitions snapshot for a log head."""

    def __init__(self, store: SnapshotStore) -> None:
        self._store = store

    def load_latest_at_or_after(self, min_transaction_number: int) -> tuple[PartitionsState, int] | None:
        """The latest partitions snapshot's state and number, if the latest is at or after a number."""
        latest = self._store.latest(LogType.PARTITIONS)
        if latest is None or latest.transaction_number < min_transaction_number:
            return None
        return self._store.load_partitions(latest), latest.transaction_number
