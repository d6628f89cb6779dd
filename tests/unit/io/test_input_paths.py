"""Input paths as users give them: S3 needs its scheme; anything else is local, relative to the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleeper.io.exceptions import MissingFileError, UnsupportedLocationError
from sleeper.io.input_paths import resolve_input_path, resolve_input_paths


def should_make_a_relative_path_absolute_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a directory of files under the working directory
    (tmp_path / "parquet-files").mkdir()
    monkeypatch.chdir(tmp_path)
    # When the relative paths are resolved (with and without ./ and a trailing slash)
    resolved = resolve_input_paths(["parquet-files/", "./parquet-files", f"file://{tmp_path}/parquet-files"])
    # Then each is the absolute local path, not an S3 bucket/key
    assert resolved == (str(tmp_path / "parquet-files"),) * 3


def should_keep_s3_uris_unchanged() -> None:
    # Given S3 URIs with either scheme, in any case
    paths = ["s3://bucket/key.parquet", "s3a://bucket/dir/", "S3A://bucket/x"]
    # When resolved, then they are left as they are, without looking for them locally
    assert resolve_input_paths(paths) == tuple(paths)


def should_name_a_missing_local_path_in_one_line(tmp_path: Path) -> None:
    # Given a relative path naming nothing
    # When resolved against a directory
    with pytest.raises(MissingFileError) as raised:
        resolve_input_path("parquet-files/", cwd=tmp_path)
    # Then the error names the path as given, where it looked, and how to name S3
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("no file or directory parquet-files/ (")
    assert str(tmp_path / "parquet-files") in message
    assert "s3://" in message


def should_refuse_an_unknown_scheme() -> None:
    with pytest.raises(UnsupportedLocationError, match="scheme 'hdfs'"):
        resolve_input_path("hdfs://namenode/x")
