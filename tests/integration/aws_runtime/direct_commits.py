"""Changing a table's files directly through its state store, as a compaction would, for tests of what comes after."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sleeper.api.table import Table
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.io.sketches import sketches_path
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.store import StateStore


def compact_one_file_long_ago(
    instance: AwsInstance, table: Table[AwsInstance], *, ago: timedelta = timedelta(days=1)
) -> tuple[str, str]:
    """Replaces the reference of the first file referenced on one partition only by a copy of the file (with its
    sketches), as a compaction committed ``ago`` would: returns (the file now unreferenced, the output file)."""
    table.state_store.refresh()
    (reference,) = next(f for f in table.files() if len(f.references) == 1).references.values()
    old = reference.filename
    new = old.rsplit("/", 1)[0] + f"/{uuid.uuid4()}.parquet"
    for source, target in ((old, new), (sketches_path(old), sketches_path(new))):
        instance.filesystem.copy_file(source.removeprefix("s3a://"), target.removeprefix("s3a://"))
    past = datetime.now(tz=UTC) - ago
    store = StateStore(
        schema=table.schema,
        table_id=table.table_id,
        backend=instance.state_store_backend,
        clock=lambda: past,
        data_prefix=table.data_prefix,
    )
    job_id = str(uuid.uuid4())
    assign = AssignJobIdRequest(job_id=job_id, partition_id=reference.partition_id, filenames=(old,))
    store.commit(AssignJobIdsTransaction(requests=(assign,)))
    output = FileReference(filename=new, partition_id=reference.partition_id, number_of_rows=reference.number_of_rows)
    replace = ReplaceFileReferencesRequest(job_id=job_id, input_files=(old,), new_reference=output)
    store.commit(ReplaceFileReferencesTransaction(jobs=(replace,)))
    return old, new
