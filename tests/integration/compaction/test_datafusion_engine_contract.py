"""The contract between the compaction engines: the DataFusion engine writes exactly the rows the pyarrow engine writes,
in the same order, on local files and on S3 (a moto server), whole or split into key ranges merged by worker processes.

Skipped without ``datafusion``.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pytest
from pyarrow import fs as pafs

from sleeper.adapters.aws.s3_publish import s3_client
from sleeper.compaction.execution import ExecutionSettings, run_compaction
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.data_engine import ENGINE_ARROW, ENGINE_DATAFUSION
from sleeper.io.datafusion import datafusion_can_read, key_range_chunks
from sleeper.io.filesystem import FileSystemOptions, S3Options, s3_filesystem
from sleeper.io.parquet import ParquetSettings
from tests.unit.compaction.execution_fixtures import FakeTable, new_table

pytest.importorskip("datafusion")

pytestmark = pytest.mark.integration

REGION: Final = "eu-west-2"


@pytest.fixture(scope="module")
def endpoint() -> str:
    """This process's moto server (unique bucket names keep the tests apart)."""
    from tests.contract.aws_backends import moto_endpoint

    return moto_endpoint()


def _s3_options(endpoint: str) -> FileSystemOptions:
    return FileSystemOptions(
        s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing")
    )


def _schema(key_type: PrimitiveType) -> Schema:
    return Schema.of(
        row_keys=[Field("key", key_type)],
        sort_keys=[Field("sort", PrimitiveType.INT)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )


def _key(rng: random.Random, key_type: PrimitiveType) -> Any:
    number = rng.randrange(-60, 60)
    if key_type is PrimitiveType.LONG:
        return number * 1_000_000_007
    return f"k{number + 100:03d}" if key_type is PrimitiveType.STRING else bytes([number + 100])


def _table(
    where: str, key_type: PrimitiveType, tmp_path: Path, endpoint: str | None
) -> tuple[FakeTable, FileSystemOptions | None]:
    splits: dict[PrimitiveType, KeyValue] = {
        PrimitiveType.LONG: 0,
        PrimitiveType.STRING: "k100",
        PrimitiveType.BYTE_ARRAY: b"\x64",
    }
    split = splits[key_type]
    properties = {"sleeper.table.aggregations": ""}
    if where == "local":
        table = new_table(
            _schema(key_type), split_points=[split], properties=properties, filesystem=pafs.LocalFileSystem()
        )
        table.prefix = str(tmp_path)
        return table, None
    assert endpoint is not None
    options = _s3_options(endpoint)
    bucket = f"sleeper-engines-{uuid.uuid4().hex[:12]}"
    s3_client(options.s3).create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    filesystem = s3_filesystem(options.s3)
    table = new_table(_schema(key_type), split_points=[split], properties=properties, filesystem=filesystem)
    table.prefix = f"s3://{bucket}"
    return table, options


def _inputs(table: FakeTable, key_type: PrimitiveType, seed: int) -> list[str]:
    """Four files of 400 rows in row groups of 50 on the root, shared by both leaves, with keys repeated within and
    across files."""
    rng = random.Random(seed)
    leaves = [table.leaf(0).id, table.leaf(1).id]
    files = []
    for number in range(4):
        rows = 400
        keys = [_key(rng, key_type) for _ in range(rows)]
        data = pa.table(
            {
                "key": keys,
                "sort": pa.array([rng.randrange(3) for _ in range(rows)], pa.int32()),
                "value": pa.array(range(rows), pa.int64()),
                "payload": [f"file{number}-row{i}" for i in range(rows)],
            }
        )
        written = table.write_file(data, settings=ParquetSettings(row_group_rows=50))
        table.state_store.add_files(
            [
                FileReference(
                    filename=written.location,
                    partition_id=leaf,
                    number_of_rows=written.rows,
                    count_approximate=True,
                    only_contains_data_for_this_partition=False,
                )
                for leaf in leaves
            ]
        )
        files.append(written.location)
    return files


@pytest.mark.parametrize(
    ("where", "key_type", "chunk_rows"),
    [
        ("local", PrimitiveType.LONG, None),
        ("local", PrimitiveType.STRING, 600),
        ("local", PrimitiveType.BYTE_ARRAY, None),
        ("moto", PrimitiveType.STRING, None),
        ("moto", PrimitiveType.LONG, 600),
    ],
)
def should_write_exactly_the_rows_of_the_arrow_engine(
    request: pytest.FixtureRequest, tmp_path: Path, where: str, key_type: PrimitiveType, chunk_rows: int | None
) -> None:
    # Given files with repeated keys shared between two leaves, locally or on S3
    endpoint = request.getfixturevalue("endpoint") if where == "moto" else None
    table, options = _table(where, key_type, tmp_path, endpoint)
    inputs = _inputs(table, key_type, seed=7)
    assert datafusion_can_read(inputs)
    settings = ExecutionSettings(batch_rows=64, datafusion_batch_rows=32, datafusion_chunk_rows=chunk_rows)

    for leaf in (table.leaf(0), table.leaf(1)):
        arrow_job = table.job(inputs, leaf.id, job_id=f"arrow-{leaf.id}")
        fusion_job = table.job(inputs, leaf.id, job_id=f"fusion-{leaf.id}", assign=False)

        # When each engine compacts the leaf
        by_arrow = run_compaction(arrow_job, table, engine="ARROW", settings=settings, options=options)
        by_fusion = run_compaction(fusion_job, table, engine="DATAFUSION", settings=settings, options=options)

        # Then DataFusion merged, and both wrote the same rows in the same order
        assert (by_arrow.engine, by_fusion.engine) == (ENGINE_ARROW, ENGINE_DATAFUSION)
        assert by_fusion.rows_read == by_arrow.rows_read == by_fusion.rows_written > 0
        assert table.read(fusion_job.output_file).to_pylist() == table.read(arrow_job.output_file).to_pylist()
        assert by_fusion.output.sketches_location is not None


def should_split_the_first_key_into_ordered_ranges_at_row_group_starts(tmp_path: Path) -> None:
    # Given four files of 400 rows in row groups of 50
    table, _ = _table("local", PrimitiveType.LONG, tmp_path, None)
    inputs = _inputs(table, PrimitiveType.LONG, seed=3)

    # When the key range is cut into chunks of about 500 rows
    ranges = key_range_chunks(inputs, table.schema, 500)

    # Then the ranges follow one another in key order from unbounded to unbounded
    assert len(ranges) >= 3
    assert ranges[0][0] is None and ranges[-1][1] is None
    for (_, high), (low, _) in zip(ranges[:-1], ranges[1:], strict=True):
        assert high == low
    assert [low for low, _ in ranges[1:]] == sorted({low for low, _ in ranges[1:]})


def should_not_cut_a_job_smaller_than_a_chunk(tmp_path: Path) -> None:
    table, _ = _table("local", PrimitiveType.STRING, tmp_path, None)
    inputs = _inputs(table, PrimitiveType.STRING, seed=3)

    assert key_range_chunks(inputs, table.schema, 1600) == [(None, None)]
