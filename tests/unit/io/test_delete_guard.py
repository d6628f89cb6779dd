"""The one guard every delete of a table's files goes through: nothing outside the table's prefix is deleted."""

from __future__ import annotations

import logging

import pytest
from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.io.exceptions import UnsafeDeleteError
from sleeper.io.filesystem import delete_in_table, delete_unreferenced, exists, write_bytes

PREFIX = "s3a://data-bucket/0a1b2c3d"
MINE = "data-bucket/0a1b2c3d/data/partition_root/mine.parquet"
THEIRS = "data-bucket/9f8e7d6c/data/partition_root/theirs.parquet"


def _filesystem() -> pafs.FileSystem:
    fs = in_memory_filesystem()
    for path in (MINE, THEIRS):
        write_bytes(fs, path, b"rows")
    return fs


def should_delete_a_file_under_the_tables_prefix() -> None:
    # Given
    fs = _filesystem()
    # When
    delete_in_table(fs, MINE, PREFIX)
    delete_in_table(fs, MINE, PREFIX)
    # Then it is gone, and deleting it again is not an error
    assert not exists(fs, MINE)


@pytest.mark.parametrize(
    "path",
    [THEIRS, "data-bucket/0a1b2c3d/../9f8e7d6c/data/partition_root/theirs.parquet", "other-bucket/0a1b2c3d/x"],
)
def should_refuse_to_delete_anything_outside_the_tables_prefix(path: str) -> None:
    # Given
    fs = _filesystem()
    # When / Then
    with pytest.raises(UnsafeDeleteError, match="refused to delete"):
        delete_in_table(fs, path, PREFIX)
    assert exists(fs, THEIRS)


def should_delete_the_whole_table_only_at_its_own_prefix() -> None:
    # Given
    fs = _filesystem()
    # When a whole-table delete names another table, the bucket, or a directory inside the table
    for wrong in ("data-bucket/9f8e7d6c", "data-bucket", "data-bucket/0a1b2c3d/data"):
        with pytest.raises(UnsafeDeleteError, match="not the table's data prefix"):
            delete_in_table(fs, wrong, PREFIX, whole_table=True)
    # And then names the table's prefix
    delete_in_table(fs, "data-bucket/0a1b2c3d", PREFIX, whole_table=True)
    # Then only the table's files are gone
    assert not exists(fs, MINE)
    assert exists(fs, THEIRS)


def should_log_and_keep_a_file_a_failed_write_cleanup_may_not_delete(caplog: pytest.LogCaptureFixture) -> None:
    # Given
    fs = _filesystem()
    # When the cleanup of a failed write of table 0a1b2c3d is given another table's file
    with caplog.at_level(logging.ERROR):
        gone = delete_unreferenced(fs, THEIRS, PREFIX)
    # Then it is kept, and the refusal is logged
    assert not gone
    assert exists(fs, THEIRS)
    assert "outside the table's data prefix" in caplog.text
