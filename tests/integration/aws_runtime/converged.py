"""I1-I7 of docs/reliability.md on a table of an AWS instance (DynamoDB, S3 and SQS, on moto) after a run: the
AWS counterpart of ``check_converged`` in ``tests/integration/runtime/crash_harness.py``, shared by the crash points on
the AWS runtime (``test_crash_points_aws.py``) and the mixed race on the emulated instance
(``tests/integration/aws_local/test_mixed_race_emulated.py``)."""

from __future__ import annotations

import dataclasses
import json
import posixpath
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from sleeper.api.table import Table
from sleeper.core.schema import Schema
from sleeper.core.statestore.state import FilesState
from sleeper.core.statestore.transactions.log import LogType
from sleeper.gc.orphans import DEFAULT_ORPHAN_MIN_AGE, sweep_orphans
from sleeper.io.filesystem import exists, list_files
from sleeper.lambdas import sqs
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.snapshots import filesystem_path
from tests.integration.aws_runtime.conftest import sqs_event
from tests.integration.runtime.crash_harness import Converged, check_compaction_jobs_settled
from tests.model.invariants import (
    Row,
    check_log_numbers,
    check_replay_from_snapshots,
    check_tree,
    checksum,
    describe_difference,
    rows_of,
)
from tests.reliability_report import REPORT_PATH

__all__ = [
    "ConvergedOnAws",
    "check_converged_on_aws",
    "gc_lambda",
    "keep_for_post_mortem",
    "restarted_instance",
    "untracked_files",
]


@dataclass(frozen=True, slots=True)
class ConvergedOnAws(Converged):
    """What :func:`check_converged_on_aws` measured: the local check's figures, and the rows expected."""

    rows_expected: int

    def figures(self) -> dict[str, object]:
        """The figures as the report records them: ``rows_expected`` and those of :class:`Converged`."""
        return {"rows_expected": self.rows_expected, **Converged.figures(self)}


def restarted_instance(instance: AwsInstance) -> AwsInstance:
    """The instance as a new container builds it: no table, state or client of the dead worker is reused."""
    return AwsInstance(instance.config)


def gc_lambda(table: Table[AwsInstance]) -> dict[str, list[dict[str, str]]]:
    """The garbage collector's Lambda given the table's message: collects unreferenced files, sweeps orphans now.

    The handler finds the instance from the environment (``CONFIG_BUCKET`` and the AWS variables)."""
    return sqs.garbage_collector(sqs_event([(str(uuid.uuid4()), table.table_id, table.table_id)]))


def untracked_files(instance: AwsInstance, table: Table[AwsInstance], files: FilesState) -> dict[str, datetime]:
    """Data files and sidecars under the table's ``data/`` whose data file the state store does not track, with
    their modification times."""
    tracked = {f.filename.removeprefix("s3a://") for f in files.files()}
    found = {}
    for info in list_files(instance.filesystem, f"{instance.data_bucket}/{table.table_id}/data"):
        stem, suffix = posixpath.splitext(info.path)
        if suffix in (".parquet", ".sketches") and f"{stem}.parquet" not in tracked:
            assert info.mtime is not None
            found[info.path] = info.mtime if info.mtime.tzinfo else info.mtime.replace(tzinfo=UTC)
    return found


def check_converged_on_aws(
    instance: AwsInstance,
    table_name: str,
    expected: Counter[Row],
    *,
    schema: Schema,
    restart: bool = False,
    run_gc_lambda: bool = False,
) -> ConvergedOnAws:
    """Checks I1-I7 on a table as a new process reads it, with ``expected`` the rows acknowledged to it; sweeps its
    orphans.

    I1 a full query holds exactly the expected rows (count and checksum); I2 each log is numbered contiguously from
    its first retained entry; I3 every referenced file exists in S3 under the table's prefix, once per partition; I4
    the leaves cover the key space; I5 no reference is left assigned to a job, each compaction job whose output is
    tracked is FINISHED and every failed run has a reason; I6 every retained snapshot plus the log tail equals the
    full state, the latest snapshot of each log exists, and snapshot files no metadata records are counted; I7 the
    untracked data files survive a sweep a second before the oldest one's minimum age and are all gone after one a
    second past the youngest one's, with the rows unchanged.

    Args:
        instance: The instance.
        table_name: The table.
        expected: The rows acknowledged to the table.
        schema: The table's schema (for I4).
        restart: Read the table through :func:`restarted_instance` of ``instance`` (as after a worker's restart)
            rather than through ``instance`` itself.
        run_gc_lambda: Before the sweeps, run the garbage collector's Lambda (:func:`gc_lambda`, which needs the
            instance in the environment) and check it succeeds and sweeps none of the orphans (they are seconds old).
    """
    reader = restarted_instance(instance) if restart else instance
    table = reader.table(table_name)
    actual = rows_of(table.query())
    lost = sum((expected - actual).values())
    duplicated = sum((actual - expected).values())
    if checksum(actual) != checksum(expected):
        kept = keep_for_post_mortem(reader, table, actual, expected)
        raise AssertionError(f"I1 {describe_difference(actual, expected)}; the table's state is kept in {kept}")
    assert actual == expected
    backend = reader.state_store_backend
    store = table.state_store
    store.refresh()
    files, partitions = store.files_state(), store.partitions_state()
    deleted_up_to = {}
    for log_type in LogType:
        first = next(iter(backend.transaction_log(table.table_id, log_type).read_transactions_after(0)), None)
        deleted_up_to[log_type] = 0 if first is None else first.transaction_number - 1
    last = check_log_numbers(backend, table.table_id, deleted_up_to)
    seen: set[tuple[str, str]] = set()
    for entry in files.files():
        assert entry.reference_count == len(entry.references), f"I3 {entry.filename}: reference count is wrong"
        for partition_id in entry.references:
            assert (entry.filename, partition_id) not in seen, f"I3 {entry.filename} referenced twice"
            seen.add((entry.filename, partition_id))
            assert partition_id in partitions, f"I3 {entry.filename} is referenced on an unknown partition"
        if entry.references:
            assert entry.filename.startswith(table.data_prefix + "/data/"), f"I3 {entry.filename} is outside the table"
            assert exists(reader.filesystem, entry.filename.removeprefix("s3a://")), f"I3 {entry.filename} is gone"
    check_tree(schema, partitions.partitions())
    assigned = [r.filename for r in files.references() if r.job_id is not None]
    assert assigned == [], f"I5 references still assigned to jobs: {assigned}"
    check_compaction_jobs_settled(reader.compaction_job_tracker, table.table_id, files)
    snapshots = store.snapshot_store
    assert snapshots is not None
    replayed = check_replay_from_snapshots(
        backend=backend,
        snapshots=snapshots,
        schema=schema,
        table_id=table.table_id,
        expected_files=files,
        expected_partitions=partitions,
        deleted_up_to=deleted_up_to,
        clock=lambda: datetime.now(tz=UTC),
    )
    for log_type in LogType:
        latest = snapshots.latest(log_type)
        if latest is not None:
            assert exists(reader.filesystem, filesystem_path(latest.path)), f"I6 the latest {log_type.value} is gone"
    recorded = {filesystem_path(m.path) for log_type in LogType for m in snapshots.snapshots(log_type)}
    unrecorded = [i.path for i in list_files(reader.filesystem, snapshots.directory) if i.path not in recorded]
    orphans = untracked_files(reader, table, files)
    early = swept = 0
    if orphans:
        if run_gc_lambda:
            assert gc_lambda(table) == {"batchItemFailures": []}
            assert untracked_files(reader, table, files) == orphans, "I7 the GC Lambda swept orphans seconds old"
        oldest, youngest = min(orphans.values()), max(orphans.values())
        options = reader.filesystem_options
        early = len(
            sweep_orphans(table, now=oldest + DEFAULT_ORPHAN_MIN_AGE - timedelta(seconds=1), options=options).deleted
        )
        assert early == 0, "I7 orphans were swept before their minimum age"
        late = sweep_orphans(table, now=youngest + DEFAULT_ORPHAN_MIN_AGE + timedelta(seconds=1), options=options)
        swept = len(late.deleted)
        assert {p.removeprefix("s3a://") for p in late.deleted} == set(orphans)
        assert untracked_files(reader, table, files) == {}, "I7 orphans left after the sweep"
        again = restarted_instance(instance).table(table_name)
        assert rows_of(again.query()) == expected, "I7 the sweep changed the rows"
    return ConvergedOnAws(
        rows_expected=sum(expected.values()),
        rows=sum(actual.values()),
        rows_lost=lost,
        rows_duplicated=duplicated,
        orphans=len(orphans),
        orphans_swept_early=early,
        orphans_swept=swept,
        snapshots_replayed=replayed,
        snapshot_files_unrecorded=len(unrecorded),
        transactions={log.value: number for log, number in last.items()},
    )


def keep_for_post_mortem(
    instance: AwsInstance, table: Table[AwsInstance], actual: Counter[Row], expected: Counter[Row]
) -> Path:
    """Writes what a post-mortem of an I1 failure needs, since moto's state dies with the test's process: the
    difference, the partitions, the references, the retained entries of both logs, and for up to 5 rows returned more
    often than acknowledged, every referenced file holding them. Returns the file written (in ``test-reports/``)."""
    store = table.state_store
    store.refresh()
    references = store.file_references()
    extra = sorted(actual - expected)[:5]
    holders: dict[str, list[dict[str, object]]] = {str(row): [] for row in extra}
    if extra:
        for filename in sorted({r.filename for r in references}):
            rows = rows_of(
                pq.read_table(filesystem_path(filename), columns=["key", "value"], filesystem=instance.filesystem)
            )
            for row in extra:
                if rows[row]:
                    holders[str(row)].append(
                        {"file": filename, "partitions": [r.partition_id for r in references if r.filename == filename]}
                    )
    logs = {
        log.value: [
            {"number": e.transaction_number, "type": e.transaction_type.value, "body": e.body, "body_key": e.body_key}
            for e in instance.state_store_backend.transaction_log(table.table_id, log).read_transactions_after(0)
        ]
        for log in LogType
    }
    kept = {
        "table_id": table.table_id,
        "difference": describe_difference(actual, expected),
        "holders": holders,
        "partitions": [dataclasses.asdict(p) for p in store.partitions()],
        "references": [dataclasses.asdict(r) for r in references],
        "logs": logs,
    }
    path = REPORT_PATH.parent / f"i1-failure-{table.table_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, default=str, indent=1))
    return path
