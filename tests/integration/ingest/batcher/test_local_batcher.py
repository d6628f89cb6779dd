"""The ingest batcher on a local instance: files submitted on disk end up ingested through the job it creates."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.local.batcher_store import SqliteIngestBatcherStore
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest import IngestJobRunner
from sleeper.ingest.batcher.job_creator import IngestBatcher
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.submitter import SUBMIT_QUEUE, IngestBatcherSubmitter, handle_submit_message
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("number", PrimitiveType.LONG)])
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _write(path: Path, keys: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"key": pa.array(keys), "number": pa.array(range(len(keys)), type=pa.int64())}), str(path))


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table(
        "events",
        SCHEMA,
        properties={
            "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
            "sleeper.table.ingest.batcher.job.min.files": "3",
            "sleeper.table.ingest.batcher.job.min.size": "0",
            "sleeper.table.ingest.batcher.job.max.files": "2",
        },
    )
    return instance


def should_ingest_files_submitted_to_the_batcher(instance: LocalInstance, tmp_path: Path) -> None:
    # Given three files submitted in two requests (a file and a directory)
    _write(tmp_path / "input" / "a.parquet", ["a1", "a2"])
    _write(tmp_path / "input" / "dir" / "b.parquet", ["b1"])
    _write(tmp_path / "input" / "dir" / "c.parquet", ["c1", "c2", "c3"])
    store = SqliteIngestBatcherStore(instance.database)
    submitter = IngestBatcherSubmitter(instance, store, allow_local=True, clock=lambda: T0)
    dead_letters = instance.dead_letter_queue(SUBMIT_QUEUE)
    for paths in ([str(tmp_path / "input" / "a.parquet")], [str(tmp_path / "input" / "dir")]):
        body = json.dumps({"tableName": "events", "files": paths})
        assert handle_submit_message(submitter, body, dead_letter_queue=dead_letters).accepted

    # When jobs are created and run
    created = IngestBatcher(instance, store, clock=lambda: T0).create_jobs()
    queue = instance.queue("IngestJobQ")
    messages = queue.receive(max_messages=10)
    outcomes = [IngestJobRunner(instance, local_dir=tmp_path / "work").run_message(m.body) for m in messages]
    LocalApi(instance).apply_commits()  # the jobs sent their files to the state store committer

    # Then two jobs (at most two files each) ingested every row
    assert sorted(len(c.job.files) for c in created) == [1, 2]
    assert sorted(IngestJob.from_json(m.body, allow_local=True).id for m in messages) == sorted(
        c.job.id for c in created
    )
    assert [o.outcome for o in outcomes] == [JobOutcome.FINISHED, JobOutcome.FINISHED]
    table = instance.table("events")
    assert sum(r.number_of_rows for r in table.file_references()) == 6
    assert store.pending_files_oldest_first() == []


def should_send_a_request_for_a_missing_file_to_the_dead_letter_queue(instance: LocalInstance, tmp_path: Path) -> None:
    # Given
    store = SqliteIngestBatcherStore(instance.database)
    submitter = IngestBatcherSubmitter(instance, store, allow_local=True)
    body = json.dumps({"tableName": "events", "files": [str(tmp_path / "missing.parquet")]})

    # When
    outcome = handle_submit_message(submitter, body, dead_letter_queue=instance.dead_letter_queue(SUBMIT_QUEUE))

    # Then
    assert not outcome.accepted
    assert [m.body for m in instance.dead_letter_queue(SUBMIT_QUEUE).receive(max_messages=10)] == [body]
    assert store.all_files_newest_first() == []


def should_put_each_file_in_one_job_when_creators_race_on_separate_connections(
    instance: LocalInstance, tmp_path: Path
) -> None:
    # Given files old enough to batch, and two job creators each with their own database connection
    paths = [tmp_path / "input" / f"{i}.parquet" for i in range(6)]
    for i, path in enumerate(paths):
        _write(path, [f"k{i}"])
    submitter = IngestBatcherSubmitter(
        instance, SqliteIngestBatcherStore(instance.database), allow_local=True, clock=lambda: T0
    )
    for path in paths:
        submitter.submit_message(json.dumps({"tableName": "events", "files": [str(path)]}))
    later = T0 + timedelta(minutes=10)
    barrier = threading.Barrier(2)
    results: list[list[str]] = []
    lock = threading.Lock()

    def run() -> None:
        batcher = IngestBatcher(instance, SqliteIngestBatcherStore(instance.database), clock=lambda: later)
        barrier.wait()
        created = batcher.create_jobs()
        with lock:
            results.append([f for c in created for f in c.job.files])

    # When
    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then
    batched = [f for files in results for f in files]
    assert sorted(batched) == sorted(str(p) for p in paths)
    sent = [
        f
        for m in instance.queue("IngestJobQ").receive(max_messages=10)
        for f in IngestJob.from_json(m.body, allow_local=True).files
    ]
    assert sorted(sent) == sorted(batched)


def should_read_and_extend_a_store_made_before_modification_times_were_kept(tmp_path: Path) -> None:
    # Given a database whose batcher table has no modification time column, holding a batched file
    database = tmp_path / "old.db"
    with sqlite3.connect(database) as connection:
        connection.execute(
            "CREATE TABLE batcher_files (job_id TEXT NOT NULL, file_path TEXT NOT NULL, file_size INTEGER NOT NULL, "
            "received_time INTEGER NOT NULL, expiry_time INTEGER NOT NULL, PRIMARY KEY (job_id, file_path))"
        )
        connection.execute(
            "INSERT INTO batcher_files VALUES ('job-1', 't1/bucket/a.parquet', 5, ?, ?)",
            (int(T0.timestamp() * 1000), int(T0.timestamp()) + 3600),
        )
    connection.close()
    store = SqliteIngestBatcherStore(database)

    # When the same file is submitted again, now with its modification time
    [old] = store.all_files_newest_first()
    again = TrackedFile(
        file="bucket/a.parquet",
        file_size_bytes=5,
        table_id="t1",
        received_time=T0 + timedelta(minutes=1),
        file_modified_time=T0 - timedelta(hours=1),
    )
    skipped = store.add_files_unless_batched([again])

    # Then the old record reads with no modification time, so the file counts as changed and is tracked again
    assert old.job_id == "job-1" and old.file_modified_time is None
    assert skipped == []
    assert store.pending_files_oldest_first() == [again]
    assert SqliteIngestBatcherStore(database).all_files_newest_first() == [again, old]
