"""The state of a table: file references and partitions, and the transactions that change them."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.core.statestore.deletes import PendingDelete as PendingDelete
    from sleeper.core.statestore.deletes import filters_by_file as filters_by_file
    from sleeper.core.statestore.deletes import filters_of_each as filters_of_each
    from sleeper.core.statestore.exceptions import FileAlreadyExistsError as FileAlreadyExistsError
    from sleeper.core.statestore.exceptions import FileHasReferencesError as FileHasReferencesError
    from sleeper.core.statestore.exceptions import FileNotFoundInStateError as FileNotFoundInStateError
    from sleeper.core.statestore.exceptions import FileOutsideTableError as FileOutsideTableError
    from sleeper.core.statestore.exceptions import FileReferenceAlreadyExistsError as FileReferenceAlreadyExistsError
    from sleeper.core.statestore.exceptions import FileReferenceAssignedToJobError as FileReferenceAssignedToJobError
    from sleeper.core.statestore.exceptions import (
        FileReferenceNotAssignedToJobError as FileReferenceNotAssignedToJobError,
    )
    from sleeper.core.statestore.exceptions import FileReferenceNotFoundError as FileReferenceNotFoundError
    from sleeper.core.statestore.exceptions import InvalidTransactionError as InvalidTransactionError
    from sleeper.core.statestore.exceptions import JobIdReusedError as JobIdReusedError
    from sleeper.core.statestore.exceptions import PartitionAlreadyExistsError as PartitionAlreadyExistsError
    from sleeper.core.statestore.exceptions import PartitionNotFoundError as PartitionNotFoundError
    from sleeper.core.statestore.exceptions import PartitionNotLeafError as PartitionNotLeafError
    from sleeper.core.statestore.exceptions import PendingDeleteNotAppliedError as PendingDeleteNotAppliedError
    from sleeper.core.statestore.exceptions import StateStoreError as StateStoreError
    from sleeper.core.statestore.exceptions import TableDeletedError as TableDeletedError
    from sleeper.core.statestore.locations import check_file_in_table as check_file_in_table
    from sleeper.core.statestore.locations import file_outside_table as file_outside_table
    from sleeper.core.statestore.locations import is_table_prefix as is_table_prefix
    from sleeper.core.statestore.references import AllReferencesToAFile as AllReferencesToAFile
    from sleeper.core.statestore.references import FileReference as FileReference
    from sleeper.core.statestore.state import FilesState as FilesState
    from sleeper.core.statestore.state import PartitionsState as PartitionsState
    from sleeper.core.statestore.state import ReferenceColumns as ReferenceColumns
    from sleeper.core.statestore.state import input_files_hash as input_files_hash


__getattr__, __dir__ = lazy_face(__name__, __file__)
