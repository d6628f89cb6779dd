"""Splitting a partition at the median of its files' sketches, as Sleeper's ``SplitPartition``.

The sketches of the job's files are merged per row key. The median is read as Sleeper's splitter reads it: the item
at position ``floor(n / 2)`` of the merged sketch's sorted stream (DataSketches 3.3.0's ``getQuantile(0.5)``,
:meth:`sleeper.io.sketches.Sketches.median`), and the minimum and maximum are the sketch's exact ones. Since every data
file's sketch holds all its rows as Sleeper's does (:class:`sleeper.io.sketches.SketchBuilder`), a partition of fewer
than 2,048 rows splits exactly where Sleeper's would. Dimensions are tried in row key order; the first whose
minimum < median < maximum is split at the median: children ``[parent.min, median)`` and ``[median, parent.max)``
on that dimension, with new random ids, and the parent becomes a non-leaf split on that dimension. A dimension whose
median equals its minimum cannot be split (the left child would be empty), nor one whose median equals its maximum.
If no dimension can be split, nothing changes.

The split is one SPLIT_PARTITION transaction, which the state store applies only while the parent is still a leaf:
if another splitter got there first the split is reported as ``ALREADY_SPLIT`` and nothing changes. The table's
``sleeper.table.partition.splitting.commit.async`` decides whether the transaction is added to the log here or sent
to the state store committer.

Splitting moves no data: references on the parent stay valid, queries read them for both children (a query of a
leaf reads files of the leaf and its ancestors), and compaction later splits them onto the children.

Only files the table tracks are read: a job naming a file the table does not know fails with
``UntrackedFileError``. As in Sleeper, a tracked file without a sketches file fails the job
(``MissingSketchesError``), so the message is retried and then dead-lettered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

from pyarrow import fs as pafs

from sleeper.core import (
    IdSupplier,
    KeyValue,
    Partition,
    PartitionTreeError,
    Region,
    Schema,
    TableNotFoundError,
    random_id,
    split_partition,
)
from sleeper.core.jobs import SplitPartitionJob, StateStoreCommitRequest
from sleeper.core.properties import PARTITION_SPLIT_ASYNC_COMMIT
from sleeper.core.statestore import PartitionNotFoundError, PartitionNotLeafError
from sleeper.core.statestore.transactions import SplitPartitionTransaction
from sleeper.io import FileSystemOptions, MissingFileError, Sketches, SketchesError, resolve, sketches_path
from sleeper.splitting.exceptions import MissingSketchesError, UntrackedFileError
from sleeper.splitting.ports import STATE_STORE_COMMITTER_QUEUE
from sleeper.statestore import SleeperInstance, SleeperRuntime, SleeperTable, committer_sender

__all__ = [
    "SplitOutcome",
    "SplitResult",
    "committer_sender",
    "find_split_point",
    "handle_split_partition",
    "read_sketches",
    "run_split_job_message",
    "split_partition_job",
    "split_point_candidates",
]


class SplitOutcome(Enum):
    """How a split job ended."""

    SPLIT = "SPLIT"
    """The partition was split (the transaction was added to the log)."""

    SENT = "SENT"
    """The split was sent to the state store committer (asynchronous commit)."""

    NOT_SPLITTABLE = "NOT_SPLITTABLE"
    """No row key dimension has minimum < median < maximum (e.g. every row has the same key); nothing changed."""

    ALREADY_SPLIT = "ALREADY_SPLIT"
    """The partition is no longer a leaf: another split came first. Nothing changed; not an error."""

    PARTITION_NOT_FOUND = "PARTITION_NOT_FOUND"
    """The partition no longer exists (the table was repartitioned). Nothing changed; not an error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitResult:
    """What a split job did.

    Attributes:
        outcome: How it ended.
        table_id: The table.
        partition_id: The partition the job was for.
        dimension: The row key index split on, if a split was made or sent.
        split_point: The value split at, if a split was made or sent.
        parent: The parent after the split (no longer a leaf), if a split was made or sent.
        children: The new left and right children, if a split was made or sent.
    """

    outcome: SplitOutcome
    table_id: str
    partition_id: str
    dimension: int | None = None
    split_point: KeyValue | None = None
    parent: Partition | None = None
    children: tuple[Partition, ...] = ()


def split_point_candidates(schema: Schema, sketches: Sketches) -> Iterator[tuple[int, KeyValue]]:
    """The medians of every row key dimension that may be split at, in row key order.

    A dimension is a candidate when its merged sketch has minimum < median < maximum.

    Raises:
        SketchesError: If a sketch's minimum is above its maximum (a corrupt sketch).
    """
    for dimension, f in enumerate(schema.row_key_fields):
        low, median, high = sketches.min(f.name), sketches.median(f.name), sketches.max(f.name)
        if low is None or median is None or high is None:
            continue
        if low > high:  # type: ignore[operator]
            raise SketchesError(f"sketch of {f.name!r} has minimum {low!r} above maximum {high!r}")
        if low < median < high:  # type: ignore[operator]
            yield dimension, median


def find_split_point(schema: Schema, sketches: Sketches) -> tuple[int, KeyValue] | None:
    """The first row key dimension with minimum < median < maximum and its median, or None (Sleeper's rule)."""
    return next(split_point_candidates(schema, sketches), None)


def read_sketches(
    schema: Schema,
    filenames: Iterable[str],
    *,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> Sketches:
    """Reads and merges the sketches files of data files (``x.parquet`` → ``x.sketches``).

    Args:
        schema: The table schema.
        filenames: The data files, as the state store records them.
        filesystem: A filesystem to read from instead of the one each URI names.
        options: How to reach S3.

    Raises:
        MissingSketchesError: If a sketches file is missing or cannot be read.
    """
    read: list[Sketches] = []
    for filename in filenames:
        location = sketches_path(filename)
        fs, path = resolve(location, options, filesystem=filesystem)
        try:
            read.append(Sketches.read(fs, path, schema))
        except MissingFileError:
            raise MissingSketchesError(f"no sketches file {location} for data file {filename}") from None
        except SketchesError as e:
            raise MissingSketchesError(f"sketches file {location} cannot be read: {e}") from None
    return Sketches.merge(read, schema=schema)


def split_partition_job(
    job: SplitPartitionJob,
    table: SleeperTable,
    *,
    send_commit: Callable[[StateStoreCommitRequest], None] | None = None,
    async_commit: bool | None = None,
    id_supplier: IdSupplier = random_id,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> SplitResult:
    """Runs a split job on a table.

    Args:
        job: The job (from the finder).
        table: The job's table.
        send_commit: Sends a commit request to the state store committer; needed for asynchronous commits.
        async_commit: Whether to send the split to the committer; None follows the table's
            ``sleeper.table.partition.splitting.commit.async``. Without ``send_commit`` the split is always committed
            here.
        id_supplier: Ids of the new children (random UUIDs, as Sleeper).
        filesystem: A filesystem to read sketches from instead of the one each file's URI names.
        options: How to reach S3.

    Returns:
        What the job did.

    Raises:
        ValueError: If the job is for another table.
        UntrackedFileError: If the job names a file the table does not track.
        MissingSketchesError: If a file's sketches cannot be read.
        StateStoreError: If the split is refused for another reason than the partition having been split or removed.
    """
    if job.table_id != table.table_id:
        raise ValueError(f"split job for table {job.table_id} given table {table.table_id}")
    store = table.state_store
    store.refresh()

    def result(outcome: SplitOutcome) -> SplitResult:
        return SplitResult(outcome=outcome, table_id=table.table_id, partition_id=job.partition.id)

    current = store.partitions_state().get(job.partition.id)
    if current is None or not _same_region(current.region, job.partition.region):
        return result(SplitOutcome.PARTITION_NOT_FOUND)
    if not current.is_leaf:
        return result(SplitOutcome.ALREADY_SPLIT)
    files = store.files_state()
    untracked = [name for name in job.filenames if name not in files]
    if untracked:
        raise UntrackedFileError(
            f"split job for partition {job.partition.id} of table {table.table_id} names files the table does not "
            f"track: {', '.join(untracked[:5])}{' ...' if len(untracked) > 5 else ''}"
        )
    schema = table.schema
    sketches = read_sketches(schema, job.filenames, filesystem=filesystem, options=options)
    for dimension, point in split_point_candidates(schema, sketches):
        try:
            parent, left, right = split_partition(schema, current, dimension, point, id_supplier=id_supplier)
        except PartitionTreeError:
            continue  # the median lies outside the partition (sketches of files holding other data): try the next
        transaction = SplitPartitionTransaction(parent=parent, new_children=(left, right))
        use_async = table.properties.get_bool(PARTITION_SPLIT_ASYNC_COMMIT) if async_commit is None else async_commit
        outcome = SplitOutcome.SPLIT
        if use_async and send_commit is not None:
            send_commit(StateStoreCommitRequest.of_transaction(table.table_id, transaction, schema=schema))
            outcome = SplitOutcome.SENT
        else:
            try:
                store.commit(transaction)
            except PartitionNotLeafError:
                return result(SplitOutcome.ALREADY_SPLIT)
            except PartitionNotFoundError:
                return result(SplitOutcome.PARTITION_NOT_FOUND)
        return SplitResult(
            outcome=outcome,
            table_id=table.table_id,
            partition_id=job.partition.id,
            dimension=dimension,
            split_point=point,
            parent=parent,
            children=(left, right),
        )
    return result(SplitOutcome.NOT_SPLITTABLE)


def _same_region(a: Region, b: Region) -> bool:
    if set(a.ranges) != set(b.ranges):
        return False
    return all(a.ranges[name].canonical() == b.ranges[name].canonical() for name in a.ranges)


def run_split_job_message(
    instance: SleeperInstance,
    body: str,
    *,
    async_commit: bool | None = None,
    id_supplier: IdSupplier = random_id,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> SplitResult:
    """Handles one message of the ``PartitionSplittingJobQueue``.

    Args:
        instance: The instance.
        body: The split job JSON.
        async_commit: Whether to send the split to the committer; None follows the table's property.
        id_supplier: Ids of the new children.
        filesystem: A filesystem to read sketches from instead of the one each file's URI names.
        options: How to reach S3.

    Raises:
        MessageError: If the body is not a valid split job (``UnknownTableError`` if the table does not exist).
        SplittingError: If the job's files or sketches cannot be used (see ``split_partition_job``).
    """

    def schema_of(table_id: str) -> Schema | None:
        try:
            return instance.table_by_id(table_id).schema
        except TableNotFoundError:
            return None

    job = SplitPartitionJob.from_json(body, schema_of)
    table = instance.table_by_id(job.table_id)
    return split_partition_job(
        job,
        table,
        send_commit=committer_sender(instance.queue(STATE_STORE_COMMITTER_QUEUE)),
        async_commit=async_commit,
        id_supplier=id_supplier,
        filesystem=filesystem,
        options=options,
    )


def handle_split_partition(instance: SleeperRuntime, body: str) -> str:
    """The splitter's runtime-neutral entry: one ``PartitionSplittingJobQueue`` message (a split job).

    Returns:
        A line for the log: what became of the partition.

    Raises:
        MessageError: If the body is not a valid split job.
        SplittingError: If the job's files are not tracked or their sketches cannot be read.
    """
    result = run_split_job_message(instance, body, options=instance.filesystem_options)
    where = f"table {result.table_id} partition {result.partition_id}"
    if result.split_point is None:
        return f"{where}: {result.outcome.value.lower()}"
    return f"{where}: {result.outcome.value.lower()} at {result.split_point!r} on dimension {result.dimension}"
