from __future__ import annotations

import os
from typing import Any

import pyarrow.fs as pafs
import pytest

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.io.exceptions import MissingFileError, UnsupportedLocationError
from sleeper.io.filesystem import (
    FileSystemOptions,
    S3Options,
    delete,
    exists,
    filesystem_path,
    list_files,
    local_filesystem,
    open_input,
    read_bytes,
    resolve,
    s3_filesystem,
    size,
    write_bytes,
)

EMULATOR = FileSystemOptions(s3=S3Options(region="eu-west-2", endpoint_override="http://127.0.0.1:9", anonymous=True))


def _s3_settings(fs: pafs.FileSystem) -> dict[str, Any]:
    settings: dict[str, Any] = fs.__reduce__()[1][0]
    return settings


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("s3a://bucket/table/data/partition_root/f.parquet", "bucket/table/data/partition_root/f.parquet"),
        ("s3://bucket/key", "bucket/key"),
        ("S3A://bucket/prefix/", "bucket/prefix"),
    ],
)
def should_resolve_s3_uris_to_bucket_and_key(uri: str, path: str) -> None:
    # When
    fs, resolved = resolve(uri, EMULATOR)

    # Then
    assert fs.type_name == "s3"
    assert resolved == path


def should_resolve_local_paths_and_file_uris() -> None:
    # When
    absolute = resolve("/data/x.parquet")
    relative = resolve("data/x.parquet")
    file_uri = resolve("file:///data/x.parquet")

    # Then
    assert absolute == (local_filesystem(), "/data/x.parquet")
    assert relative == (local_filesystem(), os.path.join(os.getcwd(), "data/x.parquet"))
    assert file_uri == (local_filesystem(), "/data/x.parquet")


def should_use_a_given_filesystem_and_strip_the_scheme() -> None:
    # Given
    memory = in_memory_filesystem()

    # When
    fs, path = resolve("s3a://bucket/key", filesystem=memory)

    # Then
    assert fs is memory
    assert path == "bucket/key"
    assert filesystem_path("plain/path") == "plain/path"


@pytest.mark.parametrize("uri", ["hdfs://cluster/x", "s3a:///key", "file://relative/x"])
def should_reject_unsupported_locations(uri: str) -> None:
    # When / Then
    with pytest.raises(UnsupportedLocationError):
        resolve(uri, EMULATOR)


def should_pass_the_endpoint_and_its_scheme_to_pyarrow() -> None:
    # When
    settings = _s3_settings(s3_filesystem(EMULATOR.s3))
    https = _s3_settings(s3_filesystem(S3Options(region="us-east-1", endpoint_override="host:4566", anonymous=True)))

    # Then
    assert (settings["endpoint_override"], settings["scheme"], settings["region"]) == (
        "127.0.0.1:9",
        "http",
        "eu-west-2",
    )
    assert (https["endpoint_override"], https["scheme"]) == ("host:4566", "https")


def should_share_one_s3_filesystem_per_distinct_options() -> None:
    # When
    first = s3_filesystem(S3Options(region="eu-west-2", endpoint_override="127.0.0.1:9", anonymous=True))
    same = s3_filesystem(S3Options(region="eu-west-2", endpoint_override="127.0.0.1:9", anonymous=True))
    other = s3_filesystem(S3Options(region="eu-west-1", endpoint_override="127.0.0.1:9", anonymous=True))

    # Then
    assert first is same
    assert other is not first


def should_not_show_secrets_in_options_repr() -> None:
    # When
    text = repr(S3Options(access_key="AKIA", secret_key="very-secret", session_token="token-secret"))

    # Then
    assert "very-secret" not in text
    assert "token-secret" not in text


def should_check_size_read_and_delete_files() -> None:
    # Given
    fs = in_memory_filesystem()
    write_bytes(fs, "t/data/a.parquet", b"12345")

    # When / Then
    assert exists(fs, "t/data/a.parquet")
    assert not exists(fs, "t/data")
    assert size(fs, "t/data/a.parquet") == 5
    assert read_bytes(fs, "t/data/a.parquet") == b"12345"
    with open_input(fs, "t/data/a.parquet") as f:
        assert f.read_at(2, 1) == b"23"  # two bytes from offset 1
    delete(fs, "t/data/a.parquet")
    delete(fs, "t/data/a.parquet")
    assert not exists(fs, "t/data/a.parquet")


def should_raise_missing_file_errors_that_are_also_file_not_found() -> None:
    # Given
    fs = in_memory_filesystem()

    # When / Then
    with pytest.raises(MissingFileError):
        size(fs, "nothing")
    with pytest.raises(FileNotFoundError):
        open_input(fs, "nothing")
    with pytest.raises(MissingFileError):
        read_bytes(fs, "nothing")


def should_list_files_recursively_in_path_order() -> None:
    # Given
    fs = in_memory_filesystem()
    for path in ["t/data/p2/b.parquet", "t/data/p1/a.parquet", "t/data/p1/a.sketches", "t/other.json", "u/x"]:
        write_bytes(fs, path, b"x" * len(path))

    # When
    listed = list_files(fs, "t/data/")

    # Then
    assert [info.path.strip("/") for info in listed] == [
        "t/data/p1/a.parquet",
        "t/data/p1/a.sketches",
        "t/data/p2/b.parquet",
    ]
    assert [info.size for info in listed] == [19, 20, 19]
    assert list_files(fs, "missing") == []
