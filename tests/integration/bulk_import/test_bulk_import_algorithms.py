"""The bulk import algorithms (``sleeper.bulk.import.class.name`` or a job's ``className``) with Spark local[*]: each
leaf gets byte-for-byte the same rows from this port's local sort and from Spark's DataFrame sort."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.bulk_import import LeafTagger, run_bulk_import
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties.instance_bulk import BULK_IMPORT_CLASS_NAME
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.runs import JobOutcome
from sleeper.io.filesystem import filesystem_path
from sleeper.io.sort import is_sorted
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("time", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.BYTE_ARRAY)],
)
ROWS = 40_000
DATAFRAME_DRIVER = "sleeper.bulkimport.runner.dataframe.BulkImportJobDataframeDriver"


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows with repeated row keys (distinct sort keys), in random order over 3 files."""
    directory = tmp_path_factory.mktemp("algorithms-input")
    rng = np.random.default_rng(11)
    rows = pa.table(
        {
            "key": pa.array([f"k{k:05d}" for k in rng.integers(0, 8000, ROWS)]),
            "time": pa.array(rng.permutation(ROWS).astype(np.int64) - ROWS // 2),
            "value": pa.array(rng.integers(-(10**12), 10**12, ROWS), pa.int64()),
            "payload": pa.array([bytes(rng.integers(0, 256, 3).tolist()) for _ in range(ROWS)], pa.binary()),
        }
    )
    for i, piece in enumerate(np.array_split(np.arange(ROWS), 3)):
        pq.write_table(rows.take(pa.array(piece)), directory / f"part-{i}.parquet")
    return directory


# Leaf 0 holds about 85% of the rows, so Spark's range partitioning spreads it over several Spark partitions.
SPLIT_POINTS = ["k06800", "k07200", "k07600"]
LEAF_SETTINGS = {"sleeper.table.bulk.import.min.leaf.partitions": "4"}


def _leaf_rows(table: Table[LocalInstance]) -> tuple[list[pa.Table], list[int]]:
    """Each leaf's rows (its files in key order, concatenated) in leaf order, and how many files each leaf has."""
    tagger = LeafTagger(SCHEMA, table.state_store.partition_tree())
    references = table.file_references()
    rows, files = [], []
    for leaf_index, leaf in enumerate(tagger.leaves):
        pieces = []
        for reference in (r for r in references if r.partition_id == leaf.id):
            piece = pq.read_table(filesystem_path(reference.filename))
            assert piece.num_rows == reference.number_of_rows
            assert set(tagger.tag(piece).tolist()) == {leaf_index}
            assert is_sorted(piece, SCHEMA.key_names)
            pieces.append(piece)
        pieces.sort(key=lambda p: (p.column("key")[0].as_py(), p.column("time")[0].as_py()))
        joined = pa.concat_tables(pieces).combine_chunks()
        assert is_sorted(joined, SCHEMA.key_names)  # the files of one leaf hold disjoint key ranges
        rows.append(joined)
        files.append(len(pieces))
    return rows, files


def _import(spark: Any, instance: LocalInstance, table_name: str, input_dir: Path, class_name: str | None) -> None:
    instance.create_table(table_name, SCHEMA, split_points=SPLIT_POINTS, properties=LEAF_SETTINGS)
    job = BulkImportJob(id=f"job-{table_name}", table_name=table_name, files=(str(input_dir),), class_name=class_name)
    outcome = run_bulk_import(instance, job, spark=spark)
    assert outcome.outcome is JobOutcome.FINISHED, outcome.reasons
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer


def should_give_each_leaf_the_same_rows_from_the_local_sort_and_the_dataframe_sort(
    spark: Any, tmp_path: Path, input_dir: Path
) -> None:
    # Given one instance with the default algorithm, and one whose property names Sleeper's DataFrame driver
    default = LocalInstance.create(tmp_path / "default")
    by_property = LocalInstance.create(tmp_path / "by-property")
    properties = by_property.properties.copy()
    properties.set(BULK_IMPORT_CLASS_NAME, DATAFRAME_DRIVER)
    by_property.save_instance_properties(properties)

    # When the same input is imported with the local sort, and with the DataFrame sort named by a job and by the
    # instance property
    _import(spark, default, "local", input_dir, None)
    _import(spark, default, "frame", input_dir, "dataframe-sort")
    _import(spark, by_property, "frame", input_dir, None)

    # Then every leaf holds byte-for-byte the same rows in the same order
    local_rows, local_files = _leaf_rows(default.table("local"))
    assert local_files == [1, 1, 1, 1]
    assert sum(t.num_rows for t in local_rows) == ROWS
    for instance in (default, by_property):
        frame_rows, frame_files = _leaf_rows(instance.table("frame"))
        assert [t.num_rows for t in frame_rows] == [t.num_rows for t in local_rows]
        for local, frame in zip(local_rows, frame_rows, strict=True):
            assert frame.equals(local)
        # And the DataFrame sort ran: Spark's range partitioning cut the big leaf into several files
        assert frame_files[0] > 1


def should_leave_the_processs_spark_session_running_when_none_is_given(
    spark: Any, tmp_path: Path, input_dir: Path
) -> None:
    # Given a process that already runs a Spark session, and a bulk import given no session
    instance = LocalInstance.create(tmp_path / "own-session")
    instance.create_table("t", SCHEMA, split_points=SPLIT_POINTS, properties=LEAF_SETTINGS)
    job = BulkImportJob(id="job-own", table_name="t", files=(str(input_dir),))

    # When it runs
    outcome = run_bulk_import(instance, job)

    # Then it used the process's session and left it running for the rest of the process
    assert outcome.outcome is JobOutcome.FINISHED, outcome.reasons
    assert spark.range(3).count() == 3
