"""Checks of docs/reliability.md (I1-I7) against one table of a local instance, for the model-based test.

Each check raises ``AssertionError`` naming what broke. They read the table through the same ports the components use:
the state store facade, the state store backend's transaction logs and snapshot records, and the table's data files.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa

from sleeper.core.partition import Partition, PartitionTree
from sleeper.core.schema import Schema
from sleeper.core.statestore.state import FilesState, PartitionsState
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.serde import TransactionSerDe
from sleeper.core.trackers.compaction import CompactionJobStatusType, CompactionJobTracker
from sleeper.statestore.log_head import FilesLogHead, PartitionsLogHead, StateStoreSettings
from sleeper.statestore.ports import StateStoreBackend
from sleeper.statestore.snapshots import SnapshotStore

__all__ = [
    "Row",
    "check_content",
    "check_jobs",
    "check_log_numbers",
    "check_one_row_per_key",
    "check_references",
    "check_replay_from_snapshots",
    "check_tree",
    "checksum",
    "local_path",
    "rows_of",
]

Row = tuple[int, int]
"""A row of the model's table: (key, value)."""

_MASK = (1 << 64) - 1


def local_path(uri: str) -> Path:
    """The filesystem path of a ``file://`` URI (or of a plain path)."""
    return Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)


def rows_of(table: pa.Table) -> Counter[Row]:
    """The rows of a query result as a multiset of (key, value)."""
    return Counter(zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True))


def checksum(rows: Counter[Row]) -> tuple[int, int, int]:
    """I1's fingerprint (docs/reliability.md): row count, XOR and sum mod 2^64 of a 64-bit hash of each canonical
    row."""
    xor = 0
    total = 0
    for (key, value), count in rows.items():
        digest = hashlib.blake2b(f"{key},{value}".encode(), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        if count % 2:
            xor ^= h
        total = (total + h * count) & _MASK
    return sum(rows.values()), xor, total


def describe_difference(actual: Counter[Row], expected: Counter[Row]) -> str:
    """I1's message when the rows differ, telling three faults apart, each with up to 5 (key, value) examples: rows
    lost (acknowledged, missing), rows duplicated (acknowledged, seen more often) and rows that landed without being
    acknowledged (an ingest its writer saw fail, which committed anyway)."""
    missing = expected - actual
    extra = actual - expected
    duplicated = Counter({row: n for row, n in extra.items() if expected[row] > 0})
    unacknowledged = extra - duplicated

    def part(name: str, rows: Counter[Row]) -> str:
        return f"{sum(rows.values())} rows {name} {sorted(rows)[:5]}"

    return ", ".join(
        (
            part("lost", missing),
            part("duplicated", duplicated),
            part("landed without being acknowledged", unacknowledged),
        )
    )


def check_content(actual: Counter[Row], expected: Counter[Row], what: str) -> None:
    """I1: the rows returned equal the model's (count and checksum, then the rows themselves for the message)."""
    if checksum(actual) == checksum(expected) and actual == expected:
        return
    missing = expected - actual
    extra = actual - expected
    raise AssertionError(
        f"I1 {what}: {sum(actual.values())} rows returned, model has {sum(expected.values())}; "
        f"missing {dict(list(missing.items())[:10])}, unexpected {dict(list(extra.items())[:10])}"
    )


def check_deletes(actual: Counter[Row], expected: Counter[Row], deleted: Counter[Row], what: str) -> dict[str, int]:
    """D1: against the model with every delete applied, a read loses no row, resurrects no deleted row and duplicates
    none: ``lost`` rows the model holds and the read lacks, ``resurrected`` rows beyond the model that a delete
    removed, ``duplicated`` any other rows beyond the model. All three must be 0.

    Returns:
        The three counts (all 0).
    """
    extra = actual - expected
    resurrected = extra & deleted
    counts = {
        "lost": sum((expected - actual).values()),
        "resurrected": sum(resurrected.values()),
        "duplicated": sum((extra - resurrected).values()),
    }
    assert not any(counts.values()), (
        f"D1 {what}: {counts['lost']} rows lost, {counts['resurrected']} deleted rows resurrected, "
        f"{counts['duplicated']} duplicated; resurrected {dict(list(resurrected.items())[:10])}"
    )
    return counts


def check_one_row_per_key(keys: Iterable[object], what: str) -> int:
    """U1, with D1 against the model of an upsert table: a read of an upsert table returns each row key once (the
    last written row; D1 checks it is that one).

    Returns:
        How many keys were returned more than once (0).
    """
    counts = Counter(keys)
    duplicated = {key: n for key, n in counts.items() if n > 1}
    assert not duplicated, (
        f"U1 {what}: {len(duplicated)} keys returned more than once: {dict(list(duplicated.items())[:10])}"
    )
    return len(duplicated)


def check_log_numbers(
    backend: StateStoreBackend, table_id: str, deleted_up_to: Mapping[LogType, int]
) -> dict[LogType, int]:
    """I2: per log, the retained entries are numbered contiguously, starting just after the entries deleted.

    Returns:
        The last transaction number per log.
    """
    last: dict[LogType, int] = {}
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        numbers = [e.transaction_number for e in backend.transaction_log(table_id, log_type).read_transactions_after(0)]
        first_expected = deleted_up_to.get(log_type, 0) + 1
        if numbers:
            assert numbers[0] == first_expected, (
                f"I2 {log_type.value} log starts at {numbers[0]}, expected {first_expected} "
                f"(entries up to {first_expected - 1} were deleted)"
            )
            expected = list(range(numbers[0], numbers[0] + len(numbers)))
            assert numbers == expected, f"I2 {log_type.value} log numbers are not contiguous: {numbers}"
            last[log_type] = numbers[-1]
        else:
            last[log_type] = first_expected - 1
    return last


def check_references(files: FilesState, partitions: PartitionsState, data_prefix: str) -> None:
    """I3: every referenced file exists under the table's data prefix, on a known partition, once per partition, and
    the reference counts equal the references."""
    prefix = local_path(data_prefix)
    seen: set[tuple[str, str]] = set()
    for entry in files.files():
        assert entry.reference_count == len(entry.references), f"I3 {entry.filename}: reference count is wrong"
        for partition_id, reference in entry.references.items():
            assert reference.filename == entry.filename, f"I3 reference of {entry.filename} names {reference.filename}"
            assert reference.partition_id == partition_id, f"I3 reference of {entry.filename} is keyed wrongly"
            key = (entry.filename, partition_id)
            assert key not in seen, f"I3 {entry.filename} is referenced twice on partition {partition_id}"
            seen.add(key)
            assert partition_id in partitions, f"I3 {entry.filename} is referenced on unknown partition {partition_id}"
        if not entry.references:
            continue
        path = local_path(entry.filename)
        assert path.is_relative_to(prefix), f"I3 referenced file {entry.filename} lies outside {data_prefix}"
        assert path.is_file(), f"I3 referenced file {entry.filename} does not exist"


def _bounds(partition: Partition, field: str) -> tuple[int, int | None]:
    r = partition.region.range(field)
    assert r is not None, f"I4 partition {partition.id} has no range on {field}"
    low, high = r.canonical_min, r.canonical_max
    assert isinstance(low, int), f"I4 partition {partition.id} has a non-integer minimum"
    assert high is None or isinstance(high, int), f"I4 partition {partition.id} has a non-integer maximum"
    return low, high


def check_tree(schema: Schema, partitions: Iterable[Partition]) -> PartitionTree:
    """I4: one root covering the key space; every non-leaf has exactly two children splitting it; the leaves are
    disjoint and, in key order, cover the whole key space."""
    tree = PartitionTree(schema, partitions)
    tree.validate()
    for p in tree:
        if not p.is_leaf:
            assert len(p.child_ids) == 2, f"I4 non-leaf {p.id} has {len(p.child_ids)} children"
    field = schema.row_key_fields[0]
    leaves = sorted(tree.leaves, key=lambda p: _bounds(p, field.name)[0])
    expected_low = field.primitive_type.minimum
    for leaf in leaves:
        low, high = _bounds(leaf, field.name)
        assert low == expected_low, f"I4 leaf {leaf.id} starts at {low}, expected {expected_low} (gap or overlap)"
        assert high is None or high > low, f"I4 leaf {leaf.id} is empty"
        expected_low = high  # type: ignore[assignment]
    assert expected_low is None, f"I4 the leaves stop at {expected_low}, not at the top of the key space"
    return tree


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedJob:
    """What the model remembers of a compaction job it saw created."""

    job_id: str
    partition_id: str
    input_files: frozenset[str]
    output_file: str


def check_jobs(
    files: FilesState,
    jobs: Mapping[str, CreatedJob],
    landed: set[str],
    tracker: CompactionJobTracker,
    table_id: str,
    *,
    unsettled: Collection[str] = (),
) -> None:
    """I5: every assignment belongs to a created job, on its partition and among its inputs; a job whose output the
    table ever tracked is FINISHED in the tracker with exactly one committed run (unless it is ``unsettled``: a crash
    may have stopped its run after the commit landed and before the tracker heard, until its message comes back), and
    no other job is; every failed
    run has a reason.

    Args:
        files: The files state now.
        jobs: Every job created so far, by id.
        landed: Output files the table has tracked at some check (updated here with the ones tracked now).
        tracker: The compaction job tracker.
        table_id: The table.
    """
    outputs = {job.output_file: job for job in jobs.values()}
    for reference in files.references():
        if reference.job_id is None:
            continue
        job = jobs.get(reference.job_id)
        assert job is not None, f"I5 {reference.filename} is assigned to unknown job {reference.job_id}"
        assert reference.partition_id == job.partition_id, (
            f"I5 {reference.filename} on {reference.partition_id} is assigned to job {job.job_id} of partition "
            f"{job.partition_id}"
        )
        assert reference.filename in job.input_files, f"I5 {reference.filename} is not an input of job {job.job_id}"
    landed.update(name for name in outputs if name in files)
    for status in tracker.jobs(table_id):
        job = jobs.get(status.job_id)
        if job is None:
            continue
        committed_runs = [run for run in status.runs if run.commit_time is not None]
        for run in status.runs:
            if run.status is CompactionJobStatusType.FAILED:
                assert run.failure_reasons, f"I5 a run of job {job.job_id} failed with no reason"
        if job.output_file in landed and job.job_id in unsettled and not committed_runs:
            continue
        if job.output_file in landed:
            assert status.status is CompactionJobStatusType.FINISHED, (
                f"I5 job {job.job_id} landed but the tracker says {status.status.value}"
            )
            assert len(committed_runs) == 1, f"I5 job {job.job_id} has {len(committed_runs)} committed runs"
        else:
            assert not committed_runs, f"I5 job {job.job_id} is tracked as committed but its output never landed"


class _FixedSnapshot:
    """A snapshot source that offers one already loaded state (to replay from a chosen snapshot)."""

    def __init__(self, state: FilesState | PartitionsState, number: int) -> None:
        self._state = state
        self._number = number

    def load_latest_at_or_after(self, min_transaction_number: int) -> tuple[FilesState | PartitionsState, int] | None:
        return (self._state, self._number) if self._number >= min_transaction_number else None


def check_replay_from_snapshots(
    *,
    backend: StateStoreBackend,
    snapshots: SnapshotStore,
    schema: Schema,
    table_id: str,
    expected_files: FilesState,
    expected_partitions: PartitionsState,
    deleted_up_to: Mapping[LogType, int],
    clock: object,
    every: bool = True,
) -> int:
    """I6: from every retained snapshot whose tail is still in the log, snapshot plus tail equals the full replay.

    With ``every`` false, only the oldest and the latest such snapshot are replayed (each snapshot is the latest for a
    while, so a check after every step still replays each one at least once).

    Returns:
        How many snapshots were replayed.
    """
    serde = TransactionSerDe(schema)
    settings = StateStoreSettings()
    replayed = 0
    for log_type, expected in ((LogType.FILES, expected_files), (LogType.PARTITIONS, expected_partitions)):
        # The entries after a snapshot older than the deleted ones are gone: no reader can start from it any more.
        usable = [s for s in snapshots.snapshots(log_type) if s.transaction_number >= deleted_up_to.get(log_type, 0)]
        chosen = usable if every else {id(s): s for s in (usable[:1] + usable[-1:])}.values()
        for snapshot in chosen:
            if log_type is LogType.FILES:
                files_state = snapshots.load_files(snapshot)
                head: FilesLogHead | PartitionsLogHead = FilesLogHead(
                    table_id=table_id,
                    log_store=backend.transaction_log(table_id, log_type),
                    body_store=backend.body_store(table_id),
                    serde=serde,
                    snapshots=_FixedSnapshot(files_state, snapshot.transaction_number),  # type: ignore[arg-type]
                    settings=settings,
                    clock=clock,  # type: ignore[arg-type]
                )
            else:
                partitions_state = snapshots.load_partitions(snapshot)
                head = PartitionsLogHead(
                    table_id=table_id,
                    log_store=backend.transaction_log(table_id, log_type),
                    body_store=backend.body_store(table_id),
                    serde=serde,
                    snapshots=_FixedSnapshot(partitions_state, snapshot.transaction_number),  # type: ignore[arg-type]
                    settings=settings,
                    clock=clock,  # type: ignore[arg-type]
                )
            head.force_update()
            assert head.state == expected, (
                f"I6 {log_type.value} snapshot at {snapshot.transaction_number} plus the log tail differs from the "
                f"full replay"
            )
            replayed += 1
    return replayed


def unreferenced_since(files: FilesState) -> dict[str, datetime | None]:
    """Files with no references, with the time they lost their last one (I7)."""
    return {f.filename: f.last_update_time for f in files.files() if not f.references}
