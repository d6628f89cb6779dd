"""Publishing a staged file at its final path without replacing a file there (docs/reliability.md B3), on the local disk
(an atomic hard link) and on any other filesystem (a check, then a move)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.io.exceptions import MissingFileError
from sleeper.io.filesystem import exists, local_filesystem, publish_no_clobber, read_bytes, write_bytes


def should_publish_a_local_file_when_the_final_path_is_free(tmp_path: Path) -> None:
    # Given a staged file and no file at the final path
    staging, final = tmp_path / "job.run-1.staging.parquet", tmp_path / "job.parquet"
    staging.write_bytes(b"whole output")

    # When / Then it is published and the staging file is gone
    assert publish_no_clobber(local_filesystem(), str(staging), str(final)) is True
    assert final.read_bytes() == b"whole output"
    assert not staging.exists()


def should_leave_an_existing_local_file_untouched(tmp_path: Path) -> None:
    # Given a file another run published at the final path
    staging, final = tmp_path / "job.run-2.staging.parquet", tmp_path / "job.parquet"
    final.write_bytes(b"the winner's output")
    os.utime(final, ns=(1_000_000_000, 1_000_000_000))
    staging.write_bytes(b"the loser's output, longer than the winner's")

    # When / Then nothing is published, and the final file keeps its content and modification time
    assert publish_no_clobber(local_filesystem(), str(staging), str(final)) is False
    assert final.read_bytes() == b"the winner's output"
    assert final.stat().st_mtime_ns == 1_000_000_000
    assert staging.read_bytes() == b"the loser's output, longer than the winner's"  # the caller discards it


def should_refuse_to_publish_a_missing_local_file(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        publish_no_clobber(local_filesystem(), str(tmp_path / "gone.parquet"), str(tmp_path / "job.parquet"))
    assert not (tmp_path / "job.parquet").exists()


def should_let_exactly_one_of_many_local_publishers_win(tmp_path: Path) -> None:
    # Given several runs' staged files for the same final path
    final = tmp_path / "job.parquet"
    staged = []
    for i in range(5):
        path = tmp_path / f"job.run-{i}.staging.parquet"
        path.write_bytes(f"run {i}".encode())
        staged.append(path)

    # When each publishes in turn
    won = [publish_no_clobber(local_filesystem(), str(p), str(final)) for p in staged]

    # Then the first wins and the final file is its, untouched by the others
    assert won == [True, False, False, False, False]
    assert final.read_bytes() == b"run 0"


@pytest.mark.parametrize("final_exists", [False, True])
def should_check_then_move_on_another_filesystem(final_exists: bool) -> None:
    # Given an in-memory filesystem (tests), a staged file, and perhaps a file at the final path
    fs: pafs.FileSystem = in_memory_filesystem()
    write_bytes(fs, "t/data/partition_root/job.run.staging.parquet", b"staged")
    if final_exists:
        write_bytes(fs, "t/data/partition_root/job.parquet", b"existing")

    # When
    published = publish_no_clobber(
        fs, "t/data/partition_root/job.run.staging.parquet", "t/data/partition_root/job.parquet"
    )

    # Then the final file is never replaced, and the staging file is gone only once published
    assert published is not final_exists
    assert read_bytes(fs, "t/data/partition_root/job.parquet") == (b"existing" if final_exists else b"staged")
    assert exists(fs, "t/data/partition_root/job.run.staging.parquet") is final_exists
