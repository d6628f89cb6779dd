"""The one rule of where a table's files may lie, used by state store validation and every delete guard."""

from __future__ import annotations

import pytest

from sleeper.core.statestore.exceptions import FileOutsideTableError
from sleeper.core.statestore.locations import check_file_in_table, file_outside_table, is_table_prefix

PREFIX = "s3a://data-bucket/0a1b2c3d"


@pytest.mark.parametrize(
    "filename",
    [
        f"{PREFIX}/data/partition_root/x.parquet",
        "s3://data-bucket/0a1b2c3d/data/partition_root/x.parquet",
        "data-bucket/0a1b2c3d/data/partition_root/x.sketches",
    ],
)
def should_accept_a_file_under_the_tables_prefix_named_in_any_s3_form(filename: str) -> None:
    # When / Then
    assert file_outside_table(filename, PREFIX) is None
    check_file_in_table(filename, PREFIX, table_id="0a1b2c3d")


@pytest.mark.parametrize(
    ("filename", "reason"),
    [
        ("s3a://data-bucket/9f8e7d6c/data/partition_root/x.parquet", "outside"),
        ("s3a://other-bucket/0a1b2c3d/data/partition_root/x.parquet", "outside"),
        ("s3a://data-bucket/0a1b2c3d-other/data/x.parquet", "outside"),
        ("s3a://data-bucket/0a1b2c3d", "outside"),
        ("s3a://data-bucket/0a1b2c3d/", "outside"),
        ("s3a://data-bucket/0a1b2c3d/../9f8e7d6c/data/x.parquet", "unsafe"),
        ("s3a://data-bucket/0a1b2c3d/%2e%2e/9f8e7d6c/data/x.parquet", "unsafe"),
        ("/data-bucket/0a1b2c3d/data/x.parquet", "outside"),
        ("file:///data-bucket/0a1b2c3d/data/x.parquet", "outside"),
    ],
)
def should_refuse_a_file_outside_the_tables_prefix_naming_why(filename: str, reason: str) -> None:
    # When
    found = file_outside_table(filename, PREFIX)
    # Then
    assert found is not None and reason in found
    with pytest.raises(FileOutsideTableError, match="does not belong to table 0a1b2c3d"):
        check_file_in_table(filename, PREFIX, table_id="0a1b2c3d")


def should_accept_a_local_file_only_under_a_local_tables_prefix() -> None:
    # Given a local table's prefix
    prefix = "file:///work/instance/data/0a1b2c3d"
    # When / Then
    assert file_outside_table("/work/instance/data/0a1b2c3d/data/partition_root/x.parquet", prefix) is None
    assert file_outside_table("file:///work/instance/data/0a1b2c3d/data/partition_root/x.parquet", prefix) is None
    assert file_outside_table("/work/instance/data/9f8e7d6c/data/partition_root/x.parquet", prefix) is not None
    assert file_outside_table("s3a://work/instance/data/0a1b2c3d/data/x.parquet", prefix) is not None


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("data-bucket/0a1b2c3d", True),
        ("s3a://data-bucket/0a1b2c3d/", True),
        ("data-bucket", False),
        ("data-bucket/0a1b2c3d/data", False),
        ("data-bucket/9f8e7d6c", False),
        ("data-bucket/0a1b2c3d/..", False),
    ],
)
def should_recognise_only_the_tables_prefix_itself_as_the_whole_table(location: str, expected: bool) -> None:
    # When / Then
    assert is_table_prefix(location, PREFIX) is expected
