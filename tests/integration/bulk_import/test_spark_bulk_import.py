"""Bulk import with Spark local[*] on a local instance: files per leaf, pre-splitting, one commit per job id."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.bulk_import import BulkImportResult, LeafTagger, run_bulk_import
from sleeper.bulk_import.runner import commit_bulk_import_files
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.filesystem import filesystem_path, local_filesystem
from sleeper.io.parquet import SortedFileWriter
from sleeper.io.sketches import Sketches, sketches_path
from sleeper.query.executor import table_query
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.store import StateStore
from tests.integration.racing_store import SplitRightAfterCommit

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("time", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG)],
)
ROWS = 200_000
"""Rows over :data:`FILES` input files: enough for 16 leaves of over 10,000 rows each (what the tests check holds for
any count; 2,000,000 only made each import and read-back ten times as long)."""
FILES = 4


@pytest.fixture(scope="module")
def input_rows(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """The rows (:data:`ROWS`), keys distinct, in random order over 4 Parquet files, and the same rows sorted by key."""
    directory = tmp_path_factory.mktemp("bulk-import-input")
    rng = np.random.default_rng(7)
    keys = pa.array(rng.permutation(ROWS).astype(np.int64) * 7919).cast(pa.string())
    rows = pa.table(
        {
            "key": keys,
            "time": pa.array(rng.integers(0, 10**12, ROWS), pa.int64()),
            "value": pa.array(rng.integers(-(10**9), 10**9, ROWS), pa.int64()),
        }
    )
    step = ROWS // FILES
    for i in range(FILES):
        pq.write_table(rows.slice(i * step, step), directory / f"part-{i}.parquet")
    return directory, rows.take(pc.sort_indices(rows, [("key", "ascending")])).cast(arrow_schema(SCHEMA))


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> LocalInstance:
    return LocalInstance.create(tmp_path_factory.mktemp("bulk-import-instance") / "instance")


def _split_points(sorted_rows: pa.Table, leaves: int) -> list[str]:
    keys = sorted_rows.column("key")
    return [keys[len(keys) * i // leaves].as_py() for i in range(1, leaves)]


def _assert_each_file_holds_one_leaf_sorted_with_sketches(table: Table[LocalInstance]) -> None:
    tree = table.state_store.partition_tree()
    tagger = LeafTagger(SCHEMA, tree)
    leaf_index = {p.id: i for i, p in enumerate(tagger.leaves)}
    references = table.file_references()
    assert len({r.partition_id for r in references}) == len(references) == len(tree.leaves)
    for reference in references:
        rows = pq.read_table(filesystem_path(reference.filename))
        assert rows.num_rows == reference.number_of_rows
        assert reference.only_contains_data_for_this_partition
        assert set(tagger.tag(rows).tolist()) == {leaf_index[reference.partition_id]}
        keys = rows.column("key")
        assert pc.all(pc.less(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py()  # keys are distinct
        sketches = Sketches.read(local_filesystem(), sketches_path(filesystem_path(reference.filename)), SCHEMA)
        assert sketches.min("key") == rows.column("key")[0].as_py()
        assert sketches.max("key") == rows.column("key")[-1].as_py()


def should_import_into_a_table_with_16_leaves_one_sorted_file_per_leaf(
    spark: Any, instance: LocalInstance, input_rows: tuple[Path, pa.Table]
) -> None:
    # Given
    directory, expected = input_rows
    table = instance.create_table(
        "sixteen",
        SCHEMA,
        split_points=_split_points(expected, 16),
        properties={"sleeper.table.bulk.import.min.leaf.partitions": "16"},
    )
    job = BulkImportJob(id="import-16", table_name="sixteen", files=(str(directory),))

    # When
    outcome = run_bulk_import(instance, job, spark=spark, task_id="task-1")
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer

    # Then
    assert outcome.outcome is JobOutcome.FINISHED, outcome.reasons
    assert outcome.result is not None and outcome.result.partitions_added == 0
    assert table_query(table).equals(expected)
    _assert_each_file_holds_one_leaf_sorted_with_sketches(table)
    status = instance.ingest_job_tracker.job("import-16")
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert status.latest_run.rows_read == status.latest_run.rows_written == ROWS


def should_add_the_rows_of_a_job_run_twice_only_once(
    spark: Any, instance: LocalInstance, input_rows: tuple[Path, pa.Table]
) -> None:
    # Given the job of the previous test, already imported
    table = instance.table("sixteen")
    directory, expected = input_rows
    before = table.file_references()
    job = BulkImportJob(id="import-16", table_name="sixteen", files=(str(directory),))

    # When
    outcome = run_bulk_import(instance, job, spark=spark)
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer

    # Then
    assert outcome.outcome is JobOutcome.FINISHED
    assert outcome.result is not None and outcome.result.already_added
    assert table.file_references() == before
    assert table_query(table).num_rows == expected.num_rows


def should_pre_split_a_table_with_only_a_root_partition_first(
    spark: Any, instance: LocalInstance, input_rows: tuple[Path, pa.Table]
) -> None:
    # Given
    directory, expected = input_rows
    table = instance.create_table(
        "root-only", SCHEMA, properties={"sleeper.table.bulk.import.min.leaf.partitions": "16"}
    )
    job = BulkImportJob(id="import-root", table_name="root-only", files=(str(directory),))

    # When
    outcome = run_bulk_import(instance, job, spark=spark)
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer

    # Then
    assert outcome.outcome is JobOutcome.FINISHED, outcome.reasons
    assert outcome.result is not None and outcome.result.partitions_added == 30
    tree = table.state_store.partition_tree()
    tree.validate()
    assert len(tree.leaves) == 16
    counts = [r.number_of_rows for r in table.file_references()]
    assert max(counts) < 2 * ROWS / 16
    assert table_query(table).equals(expected)
    _assert_each_file_holds_one_leaf_sorted_with_sketches(table)


def should_fail_the_job_when_the_data_cannot_be_split_into_enough_leaves(
    spark: Any, instance: LocalInstance, tmp_path: Path
) -> None:
    # Given 100 rows, 16 leaves needed and 1000 rows needed to split a partition
    path = tmp_path / "small.parquet"
    pq.write_table(
        pa.table(
            {
                "key": [f"k{i}" for i in range(100)],
                "time": pa.array(range(100), pa.int64()),
                "value": pa.array(range(100), pa.int64()),
            }
        ),
        path,
    )
    table = instance.create_table(
        "too-small", SCHEMA, properties={"sleeper.table.bulk.import.min.leaf.partitions": "16"}
    )
    job = BulkImportJob(id="import-small", table_name="too-small", files=(str(path),))

    # When
    outcome = run_bulk_import(instance, job, spark=spark)
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer

    # Then
    assert outcome.outcome is JobOutcome.FAILED
    assert "Required 16 minimum leaf partitions" in outcome.reasons[0]
    status = instance.ingest_job_tracker.job("import-small")
    assert status is not None and status.status is IngestJobStatusType.FAILED
    assert table.file_references() == []
    assert len(table.leaf_partitions()) == 1


def _commit_run(
    store: StateStore, written: FileReference, *, job_id: str, run_id: str, data_prefix: str
) -> BulkImportResult:
    """Commits one file of a bulk import run of two rows, as the run's driver does."""
    return commit_bulk_import_files(
        store,
        [written],
        job_id=job_id,
        task_id=None,
        job_run_id=run_id,
        rows_read=2,
        options=None,
        clock=lambda: datetime.now(tz=UTC),
        data_prefix=data_prefix,
    )


def should_drop_the_files_of_a_run_when_another_run_of_the_job_committed_first(
    instance: LocalInstance, tmp_path: Path
) -> None:
    # Given two runs of one job, each having written a file, and the first one committed
    table = instance.create_table("race", SCHEMA)
    rows = pa.table({"key": ["a", "b"], "time": pa.array([1, 2], pa.int64()), "value": pa.array([3, 4], pa.int64())})
    written = []
    for name in ("first", "second"):
        with SortedFileWriter(f"{table.data_prefix}/data/partition_root/{name}.parquet", SCHEMA) as writer:
            writer.write(rows)
        written.append(FileReference(filename=writer.result.location, partition_id="root", number_of_rows=2))
    table.state_store.add_files([written[0]], job_id="race-job")

    # When the second run commits
    result = _commit_run(
        table.state_store, written[1], job_id="race-job", run_id="run-2", data_prefix=table.data_prefix
    )

    # Then its commit was skipped and its files deleted
    assert result.already_added
    assert [r.filename for r in table.file_references()] == [written[0].filename]
    second = filesystem_path(written[1].filename)
    assert not Path(second).exists() and not Path(sketches_path(second)).exists()
    assert Path(filesystem_path(written[0].filename)).exists()


def should_keep_the_files_it_committed_when_their_references_move_right_after_the_commit(
    instance: LocalInstance,
) -> None:
    # Given a run of a job having written a file on the root, and a split of the root whose pre-split lands right
    # after the run's commit
    table = instance.create_table("moved", SCHEMA)
    rows = pa.table({"key": ["a", "m"], "time": pa.array([1, 2], pa.int64()), "value": pa.array([3, 4], pa.int64())})
    with SortedFileWriter(f"{table.data_prefix}/data/partition_root/run.parquet", SCHEMA) as writer:
        writer.write(rows)
    written = FileReference(filename=writer.result.location, partition_id="root", number_of_rows=2)
    racing = SplitRightAfterCommit(
        table.state_store, LocalInstance(instance.directory).table("moved").state_store, split_point="g"
    )

    # When the run commits
    result = _commit_run(
        cast(StateStore, racing), written, job_id="moved-job", run_id="run-1", data_prefix=table.data_prefix
    )

    # Then its reference moved to the new leaves, yet it knew its commit landed and kept its file
    assert racing.split_done
    assert not result.already_added
    assert Path(filesystem_path(written.filename)).exists()
    assert sorted(table.query()["key"].to_pylist()) == ["a", "m"]
