"""The state store of one table: both transaction logs behind one facade.

Reads bring the state up to date first (``sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms``
can let them use a recent state) and return immutable values or copies. Writes add a transaction to the log it
belongs to, retrying on collisions with other writers (``sleeper.statestore.log_head``).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime

from pyarrow import fs as pafs

from sleeper.core import Partition, PartitionTree, PartitionTreeError, Schema, partitions_from_split_points
from sleeper.core.statestore import (
    AllReferencesToAFile,
    FileReference,
    FilesState,
    PartitionsState,
    PendingDelete,
    ReferenceColumns,
    StateStoreError,
)
from sleeper.core.statestore.transactions import (
    AddFilesTransaction,
    ClearFilesTransaction,
    DeleteRowsTransaction,
    FileTransaction,
    InitialisePartitionsTransaction,
    LogType,
    PartitionTransaction,
    Transaction,
    TransactionSerDe,
)
from sleeper.statestore.arrow_files import PartitionFiles
from sleeper.statestore.log_head import (
    AddTransactionResult,
    Clock,
    FilesLogHead,
    JitterSource,
    PartitionsLogHead,
    Sleeper,
    StateStoreSettings,
    utc_now,
)
from sleeper.statestore.ports import StateStoreBackend, TransactionBodyStore
from sleeper.statestore.snapshots import FilesSnapshotSource, PartitionsSnapshotSource, SnapshotStore

__all__ = ["AddTransactionResult", "StateStore", "StateStoreSettings"]


class StateStore:
    """The files and partitions of one table, kept in two transaction logs.

    Not safe for concurrent use from several threads: give each thread its own ``StateStore``. Any number of
    ``StateStore`` objects, in any processes, may share a table.

    Args:
        schema: The table schema.
        table_id: The table.
        backend: Builds the table's logs, body store and snapshot records.
        filesystem: Where snapshot files are kept; None to use no snapshots (logs are read from the start).
        snapshot_base_path: The table's directory on ``filesystem`` (snapshots go under
            ``<snapshot_base_path>/statestore/snapshots/``).
        snapshot_uri_scheme: Prefix of recorded snapshot paths (e.g. ``"s3a://"``); None records plain paths.
        settings: Behaviour settings (Sleeper's defaults if None).
        clock: The time now, timezone-aware.
        sleep: Waits before retries.
        jitter: Random fractions for full jitter.
        id_supplier: Unique ids for large body keys and snapshot file names.
        data_prefix: The table's data prefix (``s3a://<data bucket>/<table id>``, ``file:///<dir>/data/<table id>``).
            Given it, the store validates a file transaction against the table as well as the files state: a file
            outside the prefix is refused (``FileOutsideTableError``), and so are references added on partitions that
            do not exist (``PartitionNotFoundError``; see ``reinitialise``). Every runtime gives it. None validates
            against the files state alone, as Sleeper does (for tests of the logs, which name bare files and may
            leave the table uninitialised).
    """

    def __init__(
        self,
        *,
        schema: Schema,
        table_id: str,
        backend: StateStoreBackend,
        filesystem: pafs.FileSystem | None = None,
        snapshot_base_path: str | None = None,
        snapshot_uri_scheme: str | None = None,
        settings: StateStoreSettings | None = None,
        clock: Clock = utc_now,
        sleep: Sleeper = time.sleep,
        jitter: JitterSource = random.random,
        id_supplier: Callable[[], str] = lambda: str(uuid.uuid4()),
        data_prefix: str | None = None,
    ) -> None:
        if (filesystem is None) != (snapshot_base_path is None):
            raise ValueError("give both filesystem and snapshot_base_path, or neither")
        self.schema = schema
        self.table_id = table_id
        self.data_prefix = data_prefix
        self.backend = backend
        self.settings = settings or StateStoreSettings()
        self.clock = clock
        self.serde = TransactionSerDe(schema)
        self.snapshot_store: SnapshotStore | None = None
        if filesystem is not None and snapshot_base_path is not None:
            self.snapshot_store = SnapshotStore(
                table_id=table_id,
                metadata=backend.snapshot_metadata(table_id),
                filesystem=filesystem,
                base_path=snapshot_base_path,
                uri_scheme=snapshot_uri_scheme,
                files_batch_size=self.settings.files_snapshot_batch_size,
                partitions_batch_size=self.settings.partitions_snapshot_batch_size,
                id_supplier=id_supplier,
            )
        self._tree: tuple[tuple[int, int], PartitionTree] | None = None
        self._partition_files: tuple[tuple[int, int], PartitionFiles] | None = None
        bodies = backend.body_store(table_id)
        self.files_head = FilesLogHead(
            table_id=table_id,
            log_store=backend.transaction_log(table_id, LogType.FILES),
            body_store=bodies,
            serde=self.serde,
            snapshots=None if self.snapshot_store is None else FilesSnapshotSource(self.snapshot_store),
            settings=self.settings,
            clock=clock,
            sleep=sleep,
            jitter=jitter,
            id_supplier=id_supplier,
            data_prefix=data_prefix,
            partitions=None if data_prefix is None else self._partitions_now,
        )
        self.partitions_head = PartitionsLogHead(
            table_id=table_id,
            log_store=backend.transaction_log(table_id, LogType.PARTITIONS),
            body_store=bodies,
            serde=self.serde,
            snapshots=None if self.snapshot_store is None else PartitionsSnapshotSource(self.snapshot_store),
            settings=self.settings,
            clock=clock,
            sleep=sleep,
            jitter=jitter,
            id_supplier=id_supplier,
        )

    @property
    def body_store(self) -> TransactionBodyStore:
        """The table's store of large transaction bodies."""
        return self.backend.body_store(self.table_id)

    # --- reads -------------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Brings both logs' states fully up to date now."""
        self.partitions_head.force_update()
        self.files_head.force_update()

    def _files(self) -> FilesState:
        self.files_head.update()
        return self.files_head.state

    def _partitions(self) -> PartitionsState:
        self.partitions_head.update()
        return self.partitions_head.state

    def _partitions_now(self) -> PartitionsState:
        """The partitions as their log holds them now (file transactions are validated against them)."""
        self.partitions_head.force_update()
        return self.partitions_head.state

    def partitions(self) -> list[Partition]:
        """Every partition of the table."""
        return self._partitions().partitions()

    def partition_tree(self) -> PartitionTree:
        """The partitions as a tree.

        Raises:
            StateStoreError: If the table has no partitions (it was never initialised) or they do not form a tree.
        """
        state = self._partitions()
        if not len(state):
            raise StateStoreError(f"table {self.table_id} has no partitions: it has not been initialised")
        # A tree is immutable and the state changes only by transactions, so one tree serves every read until the
        # next transaction (or snapshot) is applied: a query does not rebuild a tree of every partition.
        version = (id(state), self.partitions_head.last_transaction_number)
        if self._tree is not None and self._tree[0] == version:
            return self._tree[1]
        try:
            tree = state.tree(self.schema)
        except PartitionTreeError as e:
            raise StateStoreError(f"partitions of table {self.table_id} do not form a tree: {e}") from None
        self._tree = (version, tree)
        return tree

    def partition_files(self) -> PartitionFiles:
        """The files referenced on each partition, kept until the next transaction (or snapshot) is applied: a query
        plans from it without going through every reference (``sleeper.statestore.arrow_files``)."""
        state = self._files()
        version = (id(state), self.files_head.last_transaction_number)
        if self._partition_files is None or self._partition_files[0] != version:
            self._partition_files = (version, PartitionFiles(state.entries))
        return self._partition_files[1]

    def leaf_partitions(self) -> list[Partition]:
        """The leaf partitions, in key order of the first row key (empty if the table has no partitions)."""
        state = self._partitions()
        if not len(state):
            return []
        return self.partition_tree().leaves

    def file_references(self) -> list[FileReference]:
        """Every file reference."""
        return list(self._files().references())

    def files(self) -> list[AllReferencesToAFile]:
        """Every tracked file with its references, including files with no references that await GC."""
        return list(self._files().files())

    def pending_deletes(self) -> tuple[PendingDelete, ...]:
        """The pending row deletes, oldest first (``sleeper.core.statestore.deletes``). A file stays in a delete's set
        until it leaves the state, so these read after the files a query planned from cover every file it reads."""
        return self._files().pending_deletes

    def holds_deleted_rows(self) -> bool:
        """Whether a referenced file is in a pending delete's set: reads then hide rows (until a purge)."""
        state = self._files()
        for delete in state.pending_deletes:
            for name in delete.files:
                entry = state.file(name)
                if entry is not None and entry.references:
                    return True
        return False

    def files_state(self) -> FilesState:
        """A copy of the files state."""
        return self._files().copy()

    def partitions_state(self) -> PartitionsState:
        """A copy of the partitions state."""
        return self._partitions().copy()

    def references_on_partition(self, partition_id: str) -> list[FileReference]:
        """The file references on one partition (found through ``partition_files``, not by reading every file)."""
        state = self._files()
        names = self.partition_files().files_on(partition_id)
        return [r for name in names if (r := state.reference(name, partition_id)) is not None]

    def references_by_partition(self, partition_ids: Collection[str]) -> dict[str, list[FileReference]]:
        """The references on each of some partitions, in state order; a partition with none is left out. A state
        loaded from a snapshot makes an object of each reference returned (not of each file) from its columns,
        found through its index by partition (``FilesState.references_by_partition``)."""
        return self._files().references_by_partition(partition_ids)

    def reference_columns(self, partition_ids: Collection[str]) -> ReferenceColumns:
        """The references on some partitions as columns, in state order: from a loaded snapshot's columns, with no
        object per reference (``FilesState.reference_columns``)."""
        return self._files().reference_columns(partition_ids)

    def files_on_partitions(self, partition_ids: Collection[str]) -> list[AllReferencesToAFile]:
        """The files referenced on any of some partitions, in state order (found from the references on them as
        columns, not by reading every file)."""
        state = self._files()
        names = set(state.reference_columns(partition_ids).filenames)
        return state.files_named(names) if names else []

    def job_ids(self) -> set[str]:
        """The distinct jobs references are assigned to (running or queued compaction jobs)."""
        return self._files().job_ids()

    def unreferenced_files_before(self, time: datetime) -> list[str]:
        """Files with no references last updated before a time: ready for garbage collection."""
        return self._files().unreferenced_files_before(time)

    def has_file(self, filename: str) -> bool:
        """Whether the table tracks a file (referenced or awaiting garbage collection)."""
        return filename in self._files()

    def has_added_job(self, job_id: str) -> bool:
        """Whether an ADD_FILES transaction carrying this job id has been applied."""
        return self._files().has_added_job(job_id)

    def holds_file_as_last_committed(self, filename: str) -> bool:
        """Whether the files state as this store last read or wrote it holds a file, without reading the log again.

        Right after :meth:`commit` of an ADD_FILES carrying a job id, this tells whether that commit added its files or
        was skipped because another run of the job had added them first. A fresh read could not tell: a split of the
        file's references, a compaction or a reinitialisation landing just after the commit would move them or
        remove them (and a writer that took the file for unadded would delete files the table references).
        """
        return filename in self.files_head.state

    def job_already_added(self, job_id: str, inputs_hash: str | None) -> bool:
        """Whether a job's files were added from these input files (see ``FilesState.job_already_added``).

        Raises:
            JobIdReusedError: If files were added under this job id from other input files.
        """
        return self._files().job_already_added(job_id, inputs_hash)

    def last_transaction_numbers(self) -> dict[LogType, int]:
        """The number of the last transaction applied, per log, after bringing both up to date."""
        self._files()
        self._partitions()
        return {
            LogType.FILES: self.files_head.last_transaction_number,
            LogType.PARTITIONS: self.partitions_head.last_transaction_number,
        }

    # --- writes ------------------------------------------------------------------------------------------------
    def commit(self, transaction: Transaction, *, body_key: str | None = None) -> AddTransactionResult:
        """Adds a transaction to the log it belongs to.

        Args:
            transaction: The transaction.
            body_key: Where its body is already stored in the body store, if it was uploaded (committer requests).

        Returns:
            The transaction number and how the attempts went.

        Raises:
            StateStoreError: If the transaction does not fit the current state.
            AddTransactionRetriesExhaustedError: If it collided with other writers on every attempt.
        """
        if isinstance(transaction, FileTransaction):
            return self.files_head.add_transaction(transaction, body_key=body_key)
        if isinstance(transaction, PartitionTransaction):
            return self.partitions_head.add_transaction(transaction, body_key=body_key)
        raise TypeError(f"not a transaction: {transaction!r}")

    def add_transaction(self, transaction: Transaction, *, body_key: str | None = None) -> int:
        """Adds a transaction to the log it belongs to; returns its transaction number (see ``commit``)."""
        return self.commit(transaction, body_key=body_key).transaction_number

    def initialise(self, partitions: Sequence[Partition] | None = None) -> int:
        """Replaces every partition: with the given ones, or a single ``root`` partition if None.

        Raises:
            StateStoreError: If the table has files (clear them first), or the partitions do not form a valid tree.
        """
        files = self.files_head
        files.force_update()
        if len(files.state):
            raise StateStoreError(
                f"cannot initialise table {self.table_id}: it has {len(files.state)} files; clear them first"
            )
        chosen = partitions_from_split_points(self.schema, []) if partitions is None else list(partitions)
        return self.add_transaction(InitialisePartitionsTransaction(partitions=tuple(chosen)))

    def add_files(
        self,
        references: Iterable[FileReference],
        *,
        job_id: str | None = None,
        task_id: str | None = None,
        job_run_id: str | None = None,
        written_time: datetime | None = None,
        inputs_hash: str | None = None,
    ) -> int:
        """Adds new files with their references in one ADD_FILES transaction; returns its transaction number.

        Skipped when applied (still logged) if any file exists already, or ``job_id``'s files were added before.
        ``inputs_hash`` is the job's ``input_files_hash``, recorded with the job id.

        Raises:
            JobIdReusedError: If ``job_id``'s files were added before from other input files.
        """
        transaction = AddFilesTransaction.of_references(
            references,
            job_id=job_id,
            task_id=task_id,
            job_run_id=job_run_id,
            written_time=written_time,
            inputs_hash=inputs_hash,
        )
        return self.add_transaction(transaction)

    def delete_rows(self, filter_text: str) -> int:
        """Commits a row delete (DELETE_ROWS, beyond Sleeper): the rows matching the filter among those committed
        before it are hidden from every read and removed by compaction. Returns its transaction number."""
        return self.add_transaction(DeleteRowsTransaction(filter=filter_text))

    def clear_files(self) -> int:
        """Stops tracking every file (CLEAR_FILES); returns the transaction number."""
        return self.add_transaction(ClearFilesTransaction())

    def reinitialise(self, partitions: Sequence[Partition] | None = None) -> None:
        """Empties the table: replaces its partitions (if given), then stops tracking every file.

        The order makes a writer racing the reinitialisation safe (docs/reliability.md I1: no rows are acknowledged that
        a query cannot return). A file transaction that adds references (ADD_FILES, SPLIT_FILE_REFERENCES) is
        validated against the partitions read *after* the files state its append is conditional on. So if it lands
        at all, either it was validated after INITIALISE_PARTITIONS and names only partitions of the new tree, or it
        was validated before, and then CLEAR_FILES, appended after INITIALISE_PARTITIONS, was not yet in the files
        log it read: its append either lands before CLEAR_FILES (and is cleared with the rest of the table, as any
        write that finished before the reinitialisation) or collides with it, is validated again against the new
        partitions, and is refused (``PartitionNotFoundError``). No reference to a partition of the old tree can
        outlive the reinitialisation. If it stops between the two transactions, the table's files are left on
        partitions that no longer exist (counted by ``table show``, returned by no query) until it is run again.

        Args:
            partitions: The new partition tree; None keeps the partitions (only the files are cleared).

        Raises:
            StateStoreError: If the partitions do not form a valid tree (nothing is changed).
        """
        if partitions is not None:
            self.add_transaction(InitialisePartitionsTransaction(partitions=tuple(partitions)))
        self.clear_files()
