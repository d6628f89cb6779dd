from __future__ import annotations

import pytest

from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnknownTableError,
    UnsafePathError,
)
from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.partition import Partition
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

KEY = Field("key", PrimitiveType.BYTE_ARRAY)
SCHEMA = Schema.of(row_keys=[KEY])
LEAF = Partition(
    id="L",
    parent_id="root",
    region=Region.of([Range(field=KEY, min=b"", max=b"\x40\x40")]),
)
JOB = SplitPartitionJob.of("t1", LEAF, ["s3a://b/t1/data/partition_L/f1.parquet", "s3a://b/t1/f2.parquet"])


def _schemas(table_id: str) -> Schema:
    if table_id != "t1":
        raise TableNotFoundError(table_id)
    return SCHEMA


def should_round_trip_with_schema_found_by_table_id() -> None:
    # When
    found = SplitPartitionJob.from_json(JOB.to_json(SCHEMA), _schemas)
    # Then
    assert found == JOB


def should_write_nulls_for_root_parent_and_unbounded_max_as_sleeper_does() -> None:
    # Given
    root = SplitPartitionJob.of("t1", Partition(id="root", parent_id=None, region=Region.whole(SCHEMA)), ["f"])
    # When
    data = root.to_dict(SCHEMA)
    # Then
    assert data["partition"]["parentPartitionId"] is None
    assert data["partition"]["region"]["key"]["max"] is None
    assert SplitPartitionJob.from_dict(data, SCHEMA) == root


@pytest.mark.parametrize(
    ("change", "error", "path"),
    [
        ({"tableId": "unknown"}, UnknownTableError, "$.tableId"),
        ({"tableId": None}, MissingFieldError, "$.tableId"),
        ({"filenames": None}, MissingFieldError, "$.filenames"),
        ({"filenames": ["ok", None]}, MissingFieldError, "$.filenames[1]"),
        ({"filenames": ["s3a://b/../x"]}, UnsafePathError, "$.filenames[0]"),
        ({"partition": None}, MissingFieldError, "$.partition"),
        ({"partition": "L"}, InvalidFieldError, "$.partition"),
        ({"partitions": {}}, UnknownFieldError, "$.partitions"),
    ],
)
def should_reject_invalid_jobs(change: dict[str, object], error: type[MessageError], path: str) -> None:
    # Given
    data = {**JOB.to_dict(SCHEMA), **change}
    # When
    with pytest.raises(error) as e:
        SplitPartitionJob.from_dict(data, _schemas)
    # Then
    assert e.value.path == path


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"partitionId": ""}, "$.partition.partitionId"),
        ({"dimension": "x"}, "$.partition.dimension"),
        ({"region": {"key": {"min": "not base64!"}}}, "$.partition.region.key.min"),
        ({"region": {"other": {"min": "AA=="}}}, "$.partition.region.other"),
        ({"isLeaf": True}, "$.partition.isLeaf"),
    ],
)
def should_name_the_bad_part_of_the_partition(change: dict[str, object], path: str) -> None:
    # Given
    data = JOB.to_dict(SCHEMA)
    data["partition"] = {**data["partition"], **change}
    # When
    with pytest.raises(MessageError) as e:
        SplitPartitionJob.from_dict(data, SCHEMA)
    # Then
    assert e.value.path == path
