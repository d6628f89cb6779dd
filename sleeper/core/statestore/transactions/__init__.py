"""The nine transaction types of Sleeper's transaction log, and DELETE_ROWS beyond Sleeper (a row delete by filter, read
only by this port), with their JSON, validation and effect.

A transaction is validated against the current state before it is appended to the log, and applied to the state
once it is in the log. Validation raises a ``StateStoreError`` naming what is wrong; applying never raises: where
Sleeper skips an invalid part at apply time (ADD_FILES with a file that exists, REPLACE_FILE_REFERENCES jobs that
no longer fit), so do we, so every reader of the log reaches the same state.

Beyond Sleeper: ADD_FILES carrying a job id that was already added is skipped, which makes ingest idempotent. It may
also carry the hash of the job's input files (``inputFilesHash``, ignored by Sleeper): the same job id with other input
files is then refused by validation (``JobIdReusedError``) rather than skipped as a retry. A file transaction also
says which files it names (``named_files``) and on which partitions it adds references (``new_reference_partitions``),
so the state store of a table can refuse files outside the table's data prefix and references on partitions that do
not exist (see ``sleeper.statestore.log_head.FilesLogHead``).

Modules: ``log`` (the transaction types, the two logs, epoch-millisecond times and the readers of body fields),
``files`` (the six transactions on the files log), ``partitions`` (the three on the partitions log) and ``serde``
(reading and writing bodies of any type for a table's schema).
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.core.statestore.transactions.files import AddFilesTransaction as AddFilesTransaction
    from sleeper.core.statestore.transactions.files import AssignJobIdRequest as AssignJobIdRequest
    from sleeper.core.statestore.transactions.files import AssignJobIdsTransaction as AssignJobIdsTransaction
    from sleeper.core.statestore.transactions.files import ClearFilesTransaction as ClearFilesTransaction
    from sleeper.core.statestore.transactions.files import DeleteFilesTransaction as DeleteFilesTransaction
    from sleeper.core.statestore.transactions.files import DeleteRowsTransaction as DeleteRowsTransaction
    from sleeper.core.statestore.transactions.files import FileTransaction as FileTransaction
    from sleeper.core.statestore.transactions.files import OverwriteFilesTransaction as OverwriteFilesTransaction
    from sleeper.core.statestore.transactions.files import ReplaceFileReferencesRequest as ReplaceFileReferencesRequest
    from sleeper.core.statestore.transactions.files import (
        ReplaceFileReferencesTransaction as ReplaceFileReferencesTransaction,
    )
    from sleeper.core.statestore.transactions.files import SplitFileReferenceRequest as SplitFileReferenceRequest
    from sleeper.core.statestore.transactions.files import (
        SplitFileReferencesTransaction as SplitFileReferencesTransaction,
    )
    from sleeper.core.statestore.transactions.files import UpsertFilesTransaction as UpsertFilesTransaction
    from sleeper.core.statestore.transactions.log import LogType as LogType
    from sleeper.core.statestore.transactions.log import TransactionType as TransactionType
    from sleeper.core.statestore.transactions.partitions import (
        ExtendPartitionTreeTransaction as ExtendPartitionTreeTransaction,
    )
    from sleeper.core.statestore.transactions.partitions import (
        InitialisePartitionsTransaction as InitialisePartitionsTransaction,
    )
    from sleeper.core.statestore.transactions.partitions import PartitionTransaction as PartitionTransaction
    from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction as SplitPartitionTransaction
    from sleeper.core.statestore.transactions.serde import Transaction as Transaction
    from sleeper.core.statestore.transactions.serde import TransactionSerDe as TransactionSerDe
    from sleeper.core.statestore.transactions.serde import log_type_of as log_type_of


__getattr__, __dir__ = lazy_face(__name__, __file__)
