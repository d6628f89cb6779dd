"""The transaction log follower's contract over both runtimes (sleeper.statestore.follower): the same commit requests
applied through the committer entry of a local instance and of an AWS instance on moto (whose files log stream is
then delivered to the transaction follower, as Lambda does) leave the same updates in the job trackers.

Committed compactions are recorded committed once, refused ones failed (a refused duplicate of a committed job is not
a failure), and a job run named by a committed ADD_FILES is recorded as having its files added, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sleeper.adapters.aws.dynamodb_stream import TransactionStreamRecord
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.core.statestore.transactions.log import LogType
from sleeper.core.statestore.transactions.serde import Transaction
from sleeper.core.trackers.compaction import CompactionJobCreated, CompactionJobFinished, CompactionJobStarted
from sleeper.core.trackers.ingest import IngestJobStarted
from sleeper.emulator.provision import provision_instance
from sleeper.runtime.aws.compaction import follow_transactions
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.committer import handle_commit_request
from sleeper.statestore.tables import SleeperRuntime
from tests.contract.aws_backends import aws_settings, new_instance_id

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=())

Follow = Callable[[], None]
"""Delivers what the runtime's follower sees after the commits (nothing locally; the files log stream on AWS)."""


def _local(tmp_path: Path) -> tuple[LocalInstance, Callable[[str], Follow]]:
    instance = LocalInstance.create(tmp_path / "instance")
    return instance, lambda _table_id: lambda: None


def _aws(_tmp_path: Path) -> tuple[AwsInstance, Callable[[str], Follow]]:
    instance = AwsInstance(provision_instance(aws_settings(), new_instance_id(), queues=()))

    def stream_of(table_id: str) -> Follow:
        def follow() -> None:
            log = instance.state_store_backend.transaction_log(table_id, LogType.FILES)
            records = [
                TransactionStreamRecord(
                    sequence_number=str(entry.transaction_number), event_name="INSERT", table_id=table_id, entry=entry
                )
                for entry in log.read_transactions_after(0)
            ]
            outcome = follow_transactions(instance, records)
            assert outcome.failed_sequence_number is None

        return follow

    return instance, stream_of


@pytest.fixture(params=[pytest.param(_local, id="local"), pytest.param(_aws, id="aws", marks=pytest.mark.aws)])
def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SleeperRuntime, Callable[[str], Follow]]]:
    yield request.param(tmp_path)


def _commit(instance: SleeperRuntime, table_id: str, transaction: Transaction) -> str:
    return handle_commit_request(instance, StateStoreCommitRequest.of_transaction(table_id, transaction).to_json())


def _updates(instance: SleeperRuntime, job_ids: list[str]) -> dict[str, list[tuple[object, ...]]]:
    """Each job's tracker updates, without their times and table (which differ between runs)."""
    out: dict[str, list[tuple[object, ...]]] = {}
    for job_id in job_ids:
        status = instance.compaction_job_tracker.job(job_id) or instance.ingest_job_tracker.job(job_id)
        assert status is not None, job_id
        out[job_id] = [
            (
                type(u).__name__,
                getattr(u, "job_run_id", None),
                getattr(u, "reasons", ()) != (),
                getattr(u, "file_count", None),
            )
            for run in status.runs
            for u in run.updates
        ]
    return out


def _scenario(instance: SleeperRuntime, stream_of: Callable[[str], Follow]) -> dict[str, list[tuple[object, ...]]]:
    """A compaction committed, its duplicate refused, a compaction of unassigned files refused, and an ingest run
    whose files are committed by the committer."""
    table = instance.create_table("follow", SCHEMA)  # type: ignore[attr-defined]
    table_id, prefix, now = table.table_id, table.data_prefix, datetime.now(tz=UTC)
    files = [
        FileReference(filename=f"{prefix}/data/partition_root/{n}.parquet", partition_id="root", number_of_rows=10)
        for n in "abc"
    ]
    table.state_store.commit(AddFilesTransaction.of_references(files))
    compactions, ingest = instance.compaction_job_tracker, instance.ingest_job_tracker
    for job_id in ("job-a", "job-b"):
        compactions.record(
            CompactionJobCreated(
                job_id=job_id, table_id=table_id, update_time=now, partition_id="root", input_files_count=2
            )
        )
        compactions.record(
            CompactionJobStarted(job_id=job_id, table_id=table_id, update_time=now, job_run_id=f"{job_id}-run")
        )
        compactions.record(
            CompactionJobFinished(job_id=job_id, table_id=table_id, update_time=now, job_run_id=f"{job_id}-run")
        )
    inputs = (files[0].filename, files[1].filename)
    table.state_store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="job-a", partition_id="root", filenames=inputs),))
    )
    output = FileReference(
        filename=f"{prefix}/data/partition_root/out-a.parquet", partition_id="root", number_of_rows=20
    )
    job_a = ReplaceFileReferencesRequest(
        job_id="job-a", job_run_id="job-a-run", input_files=inputs, new_reference=output
    )
    job_b = ReplaceFileReferencesRequest(
        job_id="job-b",
        job_run_id="job-b-run",
        input_files=(files[2].filename,),
        new_reference=FileReference(
            filename=f"{prefix}/data/partition_root/out-b.parquet", partition_id="root", number_of_rows=10
        ),
    )
    ingest.record(
        IngestJobStarted(job_id="job-c", table_id=table_id, update_time=now, job_run_id="job-c-run", file_count=1)
    )
    added = FileReference(filename=f"{prefix}/data/partition_root/c.parquet", partition_id="root", number_of_rows=5)

    assert "committed" in _commit(instance, table_id, ReplaceFileReferencesTransaction(jobs=(job_a,)))
    assert "rejected" in _commit(instance, table_id, ReplaceFileReferencesTransaction(jobs=(job_a,)))
    assert "rejected" in _commit(instance, table_id, ReplaceFileReferencesTransaction(jobs=(job_b,)))
    assert "committed" in _commit(
        instance, table_id, AddFilesTransaction.of_references([added], job_id="job-c", job_run_id="job-c-run")
    )
    follow = stream_of(table_id)
    follow()
    follow()  # the stream delivered again changes nothing
    return _updates(instance, ["job-a", "job-b", "job-c"])


EXPECTED: dict[str, list[tuple[object, ...]]] = {
    "job-a": [
        ("CompactionJobStarted", "job-a-run", False, None),
        ("CompactionJobFinished", "job-a-run", False, None),
        ("CompactionJobCommitted", "job-a-run", False, None),
    ],
    "job-b": [
        ("CompactionJobStarted", "job-b-run", False, None),
        ("CompactionJobFinished", "job-b-run", False, None),
        ("CompactionJobFailed", "job-b-run", True, None),
    ],
    "job-c": [
        ("IngestJobStarted", "job-c-run", False, 1),
        ("IngestJobAddedFiles", "job-c-run", False, 1),
    ],
}


def should_record_the_same_tracker_updates_for_the_same_commits(
    runtime: tuple[SleeperRuntime, Callable[[str], Follow]],
) -> None:
    # Given an instance of the runtime and its follower
    instance, stream_of = runtime
    # When the same commit requests go through its committer and its follower sees the files log
    updates = _scenario(instance, stream_of)
    # Then the trackers hold what every runtime records: a commit once, a refused job failed, files added once
    assert _sort(updates) == _sort(EXPECTED)


def _sort(updates: dict[str, list[tuple[object, ...]]]) -> dict[str, list[tuple[object, ...]]]:
    return {job_id: sorted(u, key=repr) for job_id, u in updates.items()}
